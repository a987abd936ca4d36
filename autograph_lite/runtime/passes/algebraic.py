"""Algebraic simplification from the ops' facts: x * 1, x + -0.0, x - 0.0, x / 1, x ** 1
(`OpDef.identity`, both sides for a `commutative` op), -(-x) (`involution`), and each op's
own `simplify` rule (a cast to the dtype it has, transpose(transpose(x))).

A rule only fires when the replacement has exactly the node's dtype and shape, so
broadcasting and type promotion are never changed, and when it gives the node's value
bit for bit under IEEE arithmetic (-0.0 + 0.0 is +0.0, so `x + 0.0` stays; complex
products are not exact, so complex `x * 1` stays). A tensor its graph returns, or returns a
view of, is never replaced: eager returns a fresh array (or a view of one) there, not the
caller's own input, unless the replacement is a new array the graph made itself.
"""
import numpy as np

from ..opdef import CONST

from ..boxes import box_of
from .util import returned_through_views, subgraphs_first


def _is_identity(node, i, identity):
    """inputs[i] is a constant that leaves the other operand unchanged, and the result is real.
    For floats the sign of a zero identity matters (x + -0.0 is x; x + 0.0 is not, for x = -0.0)."""
    t = node.inputs[i]
    kind = node.outputs[0].dtype.kind
    if t.node.opdef is not CONST or kind not in "biuf":
        return False
    v = t.node.attrs["value"]
    if np.ndim(v) != 0 or v != identity:
        return False
    return kind != "f" or bool(np.signbit(v)) == bool(np.signbit(identity))


def _candidates(node):
    """Tensors with the node's value, by the op's facts, in order of preference."""
    opdef = node.opdef
    if opdef.identity is not None and len(node.inputs) == 2:
        for i in (1, 0) if opdef.commutative else (1,):
            if _is_identity(node, i, opdef.identity):
                yield node.inputs[1 - i]
    if opdef.involution and node.inputs[0].node.opdef is opdef:
        yield node.inputs[0].node.inputs[0]
    if opdef.simplify is not None:
        yield opdef.simplify(node)


def _new_array_of(graph, t):
    """Whether `t` is an array `graph` made itself (`OpDef.fresh`): returned in place of a value it
    equals, it shares no one's memory (a branch's `x[i] = x[i]` after `x[i] += v` on its own copy
    of NPBench's scattering_self_energies' Sigma stored the item twice an iteration)."""
    return t is not None and t.node.graph is graph and t.node.opdef.fresh


def _simplify(graph):
    returned = returned_through_views(graph)
    for node in graph.nodes:
        if node.opdef.structural or len(node.outputs) != 1:
            continue
        out = node.outputs[0]
        # a value a Cond or While takes in may come out of it as it is (a branch that returns it)
        if any(user.subgraphs() for user in out.users):
            continue
        for new in _candidates(node):
            if id(out) in returned and (not _new_array_of(graph, new) or id(new) in returned):
                continue  # (two results one array, where eager's are two: `y = a + 1; return y, y * 1`)
            if new is not None and new.dtype == out.dtype and new.shape == out.shape and new.weak == out.weak \
                    and (new.shape != () or box_of(new) == box_of(out)):  # `a - 0` is a numpy scalar, `a` may not be
                graph.replace_all_uses(out, new)
                if id(out) in returned:
                    returned.add(id(new))  # now returned itself: a later rule may not make it another result
                break


def run(graph):
    subgraphs_first(graph, _simplify)
