"""Python builtins that mean something else on tensors: print, range, len, str, string formatting,
and the questions about a value's type (isinstance, type, hasattr, callable), answered for the
value eager code would hold (runtime/boxes.py)."""
import builtins
import functools

import numpy as np

from .. import ops
from ..errors import ConversionError, user_location
from ..ops.logging_ops import FormattedText
from ..runtime.boxes import SCALAR, box_of, eager_type
from ..ops.control_flow import python_scalar
from ..runtime.graph import Tensor, current_graph
from .exceptions import assert_stmt
from .lists import TensorList
from .logical import Choice


def print_(*args, sep=" ", end="\n", file=None, flush=False):
    """print: inside a trace, a graph node (Python values as constants), so that every call prints
    what the eager run prints, in the same order, with tensor and Python-only prints interleaved.
    A `Choice` (`x and y` of two types) prints as the operand picked when the graph runs."""
    graph = current_graph()
    args = tuple(_as_choice(a) if isinstance(a, Tensor) and a.python_box is not None and a.node.graph is graph
                 else a for a in args)
    at = next((i for i, a in enumerate(args) if isinstance(a, Choice)), None)
    if at is not None:
        def printing(candidate):
            return lambda: print_(*args[:at], candidate, *args[at + 1:], sep=sep, end=end, file=file, flush=flush)
        ops.cond(args[at].pick, printing(args[at].if_true), printing(args[at].if_false))
        return None
    return ops.print(*args, sep=sep, end=end, file=file, flush=flush)


def _as_choice(t):
    """Tensor `t` that a tensor `if` merged from a Python number and a numpy value (`PythonBox`) as a
    Choice of the two, so it prints as the one its branch made (`5`, not `5.0`)."""
    box = t.python_box
    python = box.value
    if python is None:
        default = np.dtype(type(t.dtype.type(0).item()))
        python = python_scalar(t if t.dtype == default else ops.cast(t, default))
    return Choice(box.pick, *((t, python) if box.python_when else (python, t)))


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


def _eager_types(value):
    """The types eager code may hold for `value`: one, or a Choice's candidates' (known when the graph
    runs); None for a value that is not symbolic."""
    if isinstance(value, Tensor):
        types = [eager_type(value)]  # None: it depends on the path a tensor `if` took
        if value.python_box is not None:  # a Python number on the runs that took one side
            python = value if value.python_box.value is None else value.python_box.value
            types.append(builtins.type(python.dtype.type(0).item()))
        return types
    if isinstance(value, TensorList):
        return [list]
    if isinstance(value, Choice):
        return [t for c in value.candidates() for t in (_eager_types(c) or [builtins.type(c)])]
    return None


def _same_answer(value, answer, what):
    """`answer(type)` for each type eager may hold for `value`; refused where they differ."""
    types = _eager_types(value)
    answers = {answer(t) for t in types if t is not None}
    if len(answers) > 1 or None in types:
        raise ConversionError(f"{what} of {value!r}: eagerly the value is a numpy scalar or an array (or another "
                              f"type) by the path a tensor `if`, a loop iteration or `x and y` / `x or y` took, known "
                              f"only when the graph runs; give both paths one type (np.asarray(v), v[()]) "
                              f"(at {user_location(3)})")
    return answers.pop()


def isinstance_(value, classinfo):
    """isinstance: a tensor is an instance of what eager code holds (np.ndarray, np.float64, float);
    `isinstance(t, ag.Tensor)` stays true (the one way to ask whether code is being traced)."""
    if _eager_types(value) is None or (isinstance(value, Tensor) and builtins.isinstance(value, classinfo)):
        return builtins.isinstance(value, classinfo)
    return _same_answer(value, lambda t: builtins.issubclass(t, classinfo), "isinstance()")


def type_(*args):
    """type: of a tensor, the type of the value eager code holds (`type(x) is np.ndarray`)."""
    if len(args) == 1 and _eager_types(args[0]) is not None:
        return _same_answer(args[0], lambda t: t, "type()")
    return builtins.type(*args)


def hasattr_(value, name):
    """hasattr: of a tensor, whether the value eager code holds has attribute `name`."""
    if _eager_types(value) is None:
        return builtins.hasattr(value, name)
    return _same_answer(value, lambda t: builtins.hasattr(t, name), "hasattr()")


def callable_(value):
    """callable: a tensor is not callable, as an array is not."""
    if _eager_types(value) is None:
        return builtins.callable(value)
    return _same_answer(value, lambda t: any("__call__" in vars(k) for k in t.__mro__), "callable()")


@functools.lru_cache(maxsize=None)
def numpy_scalar_type(scalar_type):
    """A numpy scalar type called on a tensor (`np.float32(t)`, `type(s)(t)`): the value as that type,
    a numpy scalar where it is 0-d (as eagerly), else an array."""
    def convert(*args, **kwargs):
        if len(args) != 1 or kwargs or not isinstance(args[0], Tensor):
            return scalar_type(*args, **kwargs)
        out = ops.cast(args[0], scalar_type)
        return out[()] if out.ndim == 0 and box_of(out) != SCALAR else out
    return convert
