"""`and`, `or`, `not` and `a if c else b` as converted code calls them.

Operands come as functions so the right side runs only when Python would run it;
on a tensor left side the choice is made when the graph runs (a Cond), and the
result is an operand, as in Python: `x and y` is `y` when `x` is true, else `x`.
"""
import operator

import numpy as np

from .. import nest, ops
from ..nest import UNSET
from ..ops import math_ops
from ..errors import ConversionError, user_location
from ..ops.control_flow import zero_like
from ..ops import python_values
from ..ops.python_values import PythonValue
from ..runtime.boxes import ARRAY, box_of
from ..runtime.graph import Tensor


def and_(left, right, truth=False):
    """`left() and right()`; `truth`: only its truth value is used (an `if`/`while` test)."""
    value = left()
    if isinstance(value, PythonValue):  # known when the graph runs: its truth is a bool tensor
        return _known_later("and", value, right, truth)
    if isinstance(value, (Tensor, Choice)):
        return _staged("and", value, right, truth)
    return right() if value else value


def or_(left, right, truth=False):
    """`left() or right()`; `truth`: only its truth value is used (an `if`/`while` test)."""
    value = left()
    if isinstance(value, PythonValue):  # known when the graph runs: its truth is a bool tensor
        return _known_later("or", value, right, truth)
    if isinstance(value, (Tensor, Choice)):
        return _staged("or", value, right, truth)
    return value if value else right()


def _raising_when_evaluated(op, value, right, location):
    """`right`, where an error the user's code raises while it is traced (eagerly only on the runs
    that evaluate it: `x.all() and f()`) fails the graph on the runs that take its branch, which
    gives `value` as a stand-in, never used (as a raising branch of a tensor `if` does)."""
    from .control_flow import _Raises, _raising_when_taken
    run = _raising_when_taken(right, f"the right side of `{op}`", location,
                              "it is traced even where the data never evaluates it")

    def traced():
        out = run()
        return value if isinstance(out, _Raises) else out
    return traced


def _known_later(op, value, right, truth):
    """`value op right()` for a PythonValue `value`: a Cond on its truth giving `value` or `right()` (a
    PythonValue where they differ: the one the run took), or only the truth of that for a test."""
    right = _raising_when_evaluated(op, value, right, user_location(3))
    if truth:
        return _staged(op, python_values.truth(value), right, True)
    keep = lambda: value  # noqa: E731
    return ops.cond(python_values.truth(value), right, keep) if op == "and" else \
        ops.cond(python_values.truth(value), keep, right)


def _staged(op, value, right, truth):
    """A Cond choosing between `value` and `right()`; `right` is traced only in its branch."""
    location = user_location(3)
    if isinstance(value, Choice):
        value = value if not truth else value.truth()
    else:
        _check_truth(value, op, location)
    right = _raising_when_evaluated(op, value, right, location)
    if truth:
        left_result = lambda: ops.cast(value, bool)  # noqa: E731
        evaluate_right = lambda: _truth_of(right(), op, location)  # noqa: E731
        result = ops.cond(value, evaluate_right, left_result) if op == "and" else \
            ops.cond(value, left_result, evaluate_right)
        if isinstance(result, Tensor):
            result.python_box = None  # a Python bool on one side: only its truth is used
        return result
    return _choose(op, value, right, location)


def _choose(op, value, right, location):
    """`value op right()` as one Cond: `right()` is traced in the branch that takes it; the other
    branch gives `value` where both are tensors of one dtype, shape and box, and the result is a
    tensor (today's graph); otherwise placeholders, and the result is a `Choice` of the two."""
    pick = _truth_tensor(value)
    if op == "or":
        pick = math_ops.python_not(pick)  # the right side's branch is always the one traced first
    traced = {}

    def take_right():
        traced["right"] = r = _as_candidate(right(), op, location)
        if isinstance(r, _SCALARS) and not isinstance(value, Choice) and _merges(value, ops.convert_to_tensor(r)):
            r = ops.convert_to_tensor(r)  # a number of x's type and box: the result stays a tensor
        traced["merges"] = isinstance(r, Tensor) and _merges(value, r)
        return r if traced["merges"] else _tensor_leaves(r)

    def keep_left():
        if traced["merges"]:
            return value
        return [_placeholder_like(t, location) for t in _tensor_leaves(traced["right"])]

    out = ops.cond(pick, take_right, keep_left)
    if traced["merges"]:
        return out
    leaves = iter(out)
    return Choice(pick, value, _rebuild(traced["right"], leaves))


