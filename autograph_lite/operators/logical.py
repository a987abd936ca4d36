"""`and`, `or`, `not` and `a if c else b` as converted code calls them.

Operands come as functions so the right side runs only when Python would run it;
on a tensor left side the choice is made when the graph runs (a Cond).
"""
from .. import ops
from ..runtime.graph import Tensor


def and_(left, right):
    """`left() and right()`."""
    value = left()
    if isinstance(value, Tensor):
        return ops.cond(value, lambda: _as_bool(right()), lambda: _as_bool(value))
    return right() if value else value


def or_(left, right):
    """`left() or right()`."""
    value = left()
    if isinstance(value, Tensor):
        return ops.cond(value, lambda: _as_bool(value), lambda: _as_bool(right()))
    return value if value else right()


def not_(value):
    """`not value`."""
    if isinstance(value, Tensor):
        return ops.logical_not(value)
    return not value


def _as_bool(value):
    return ops.cast(value, bool) if isinstance(value, Tensor) and value.dtype != bool else value


def if_exp(cond, if_true, if_false):
    """`if_true() if cond else if_false()`."""
    return ops.cond(cond, if_true, if_false)
