"""The analyzer's record: the operator rows and blockers it collects, and where in the user's
file each construct is (line and offset, walking sqlglot's tokens back to the keyword)."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import Token
from sqlglot.tokens import TokenType as T

from dtcli.sql.analysis.nodes import at_line, first_start
from dtcli.sql.analysis.result import OperatorInfo, QueryAnalysis
from dtcli.sql.analysis.strategies import FULL, HARD_TOKENS
from dtcli.sql.rules._notes import REWRITE, Rewrite, note_of


class Recorder:
    """What the analyzer found so far, and the positions it reports them at; the rules (Analyzer
    and its mixins) walk the query and call `add`, `block`, `mark` and `pos`."""

    def __init__(self, sql: str, tokens: list[Token], root: exp.Expression,
                 rewrites: tuple[Rewrite, ...] = ()):
        self.sql, self.tokens, self.root, self.rewrites = sql, tokens, root, rewrites
        self.index = {tok.start: i for i, tok in enumerate(tokens)}
        self.ops: list[OperatorInfo] = []
        self.blockers: list[tuple[int, int, str]] = []
        self.ctes: dict[str, exp.Expression] = {}
        self.row_of: dict[int, int] = {}    # id of a construct's node -> its row in self.ops
        self.note_rows: dict[int, int] = {}  # a rule's note (its index) -> the row it labels

    def result(self) -> QueryAnalysis:
        # The reason names the construct that comes first in the text, not in reading order.
        blockers = tuple(reason for _, _, reason in sorted(self.blockers))
        return QueryAnalysis(not blockers, blockers[0] if blockers else None,
                             tuple(self.ops), blockers)

    # -- where things are -------------------------------------------------------------------

    def pos(self, node: exp.Expression, *keywords: T) -> tuple[int | None, int]:
        """Line and offset of a construct: its keyword if it has one, else its first token.

        sqlglot records positions on identifiers, literals and function names only, so we take
        the first of those inside the node and walk back over the tokens to its keyword.
        """
        start = first_start(node)
        if start is None:
            start = self._bare_start(node)
        if start is None:
            return (self.pos(node.parent, *keywords) if node.parent is not None else (None, 0))
        i = self.index.get(start)
        if i is None:
            return None, start
        for j in range(i - 1, max(i - 9, -1), -1):
            tok = self.tokens[j]
            if tok.token_type in keywords:
                return tok.line, tok.start
            if tok.token_type in HARD_TOKENS:
                break
        return self.tokens[i].line, start

    def _bare_start(self, node: exp.Expression) -> int | None:
        # A few constructs carry no position at all (current_date without parentheses,
        # GROUP BY ALL): match the n-th such node to the n-th token that spells it.
        if isinstance(node, exp.Func):
            names = {name.lower() for name in type(node).sql_names()}

            def spelt(k: int) -> bool:
                nxt = self.tokens[k + 1].token_type if k + 1 < len(self.tokens) else None
                return self.tokens[k].text.lower() in names and nxt != T.L_PAREN
        elif isinstance(node, exp.Group) and node.args.get("all"):
            def spelt(k: int) -> bool:
                return (self.tokens[k].token_type == T.GROUP_BY and k + 1 < len(self.tokens)
                        and self.tokens[k + 1].token_type == T.ALL)
        else:
            return None
        same = [n for n in self.root.walk(bfs=False)
                if type(n) is type(node) and first_start(n) is None]
        toks = [tok for k, tok in enumerate(self.tokens) if spelt(k)]
        hits = [k for k, n in enumerate(same) if n is node]
        return toks[hits[0]].start if len(toks) == len(same) and hits else None

    # -- recording ---------------------------------------------------------------------------

    def add(self, operator: str, strategy: str, where: tuple[int | None, int],
            considerations: tuple[str, ...] | list[str] = (), block: str | bool = False) -> None:
        """One operator row; `block` (True, or the construct's name) makes it force FULL."""
        line, offset = where
        if block:
            what = block if isinstance(block, str) else operator
            self.block(where, f"{what}{at_line(line)} cannot be refreshed incrementally")
        self.ops.append(OperatorInfo(operator, FULL if block else strategy,
                                     tuple(considerations), line, not block))

    def noted(self, node: exp.Expression) -> Rewrite | None:
        """The rules' note on a node they created (sql/rules), if any."""
        return note_of(node, self.rewrites)

    def at(self, start: int | None) -> tuple[int | None, int]:
        """Line and offset of a position in the user's file (a rule's note's `start`)."""
        if start is None:
            return None, 0
        i = self.index.get(start)
        return (self.tokens[i].line if i is not None else None), start

    def add_rewritten(self, node: exp.Expression, note: Rewrite) -> None:
        """The row of a construct a rule replaced: labelled as the user wrote it, at its line,
        with how its replacement refreshes; `node` (what the rule created) is marked, so that
        a shape refusal of the compiler lands on this row."""
        self.mark(node)
        label = note.construct + (f" → {note.rewritten_as}" if note.rewritten_as else "")
        self.add(label, note.strategy, self.at(note.start), note.considerations)

    def rewritten_row(self, node: exp.Expression) -> int:
        """The row of the rule's note on `node`: added when the first node the rule made for that
        construct is met (a rule may make several: one row per construct the user wrote)."""
        index = node.meta[REWRITE]
        if index not in self.note_rows:
            self.note_rows[index] = len(self.ops)
            self.add_rewritten(node, self.rewrites[index])
        return self.note_rows[index]

    def block(self, where: tuple[int | None, int], reason: str) -> None:
        self.blockers.append((where[1], len(self.blockers), reason))

    def mark(self, node: exp.Expression) -> None:
        """The next row recorded is `node`'s: the compiler's shape rule may name it (shape)."""
        self.row_of[id(node)] = len(self.ops)
