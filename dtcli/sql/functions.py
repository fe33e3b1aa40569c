"""Spark SQL function facts the static refresh analysis needs (no Spark: plain name sets).

sqlglot maps many Spark functions to typed nodes and leaves the rest as ``exp.Anonymous``. An
anonymous call is only a user-defined function when Spark itself has no built-in of that name,
so the allow-list below is Spark's whole built-in catalogue (``SHOW SYSTEM FUNCTIONS`` of Spark
4.2, word-named entries) rather than just the names this sqlglot version happens to leave
anonymous: a newer sqlglot that stops recognising a name must not turn a built-in into a UDF.
"""

from __future__ import annotations

from sqlglot import exp

SPARK_BUILTINS = frozenset(["abs", "acos", "acosh", "add_months", "aes_decrypt", "aes_encrypt", "aggregate", "and", "any", "any_value", "approx_count_distinct", "approx_percentile", "approx_top_k", "approx_top_k_accumulate", "approx_top_k_combine", "approx_top_k_estimate", "array", "array_agg", "array_append", "array_compact", "array_contains", "array_distinct", "array_except", "array_insert", "array_intersect", "array_join", "array_max", "array_min", "array_position", "array_prepend", "array_remove", "array_repeat", "array_size", "array_sort", "array_union", "arrays_overlap", "arrays_zip", "ascii", "asin", "asinh", "assert_true", "atan", "atan2", "atanh", "avg", "base64", "between", "bigint", "bin", "binary", "bit_and", "bit_count", "bit_get", "bit_length", "bit_or", "bit_xor", "bitmap_and_agg", "bitmap_bit_position", "bitmap_bucket_number", "bitmap_construct_agg", "bitmap_count", "bitmap_or_agg", "bool_and", "bool_or", "boolean", "bround", "btrim", "cardinality", "case", "cast", "cbrt", "ceil", "ceiling", "char", "char_length", "character_length", "chr", "coalesce", "collate", "collation", "collations", "collect_list", "collect_set", "concat", "concat_ws", "contains", "conv", "convert_timezone", "corr", "cos", "cosh", "cot", "count", "count_if", "count_min_sketch", "covar_pop", "covar_samp", "crc32", "csc", "cume_dist", "curdate", "current_catalog", "current_database", "current_date", "current_path", "current_schema", "current_time", "current_timestamp", "current_timezone", "current_user", "date", "date_add", "date_diff", "date_format", "date_from_unix_date", "date_part", "date_sub", "date_trunc", "dateadd", "datediff", "datepart", "day", "dayname", "dayofmonth", "dayofweek", "dayofyear", "decimal", "decode", "degrees", "dense_rank", "div", "double", "e", "element_at", "elt", "encode", "endswith", "equal_null", "every", "exists", "exp", "explode", "explode_outer", "expm1", "extract", "factorial", "filter", "find_in_set", "first", "first_value", "flatten", "float", "floor", "forall", "format_number", "format_string", "from_avro", "from_csv", "from_json", "from_protobuf", "from_unixtime", "from_utc_timestamp", "from_xml", "get", "get_json_object", "getbit", "greatest", "grouping", "grouping_id", "hash", "hex", "histogram_numeric", "hll_sketch_agg", "hll_sketch_estimate", "hll_union", "hll_union_agg", "hour", "hypot", "if", "ifnull", "ilike", "in", "initcap", "inline", "inline_outer", "input_file_block_length", "input_file_block_start", "input_file_name", "instr", "int", "is_valid_utf8", "is_valid_variant", "is_variant_null", "isnan", "isnotnull", "isnull", "java_method", "json_array_length", "json_object_keys", "json_tuple", "kll_merge_agg_bigint", "kll_merge_agg_double", "kll_merge_agg_float", "kll_sketch_agg_bigint", "kll_sketch_agg_double", "kll_sketch_agg_float", "kll_sketch_get_n_bigint", "kll_sketch_get_n_double", "kll_sketch_get_n_float", "kll_sketch_get_quantile_bigint", "kll_sketch_get_quantile_double", "kll_sketch_get_quantile_float", "kll_sketch_get_rank_bigint", "kll_sketch_get_rank_double", "kll_sketch_get_rank_float", "kll_sketch_merge_bigint", "kll_sketch_merge_double", "kll_sketch_merge_float", "kll_sketch_to_string_bigint", "kll_sketch_to_string_double", "kll_sketch_to_string_float", "kurtosis", "lag", "last", "last_day", "last_value", "lcase", "lead", "least", "left", "len", "length", "levenshtein", "like", "listagg", "ln", "localtimestamp", "locate", "log", "log10", "log1p", "log2", "lower", "lpad", "ltrim", "luhn_check", "make_date", "make_dt_interval", "make_interval", "make_time", "make_timestamp", "make_timestamp_ltz", "make_timestamp_ntz", "make_valid_utf8", "make_ym_interval", "map", "map_concat", "map_contains_key", "map_entries", "map_filter", "map_from_arrays", "map_from_entries", "map_keys", "map_values", "map_zip_with", "mask", "max", "max_by", "md5", "mean", "measure", "median", "min", "min_by", "minute", "mod", "mode", "monotonically_increasing_id", "month", "monthname", "months_between", "named_struct", "nanvl", "negative", "next_day", "not", "now", "nth_value", "ntile", "nullif", "nullifzero", "nvl", "nvl2", "octet_length", "or", "overlay", "parse_json", "parse_url", "percent_rank", "percentile", "percentile_approx", "percentile_cont", "percentile_disc", "pi", "pmod", "posexplode", "posexplode_outer", "position", "positive", "pow", "power", "printf", "python_worker_logs", "quarter", "quote", "radians", "raise_error", "rand", "randn", "random", "randstr", "range", "rank", "reduce", "reflect", "regexp", "regexp_count", "regexp_extract", "regexp_extract_all", "regexp_instr", "regexp_like", "regexp_replace", "regexp_substr", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "repeat", "replace", "reverse", "right", "rint", "rlike", "round", "row_number", "rpad", "rtrim", "schema_of_avro", "schema_of_csv", "schema_of_json", "schema_of_variant", "schema_of_variant_agg", "schema_of_xml", "sec", "second", "sentences", "sequence", "session_user", "session_window", "sha", "sha1", "sha2", "shiftleft", "shiftright", "shiftrightunsigned", "shuffle", "sign", "signum", "sin", "sinh", "size", "skewness", "slice", "smallint", "some", "sort_array", "soundex", "space", "spark_partition_id", "split", "split_part", "sql_keywords", "sqrt", "st_asbinary", "st_geogfromwkb", "st_geomfromwkb", "st_setsrid", "st_srid", "stack", "startswith", "std", "stddev", "stddev_pop", "stddev_samp", "str_to_map", "string", "string_agg", "struct", "substr", "substring", "substring_index", "sum", "tan", "tanh", "theta_difference", "theta_intersection", "theta_intersection_agg", "theta_sketch_agg", "theta_sketch_estimate", "theta_union", "theta_union_agg", "time", "time_bucket", "time_diff", "time_from_micros", "time_from_millis", "time_from_seconds", "time_to_micros", "time_to_millis", "time_to_seconds", "time_trunc", "timestamp", "timestamp_micros", "timestamp_millis", "timestamp_seconds", "tinyint", "to_avro", "to_binary", "to_char", "to_csv", "to_date", "to_json", "to_number", "to_protobuf", "to_time", "to_timestamp", "to_timestamp_ltz", "to_timestamp_ntz", "to_unix_timestamp", "to_utc_timestamp", "to_varchar", "to_variant_object", "to_xml", "transform", "transform_keys", "transform_values", "translate", "trim", "trunc", "try_add", "try_aes_decrypt", "try_avg", "try_divide", "try_element_at", "try_make_interval", "try_make_timestamp", "try_make_timestamp_ltz", "try_make_timestamp_ntz", "try_mod", "try_multiply", "try_parse_json", "try_parse_url", "try_reflect", "try_subtract", "try_sum", "try_to_binary", "try_to_date", "try_to_number", "try_to_time", "try_to_timestamp", "try_url_decode", "try_validate_utf8", "try_variant_get", "tuple_difference_double", "tuple_difference_integer", "tuple_difference_theta_double", "tuple_difference_theta_integer", "tuple_intersection_agg_double", "tuple_intersection_agg_integer", "tuple_intersection_double", "tuple_intersection_integer", "tuple_intersection_theta_double", "tuple_intersection_theta_integer", "tuple_sketch_agg_double", "tuple_sketch_agg_integer", "tuple_sketch_estimate_double", "tuple_sketch_estimate_integer", "tuple_sketch_summary_double", "tuple_sketch_summary_integer", "tuple_sketch_theta_double", "tuple_sketch_theta_integer", "tuple_union_agg_double", "tuple_union_agg_integer", "tuple_union_double", "tuple_union_integer", "tuple_union_theta_double", "tuple_union_theta_integer", "typeof", "ucase", "unbase64", "unhex", "uniform", "unix_date", "unix_micros", "unix_millis", "unix_seconds", "unix_timestamp", "upper", "url_decode", "url_encode", "user", "uuid", "validate_utf8", "var_pop", "var_samp", "variance", "variant_explode", "variant_explode_outer", "variant_get", "vector_avg", "vector_cosine_similarity", "vector_inner_product", "vector_l2_distance", "vector_norm", "vector_normalize", "vector_sum", "version", "weekday", "weekofyear", "when", "width_bucket", "window", "window_time", "xpath", "xpath_boolean", "xpath_double", "xpath_float", "xpath_int", "xpath_long", "xpath_number", "xpath_short", "xpath_string", "xxhash64", "year", "zeroifnull", "zip_with"])

