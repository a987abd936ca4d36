"""Text and DOT renderings of a Graph: every node with op, inputs, attrs, type and line."""
import numpy as np

from ..errors import short_location
from .opdef import REGISTRY


def type_str(t):
    dims = ",".join("?" if d is None else str(d) for d in t.shape)
    return f"{t.dtype.name}[{dims}]" + ("(weak)" if t.weak else "")


def _attr_str(value):
    if isinstance(value, np.ndarray):
        return f"array({value.tolist()})" if value.size <= 8 else f"array<{value.dtype}{list(value.shape)}>"
    if isinstance(value, np.dtype):
        return value.name
    return repr(value)


def _format(graph, indent, lines):
    pad = "  " * indent
    args = ", ".join(f"%{t.name}: {type_str(t)}" for t in graph.inputs)
    lines.append(f"{pad}graph {graph.name}({args}) {{")
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


def to_dot(graph):
    """Graphviz DOT source; sub-graphs become clusters."""
    lines = [f'digraph "{graph.name}" {{', "  node [shape=box, fontname=monospace];"]

    def emit(g, prefix):
        for t in g.inputs:
            lines.append(f'  "{prefix}{t.name}" [label="{t.name}\\n{type_str(t)}", shape=ellipse];')
        for node in g.nodes:
            nid = f"{prefix}{node.name}"
            lines.append(f'  "{nid}" [label="{node.op}\\n{", ".join(type_str(t) for t in node.outputs)}"];')
            for t in node.inputs:
                src = t.name if t.node.op == "Placeholder" else t.node.name
                lines.append(f'  "{prefix}{src}" -> "{nid}";')
            for key, sub in node.attrs.items():
                if hasattr(sub, "nodes"):
                    lines.append(f'  subgraph "cluster_{nid}_{key}" {{ label="{node.name}.{key}";')
                    emit(sub, f"{nid}.{key}/")
                    lines.append("  }")

    emit(graph, "")
    lines.append("}")
    return "\n".join(lines)
