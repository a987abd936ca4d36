"""Python builtins that mean something else on tensors: print, range, len, str and string formatting."""
import builtins

from .. import ops
from ..errors import user_location
from ..ops.logging_ops import FormattedText
from ..runtime.graph import Tensor
from .exceptions import assert_stmt
from .lists import TensorList


def print_(*args, sep=" ", end="\n", file=None, flush=False):
    """print: inside a trace, a graph node (Python values as constants), so that every call prints
    what the eager run prints, in the same order, with tensor and Python-only prints interleaved."""
    return ops.print(*args, sep=sep, end=end, file=file, flush=flush)


def fstring(callee, *pieces):
    """An f-string: the text now, or, as an argument of the builtin print (or an assert's message)
    that holds tensors, the pieces formatted when the graph runs."""
    if (callee is builtins.print or callee is assert_stmt) and any(
            isinstance(p, tuple) and isinstance(p[0], Tensor) for p in pieces):
        return FormattedText(pieces)
    return "".join(p if isinstance(p, str) else _format_now(*p) for p in pieces)


def _format_now(value, conversion, spec):
    _refuse_tensors(value, "an f-string")
    if conversion is not None:
        value = {"s": str, "r": repr, "a": ascii}[conversion](value)
    return format(value, spec)


def percent_format(text, values):
    """`text % values`, refusing symbolic tensors (their text exists only when the graph runs)."""
    _refuse_tensors(values, "`%` formatting")
    return text % values


def str_(*args, **kwargs):
    """str(): of a symbolic tensor an error, not the text 'Tensor(...)'."""
    if args:
        _refuse_tensors(args[0], "str()")
    return str(*args, **kwargs)


def _refuse_tensors(value, what, depth=0):
    if isinstance(value, Tensor):
        raise TypeError(
            f"{what} of symbolic {value!r} would give the text 'Tensor(...)', not its value, which "
            f"exists only when the graph runs; pass the tensor to print(...) or ag.print(...) "
            f"instead (at {user_location(3 + depth)})")
    if depth < 20 and isinstance(value, (list, tuple, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            _refuse_tensors(item, what, depth + 1)


def range_(*args):
    """range: with a tensor bound, ag.range (a graph loop when iterated), marked so that a `for`
    over it gives Python ints (weak, NEP 50) as Python's range does, not ag.range's int64s."""
    if any(isinstance(a, Tensor) for a in args):
        r = ops.range(*args)
        r.graph.python_ranges[id(r)] = r
        return r
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
