"""Text, DOT and SVG renderings of a Graph: every node with op, inputs, attrs, type and line."""
from xml.sax.saxutils import escape

import numpy as np

from ..errors import printable, short_location
from ..recursion import iterate
from .opdef import COND, PLACEHOLDER


def type_str(t):
    dims = ",".join("?" if d is None else str(d) for d in t.shape)
    return f"{t.dtype.name}[{dims}]" + ("(weak)" if t.weak else "")


def _attr_str(value):
    if isinstance(value, np.ndarray):
        return f"array({value.tolist()})" if value.size <= 8 else f"array<{value.dtype}{list(value.shape)}>"
    if isinstance(value, np.dtype):
        return value.name
    return printable(repr(value))


def _format(graph, indent, lines):  # a walk for `iterate`: sub-graphs nest 1,000 deep in an elif chain
    pad = "  " * indent
    args = ", ".join(f"%{t.name}: {type_str(t)}" for t in graph.inputs)
    lines.append(f"{pad}graph {printable(graph.name)}({args}) {{")
    for node in graph.nodes:
        outs = ", ".join(f"%{t.name}" for t in node.outputs)
        ins = ", ".join(f"%{t.name}" for t in node.inputs)
        shown = node.opdef.printed_attrs
        attrs = {k: v for k, v in node.attrs.items()
                 if not hasattr(v, "nodes") and (shown is None or k in shown)}
        attr_text = " {" + ", ".join(f"{k}={_attr_str(v)}" for k, v in attrs.items()) + "}" if attrs else ""
        types = ", ".join(type_str(t) for t in node.outputs)
        lines.append(f"{pad}  {outs} = {node.op}({ins}){attr_text} : {types}"
                     f"  # {short_location(node.location)}")
        for key, value in node.attrs.items():
            if hasattr(value, "nodes"):
                lines.append(f"{pad}    {key}:")
                yield _format(value, indent + 3, lines)
    lines.append(f"{pad}  return " + ", ".join(f"%{t.name}" for t in graph.outputs))
    lines.append(f"{pad}}}")


def format_graph(graph):
    lines = []
    iterate(_format(graph, 0, lines))
    return "\n".join(lines)


def _dot_string(text):
    """`text` as a quoted DOT string: quotes and backslashes escaped, a newline is a DOT line break."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{printable(text)}"'


def node_label(node):
    """A node's picture label: op and name, output types, the user's line (a fused node: its expression)."""
    lines = [node.op if node.name == node.op else f"{node.op} {node.name}"]
    if node.op == "FusedElementwise":
        lines.append(node.attrs["expr"] if len(node.attrs["expr"]) <= 60 else node.attrs["expr"][:57] + "...")
    if node.outputs:
        lines.append(", ".join(type_str(t) for t in node.outputs))
    if node.forward is None:
        lines.append(short_location(node.location))
    else:  # a gradient node: the forward op and line it differentiates
        lines.append(f"grad of {node.forward.op} {node.forward.name} {short_location(node.forward.location)}")
    return "\n".join(lines)


def _node_style(node):
    if node.op == "FusedElementwise":
        return ", style=\"filled,bold\", fillcolor=\"#ffe9b3\""  # fused: drawn apart from single ops
    if node.forward is not None:
        return ", style=filled, fillcolor=\"#e8e0f8\""  # a gradient (backward) node
    return ""


def to_dot(graph):
    """Graphviz DOT source: Cond/While are clusters holding their sub-graphs, each node labelled with
    op, name, output types and the user's `file:line`; fused nodes and gradient nodes are shaded."""
    q = _dot_string
    lines = [f"digraph {q(graph.name)} {{", "  node [shape=box, fontname=monospace, fontsize=10];",
             "  compound=true;"]

    def source(t, prefix):
        return prefix + (t.name if t.node.opdef is PLACEHOLDER else t.node.name)

    def emit(g, prefix, pad, feeds):  # a walk for `iterate`
        for t, outer in zip(g.inputs, feeds):
            label = t.name + "\n" + type_str(t)
            lines.append(f"{pad}{q(prefix + t.name)} [label={q(label)}, shape=ellipse];")
            if outer is not None:  # the value a Cond/While hands in
                lines.append(f"{pad}{q(outer)} -> {q(prefix + t.name)} [style=dashed];")
        for node in g.nodes:
            nid = prefix + node.name
            lines.append(f"{pad}{q(nid)} [label={q(node_label(node))}{_node_style(node)}];")
            for t in node.inputs:
                lines.append(f"{pad}{q(source(t, prefix))} -> {q(nid)};")
            subs = [(key, sub) for key, sub in node.attrs.items() if hasattr(sub, "nodes")]
            if subs:
                lines.append(f"{pad}subgraph {q('cluster_' + nid)} {{ label={q(f'{node.op} {node.name}')}; "
                             f"style=rounded;")
                for key, sub in subs:
                    lines.append(f"{pad}  subgraph {q(f'cluster_{nid}.{key}')} {{ label={q(key)}; style=dashed;")
                    inner = f"{nid}.{key}/"
                    ins = [source(t, prefix) for t in node.inputs]
                    n = len(sub.inputs)
                    feeds = ins[1:] if node.opdef is COND else ins
                    yield emit(sub, inner, pad + "    ", (feeds + [None] * n)[:n])
                    out = f"{inner}return"
                    lines.append(f"{pad}    {q(out)} [label={q('return')}, shape=plaintext];")
                    lines.extend(f"{pad}    {q(source(t, inner))} -> {q(out)};" for t in sub.outputs)
                    lines.append(f"{pad}  }}")
                lines.append(f"{pad}}}")

    iterate(emit(graph, "", "  ", [None] * len(graph.inputs)))
    lines.append(f"  {q('return')} [shape=plaintext];")
    lines += [f"  {q(source(t, ''))} -> {q('return')};" for t in graph.outputs]
    lines.append("}")
    return "\n".join(lines)


