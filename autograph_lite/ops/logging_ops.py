"""Ops with side effects when the graph runs: printing and assertions.

Both are stateful, so no pass folds, merges or drops them, and a Cond or While
holding one always runs.
"""
import builtins

import numpy as np

from ..errors import SymbolicValueError, user_location
from ..runtime import devices, fp_errors
from ..runtime.graph import Tensor, current_graph
from ..runtime.graph import Slot
from ..runtime.opdef import BOOL, PIECES, STR, STREAM, TEMPLATE, OneOf, OptionalOf
from .core import apply, define
from .python_values import PythonValue


class FormattedText:
    """An f-string argument of print that holds tensors: `pieces` are text or
    (value, conversion, format_spec); the text is made when the graph runs."""

    __slots__ = ("pieces",)

    def __init__(self, pieces):
        self.pieces = tuple(pieces)

    def __str__(self):
        raise TypeError("an f-string holding a symbolic tensor is only text when the graph runs; "
                        f"print it directly (at {user_location(2)})")


def _format(value, conversion, spec):
    if conversion == "%":  # one directive of a `%`-formatted string: `spec % (value,)`
        return spec % (value,)
    if conversion is not None:
        value = {"s": builtins.str, "r": builtins.repr, "a": builtins.ascii}[conversion](value)
    return builtins.format(value, spec)


def _render(entry, values):
    if isinstance(entry, Slot):
        return values[entry.k]
    if isinstance(entry, tuple):  # the pieces of a FormattedText
        return "".join(p if isinstance(p, builtins.str) else _format(values[p[0].k], p[1], p[2]) for p in entry)
    return entry


def _print_kernel(xp, template, sep, end, file=None, flush=False):
    def print_values(*values):
        builtins.print(*[_render(a, values) for a in template], sep=sep, end=end, file=file, flush=flush)
    if xp is np:
        return print_values

    def print_device_values(*values):  # read to the host: 0-d arrays print as numpy's scalars do
        print_values(*[devices.to_host(v, scalar=True) for v in values])
    return print_device_values


PRINT = define("Print", _print_kernel, lambda *inputs, **attrs: [], stateful=True,
               attrs={"template": TEMPLATE, "sep": STR, "end": STR, "file": OptionalOf(STREAM), "flush": BOOL})


def print(*args, sep=" ", end="\n", file=None, flush=False):  # noqa: A001 - ag.print
    """Print `args` when the graph runs (every time, every loop iteration); eagerly, print now.

    Inside a trace every print is a graph node, so prints come out in program order on
    every call; Python values are printed as they were when the print was traced.
    """
    if current_graph() is None:
        builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
        return None
    template, tensors = [], []

    def slot(tensor):
        tensors.append(tensor)
        return Slot(len(tensors) - 1)

    for a in args:
        if isinstance(a, PythonValue):  # a loop run as Python gave it: printed as that run made it
            template.append(slot(a.tensor))
        elif isinstance(a, Tensor):
            template.append(slot(a))
        elif isinstance(a, FormattedText):
            template.append(_formatted_pieces(a.pieces, slot))
        elif is_run_time_shape(a):
            template.append(_shape_pieces(a, slot))
        else:
            _refuse_nested_tensors(a)
            template.append(builtins.str(a))  # the value as it is now, as an eager print shows it
    attrs = {"template": tuple(template), "sep": _text(sep, "sep"), "end": _text(end, "end")}
    if file is not None or flush:
        attrs.update(file=file, flush=flush)
    apply(PRINT, tensors, attrs)
    return None


def _formatted_pieces(pieces, slot):
    """An f-string's pieces for the Print/Assert template (a shape known at run time: several)."""
    out = []
    for piece in pieces:
        if not isinstance(piece, builtins.str) and is_run_time_shape(piece[0]) and not piece[2]:
            out.extend(_shape_pieces(piece[0], slot))  # str, repr and format of a tuple of ints: one text
        else:
            out.append(_formatted_piece(piece, slot))
    return tuple(out)


def _formatted_piece(piece, slot):
    if isinstance(piece, builtins.str):
        return piece
    value, conversion, spec = piece
    if isinstance(value, PythonValue):
        return (slot(value.tensor), conversion, spec)  # the object itself: its repr is eager's too
    if not isinstance(value, Tensor):
        _refuse_nested_tensors(value)
        return _format(value, conversion, spec)
    if conversion == "%" and spec[-1] in "ra":
        raise TypeError(f"`{spec}` of a symbolic tensor in `%` formatting: its repr when the graph runs differs "
                        f"from the eager one; use %s (at {user_location(4)})")
    if conversion in ("r", "a"):
        raise TypeError(f"`{{x!{conversion}}}` of a symbolic tensor in an f-string: its repr when the graph "
                        f"runs differs from the eager one; format the value without !{conversion} "
                        f"(at {user_location(4)})")
    return (slot(value), conversion, spec)


def _refuse_format(tensor, spec):
    raise SymbolicValueError(
        f"formatting symbolic {tensor!r} into a string (f-string, str.format, format()) would give the "
        f"text 'Tensor(...)', not its value, which exists only when the graph runs. Pass the tensor "
        f"to print(...) or ag.print(...), which print it when the graph runs (at {user_location(2)})")


