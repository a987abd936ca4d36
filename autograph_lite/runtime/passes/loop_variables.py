"""Merge a While's duplicate loop variables: two that start as the same tensor and that the body
gives back as the same tensor hold the same value at every iteration, so one carries both.

Tracing makes such pairs wherever a loop writes into an array: the user's name for the array
(a handle) and the memory it writes (runtime/memory.py's carried base) are both loop variables.
Carried twice, an array is copied twice into a native loop and copied back after every
iteration that writes it; carried once, it is written in place.
"""
from ..opdef import WHILE
from .util import subgraphs_first


def _duplicate(loop, j):
    """The loop variable before j that always holds what j holds, else None."""
    body = loop.attrs["body"]
    for i in range(j):
        if loop.inputs[i] is loop.inputs[j] and body.outputs[i] is body.outputs[j]:
            return i
    return None


def _merge(loop, graph):
    body, cond = loop.attrs["body"], loop.attrs["cond"]
    j = len(body.outputs) - 1
    while j > 0:
        i = _duplicate(loop, j)
        if i is None or any(t is loop.outputs[j] for _, t in graph.write_backs.values()):
            j -= 1
            continue
        for sub in (body, cond):
            sub.replace_all_uses(sub.inputs[j], sub.inputs[i])
            del sub.inputs[j]
        del body.outputs[j]
        graph.replace_all_uses(loop.outputs[j], loop.outputs[i])
        loop.inputs = loop.inputs[:j] + loop.inputs[j + 1:]
        del loop.outputs[j]
        for k, t in enumerate(loop.outputs):
            t.index = k
        loop._aliases = None
        j -= 1


def _visit(graph):
    for node in list(graph.nodes):
        if node.opdef is WHILE:
            _merge(node, graph)


def run(graph):
    subgraphs_first(graph, _visit)
