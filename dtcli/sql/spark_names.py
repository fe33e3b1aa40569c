"""The name Spark gives an output column the query does not name (`SELECT sum(l_quantity)`).

Spark names an unaliased expression after its "pretty" SQL: functions by the name they were
called by, in lower case (`sum(l_quantity)`, `nvl(k, 0)`), `count(*)` as `count(1)`, operators
parenthesised (`(k + 1)`, `(NOT (k = 1))` for `k <> 1`), string literals without their quotes,
columns without their qualifier (spelt as the query spells them), a CAST by the name of what it
casts. A DT takes those names, as a CREATE TABLE AS SELECT on Spark would (dt renames the
result's columns to them, so the table's schema is what dt derives without a JVM).

Spark's printer has many special cases (`sqrt(x)` is `SQRT(x)`, `ceil(x)` is `CEIL(x)` but
`ceiling(x)` stays, `substr(s FROM 2)` is `substring(s, 2, 2147483647)`, `if(...)` is `(IF(...))`,
`percentile_approx(x, 0.5)` gains its default accuracy): only the forms below, each checked
against Spark 4.2 (tests/spark/test_output_names.py), get a name; for any other expression
`output_name` returns None and `dt validate` asks for an alias, as before.

>>> import sqlglot
>>> def name(sql):
...     text = f"SELECT {sql} FROM t"
...     return output_name(sqlglot.parse_one(text, read="spark").selects[0], text)
>>> name("SUM(t.l_quantity)"), name("count(*)"), name("count(DISTINCT k, g)")
('sum(l_quantity)', 'count(1)', 'count(DISTINCT k, g)')
>>> name("100.00 * sum(k) / sum(d)"), name("k <> 1"), name("k NOT IN (1, 2)")
('((100.00 * sum(k)) / sum(d))', '(NOT (k = 1))', '(NOT (k IN (1, 2)))')
>>> name("CASE WHEN k > 1 THEN 'a' ELSE 'b' END"), name("CAST(k AS STRING)"), name("nvl(g, 'n')")
('CASE WHEN (k > 1) THEN a ELSE b END', 'k', 'nvl(g, n)')
>>> name("pow(k, 2)"), name("POWER(k, 2)"), name("sqrt(k)"), name("upper(g) || 'x'")
('pow(k, 2)', 'POWER(k, 2)', 'SQRT(k)', 'concat(upper(g), x)')
>>> name("SUBSTRING(t.g, 1, 30)"), name("Substr(g, 2)"), name("CEIL(d)"), name("CEILING(d)")
('substring(g, 1, 30)', 'substr(g, 2, 2147483647)', 'CEIL(d)', 'ceiling(d)')
>>> name("sum(k) OVER (PARTITION BY g)") is None, name("my_udf(k)") is None
(True, True)
"""

from __future__ import annotations

import re

from sqlglot import exp

from dtcli.sql import functions as fn

# operators Spark prints as `(left op right)`
_BINARY = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.IntDiv: "div",
           exp.EQ: "=", exp.NullSafeEQ: "<=>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<",
           exp.LTE: "<=", exp.And: "AND", exp.Or: "OR"}
# functions Spark names `called_name(args)`, in lower case, by sqlglot class: the names they may be
# called by (the first when sqlglot does not record which), and the arguments in call order
_CALLED = {
    exp.Sum: ("sum",), exp.Avg: ("avg",), exp.Min: ("min",), exp.Max: ("max",),
    exp.Upper: ("upper", "ucase"), exp.Lower: ("lower", "lcase"),
    exp.Abs: ("abs",), exp.Round: ("round",), exp.Year: ("year",), exp.Month: ("month",),
    exp.Length: ("length", "char_length"),
    exp.MD5: ("md5",), exp.Coalesce: ("coalesce", "nvl", "ifnull"), exp.Concat: ("concat",),
    exp.ConcatWs: ("concat_ws",),
    exp.Greatest: ("greatest",), exp.Least: ("least",), exp.Nullif: ("nullif",),
    exp.Stddev: ("stddev",), exp.First: ("first",), exp.AnyValue: ("any_value",),
    exp.LogicalAnd: ("bool_and", "every"), exp.Trim: ("trim",), exp.Pow: ("pow",),
    exp.Left: ("left",), exp.Right: ("right",), exp.Replace: ("replace",),
    exp.Grouping: ("grouping",), exp.GroupingId: ("grouping_id",), exp.CountIf: ("count_if",),
    exp.StddevSamp: ("stddev_samp",), exp.StddevPop: ("stddev_pop",),
    exp.Variance: ("variance", "var_samp"), exp.VariancePop: ("var_pop",),
    exp.ArrayUniqueAgg: ("collect_set",),
}
# functions whose name Spark prints in its own spelling, whatever they were called
_SPELT = {exp.Floor: "FLOOR", exp.Ceil: "CEIL", exp.Sqrt: "SQRT", exp.ArrayAgg: "collect_list"}
# a call of SUBSTRING by either of its names, in any case
_SUBSTRING_CALL = re.compile(r"\b(substr|substring)\s*\(", re.IGNORECASE)
_FROM = re.compile(r"from\b", re.IGNORECASE)
# sqlglot fills in arguments the call did not write: left out of the name
_IMPLIED = {"unit", "zone"}


