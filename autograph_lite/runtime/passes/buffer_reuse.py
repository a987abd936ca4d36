"""Buffer reuse: an elementwise op writes its result into a dead input's buffer.

`v3 = v1 + v2` becomes `v1 += v2` (v3 is v1) when the op can run in place (`OpDef.in_place`;
`v2 = SetItem(v1, ...)` becomes `v1[...] = ...`, so a fill loop stores instead of copying)
and v1 is an array this graph computed itself as a new array (`OpDef.fresh`: not an input, a
constant or a view of either), nothing else reads it, and it has the result's static shape
and dtype. Saves an allocation per op, which matters for the small arrays of recurrent
cells. The mark is the node's `in_place_input`, which the lowering reads.
"""
import numpy as np

from .util import is_output, subgraphs_first


def _targets(opdef):
    """Which inputs the op may write into, in order of preference: where(c, x, y) keeps y and
    copies x in where c holds; a commutative op may write into either operand."""
    if opdef.in_place == "copyto":
        return (2,)
    if opdef.in_place == "store":
        return (0,)
    return (0, 1) if opdef.commutative else (0,)


def _mark(graph):
    for node in graph.nodes:
        opdef = node.opdef
        if opdef.in_place is None or not node.inputs:
            continue
        if opdef.in_place == "copyto" and (node.inputs[0].dtype != np.bool_ or node.inputs[1].weak):
            # copyto(where=c) needs a bool mask (where() takes any condition's truth), and it refuses a
            # Python int out of the target's range that where() wraps (fuzzer seed 5011349)
            continue
        out = node.outputs[0]
        for k in _targets(opdef):
            a = node.inputs[k]
            maker = a.node.opdef
            if (maker.fresh and a.node.graph is graph and a.users == [node]
                    and not is_output(graph, a) and a.shape == out.shape and None not in a.shape
                    and len(a.shape) >= 1 and a.dtype == out.dtype and not a.weak):
                node.in_place_input = k
                break


def run(graph):
    subgraphs_first(graph, _mark)