class Choice:
    """What `x and y` / `x or y` gives on a tensor x when eager would give back operands of different
    types (a numpy bool or a Python bool, a float64 or a Python int, arrays of different shapes):
    which one is known only when the graph runs. It holds the bool tensor `pick` and the two
    candidates (tensors, Python or numpy scalars, Choices): the compiled function returns the one
    picked, in its own box and dtype, as eagerly. Its truth can be tested (`if`, `while`, `not`,
    `and`/`or`); arithmetic on it is refused, since eager's dtype would depend on the pick (NEP 50)."""

    def __init__(self, pick, if_false, if_true):
        self.pick, self.if_false, self.if_true = pick, if_false, if_true

    def truth(self):
        """Its truth value as a bool tensor."""
        return math_ops.where(self.pick, _truth_tensor(self.if_true), _truth_tensor(self.if_false))

    def candidates(self):
        return (self.if_false, self.if_true)

    def stored(self, dtype):
        """What an array of `dtype` holds once this is stored into it (`a[i] = x or y`): the picked
        candidate cast to `dtype`. Refused where the store could depend on which one it is: candidates
        of different shapes, a Python number stored into an integer array (numpy range-checks it,
        and wraps a numpy integer), or a float or complex scalar stored into one (numpy converts it
        as Python's int() does, an OverflowError for inf, where a 0-d array's cast wraps: fuzzer
        seed 1192012259)."""
        dtype = np.dtype(dtype)
        values = [c.stored(dtype) if isinstance(c, Choice) else ops.convert_to_tensor(c) for c in self.candidates()]
        if values[0].shape != values[1].shape or (dtype.kind not in "bfc" and any(v.weak for v in values)) or (
                dtype.kind in "iu" and any(v.dtype.kind in "fc" and box_of(v) != ARRAY for v in values)):
            self._refuse()
        return math_ops.where(self.pick, *(ops.cast(v, dtype) for v in reversed(values)))

    def _refuse(self, *args, **kwargs):
        raise ConversionError(
            f"the result of `x and y` / `x or y` with a tensor x is {_describe(self.if_false)} or "
            f"{_describe(self.if_true)} by the value of x, and eager's type for what is computed from it "
            f"would depend on that value (NEP 50); only return it or test its truth, or make both operands "
            f"the same type (e.g. np.bool_(flag), np.float64(k)) (at {user_location(2)})")

    def __repr__(self):
        return f"<Choice of {_describe(self.if_false)} or {_describe(self.if_true)}>"

    def __getattr__(self, name):  # `(n or 2).astype(...)`: a method of whichever operand it is
        if name.startswith("__"):
            raise AttributeError(name)
        self._refuse()

    def __init_subclass__(cls, **kwargs):
        """A subclass's own `_refuse` (its message) answers every use a Choice refuses."""
        super().__init_subclass__(**kwargs)
        for name in _REFUSED_USES:
            setattr(cls, name, cls._refuse)


# the uses of a Choice (and of each subclass, with its own `_refuse`) that are refused
_REFUSED_USES = ("__array__", "__array_ufunc__", "__array_function__", "__bool__", "__len__", "__iter__",
                 "__str__", "__format__",
                 "__getitem__", "__float__", "__int__", "__index__", "__complex__", "__neg__", "__pos__",
                 "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
                 *(f"__{p}{o}__" for o in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                                          "and", "or", "xor", "lshift", "rshift") for p in ("", "r")))
for _name in _REFUSED_USES:
    setattr(Choice, _name, Choice._refuse)
Choice.__hash__ = object.__hash__


