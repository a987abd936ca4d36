"""Constant folding: a pure op whose inputs are all constants becomes a constant; so do
Shape and Size of tensors whose shape the trace knows."""
import numpy as np

from ..opdef import lookup
from .util import is_pure, rewire, subgraphs_first

MAX_FOLDED_ELEMENTS = 1 << 16  # do not bake large arrays into the plan


def _const(graph, value, like):
    if like.weak and np.ndim(value) == 0:
        value = np.asarray(value).item()
    node = graph.add_node("Const", (), {"value": value if like.weak else np.asarray(value, like.dtype)},
                          [(like.shape, like.dtype)], location=like.node.location, weak=like.weak)
    graph.nodes.pop()
    return node


def _fold(graph):
    replacements, nodes = {}, []
    for node in graph.nodes:
        node.inputs = tuple(replacements.get(id(t), t) for t in node.inputs)
        values = _try_fold(node)
        if values is None:
            nodes.append(node)
            continue
        for out, value in zip(node.outputs, values):
            const = _const(graph, value, out)
            nodes.append(const)
            replacements[id(out)] = const.outputs[0]
    graph.nodes = nodes
    rewire(graph, replacements)


def _try_fold(node):
    if node.op in ("Shape", "Size") and None not in node.inputs[0].shape:
        shape = node.inputs[0].shape
        return [np.array(shape, np.int64) if node.op == "Shape" else np.int64(np.prod(shape, dtype=np.int64))]
    if not is_pure(node) or not node.inputs or any(i.node.op != "Const" for i in node.inputs):
        return None
    if any(None in o.shape or int(np.prod(o.shape)) > MAX_FOLDED_ELEMENTS for o in node.outputs):
        return None
    try:  # an op that would warn (log(0)) is left to warn when the graph runs, at the user's line
        with np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"):
            result = lookup(node.op).kernel(np, **node.attrs)(*[i.node.attrs["value"] for i in node.inputs])
    except Exception:  # leave it: the error surfaces when the graph runs, with the user's line
        return None
    return list(result) if len(node.outputs) > 1 else [result]


def run(graph):
    subgraphs_first(graph, _fold)