Tensor.__format__ = _refuse_format  # the text of a value needs the value: only print can wait for it


def _text(value, what):
    if value is None:
        return " " if what == "sep" else "\n"
    if isinstance(value, Tensor) or not isinstance(value, builtins.str):
        raise TypeError(f"print's {what} must be None or a string, not {type(value).__name__} "
                        f"(at {user_location(3)})")
    return value


def is_run_time_shape(value):
    """A tuple of ints some of which are weak int tensors: a shape with dims known only when the graph
    runs (`x.shape` in converted code, operators/shape_attributes.py)."""
    return type(value) is tuple and any(isinstance(d, Tensor) for d in value) and all(
        type(d) is int or isinstance(d, Tensor) and d.weak and d.ndim == 0 and d.dtype.kind in "iu" for d in value)


def _shape_pieces(shape, slot):
    """The text of such a tuple, as eager prints its Python ints: `(3, 2)`, `(3,)`."""
    pieces = ["("]
    for i, d in enumerate(shape):
        pieces.append(", " if i else "")
        pieces.append((slot(d), None, "") if isinstance(d, Tensor) else builtins.str(d))
    pieces.append(",)" if len(shape) == 1 else ")")
    return tuple(pieces)


def _refuse_nested_tensors(value, depth=0):
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    if depth > 20:
        return
    for item in items:
        if isinstance(item, Tensor):
            raise TypeError(
                f"print of a {type(value).__name__} that holds a symbolic tensor: its text would be "
                f"Tensor(...), not the value; pass the tensors as separate print arguments "
                f"(at {user_location(4 + depth)})")
        _refuse_nested_tensors(item, depth + 1)


# checks Python or numpy itself makes, not `assert`s: the loops' zero-trip checks, a branch of a
# tensor `if` that raised while traced (operators/control_flow.py RAISED_WHEN_TAKEN)
_CHECK_ERRORS = {e.__name__: e for e in (ValueError, UnboundLocalError, ZeroDivisionError, KeyError, IndexError,
                                         AttributeError, TypeError, OverflowError, AssertionError, NameError)}


def _assert_kernel(xp, message, location, error=None):
    def check(condition, *values):
        # a condition on the host (a Python value) is checked there, a device one read once
        if not bool((xp.all if devices.is_device_array(condition) else np.all)(condition)):
            values = [devices.to_host(v, scalar=True) for v in values]
            text = _render(message, values) if isinstance(message, tuple) else message
            if error in _CHECK_ERRORS:  # a check Python or numpy itself makes, not an `assert`
                raise _CHECK_ERRORS[error](f"{text} (at {location})")
            raise AssertionError(f"{text} (assert at {location})" if text else f"assertion failed at {location}")
    return check


ASSERT = define("Assert", _assert_kernel, lambda cond, *values, **attrs: [], stateful=True,
                attrs={"message": OneOf(STR, PIECES), "location": STR, "error": OptionalOf(STR)})


# the warning categories a Warn node gives besides RuntimeWarning, by name (an attr is a string)
WARNING_CATEGORIES = {"ComplexWarning": np.exceptions.ComplexWarning}


def _warn_kernel(xp, message, location, category=None):
    category = RuntimeWarning if category is None else WARNING_CATEGORIES[category]

    def warn(condition, *after):
        if bool((xp.any if devices.is_device_array(condition) else np.any)(condition)):
            fp_errors.warn_at(message, location, category=category)
    return warn


# a warning numpy gives for some values (`np.nanmax` of an all-NaN slice: a RuntimeWarning; `float()` of
# a complex scalar: a ComplexWarning), given when the graph runs at the user's line, filtered and shown
# once per line as numpy's
WARN = define("Warn", _warn_kernel, lambda cond, *after, **attrs: [], stateful=True,
              attrs={"message": STR, "location": STR, "category": OptionalOf(STR)})


def warn_if(condition, message, location, after=(), category=None):
    """numpy's RuntimeWarning (or `category`, a name in WARNING_CATEGORIES) `message` at `location` when
    the graph runs, if any of `condition` holds (after the values `after` are computed: where computing
    them raises, numpy does not warn)."""
    attrs = {"message": message, "location": location}
    if category is not None:
        attrs["category"] = category
    apply(WARN, (condition, *after), attrs)


def assert_that(condition, message=""):
    """Fail with AssertionError(message) when the graph runs if any element of `condition` is false.

    `message` may be a tensor or an f-string holding tensors: its text is made when it fails.
    """
    if not isinstance(condition, Tensor):
        if not condition:
            raise AssertionError(message)
        return None
    tensors = []

    def slot(tensor):
        tensors.append(tensor)
        return Slot(len(tensors) - 1)

    if isinstance(message, Tensor):
        message = ((slot(message), None, ""),)
    elif isinstance(message, FormattedText):
        message = _formatted_pieces(message.pieces, slot)
    else:
        _refuse_nested_tensors(message)
        message = builtins.str(message)
    apply(ASSERT, (condition, *tensors), {"message": message, "location": user_location(2)})
    return None
