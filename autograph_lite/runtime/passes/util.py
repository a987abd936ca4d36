"""Helpers the passes share: walking sub-graphs, what has side effects."""
from ..opdef import CONTROL_FLOW


def subgraphs_first(graph, fn):
    """Apply `fn` to every sub-graph (innermost first), then to `graph`."""
    for node in graph.nodes:
        for sub in node.subgraphs():
            subgraphs_first(sub, fn)
    fn(graph)


def has_effects(node):
    """True if running `node` does more than compute its outputs (random draws, prints, stacks)."""
    if node.opdef in CONTROL_FLOW:
        return any(has_effects(n) for sub in node.subgraphs() for n in sub.nodes)
    return node.opdef.stateful


def raises(node):
    """True if running `node` can raise where eager code would (`OpDef.raises`; for a Cond or While,
    a node of its sub-graphs): such a node is kept though nothing uses its outputs."""
    if node.opdef in CONTROL_FLOW:
        return any(raises(n) for sub in node.subgraphs() for n in sub.nodes)
    return node.opdef.raises(node)


def is_pure(node):
    return not node.opdef.structural and not node.opdef.stateful


def is_output(graph, t):
    """True if `graph` returns tensor `t` (eager returns a distinct array there)."""
    return any(o is t for o in graph.outputs)
