"""Dead-code elimination: drop nodes that no output, no side effect and no error depends on."""
from ..opdef import PLACEHOLDER
from .util import has_effects, raises, subgraphs_first


def live_nodes(graph):
    """The nodes of `graph` an output or a side effect depends on, and those that can raise (an unused
    `x ** y` of ints still raises eagerly for a negative y)."""
    live = set()
    stack = [t.node for t in graph.outputs] + [n for n in graph.nodes if has_effects(n) or raises(n)]
    while stack:
        node = stack.pop()
        if node not in live and node.graph is graph and node.opdef is not PLACEHOLDER:
            live.add(node)
            stack.extend(t.node for t in node.inputs)
    return live


def _prune(graph):
    live = live_nodes(graph)
    graph.erase_nodes([n for n in graph.nodes if n not in live])


def run(graph):
    subgraphs_first(graph, _prune)
