"""Algebraic simplification, written as rules: (op, match) -> the tensor that replaces it.

A rule only fires when the replacement has exactly the node's dtype and shape, so
broadcasting and type promotion are never changed, and when it gives the node's value
bit for bit under IEEE arithmetic (-0.0 + 0.0 is +0.0, so `x + 0.0` stays; complex
products are not exact, so complex `x * 1` stays). A tensor its graph returns is never
replaced: eager returns a fresh array (or a view) there, not the caller's own input.
"""
import numpy as np

from .util import rewire, subgraphs_first


def _const_equal(t, value):
    if t.node.op != "Const":
        return False
    v = t.node.attrs["value"]
    return np.ndim(v) == 0 and v == value


def _real(node):
    return node.outputs[0].dtype.kind in "biuf"


def _unit(node, i):
    """inputs[i] is a constant 1 and the result is real: x * 1, x / 1 and x ** 1 are exactly x."""
    return _real(node) and _const_equal(node.inputs[i], 1)


def _additive_identity(node, i, sign):
    """inputs[i] is a zero that leaves x unchanged: any zero for integers; for floats only the
    zero of `sign` (x + -0.0 and x - +0.0 are x; -0.0 + 0.0 is +0.0)."""
    t = node.inputs[i]
    if not _const_equal(t, 0) or not _real(node):
        return False
    return node.outputs[0].dtype.kind != "f" or bool(np.signbit(t.node.attrs["value"])) == (sign < 0)


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
    ("Mul", lambda n: _unit(n, 1), _arg(0)),
    ("Mul", lambda n: _unit(n, 0), _arg(1)),
    ("Add", lambda n: _additive_identity(n, 1, -1), _arg(0)),
    ("Add", lambda n: _additive_identity(n, 0, -1), _arg(1)),
    ("Sub", lambda n: _additive_identity(n, 1, +1), _arg(0)),
    ("RealDiv", lambda n: _unit(n, 1), _arg(0)),
    ("Pow", lambda n: _unit(n, 1), _arg(0)),
    ("Neg", lambda n: True, _double_negation),
    ("Cast", lambda n: True, _cast_to_same),
    ("Transpose", lambda n: True, _transpose_of_transpose),
]


def _simplify(graph):
    # a value a Cond or While takes in may come out of it as it is (a branch that returns it)
    returned = {id(t) for t in graph.outputs} | {id(t) for n in graph.nodes if n.op in ("Cond", "While")
                                                 for t in n.inputs}
    replacements = {}
    for node in graph.nodes:
        node.inputs = tuple(replacements.get(id(t), t) for t in node.inputs)
        if any(id(t) in returned for t in node.outputs):
            continue
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
