"""Buffer reuse: an elementwise op writes its result into a dead input's buffer.

`v3 = v1 + v2` becomes `v1 += v2` (v3 is v1) when v1 is an array this graph computed
itself (not an input, a constant or a view of either), nothing else reads it, and it
has the result's static shape and dtype. Saves an allocation per op, which matters for
the small arrays of recurrent cells. Marks are kept in `graph.reuse` for the lowering.
"""
import numpy as np

from .util import subgraphs_first

# results that are new arrays (never views of their inputs)
_FRESH = {"Add", "Sub", "Mul", "RealDiv", "Tanh", "Exp", "Log", "Sqrt", "Square", "Abs", "Neg",
          "Relu", "Sigmoid", "MatMul", "FusedElementwise", "Select", "Softmax", "Maximum", "Minimum"}
# ops the plan can run in place on their first input
IN_PLACE = {"Add": "+=", "Sub": "-=", "Mul": "*=", "RealDiv": "/=",
            "Tanh": "tanh", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Square": "square",
            "Abs": "absolute", "Neg": "negative", "Select": "copyto"}
# which inputs a node may write into, in order of preference: where(c, x, y) keeps y and
# copies x in where c holds; a commutative op may write into either operand
TARGET_INPUTS = {"Select": (2,), "Add": (0, 1), "Mul": (0, 1)}


def _mark(graph):
    users = {}
    for node in graph.nodes:
        for t in node.inputs:
            users.setdefault(id(t), []).append(node)
    escaping = {id(t) for t in graph.outputs}
    reuse = {}
    for node in graph.nodes:
        if node.op not in IN_PLACE or not node.inputs:
            continue
        if node.op == "Select" and node.inputs[0].dtype != np.bool_:
            continue  # copyto(where=c) needs a bool mask; where() takes any condition's truth
        out = node.outputs[0]
        for k in TARGET_INPUTS.get(node.op, (0,)):
            a = node.inputs[k]
            if (a.node.op in _FRESH and a.node in graph.nodes and users.get(id(a)) == [node]
                    and id(a) not in escaping and a.shape == out.shape and None not in a.shape
                    and len(a.shape) >= 1 and a.dtype == out.dtype and not a.weak):
                reuse[id(node)] = k
                break
    graph.reuse = reuse


def run(graph):
    subgraphs_first(graph, _mark)