# --- a picture without graphviz: one row per node, sub-graphs as nested boxes ----------------

_ROW, _CHAR, _INDENT = 34, 7, 18


def to_svg(graph):
    """An SVG picture of `graph` laid out without graphviz: nodes top to bottom in execution order,
    each Cond/While a box around its sub-graphs, edges as arcs on the left from producer to user."""
    rows, boxes = [], []  # rows: (depth, id, label lines, node or None); boxes: (depth, first, last, title)

    def walk(g, prefix, depth):  # a walk for `iterate`
        for t in g.inputs:
            rows.append((depth, prefix + t.name, [f"input {t.name}", type_str(t)], None))
        for node in g.nodes:
            rows.append((depth, prefix + node.name, node_label(node).split("\n"), node))
            for key, sub in node.attrs.items():
                if hasattr(sub, "nodes"):
                    first = len(rows)
                    yield walk(sub, f"{prefix}{node.name}.{key}/", depth + 1)
                    boxes.append((depth + 1, first, len(rows) - 1, f"{node.name}.{key}"))

    iterate(walk(graph, "", 0))
    index = {row[1]: i for i, row in enumerate(rows)}
    y = [0]
    for depth, _, label, _ in rows:
        y.append(y[-1] + _ROW + 12 * (len(label) - 1) + 10)
    left = 40 + 8 * len(rows) // 4  # room for the arcs
    titles = max((len(title) for *_, title in boxes), default=0)  # cluster names sit at the right
    widest = max((_INDENT * d + _CHAR * max(map(len, label)) for d, _, label, _ in rows), default=0)
    width = left + widest + 30 + _CHAR * titles
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y[-1] + 20}" '
           f'font-family="monospace" font-size="11">',
           f"<title>{escape(graph.name)}</title>",
           '<defs><marker id="arrow" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" '
           'orient="auto"><path d="M 0 0 L 6 3 L 0 6 z" fill="#888"/></marker></defs>']
    for depth, first, last, title in boxes:
        x0 = left + _INDENT * depth - 8
        out.append(f'<rect x="{x0}" y="{y[first] + 2}" width="{width - x0 - 10}" height="{y[last + 1] - y[first]}" '
                   f'rx="8" fill="none" stroke="#7a7aa8" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{width - 14}" y="{y[first] + 14}" text-anchor="end" fill="#7a7aa8">'
                   f'{escape(title)}</text>')
    for i, (depth, rid, label, node) in enumerate(rows):
        x = left + _INDENT * depth
        fill = "#ffe9b3" if node is not None and node.op == "FusedElementwise" else \
            "#e8e0f8" if node is not None and node.forward is not None else \
            "#eef6ee" if node is None else "#ffffff"
        h = y[i + 1] - y[i] - 10
        w = _CHAR * max(map(len, label)) + 12
        out.append(f'<g id="{escape(rid)}"><rect x="{x}" y="{y[i] + 10}" width="{w}" height="{h}" rx="3" '
                   f'fill="{fill}" stroke="#333"/>')
        for k, text in enumerate(label):
            weight = ' font-weight="bold"' if k == 0 else ""
            out.append(f'<text x="{x + 6}" y="{y[i] + 24 + 12 * k}"{weight}>{escape(text)}</text></g>'
                       if k == len(label) - 1 else
                       f'<text x="{x + 6}" y="{y[i] + 24 + 12 * k}"{weight}>{escape(text)}</text>')
        if node is None:
            continue
        prefix = rid[:len(rid) - len(node.name)]
        for t in node.inputs:
            src = index.get(prefix + (t.name if t.node.opdef is PLACEHOLDER else t.node.name))
            if src is None:
                continue
            y0, y1 = y[src] + 10 + _ROW // 2, y[i] + 10 + _ROW // 2
            bend = left - 10 - min(left - 20, 4 * (i - src))
            out.append(f'<path d="M {left + _INDENT * rows[src][0]} {y0} C {bend} {y0}, {bend} {y1}, {x} {y1}" '
                       f'fill="none" stroke="#888" marker-end="url(#arrow)"/>')
    out.append("</svg>")
    return "\n".join(out)
