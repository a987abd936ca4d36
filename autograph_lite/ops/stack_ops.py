"""Per-run stacks that carry values from a forward While to its backward While.

A `StackNew` node makes an empty stack each time the graph runs; the forward loop body
pushes the values of one iteration (`StackPush`); the backward loop pops them in
reverse (`StackPop`) until `StackSize` is 0. Memory grows with the trip count, one
entry per iteration.
"""
import numpy as np

from ..runtime.opdef import DTYPE, SHAPE, Record, TupleOf
from .core import GRADIENTS, apply, define

HANDLE = np.dtype(object)

NEW = define("StackNew", lambda xp: list, lambda: [((), HANDLE)], stateful=True)
PUSH = define("StackPush", lambda xp: lambda stack, *values: stack.append(values),
              lambda stack, *values: [], stateful=True)
SIZE = define("StackSize", lambda xp: len, lambda stack: [((), np.dtype(np.int64))], stateful=True)


def _pop_kernel(xp, specs):
    if len(specs) == 1:
        return lambda stack: stack.pop()[0]
    return lambda stack: stack.pop()


POP = define("StackPop", _pop_kernel, lambda stack, specs: list(specs), stateful=True,
             attrs={"specs": TupleOf(Record(SHAPE, DTYPE))})


def new_stack():
    return apply(NEW, (), {})


def push(stack, values):
    apply(PUSH, (stack, *values), {})


def pop(stack, specs):
    """The values of the last push, typed by `specs` [(shape, dtype)]."""
    out = apply(POP, (stack,), {"specs": tuple(specs)})
    return list(out) if isinstance(out, tuple) else [out]


def size(stack):
    return apply(SIZE, (stack,), {})


def _no_second_order(node, *dys):
    raise NotImplementedError(
        "gradients of a gradient through a data-dependent While loop are not supported "
        "(the backward loop reads the forward loop's stack); take second-order gradients "
        "of straight-line code and conditionals only")


for _op in (NEW, PUSH, POP, SIZE):
    GRADIENTS[_op] = _no_second_order
