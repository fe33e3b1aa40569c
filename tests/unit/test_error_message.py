"""Failed refreshes record the cause a user can act on, not Py4J's wrapper line."""

from dtcli.engine.runtime.spark_errors import error_message


class JavaError(Exception):
    pass


def test_py4j_wrapper_is_replaced_by_the_java_cause():
    exc = JavaError("An error occurred while calling o1774.save.\n"
                    ": org.apache.spark.SparkNumberFormatException: [CAST_INVALID_INPUT] The value 'x' "
                    "cannot be cast to \"INT\".\n\tat org.apache.spark.sql.errors.Foo(Foo.scala:1)")
    assert error_message(exc) == "[CAST_INVALID_INPUT] The value 'x' cannot be cast to \"INT\"."


def test_plain_errors_keep_their_first_line():
    assert error_message(JavaError("[TABLE_OR_VIEW_NOT_FOUND] no such table\nstack")) == \
        "[TABLE_OR_VIEW_NOT_FOUND] no such table"
    assert error_message(JavaError()) == "JavaError"
