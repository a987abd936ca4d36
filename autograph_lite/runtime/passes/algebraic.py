"""Algebraic simplification, written as rules: (op, match) -> the tensor that replaces it.

A rule only fires when the replacement has exactly the node's dtype and shape, so
broadcasting and type promotion are never changed.
"""
import numpy as np

from .util import rewire, subgraphs_first


def _const_equal(t, value):
    if t.node.op != "Const":
        return False
    v = t.node.attrs["value"]
    return np.ndim(v) == 0 and v == value


def _arg(i):
    return lambda node: node.inputs[i]


def _double_negation(node):
    inner = node.inputs[0]
    return inner.node.inputs[0] if inner.node.op == "Neg" else None


def _cast_to_same(node):
    return node.inputs[0] if node.inputs[0].dtype == node.attrs["dtype"] else None


def _transpose_of_transpose(node):
    inner = node.inputs[0]
    if inner.node.op != "Transpose":
        return None
    x = inner.node.inputs[0]
    identity = tuple(range(x.ndim))
    p1 = inner.node.attrs["perm"] or tuple(reversed(identity))
    p2 = node.attrs["perm"] or tuple(reversed(identity))
    return x if tuple(p1[i] for i in p2) == identity else None


# (op, condition on the node, replacement)
RULES = [
    ("Mul", lambda n: _const_equal(n.inputs[1], 1), _arg(0)),
    ("Mul", lambda n: _const_equal(n.inputs[0], 1), _arg(1)),
    ("Add", lambda n: _const_equal(n.inputs[1], 0), _arg(0)),
    ("Add", lambda n: _const_equal(n.inputs[0], 0), _arg(1)),
    ("Sub", lambda n: _const_equal(n.inputs[1], 0), _arg(0)),
    ("RealDiv", lambda n: _const_equal(n.inputs[1], 1), _arg(0)),
    ("Pow", lambda n: _const_equal(n.inputs[1], 1), _arg(0)),
    ("Neg", lambda n: True, _double_negation),
    ("Cast", lambda n: True, _cast_to_same),
    ("Transpose", lambda n: True, _transpose_of_transpose),
]


def _simplify(graph):
    replacements = {}
    for node in graph.nodes:
        node.inputs = tuple(replacements.get(id(t), t) for t in node.inputs)
        for op, condition, replacement in RULES:
            if node.op != op or not condition(node):
                continue
            new = replacement(node)
            out = node.outputs[0]
            if new is not None and new.dtype == out.dtype and new.shape == out.shape and new.weak == out.weak:
                replacements[id(out)] = new
                break
    rewire(graph, replacements)


def run(graph):
    subgraphs_first(graph, _simplify)
