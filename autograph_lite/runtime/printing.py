"""Text and DOT renderings of a Graph: every node with op, inputs, attrs, type and line."""
import numpy as np

from ..errors import printable, short_location
from .opdef import REGISTRY


def type_str(t):
    dims = ",".join("?" if d is None else str(d) for d in t.shape)
    return f"{t.dtype.name}[{dims}]" + ("(weak)" if t.weak else "")


def _attr_str(value):
    if isinstance(value, np.ndarray):
        return f"array({value.tolist()})" if value.size <= 8 else f"array<{value.dtype}{list(value.shape)}>"
    if isinstance(value, np.dtype):
        return value.name
    return printable(repr(value))


def _format(graph, indent, lines):
    pad = "  " * indent
    args = ", ".join(f"%{t.name}: {type_str(t)}" for t in graph.inputs)
    lines.append(f"{pad}graph {printable(graph.name)}({args}) {{")
    for node in graph.nodes:
        outs = ", ".join(f"%{t.name}" for t in node.outputs)
        ins = ", ".join(f"%{t.name}" for t in node.inputs)
        shown = getattr(REGISTRY.get(node.op), "printed_attrs", None)
        attrs = {k: v for k, v in node.attrs.items()
                 if not hasattr(v, "nodes") and (shown is None or k in shown)}
        attr_text = " {" + ", ".join(f"{k}={_attr_str(v)}" for k, v in attrs.items()) + "}" if attrs else ""
        types = ", ".join(type_str(t) for t in node.outputs)
        lines.append(f"{pad}  {outs} = {node.op}({ins}){attr_text} : {types}"
                     f"  # {short_location(node.location)}")
        for key, value in node.attrs.items():
            if hasattr(value, "nodes"):
                lines.append(f"{pad}    {key}:")
                _format(value, indent + 3, lines)
    lines.append(f"{pad}  return " + ", ".join(f"%{t.name}" for t in graph.outputs))
    lines.append(f"{pad}}}")


def format_graph(graph):
    lines = []
    _format(graph, 0, lines)
    return "\n".join(lines)


def _dot_string(text):
    """`text` as a quoted DOT string: quotes and backslashes escaped, a newline is a DOT line break."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{printable(text)}"'


def to_dot(graph):
    """Graphviz DOT source; sub-graphs become clusters."""
    q = _dot_string
    lines = [f"digraph {q(graph.name)} {{", "  node [shape=box, fontname=monospace];"]

    def emit(g, prefix):
        for t in g.inputs:
            label = t.name + "\n" + type_str(t)
            lines.append(f"  {q(prefix + t.name)} [label={q(label)}, shape=ellipse];")
        for node in g.nodes:
            nid = f"{prefix}{node.name}"
            label = node.op + "\n" + ", ".join(type_str(t) for t in node.outputs)
            lines.append(f"  {q(nid)} [label={q(label)}];")
            for t in node.inputs:
                src = t.name if t.node.op == "Placeholder" else t.node.name
                lines.append(f"  {q(prefix + src)} -> {q(nid)};")
            for key, sub in node.attrs.items():
                if hasattr(sub, "nodes"):
                    lines.append(f"  subgraph {q(f'cluster_{nid}_{key}')} {{ label={q(f'{node.name}.{key}')};")
                    emit(sub, f"{nid}.{key}/")
                    lines.append("  }")

    emit(graph, "")
    lines.append("}")
    return "\n".join(lines)
