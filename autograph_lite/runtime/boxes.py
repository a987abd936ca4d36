"""Boxes: the Python type eager numpy gives a value, known while tracing.

A value is an ndarray, a numpy scalar (`np.float64`: numpy's ufuncs and reductions give one
for a 0-d result) or a Python number (a weak tensor, NEP 50). Only 0-d values can be other than
an ndarray. `box_of(t)` answers from the graph: a Const by what it holds, an argument by what
was passed, a captured value by its outer value, an op by its `OpDef.box` fact, numpy's rule
for ufuncs and reductions, and otherwise by running the op's kernel once on example values of
its inputs' boxes (one element each), which is how numpy itself boxes it.
"""
import numpy as np

from ..recursion import iterate
from .opdef import COND, CONST, PLACEHOLDER, WHILE, lookup

ARRAY, SCALAR, PYTHON = "array", "scalar", "python"
VARIES = "varies"  # a Cond's output whose branches give different boxes: known when the graph runs


def box_of(t):
    """ARRAY, SCALAR or PYTHON: how eager numpy holds the value Tensor `t` stands for."""
    return iterate(_box(t))


def _box(t):
    """box_of as a walk for `iterate`: the boxes it depends on (a captured value's outer value, a
    branch's output, an op's inputs) are yielded walks, so a chain of 10,000 takes no frames."""
    if t.weak:
        return PYTHON
    if t.shape != ():
        return ARRAY
    if t.box is not None:  # an argument: as it was passed
        return t.box
    node = t.node
    rule = _RULES.get(node.opdef)
    if rule is not None:
        return (yield from rule(node, t))
    opdef = node.opdef
    if opdef.box == ARRAY:
        return ARRAY
    if opdef.box == "input":
        return ARRAY if node.inputs[0].weak else (yield _box(node.inputs[0]))
    if opdef.box == SCALAR or opdef.ufunc is not None or opdef.reduce_with is not None or opdef.stateful:
        return SCALAR
    boxes = []
    for i in node.inputs:
        boxes.append((yield _box(i)))
    return by_example(node, t.index, boxes)


def eager_type(t):
    """The type eager code sees for Tensor `t`: np.ndarray, its numpy scalar type, or a Python type;
    None where it depends on the path a tensor `if` takes."""
    box = box_of(t)
    if box == VARIES:
        return None
    if box == PYTHON:
        return type(t.dtype.type(0).item())
    return t.dtype.type if box == SCALAR else np.ndarray


def _example(t, box):
    if box in (ARRAY, VARIES):
        return np.zeros(tuple(1 if d is None else d for d in t.shape), t.dtype)
    value = t.dtype.type(0)
    return value.item() if box == PYTHON else value


def _placeholder(node, t):
    outer = next((o for o, inner in node.graph.captures if inner is t), None)
    return (yield _box(outer)) if outer is not None else SCALAR


def _const(node, t):
    return ARRAY if isinstance(node.attrs["value"], np.ndarray) else SCALAR
    yield


def _cond(node, t):
    boxes = set()
    for key in ("then_branch", "else_branch"):
        boxes.add((yield _box(node.attrs[key].outputs[t.index])))
    return boxes.pop() if len(boxes) == 1 else VARIES


def _while(node, t):
    return (yield _box(node.inputs[t.index]))


# the box of a structural node's output (a walk, as `_box`); other ops: their OpDef's facts, else by example
_RULES = {PLACEHOLDER: _placeholder, CONST: _const, COND: _cond, WHILE: _while}


class PythonBox:
    """What eager holds for a value a tensor `if` merged from a Python number and a numpy value, or a
    tensor loop's variable that starts as a Python number (`Tensor.python_box`): the Python number
    `value` (a weak tensor; None: the tensor's own value as one) when `pick` is `python_when`, else
    the numpy value. A compiled call returns the one its path made; an op on it keeps the pick where
    eager's type on both paths allows. `loop`: a loop's result (refusals name the loop at `location`)."""
    __slots__ = ("pick", "python_when", "value", "location", "loop")

    def __init__(self, pick, python_when, value, location, loop=False):
        self.pick, self.python_when, self.value, self.location = pick, python_when, value, location
        self.loop = loop

    def paths(self):
        """(where eager's value is the Python number, where the numpy one, the remedy), in words."""
        if self.loop:
            return (f"the loop on a tensor at {self.location} ran zero times", "where it ran",
                    "start it as the type the loop makes (np.float64(0.0), not 0)")
        return (f"the tensor `if` at {self.location} took one branch", "where it took the other",
                "give both branches the same type (np.float32(0.0), or float(v))")


def by_example(node, index, boxes):
    """The box of output `index` of op `node` as its kernel gives it on one-element examples of
    its inputs, boxed as `boxes`."""
    try:
        with np.errstate(all="ignore"):
            result = lookup(node.op).kernel(np, **node.attrs)(*[_example(i, b) for i, b in zip(node.inputs, boxes)])
    except Exception:  # noqa: BLE001 - an op numpy refuses on the examples: numpy's usual rule
        return SCALAR
    if len(node.outputs) > 1:
        result = result[index]
    return ARRAY if isinstance(result, np.ndarray) else SCALAR