class MaybeNone(Choice):
    """What a converted function returns when a tensor condition decides whether a `return` ran:
    `value` where `returned` is true, else None (it fell off the end). The compiled function
    returns the one its run took; `r is None`, `r is not None` and its truth are tensors; any other
    use is refused (eager raises TypeError on the None runs, and the compiler cannot stage that)."""

    def __init__(self, returned, value, function, location):
        super().__init__(returned, None, value)
        self.function, self.location = function, location

    def _refuse(self, *args, **kwargs):
        raise ConversionError(
            f"the result of {self.function} is {_describe(self.if_true)} or None (it ends without `return` "
            f"on the runs a tensor condition chooses, at {self.location}); eagerly this use raises "
            f"TypeError on the None runs: only return it or test `is None`, or add a `return` at the end "
            f"of {self.function} (at {user_location(2)})")

    def __repr__(self):
        return f"<{_describe(self.if_true)[2:].lstrip()} or None>"



class MaybeUnset(Choice, nest.SetOnSomeRuns):
    """A dict item (`y['a']`) or an attribute (`o.b`) that a tensor `if` or loop sets on some runs
    only: first written inside a loop that may run zero times, or in one branch of an `if`. The
    value where `pick` is true, unset (the key or attribute absent, as eagerly) elsewhere. Returning
    the dict gives the key or not, and the caller's dict or object gets it or not; any use of the
    item in the function is refused (eager raises KeyError or AttributeError on the unset runs).
    `why` says where it is set: "first written inside the `while` loop on a tensor at f.py:3, so it
    is unset where the loop runs zero times"."""

    def __init__(self, pick, value, label, why, base, key):
        super().__init__(pick, UNSET, value)
        self.label, self.why, self.base, self.key = label, why, base, key

    def _refuse(self, *args, **kwargs):
        error = "a KeyError" if type(self.base) is dict else "an AttributeError"
        raise ConversionError(
            f"`{self.label}` is {self.why} (eagerly {error} on those runs); a compiled function can "
            f"return the dict holding it, or leave it in an argument, set on the runs that set it, but "
            f"not use it: give it a value before the block or on every path (at {user_location(2)})")

    def __repr__(self):
        return f"<{self.label}: {_describe(self.if_true)[2:].lstrip()} or unset>"


_SCALARS = (bool, int, float, complex, np.generic)


def _merges(left, right):
    return isinstance(left, Tensor) and right.dtype == left.dtype and right.shape == left.shape \
        and right.weak == left.weak


def _describe(candidate):
    """`candidate`'s type in words: "a Python int", "an int32", "a float64[3]"."""
    if isinstance(candidate, Choice):
        return f"({_describe(candidate.if_false)} or {_describe(candidate.if_true)})"
    if isinstance(candidate, Tensor):
        name = (f"Python {type(candidate.dtype.type(0).item()).__name__}" if candidate.weak else
                f"{candidate.dtype.name}{list(candidate.shape) if candidate.ndim else ''}")
    else:
        name = type(candidate).__name__ if isinstance(candidate, np.generic) else \
            f"Python {type(candidate).__name__}"
    return ("an " if name[0] in "aeiou" else "a ") + name


def _as_candidate(value, op, location):
    """The right side of a staged `and`/`or` as a candidate: tensors, Choices and scalars as they are
    (a scalar keeps its box), arrays as constants; anything else is refused."""
    if isinstance(value, (Tensor, Choice)) or isinstance(value, _SCALARS):
        return value
    if isinstance(value, np.ndarray):
        return ops.convert_to_tensor(value)
    raise ConversionError(
        f"`x {op} y` with a tensor x needs y to be a number, an array or a tensor, got "
        f"{type(value).__name__} {value!r}; the compiled function cannot return it by the value of x "
        f"(at {location})")


def _tensor_leaves(candidate):
    if isinstance(candidate, Tensor):
        return [candidate]
    if isinstance(candidate, Choice):
        return [candidate.pick, *_tensor_leaves(candidate.if_false), *_tensor_leaves(candidate.if_true)]
    return []


