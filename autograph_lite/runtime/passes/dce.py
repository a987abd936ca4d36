"""Dead-code elimination: drop nodes that no output, no side effect and no error depends on."""
from ..opdef import CONTROL_FLOW, PLACEHOLDER
from .util import has_effects, raises, subgraphs_first


def live_nodes(graph, kept=None):
    """The nodes of `graph` an output or a side effect depends on, and those that can raise (an unused
    `x ** y` of ints still raises eagerly for a negative y). `kept`: what `_kept` knows already."""
    kept = {} if kept is None else kept
    live = set()
    stack = [t.node for t in graph.outputs] + [n for n in graph.nodes if _kept(n, kept)]
    while stack:
        node = stack.pop()
        if node not in live and node.graph is graph and node.opdef is not PLACEHOLDER:
            live.add(node)
            stack.extend(t.node for t in node.inputs)
    return live


def _kept(node, kept):
    """True if `node` has effects or can raise; a Cond's or While's answer is remembered in `kept`
    (id -> (node, answer)): its sub-graphs are pruned first, so each is asked about once, not once
    per level of the Conds around it (an `elif` chain nests 1,000 deep)."""
    if node.opdef not in CONTROL_FLOW:
        return has_effects(node) or raises(node)
    hit = kept.get(id(node))
    if hit is None:
        hit = kept[id(node)] = (node, any(_kept(n, kept) for sub in node.subgraphs() for n in sub.nodes))
    return hit[1]


def _prune(graph, kept):
    live = live_nodes(graph, kept)
    graph.erase_nodes([n for n in graph.nodes if n not in live])


def run(graph):
    kept = {}
    subgraphs_first(graph, lambda g: _prune(g, kept))
