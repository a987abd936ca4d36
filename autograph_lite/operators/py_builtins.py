"""Python builtins that mean something else on tensors: print, range, len."""
import builtins

from .. import ops
from ..runtime.graph import Tensor
from .lists import TensorList


def print_(*args, sep=" ", end="\n", file=None, flush=False):
    """print: inside a trace, a graph node (Python values as constants), so that every call prints
    what the eager run prints, in the same order, with tensor and Python-only prints interleaved."""
    return ops.print(*args, sep=sep, end=end, file=file, flush=flush)


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
