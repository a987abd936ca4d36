"""Constant folding: a pure op whose inputs are all constants becomes a constant; so does an
op whose value the trace already knows (`OpDef.static_value`: the shape of a known shape)."""
import numpy as np

from ..opdef import CONST

from .util import is_pure, subgraphs_first

MAX_FOLDED_ELEMENTS = 1 << 16  # do not bake large arrays into the plan


def _const(graph, value, like, before):
    if like.weak and np.ndim(value) == 0:
        value = np.asarray(value).item()
    elif not (isinstance(value, np.generic) and value.dtype == like.dtype):
        value = np.asarray(value, like.dtype)  # (a numpy scalar stays one: `x.shape[0]` is np.int64 eagerly)
    return graph.create_node(CONST, (), {"value": value},
                             [(like.shape, like.dtype, like.weak)], like.node.location, before=before)


def _fold(graph):
    folded = []
    for node in list(graph.nodes):
        values = _try_fold(node)
        if values is None:
            continue
        for out, value in zip(node.outputs, values):
            graph.replace_all_uses(out, _const(graph, value, out, before=node).outputs[0])
        folded.append(node)
    graph.erase_nodes(folded)


def _try_fold(node):
    opdef = node.opdef
    if opdef.static_value is not None:
        value = opdef.static_value(node)
        if value is not None:
            return [value]
    if not is_pure(node) or not node.inputs or any(i.node.opdef is not CONST for i in node.inputs):
        return None
    if any(None in o.shape or int(np.prod(o.shape)) > MAX_FOLDED_ELEMENTS for o in node.outputs):
        return None
    try:  # an op that would warn (log(0)) is left to warn when the graph runs, at the user's line
        with np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"):
            result = opdef.kernel(np, **node.attrs)(*[i.node.attrs["value"] for i in node.inputs])
    except Exception:  # leave it: the error surfaces when the graph runs, with the user's line
        return None
    return list(result) if len(node.outputs) > 1 else [result]


def run(graph):
    subgraphs_first(graph, _fold)