def _rebuild(candidate, leaves):
    """`candidate` with its tensors replaced, in order, by the next of `leaves`."""
    if isinstance(candidate, Tensor):
        return next(leaves)
    if isinstance(candidate, Choice):
        pick = next(leaves)
        return Choice(pick, _rebuild(candidate.if_false, leaves), _rebuild(candidate.if_true, leaves))
    return candidate


def _placeholder_like(t, location):
    """A value of `t`'s type for the branch that does not take it (never returned)."""
    if None in t.shape:
        raise ConversionError(
            f"`x and y` / `x or y` with a tensor x: y has the shape {t.shape} with unknown dims and "
            f"is not x's type; make both operands one dtype and shape (at {location})")
    return ops.convert_to_tensor(zero_like(t))


def _truth_tensor(value):
    """`bool(value)` as a bool tensor (a scalar's as a constant)."""
    if isinstance(value, Choice):
        return value.truth()
    if isinstance(value, Tensor):
        _check_truth(value, "truth", user_location(3))
        return value if value.dtype == np.bool_ and not value.weak else ops.cast(value, bool)
    return ops.convert_to_tensor(np.bool_(bool(value)))


def _truth_of(value, op, location):
    if isinstance(value, Choice):
        return value.truth()
    if isinstance(value, PythonValue):
        return python_values.truth(value)
    if isinstance(value, Tensor):
        _check_truth(value, op, location)
        return ops.cast(value, bool)
    return bool(value)


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
    if isinstance(left, PythonValue) or isinstance(right, PythonValue):
        result = python_values.defer(_COMPARISONS[name], left, right)  # compared when the graph runs
    else:
        result = _is_none(name, left, right)
    if result is None:
        result = _COMPARISONS[name](left, right)
    if not rest:
        return result
    return and_(lambda: result, lambda: compare(right, *rest, truth=truth), truth=truth)


def _is_none(name, left, right):
    """`r is None` / `r is not None` on a Choice that is None on some runs: a bool tensor; else None."""
    if name not in ("Is", "IsNot"):
        return None
    choice = left if right is None else right if left is None else None
    if isinstance(choice, MaybeUnset):
        choice._refuse()
    if not isinstance(choice, Choice) or not any(c is None for c in choice.candidates()):
        return None
    none = lambda c: c is None if not isinstance(c, Choice) else _is_none("Is", c, None)  # noqa: E731
    when_true, when_false = none(choice.if_true), none(choice.if_false)
    when_true, when_false = (x if isinstance(x, Tensor) else ops.convert_to_tensor(np.bool_(x))
                             for x in (when_true, when_false))
    result = math_ops.where(choice.pick, when_true, when_false)
    return result if name == "Is" else math_ops.python_not(result)


def not_(value):
    """`not value`: a bool, as in Python."""
    if isinstance(value, Choice):
        value = value.truth()
    if isinstance(value, PythonValue):
        value = python_values.truth(value)
    if isinstance(value, Tensor):
        _check_truth(value, "not", user_location(2))
        return math_ops.python_not(value)  # a Python bool, as `not` gives on numpy values too
    return not value


def if_exp(cond, if_true, if_false):
    """`if_true() if cond else if_false()`. On a tensor `cond`, a Python number on one side must
    be representable in the other side's dtype kind (eager would return either type)."""
    if isinstance(cond, Choice):
        cond = cond.truth()
    if isinstance(cond, PythonValue):
        cond = python_values.truth(cond)
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
        # of another kind, the Cond gives the number on the runs that take its side (a PythonBox)
        if isinstance(tensor, Tensor) and not tensor.weak and _same_kind(np.dtype(type(scalar)), tensor.dtype) \
                and not _fits(scalar, tensor.dtype):
            problem = f"{tensor.dtype.name} and the Python {type(scalar).__name__} {scalar!r}"
    elif isinstance(a, Tensor) and isinstance(b, Tensor) and a.weak != b.weak:
        if not _same_kind(a.dtype, b.dtype) and (b if a.weak else a).shape != ():
            problem = f"{a.dtype.name} and {b.dtype.name}"
    if problem:
        raise ConversionError(
            f"`a if c else b` with a tensor c has {problem} on its two sides; the eager result's type "
            f"would depend on the value of c: make both sides the same type (at {location})")
