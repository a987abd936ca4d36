"""`and`, `or`, `not` and `a if c else b` as converted code calls them.

Operands come as functions so the right side runs only when Python would run it;
on a tensor left side the choice is made when the graph runs (a Cond), and the
result is an operand, as in Python: `x and y` is `y` when `x` is true, else `x`.
"""
import operator

import numpy as np

from .. import ops
from ..ops import math_ops
from ..errors import ConversionError, user_location
from ..runtime.graph import Tensor


def and_(left, right, truth=False):
    """`left() and right()`; `truth`: only its truth value is used (an `if`/`while` test)."""
    value = left()
    if isinstance(value, Tensor):
        return _staged("and", value, right, truth)
    return right() if value else value


def or_(left, right, truth=False):
    """`left() or right()`; `truth`: only its truth value is used (an `if`/`while` test)."""
    value = left()
    if isinstance(value, Tensor):
        return _staged("or", value, right, truth)
    return value if value else right()


def _staged(op, value, right, truth):
    """A Cond choosing between `value` and `right()`; `right` is traced only in its branch."""
    location = user_location(3)
    _check_truth(value, op, location)
    if truth:
        left_result = lambda: ops.cast(value, bool)  # noqa: E731
        evaluate_right = lambda: _truth_of(right(), op, location)  # noqa: E731
    else:
        left_result = lambda: value  # noqa: E731
        evaluate_right = lambda: _like(value, right(), op, location)  # noqa: E731
    if op == "and":
        return ops.cond(value, evaluate_right, left_result)
    return ops.cond(value, left_result, evaluate_right)


def _truth_of(value, op, location):
    if isinstance(value, Tensor):
        _check_truth(value, op, location)
        return ops.cast(value, bool)
    return bool(value)


def _like(left, right, op, location):
    """`right` as a result that can merge with tensor `left`: same dtype and shape, or an error
    (eager's result type would depend on the value of `left`)."""
    if isinstance(right, (bool, int, float, complex)) and _fits(right, left.dtype):
        right = ops.convert_to_tensor(right)  # a Python scalar is weak
    if isinstance(right, Tensor) and right.weak and left.weak and right.dtype == left.dtype \
            and right.shape == left.shape:
        return right  # two Python numbers of one type stay a Python number (weak)
    if isinstance(right, Tensor) and right.weak != left.weak:
        # eagerly the result is a numpy value or a Python number (weak, NEP 50) by the value of x, and
        # later arithmetic types them apart: `-2 % (mask and False)` raises only for the Python bool
        number, array = ("y", "x") if right.weak else ("x", "y")
        raise ConversionError(
            f"`x {op} y` with a tensor x: {number} is a Python number and {array} a numpy value, so the "
            f"eager result is one or the other by the value of x, and numpy types them apart (NEP 50); "
            f"make both numpy values (e.g. np.bool_(flag), np.int64(k)) (at {location})")
    if isinstance(right, (np.ndarray, np.generic)):
        right = ops.convert_to_tensor(right)
    if not isinstance(right, Tensor):
        raise ConversionError(
            f"`x {op} y` with a tensor x needs y to be a tensor of the same dtype and shape, got "
            f"{type(right).__name__} {right!r}; the eager result's type would depend on the value of x "
            f"(at {location})")
    if right.dtype != left.dtype or right.shape != left.shape:
        raise ConversionError(
            f"`x {op} y` with a tensor x needs both operands to have the same dtype and shape, got "
            f"{left.dtype.name}{list(left.shape)} and {right.dtype.name}{list(right.shape)}; the eager "
            f"result's dtype would depend on the value of x: cast one operand (at {location})")
    return right


def _same_kind(a, b):
    return a.kind == b.kind or {a.kind, b.kind} == {"i", "u"}


def _fits(scalar, dtype):
    if not _same_kind(np.dtype(type(scalar)), dtype):
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min <= scalar <= np.iinfo(dtype).max
    return True


def _check_truth(value, what, location):
    if value.ndim != 0:
        raise ValueError(f"`{what}` on a tensor of shape {value.shape}: the truth value of an array with "
                         f"more than one element is ambiguous; use ag.logical_{what}"
                         f" (elementwise), ag.reduce_any or ag.reduce_all (at {location})")


_COMPARISONS = {"Eq": operator.eq, "NotEq": operator.ne, "Lt": operator.lt, "LtE": operator.le,
                "Gt": operator.gt, "GtE": operator.ge, "Is": operator.is_, "IsNot": operator.is_not,
                "In": lambda a, b: a in b, "NotIn": lambda a, b: a not in b}


def compare(left, *steps, truth=False):
    """`left op1 b op2 c ...` with steps `(op name, lambda: b)`: each operand evaluated once, the
    chain stopping at the first false comparison (`a < b < c` is `a < b and b < c`)."""
    (name, operand), rest = steps[0], steps[1:]
    right = operand()
    result = _COMPARISONS[name](left, right)
    if not rest:
        return result
    return and_(lambda: result, lambda: compare(right, *rest, truth=truth), truth=truth)


def not_(value):
    """`not value`: a bool, as in Python."""
    if isinstance(value, Tensor):
        _check_truth(value, "not", user_location(2))
        return math_ops.python_not(value)  # a Python bool, as `not` gives on numpy values too
    return not value


def if_exp(cond, if_true, if_false):
    """`if_true() if cond else if_false()`. On a tensor `cond`, a Python number on one side must
    be representable in the other side's dtype kind (eager would return either type)."""
    if not isinstance(cond, Tensor):
        return if_true() if cond else if_false()
    location = user_location(2)
    results = {}

    def record(side, fn):
        results[side] = fn()
        return results[side]

    merged = ops.cond(cond, lambda: record("true", if_true), lambda: record("false", if_false))
    _check_ternary_leaves(results["true"], results["false"], location)
    return merged


def _check_ternary_leaves(a, b, location):
    scalars = (bool, int, float, complex)
    problem = None
    if isinstance(a, scalars) and isinstance(b, scalars):
        if type(a) is not type(b):
            problem = f"a Python {type(a).__name__} and a Python {type(b).__name__}"
    elif isinstance(a, scalars) or isinstance(b, scalars):
        scalar, tensor = (a, b) if isinstance(a, scalars) else (b, a)
        if isinstance(tensor, Tensor) and not tensor.weak and not _fits(scalar, tensor.dtype):
            problem = f"{tensor.dtype.name} and the Python {type(scalar).__name__} {scalar!r}"
    elif isinstance(a, Tensor) and isinstance(b, Tensor) and a.weak != b.weak:
        if not _same_kind(a.dtype, b.dtype):
            problem = f"{a.dtype.name} and {b.dtype.name}"
    if problem:
        raise ConversionError(
            f"`a if c else b` with a tensor c has {problem} on its two sides; the eager result's type "
            f"would depend on the value of c: make both sides the same type (at {location})")
