"""numpy ufuncs on tensors (NEP 13): `np.sin(t)`, `a + t` with an ndarray `a`, `np.add.outer`,
`np.add.reduce`, each through one table from the ufunc to its op."""
import numpy as np

from ...errors import ConversionError, user_location
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..core import apply

# numpy ufunc -> op, the one table `np.<ufunc>(t, ...)` goes through (NEP 13): every op whose
# `ufunc` fact names one (np.sin(t), ndarray + t, np.add.outer(a, t))
UFUNC_OPS = {getattr(np, op.ufunc): op for op in math_ops.OPS.values() if op.ufunc}

# `ufunc.reduce` for the ufuncs with a reduction op (np.add.reduce(t, axis) is t.sum(axis))
UFUNC_REDUCTIONS = {np.add: math_ops.reduce_sum, np.multiply: math_ops.reduce_prod,
                    np.maximum: math_ops.reduce_max, np.minimum: math_ops.reduce_min,
                    np.logical_and: math_ops.reduce_all, np.logical_or: math_ops.reduce_any}

_OPERATOR_SYMBOLS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/",
                     np.floor_divide: "//", np.remainder: "%", np.power: "**", np.matmul: "@"}


def _refuse(ufunc, method, detail=""):
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    raise ConversionError(f"{name}{detail} is not supported on tensors (at {user_location(3)})")


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's hook for every ufunc call with a Tensor operand: `np.sin(t)`, `a + t`,
    `np.add.outer(a, t)`, `np.add.reduce(t, axis)`, routed through `UFUNC_OPS`."""
    if method == "__call__" and isinstance(kwargs.get("out"), tuple) and isinstance(kwargs["out"][0], np.ndarray):
        symbol = _OPERATOR_SYMBOLS.get(ufunc, f"np.{ufunc.__name__}(..., out=a)")
        raise TypeError(f"a numpy array cannot be updated in place with a symbolic tensor (`a {symbol}= t`, at "
                        f"{user_location(2)}): compiled code cannot change a numpy array the function "
                        f"holds, and others may hold it too. Write `a = a {symbol} t` to make a new value")
    op = UFUNC_OPS.get(ufunc)
    if method == "reduce" and ufunc in UFUNC_REDUCTIONS:
        return _reduce(ufunc, *inputs, **kwargs)
    if op is None or method not in ("__call__", "outer"):
        _refuse(ufunc, method)
    if kwargs:
        _refuse(ufunc, method, f" with {', '.join(f'{k}=' for k in kwargs)}")
    if method == "outer":
        a, b = inputs
        a = array_ops.getitem(a, (Ellipsis,) + (None,) * np.ndim(b)) if isinstance(a, Tensor) \
            else np.asarray(a)[(Ellipsis,) + (None,) * np.ndim(b)]
        inputs = (a, b)
    return apply(op, inputs)


def _reduce(ufunc, x, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    """`ufunc.reduce` as numpy does it (axis 0 unless told); `dtype`, `out`, `initial` and a
    `where` mask have no graph form."""
    given = [k for k, v, default in (("dtype", dtype, None), ("out", out, None),
                                     ("initial", initial, np._NoValue), ("where", where, True))
             if v is not default]
    if given:
        _refuse(ufunc, "reduce", f" with {', '.join(f'{k}=' for k in given)}")
    return UFUNC_REDUCTIONS[ufunc](x, axis, keepdims)