def output_name(expr: exp.Expression, text: str | None = None) -> str | None:
    """Spark's name for the output expression `expr` (unaliased, as parsed from the user's query,
    its columns qualified or not), or None when it is not one of the forms known here. `text`:
    the SQL it was parsed from (which of a function's names was written is read there)."""
    try:
        return _Names(text).name(expr)
    except _Unknown:
        return None


class _Unknown(Exception):
    pass


class _Names:
    def __init__(self, text: str | None):
        self.text = text

    def name(self, e: exp.Expression) -> str:
        if isinstance(e, exp.Paren):
            return self.name(e.this)
        if isinstance(e, exp.Column) and not e.is_star:
            return e.name               # as written (Spark's name keeps the query's spelling)
        if isinstance(e, exp.TsOrDsToDate) and not e.args.get("format") and e.meta.get("start") is None:
            return self.name(e.this)    # sqlglot's own wrapper (year(dt) reads a date), not written
        if isinstance(e, (exp.Literal, exp.Boolean, exp.Null)):
            return self.literal(e)
        if type(e) in _BINARY:
            return f"({self.name(e.this)} {_BINARY[type(e)]} {self.name(e.expression)})"
        if isinstance(e, exp.NEQ):
            return f"(NOT ({self.name(e.this)} = {self.name(e.expression)}))"
        if isinstance(e, exp.Neg):
            if isinstance(e.this, exp.Literal) and not e.this.is_string:
                raise _Unknown          # a negative number: Spark's spelling not checked
            return f"(- {self.name(e.this)})"
        if isinstance(e, exp.Not):
            inner = e.this.unnest() if isinstance(e.this, exp.Paren) else e.this
            if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
                return f"({self.name(inner.this)} IS NOT NULL)"
            return f"(NOT {self.name(inner)})"
        if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
            return f"({self.name(e.this)} IS NULL)"
        if isinstance(e, exp.In) and not e.args.get("query") and not e.args.get("unnest"):
            return f"({self.name(e.this)} IN ({self.names(e.expressions)}))"
        if isinstance(e, exp.Between):
            return f"between({self.names([e.this, e.args['low'], e.args['high']])})"
        if isinstance(e, exp.Like) and not e.args.get("escape"):
            like = f"{self.name(e.this)} LIKE {self.name(e.expression)}"
            return f"(NOT {like})" if e.args.get("negate") else like
        if isinstance(e, exp.RegexpLike):
            return f"RLIKE({self.name(e.this)}, {self.name(e.expression)})"
        if isinstance(e, (exp.Cast, exp.TryCast)):
            if isinstance(e.this, exp.Literal) and e.this.is_string and e.to.is_type(
                    *exp.DataType.TEMPORAL_TYPES):
                raise _Unknown          # DATE '...' and CAST('...' AS DATE) parse alike; named apart
            return self.name(e.this)
        if isinstance(e, exp.Case):
            return self.case(e)
        if isinstance(e, exp.If):
            return f"(IF({self.names([e.this, e.args['true'], e.args['false']])}))"
        if isinstance(e, exp.Count):
            return self.count(e)
        if isinstance(e, exp.Filter) and isinstance(e.expression, exp.Where):
            return f"{self.name(e.this)} FILTER (WHERE {self.name(e.expression.this)})"
        if isinstance(e, exp.Substring):
            return self.substring(e)
        if isinstance(e, exp.DPipe):
            return f"concat({self.name(e.this)}, {self.name(e.expression)})"
        if isinstance(e, exp.Pow) and self.text is not None and e.meta.get("start") is not None \
                and fn.written_name(e, self.text) == "power":
            return f"POWER({self.names(self.arguments(e))})"
        if isinstance(e, exp.Ceil) and self.text is not None and e.meta.get("start") is not None \
                and fn.written_name(e, self.text) == "ceiling":
            return f"ceiling({self.names(self.arguments(e))})"     # CEIL(x) but ceiling(x)
        if type(e) in _SPELT:
            return f"{_SPELT[type(e)]}({self.names(self.arguments(e))})"
        if type(e) in _CALLED:
            return f"{self.called(e)}({self.names(self.arguments(e))})"
        raise _Unknown

    def names(self, nodes: list[exp.Expression]) -> str:
        return ", ".join(self.name(n) for n in nodes)

    @staticmethod
    def literal(e: exp.Expression) -> str:
        if isinstance(e, exp.Null):
            return "NULL"
        if isinstance(e, exp.Boolean):
            return "true" if e.this else "false"
        if e.is_string:
            return e.this
        text = e.this
        if not text.replace(".", "", 1).isdigit():
            raise _Unknown              # 1e3 and the like: Spark prints its own value
        return text

    def case(self, e: exp.Case) -> str:
        subject = e.this
        parts = ["CASE"]
        for branch in e.args.get("ifs") or ():
            cond = branch.this
            when = f"({self.name(subject)} = {self.name(cond)})" if subject is not None else self.name(cond)
            parts.append(f"WHEN {when} THEN {self.name(branch.args['true'])}")
        if e.args.get("default") is not None:
            parts.append(f"ELSE {self.name(e.args['default'])}")
        return " ".join(parts + ["END"])

    def count(self, e: exp.Count) -> str:
        arg = e.this
        if arg is None or isinstance(arg, exp.Star):
            return "count(1)"
        if isinstance(arg, exp.Distinct):
            return f"count(DISTINCT {self.names(arg.expressions)})"
        if e.expressions:
            raise _Unknown
        return f"count({self.name(arg)})"

    def substring(self, e: exp.Substring) -> str:
        """`substring(s, pos, len)` / `substr(...)`: by the name it was written with, in lower
        case whatever the case written; `SUBSTR(s FROM pos FOR len)` is `substring(...)` too;
        without a length, Spark's implied one shown. sqlglot keeps no position for the call, so
        the name is the one every call of the text comes to (unknown when they differ)."""
        start, length = e.args.get("start"), e.args.get("length")
        names = {_substring_name(self.text or "", m) for m in _SUBSTRING_CALL.finditer(self.text or "")}
        if start is None or len(names) != 1 or None in names:
            raise _Unknown
        tail = self.name(length) if length is not None else str(2**31 - 1)
        return f"{names.pop()}({self.name(e.this)}, {self.name(start)}, {tail})"

    def called(self, e: exp.Func) -> str:
        """The name the function was called by (read in the text), when it is one Spark knows it
        by; its only name when it has one."""
        names = _CALLED[type(e)]
        written = fn.written_name(e, self.text) if self.text is not None and e.meta.get("start") \
            is not None else None
        if written in names:
            return written
        if len(names) > 1 or written is not None:
            raise _Unknown              # several spellings and the written one unknown, or another
        return names[0]

    @staticmethod
    def arguments(e: exp.Func) -> list[exp.Expression]:
        out: list[exp.Expression] = []
        for key in e.arg_types:
            value = e.args.get(key)
            if value is None or key in _IMPLIED or isinstance(value, bool):
                continue                # filled in by sqlglot: not written
            if isinstance(value, list):
                out += value
            elif isinstance(value, exp.Expression):
                out.append(value)
            else:
                raise _Unknown          # a flag that changes what the call means
        return out


def _substring_name(text: str, call: re.Match) -> str | None:
    """Spark's name of the SUBSTRING call matched at `call`: the name written, in lower case,
    when its arguments are separated by commas; `substring` in the `FROM pos` form (checked on
    Spark 4.2); None when its first argument does not end before the text does."""
    depth, at, quote = 0, call.end(), None
    while at < len(text):
        ch = text[at]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return None
            depth -= 1
        elif depth == 0 and ch == ",":
            return call.group(1).lower()
        elif depth == 0 and _FROM.match(text, at) and not (text[at - 1].isalnum() or text[at - 1] == "_"):
            return "substring"
        at += 1
    return None