# A refresh evaluates these at a different moment, on a different partitioning or for another
# session than the previous one, so the stored rows would not equal a recomputation.
NONDETERMINISTIC_NAMES = frozenset(["rand", "randn", "random", "uniform", "randstr", "uuid", "shuffle", "now", "curdate", "current_date", "current_time", "current_timestamp", "localtimestamp", "monotonically_increasing_id", "spark_partition_id", "input_file_name", "input_file_block_start", "input_file_block_length", "current_user", "user", "session_user", "reflect", "java_method", "try_reflect", "aes_encrypt", "try_aes_encrypt"])

NONDETERMINISTIC_NODES: tuple[type[exp.Expression], ...] = (
    exp.Rand, exp.Randn, exp.Randstr, exp.Uniform, exp.Uuid, exp.Shuffle,
    exp.CurrentDate, exp.CurrentTime, exp.CurrentTimestamp, exp.CurrentTimestampLTZ,
    exp.CurrentDatetime, exp.Localtimestamp, exp.Localtime, exp.CurrentUser, exp.SessionUser,
)

# Written without parentheses these parse as plain columns; Spark resolves them as functions.
NIL_ARY_TIME_COLUMNS = frozenset({"localtimestamp", "current_timestamp", "current_date",
                                  "current_time", "current_user"})

