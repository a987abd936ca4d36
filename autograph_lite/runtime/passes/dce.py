"""Dead-code elimination: drop nodes that no output and no side effect depends on."""
from .util import has_effects, subgraphs_first


def live_nodes(graph):
    """ids of the nodes of `graph` an output or a side effect depends on."""
    members = {id(n) for n in graph.nodes}
    live, stack = set(), [t.node for t in graph.outputs] + [n for n in graph.nodes if has_effects(n)]
    while stack:
        node = stack.pop()
        if id(node) not in live and id(node) in members:
            live.add(id(node))
            stack.extend(t.node for t in node.inputs)
    return live


def _prune(graph):
    live = live_nodes(graph)
    graph.nodes = [n for n in graph.nodes if id(n) in live]


def run(graph):
    subgraphs_first(graph, _prune)
