"""A DT's column lineage drawn at generate time (SVG, no script): its inputs' columns on the left,
grouped by input, its own columns on the right, a curve from each input column to each output
column made of it, styled by how (identity, transformation, aggregation; dashed when indirect:
a window's PARTITION BY, a CASE condition). The columns that decide which rows exist (filters,
joins, grouping) carry that as a tag on the left. Every text goes through `escape`."""

from __future__ import annotations

from markupsafe import Markup, escape

from dtcli.artifacts.explain import ColumnLineage, LineageTransformation

ROW, HEAD, GAP, PAD = 20, 24, 12, 8
CHAR = 7.4            # px per character of the 12 px labels: boxes sized without a browser
MIDDLE = 200          # room for the curves between the two columns
_RANK = {"IDENTITY": 0, "TRANSFORMATION": 1, "AGGREGATION": 2}


def _kind(transformations: list[LineageTransformation]) -> str | None:
    """The edge's style: the strongest DIRECT subtype, else indirect; None for dataset-only."""
    direct = [t.subtype for t in transformations if t.type == "DIRECT"]
    if direct:
        return max(direct, key=lambda s: _RANK.get(s, 0)).lower()
    return "indirect" if transformations else None


def _how(transformations: list[LineageTransformation]) -> str:
    return ", ".join(t.subtype.lower().replace("_", " ") + (" (masked)" if t.masking else "")
                     for t in transformations)


def column_lineage_svg(name: str, lineage: ColumnLineage | None, pages: dict[str, str]) -> Markup:
    """The drawing of `lineage` (explain's `column_lineage`), links to the inputs' pages."""
    if not lineage or not lineage.columns:
        return Markup("")
    inputs: dict[str, dict[str, list[str]]] = {}      # input -> column -> the rows' roles (filter, join...)
    for column in lineage.columns:
        for f in column.inputs:
            inputs.setdefault(f.input, {}).setdefault(f.column, [])
    for f in lineage.dataset:
        roles = inputs.setdefault(f.input, {}).setdefault(f.column, [])
        roles += [t.subtype.lower().replace("_", " ") for t in f.transformations if t.subtype]
    left_texts = [i for i in inputs] + [c + "  " + " · ".join(r) for cols in inputs.values() for c, r in cols.items()]
    left_w = max(140, int(CHAR * max(map(len, left_texts), default=8)) + 2 * PAD)
    right_w = max(140, int(CHAR * max(len(name), *(len(c.name) for c in lineage.columns))) + 2 * PAD)
    right_x = left_w + MIDDLE
    out, where, y = [], {}, PAD
    for input_name, columns in inputs.items():
        top = y
        label = escape(input_name)
        if input_name in pages:
            label = Markup(f'<a href="../{escape(pages[input_name])}">{label}</a>')
        out.append(f'<text class="cl-input" x="{PAD}" y="{y + 16}">{label}</text>')
        y += HEAD
        for column, roles in columns.items():
            where[(input_name, column)] = y + ROW / 2
            tag = f'<tspan class="cl-role"> {escape(" · ".join(dict.fromkeys(roles)))}</tspan>' if roles else ""
            out.append(f'<text class="cl-col" x="{PAD + 6}" y="{y + 14}">{escape(column)}{tag}</text>')
            y += ROW
        out.insert(len(out) - len(columns) - 1,
                   f'<rect class="cl-box" x="1" y="{top}" width="{left_w - 2}" height="{y - top + 4}" rx="6"/>')
        y += GAP
    left_h = y
    y = PAD
    out.append(f'<rect class="cl-box cl-own" x="{right_x}" y="{y}" width="{right_w}" '
               f'height="{HEAD + ROW * len(lineage.columns) + 4}" rx="6"/>')
    out.append(f'<text class="cl-input" x="{right_x + PAD}" y="{y + 16}">{escape(name)}</text>')
    y += HEAD
    edges = []
    for column in lineage.columns:
        mid = y + ROW / 2
        out.append(f'<text class="cl-col" x="{right_x + PAD + 6}" y="{y + 14}">{escape(column.name)}</text>')
        for f in column.inputs:
            kind = _kind(f.transformations)
            start = where.get((f.input, f.column))
            if kind is None or start is None:
                continue
            x1, x2, bend = left_w - 1, right_x, MIDDLE / 2
            title = escape(f"{f.input}.{f.column} → {column.name}: {_how(f.transformations)}")
            edges.append(f'<path class="cl-edge cl-{kind}" d="M{x1},{start:.1f} C{x1 + bend},{start:.1f} '
                         f'{x2 - bend},{mid:.1f} {x2},{mid:.1f}"><title>{title}</title></path>')
        y += ROW
    height = int(max(left_h, y + PAD))
    width = right_x + right_w + 2
    return Markup(f'<svg class="column-lineage" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" role="img" aria-label="column lineage of {escape(name)}">'
                  + "".join(edges) + "".join(out) + "</svg>")