# Row generators: each input row maps to its own output rows, so changes map row by row.
GENERATORS = frozenset(["explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer", "stack", "json_tuple", "variant_explode", "variant_explode_outer"])

# Built-in table functions whose output never changes, so they are a constant input.
CONSTANT_TABLE_FUNCTIONS = frozenset({"range", "sql_keywords", "collations"})

# Spark aggregates sqlglot may leave anonymous (typed ones are exp.AggFunc).
AGGREGATES = frozenset(["any", "any_value", "approx_count_distinct", "approx_percentile", "array_agg", "avg", "bit_and", "bit_or", "bit_xor", "bitmap_and_agg", "bitmap_construct_agg", "bitmap_or_agg", "bool_and", "bool_or", "collect_list", "collect_set", "corr", "count", "count_if", "count_min_sketch", "covar_pop", "covar_samp", "every", "first", "first_value", "histogram_numeric", "hll_sketch_agg", "hll_union_agg", "kurtosis", "last", "last_value", "listagg", "max", "max_by", "mean", "measure", "median", "min", "min_by", "mode", "percentile", "percentile_approx", "percentile_cont", "percentile_disc", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "schema_of_variant_agg", "skewness", "some", "std", "stddev", "stddev_pop", "stddev_samp", "string_agg", "sum", "try_avg", "try_sum", "var_pop", "var_samp", "variance"])

