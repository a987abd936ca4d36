"""Helpers the passes share: rewiring uses, walking sub-graphs, what has side effects."""
from ..opdef import lookup


def rewire(graph, replacements):
    """Point every use of a replaced tensor (by id) in `graph` at its replacement."""
    if not replacements:
        return
    for node in graph.nodes:
        if any(id(t) in replacements for t in node.inputs):
            node.inputs = tuple(replacements.get(id(t), t) for t in node.inputs)
    graph.outputs = [replacements.get(id(t), t) for t in graph.outputs]


def subgraphs_first(graph, fn):
    """Apply `fn` to every sub-graph (innermost first), then to `graph`."""
    for node in graph.nodes:
        for sub in node.subgraphs():
            subgraphs_first(sub, fn)
    fn(graph)


def has_effects(node):
    """True if running `node` does more than compute its outputs (random draws, prints, stacks)."""
    if node.op in ("Const", "Placeholder"):
        return False
    if node.op in ("Cond", "While"):
        return any(has_effects(n) for sub in node.subgraphs() for n in sub.nodes)
    return lookup(node.op).stateful


def is_pure(node):
    return node.op not in ("Cond", "While", "Const", "Placeholder") and not lookup(node.op).stateful
