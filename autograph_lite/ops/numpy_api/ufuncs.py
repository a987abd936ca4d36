"""numpy ufuncs on tensors (NEP 13): `np.sin(t)`, `a + t` with an ndarray `a`, `np.add.outer`,
`np.add.reduce`, each through one table from the ufunc to its op."""
import operator

import numpy as np

from ...errors import ConversionError, user_location
from ...runtime import memory
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..core import apply, convert_to_tensor

# numpy ufunc -> op, the one table `np.<ufunc>(t, ...)` goes through (NEP 13): every op whose
# `ufunc` fact names one (np.sin(t), ndarray + t, np.add.outer(a, t))
UFUNC_OPS = {getattr(np, op.ufunc): op for op in math_ops.OPS.values() if op.ufunc}

# `ufunc.reduce` for the ufuncs with a reduction op (np.add.reduce(t, axis) is t.sum(axis))
UFUNC_REDUCTIONS = {np.add: math_ops.reduce_sum, np.multiply: math_ops.reduce_prod,
                    np.maximum: math_ops.reduce_max, np.minimum: math_ops.reduce_min,
                    np.logical_and: math_ops.reduce_all, np.logical_or: math_ops.reduce_any}

_IN_PLACE = {np.add: operator.iadd, np.subtract: operator.isub, np.multiply: operator.imul,
             np.true_divide: operator.itruediv, np.floor_divide: operator.ifloordiv, np.remainder: operator.imod,
             np.power: operator.ipow}

_OPERATOR_SYMBOLS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/",
                     np.floor_divide: "//", np.remainder: "%", np.power: "**", np.matmul: "@"}


class _Probe:
    """An operand whose `__array_ufunc__` measures the references numpy's in-place operator
    holds to its target where no frame or container shows them."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return memory.unseen_references(kwargs["out"][0], known=(inputs, kwargs["out"]))


_unseen = []


def _numpy_in_place_references():
    """For `a += t` (numpy's ndarray.__iadd__ calling our hook): measured once on an array held by
    one variable, in a frame like the converted code's."""
    if not _unseen:
        array = np.zeros(1)
        array += _Probe()  # noqa: the probe returns the count, which rebinds `array`
        _unseen.append(array)
    return _unseen[0]


def _refuse(ufunc, method, detail=""):
    name = f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    raise ConversionError(f"{name}{detail} is not supported on tensors (at {user_location(3)})")


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's hook for every ufunc call with a Tensor operand: `np.sin(t)`, `a + t`,
    `np.add.outer(a, t)`, `np.add.reduce(t, axis)`, routed through `UFUNC_OPS`."""
    if method == "__call__" and isinstance(kwargs.get("out"), tuple) and isinstance(kwargs["out"][0], np.ndarray):
        out = kwargs["out"][0]
        symbol = _OPERATOR_SYMBOLS.get(ufunc, f"np.{ufunc.__name__}(..., out=a)")
        why = "the update is not `a op= t`"
        if len(kwargs) == 1 and len(inputs) == 2 and inputs[0] is out and ufunc in _IN_PLACE \
                and type(out) is np.ndarray:
            # `acc = np.zeros(n); acc += t`: the array becomes a tensor holding its contents, updated as
            # numpy would, and `acc` names it (what `+=` returns), unless another holder would miss it
            why = memory.other_holder(out, known=(inputs, kwargs["out"]), unseen=_numpy_in_place_references())
            if why is None:
                return _IN_PLACE[ufunc](convert_to_tensor(out), inputs[1])
        raise TypeError(f"a numpy array cannot be updated in place with a symbolic tensor (`a {symbol}= t`, at "
                        f"{user_location(2)}): the array is {why}, and compiled code cannot change it. "
                        f"Write `a = a {symbol} t` to make a new value")
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