# Aggregates that cannot be undone by subtracting a deleted row.
NON_SUBTRACTABLE = (exp.Min, exp.Max, exp.ArgMin, exp.ArgMax)
NON_SUBTRACTABLE_NAMES = frozenset({"min", "max", "min_by", "max_by", "median", "mode",
                                    "percentile", "percentile_cont", "percentile_disc",
                                    "percentile_approx", "approx_percentile",
                                    "approx_count_distinct", "collect_set"})


def written_name(node: exp.Expression, sql: str) -> str:
    """The function name as the user wrote it (``random`` stays ``random``), lower case."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    meta = node._meta
    if meta and "start" in meta and "end" in meta:
        text = sql[meta["start"]: meta["end"] + 1]
        if text.replace("_", "").isalnum():
            return text.lower()
    return node.sql_name().lower()


def is_aggregate(node: exp.Expression) -> bool:
    if isinstance(node, exp.AggFunc):
        return True
    return isinstance(node, exp.Anonymous) and (
        node.name.lower() in AGGREGATES or node.name.lower().endswith("_agg"))


def is_windowed(node: exp.Expression) -> bool:
    """An aggregate used as a window function (sum(x) OVER ...), not a grouping aggregate."""
    child, parent = node, node.parent
    while isinstance(parent, (exp.IgnoreNulls, exp.RespectNulls)):
        child, parent = parent, parent.parent
    return isinstance(parent, exp.Window) and parent.this is child


def is_nondeterministic(node: exp.Expression) -> bool:
    if isinstance(node, NONDETERMINISTIC_NODES):
        return True
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in NONDETERMINISTIC_NAMES
    if isinstance(node, exp.Column) and not node.table:
        ident = node.this
        return (isinstance(ident, exp.Identifier) and not ident.quoted
                and ident.name.lower() in NIL_ARY_TIME_COLUMNS)
    return False


def is_user_defined(node: exp.Expression) -> bool:
    """A call Spark cannot resolve to a built-in: unknown name, or qualified by a schema."""
    if not isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return isinstance(node, exp.Func) and isinstance(node.parent, exp.Dot) \
            and node.parent.expression is node
    if isinstance(node.parent, exp.Dot) and node.parent.expression is node:
        return True
    return node.name.lower() not in SPARK_BUILTINS


_CLOCK = frozenset({"now", "curdate", "current_date", "current_time", "current_timestamp",
                    "localtimestamp", "localtime", "unix_timestamp", "current_datetime"})
_SESSION = frozenset({"current_user", "user", "session_user"})


def why_nondeterministic(name: str) -> str:
    """Advice for one nondeterministic call, by what makes it vary."""
    if name in _CLOCK:
        return (f"{name}() depends on when the refresh runs; filter on time in the query that "
                "reads this table, or use frozen_where for a time cut-off")
    if name in {"reflect", "java_method", "try_reflect"}:
        return f"{name}() runs arbitrary Java code that may not return the same value twice"
    if name in _SESSION:
        return f"{name}() depends on who runs the refresh; pass the value in as a literal"
    return (f"{name}() gives a new value on every evaluation; derive the value from the row "
            "instead, e.g. xxhash64 of its key")
