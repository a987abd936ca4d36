"""Python builtins that mean something else on tensors: print, range, len."""
import builtins

from .. import ops
from ..runtime.graph import Tensor, current_graph
from .lists import TensorList


def print_(*args, sep=" ", end="\n", file=None, flush=False):
    """print: prints each time the graph runs if it has a tensor argument or sits in a branch
    or loop the graph decides; otherwise (Python values only, top level) prints while tracing."""
    graph = current_graph()
    staged = graph is not None and (graph.parent is not None or any(isinstance(a, Tensor) for a in args))
    if file is not None or not staged:
        return builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
    return ops.print(*args, sep=sep, end=end, always=True)


def range_(*args):
    """range: with a tensor bound, ag.range (a graph loop when iterated)."""
    if any(isinstance(a, Tensor) for a in args):
        return ops.range(*args)
    return builtins.range(*args)


def len_(value):
    """len: of a tensor whose first dim is unknown, a scalar tensor."""
    if isinstance(value, TensorList):
        return ops.shape(value.stacked())[0]
    if isinstance(value, Tensor):
        if value.ndim == 0:
            raise TypeError(f"len() of a scalar {value!r}")
        return value.shape[0] if value.shape[0] is not None else ops.shape(value)[0]
    return builtins.len(value)
