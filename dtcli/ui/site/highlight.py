"""SQL as highlighted HTML (pygments, which escapes every token) and its generated style sheet."""

from __future__ import annotations

from functools import cache

from markupsafe import Markup


@cache
def _parts(jinja: bool):
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import SqlJinjaLexer, SqlLexer

    # SqlJinjaLexer: a table file as written may hold {{ ref() }} and {{ config() }}
    return (SqlJinjaLexer() if jinja else SqlLexer()), HtmlFormatter(nowrap=True)


def sql(text: str | None, *, jinja: bool = False) -> Markup:
    if not text:
        return Markup("")
    from pygments import highlight

    lexer, formatter = _parts(jinja)
    return Markup(highlight(text, lexer, formatter))


def style_sheet() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="friendly").get_style_defs(".sql")
