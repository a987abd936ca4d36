"""numpy ufuncs on tensors (NEP 13): `np.sin(t)`, `a + t` with an ndarray `a`, `np.add.outer`,
`np.add.reduce`, `np.multiply.accumulate`, each through one table from the ufunc to its op.

A call takes numpy's keywords: `dtype=` (the loop numpy picks for it: inputs cast to the loop's
dtypes, as numpy casts them), `casting=`, and `out=` a Tensor (the result cast to out's dtype
under `casting`, filling out's shape, with `where=` keeping out's values where the mask is
false; out's memory is written, as by `out[...] = ...`, so every name of it reads the result,
and the call returns out). `ufunc.at(a, indices[, b])` on a tensor is a functional update of its memory, as
`a[indices] = ...` is (runtime/memory.py). `out=` an ndarray, `where=` without `out=`, `order=`,
`subok=`, `signature=` and `.at` into a numpy array are refused by name.
"""
import operator

import numpy as np

from ...errors import ConversionError, user_location
from ...runtime import memory
from ...runtime.boxes import ARRAY, box_of
from ...runtime.graph import Tensor, numpy_array_given
from .. import array_ops, math_ops
from ..core import apply, broadcast_shapes, convert_to_tensor, exemplar

# numpy ufunc -> op, the one table `np.<ufunc>(t, ...)` goes through (NEP 13): every op whose
# `ufunc` fact names one (np.sin(t), ndarray + t, np.add.outer(a, t)), and numpy's other names
# for the same ufunc loops (np.degrees is np.rad2deg's computation)
UFUNC_OPS = {getattr(np, op.ufunc): op for op in math_ops.OPS.values() if op.ufunc}
UFUNC_OPS.update({np.degrees: math_ops.OPS["rad2deg"], np.radians: math_ops.OPS["deg2rad"]})

# the ufuncs with several outputs, as their ops (both outputs of one computation)
MULTI_OUTPUT = {np.divmod: lambda x, y: (math_ops.floordiv(x, y), math_ops.mod(x, y)),
                np.modf: math_ops.modf, np.frexp: math_ops.frexp}

# `ufunc.reduce` for the ufuncs with a reduction op (np.add.reduce(t, axis) is t.sum(axis)); any
# other binary ufunc reduces through its own `reduce` (math_ops.ufunc_reduce)
UFUNC_REDUCTIONS = {np.add: math_ops.reduce_sum, np.multiply: math_ops.reduce_prod,
                    np.maximum: math_ops.reduce_max, np.minimum: math_ops.reduce_min,
                    np.logical_and: math_ops.reduce_all, np.logical_or: math_ops.reduce_any}

_OPERATOR_SYMBOLS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.true_divide: "/",
                     np.floor_divide: "//", np.remainder: "%", np.power: "**", np.matmul: "@",
                     np.bitwise_and: "&", np.bitwise_or: "|", np.bitwise_xor: "^", np.left_shift: "<<",
                     np.right_shift: ">>"}


_IN_PLACE = {np.add: operator.iadd, np.subtract: operator.isub, np.multiply: operator.imul,
             np.true_divide: operator.itruediv, np.floor_divide: operator.ifloordiv, np.remainder: operator.imod,
             np.power: operator.ipow}


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
    out = kwargs.get("out")
    if method == "__call__" and isinstance(out, tuple) and any(isinstance(o, np.ndarray) for o in out):
        symbol = _OPERATOR_SYMBOLS.get(ufunc, f"np.{ufunc.__name__}(..., out=a)")
        why = "the update is not `a op= t`"
        if len(kwargs) == 1 and len(inputs) == 2 and inputs[0] is out[0] and ufunc in _IN_PLACE \
                and type(out[0]) is np.ndarray:
            # `acc = np.zeros(n); acc += t`: the array becomes a tensor holding its contents, updated as
            # numpy would, and `acc` names it (what `+=` returns), unless another holder would miss it
            why = numpy_array_given(out[0]) or memory.other_holder(out[0], known=(inputs, out),
                                                                   unseen=_numpy_in_place_references())
            copied = memory.copied_from(out[0])
            if why is None and copied is not None:
                # a tensor `if`'s branch updates its copy of the array: eagerly the array itself, which
                # another name may hold (`w = v; if c: v -= 1`: fuzzer seed 1191017028)
                why = memory.other_holder(copied[1], known=(copied, inputs, out))
            if why is None:
                return _IN_PLACE[ufunc](convert_to_tensor(out[0]), inputs[1])
        raise TypeError(f"a numpy array cannot be updated in place with a symbolic tensor (`a {symbol}= t`, at "
                        f"{user_location(2)}): the array is {why}, and compiled code cannot change it. "
                        f"Write `a = a {symbol} t` to make a new value")
    if method == "at":
        return _at(ufunc, *inputs, **kwargs)
    if method == "reduce":
        return _reduce(ufunc, *inputs, **kwargs)
    if method == "accumulate":
        return _accumulate(ufunc, *inputs, **kwargs)
    op = UFUNC_OPS.get(ufunc)
    if method == "__call__" and ufunc in MULTI_OUTPUT:
        if kwargs:
            _refuse(ufunc, method, f" with {', '.join(f'{k}=' for k in kwargs)}")
        return MULTI_OUTPUT[ufunc](*_numpy_numbers(ufunc, inputs))
    if op is None or method not in ("__call__", "outer"):
        _refuse(ufunc, method)
    if method == "outer":
        if kwargs:
            _refuse(ufunc, method, f" with {', '.join(f'{k}=' for k in kwargs)}")
        # numpy's outer takes each operand as np.asarray would: a Python number (one known only when
        # the graph runs too) is an array of its default dtype, not weak
        a, b = (_numpy_numbers(ufunc, (v,))[0] if isinstance(v, Tensor) else np.asarray(v) for v in inputs)
        a = array_ops.getitem(a, (Ellipsis,) + (None,) * np.ndim(b)) if isinstance(a, Tensor) \
            else np.asarray(a)[(Ellipsis,) + (None,) * np.ndim(b)]
        return apply(op, (a, b))
    return _call(ufunc, op, inputs, **kwargs)


def _numpy_numbers(ufunc, inputs):
    """`inputs` where every one is a Python number (a weak tensor: a loop counter, or a constant)
    on some path: each such tensor as a numpy scalar of its default dtype, as numpy converts Python
    numbers before it picks a loop. The op's kernel on Python numbers is Python's operator, whose
    results differ: np.remainder(i, 0) is 0 (a warning), not ZeroDivisionError (fuzzer seed
    1190012908); np.add(True, True) is True, not 2; np.power(2, -1) raises, not 0.5. A tensor `if`'s
    merge of a Python number and a numpy value (`Tensor.python_box`) is converted where the numpy
    value has the number's default dtype, and refused where not (eager's types differ by path).
    Other inputs are left as they are: numpy reads them by NEP 50, and a Python number beside an
    int64, bool, float64 or complex128 scalar gives what its default dtype gives."""
    if not all(t.weak or (t.python_box is not None and t.shape == ()) if isinstance(t, Tensor)
               else type(t) in (bool, int, float, complex) for t in inputs):
        return inputs
    converted = []
    for t in inputs:
        if isinstance(t, Tensor) and t.weak:
            t = math_ops.cast(t, t.dtype)[()]
        elif isinstance(t, Tensor):
            box = t.python_box
            python = np.dtype(type(t.dtype.type(0).item())) if box.value is None else box.value.dtype
            if python != t.dtype:
                on_python, on_numpy, remedy = box.paths()
                raise ConversionError(
                    f"np.{ufunc.__name__} on a value that is a Python {type(python.type(0).item()).__name__} "
                    f"where {on_python} and a numpy {t.dtype} {on_numpy}: numpy computes on the number as "
                    f"{python}, so eager's result type would differ by path; {remedy} (at {user_location(3)})")
            # the merge's numpy slot holds the Python number where eager has it: `where` makes it
            # numpy's (a cast to its own dtype is simplified away)
            t = math_ops.where(True, t, t)[()]
        converted.append(t)
    return tuple(converted)


def _call(ufunc, op, inputs, out=None, where=True, dtype=None, casting="same_kind", **rest):
    """`ufunc(*inputs, out=, where=, dtype=, casting=)` as numpy computes it."""
    refused = [k for k, v in rest.items() if not (k == "subok" and v is True or k == "order" and v == "K"
                                                   or k == "signature" and v is None)]
    if where is not True and out is None:  # where the mask is false numpy leaves whatever memory held
        refused.append("where= without out=")
    if refused:
        _refuse(ufunc, "__call__", f" with {', '.join(k if ' ' in k else f'{k}=' for k in refused)}")
    loop_dtype = None
    if dtype is not None or casting != "same_kind":  # casting="no" refuses mixed inputs, as numpy
        # the loop numpy picks for Python numbers is NEP 50's (`np.add(1, i, dtype=np.int8, casting="safe")`
        # is allowed): first, and those not cast to it are numpy scalars next
        inputs, loop_dtype = _in_loop_dtypes(ufunc, inputs, None if dtype is None else np.dtype(dtype), casting)
    result = apply(op, _numpy_numbers(ufunc, inputs))  # never a Python number, as numpy's ufuncs
    if loop_dtype is not None and result.dtype != loop_dtype:
        _refuse(ufunc, "__call__", f" with dtype={np.dtype(dtype)}")
    if out is None:
        return result
    (target,) = out if isinstance(out, tuple) else (out,)
    return _into(ufunc, result, target, where, casting)


def _in_loop_dtypes(ufunc, inputs, dtype, casting):
    """`inputs` cast to the dtypes of the loop numpy runs for `dtype=dtype` (its output's; None: the
    loop numpy picks), under `casting`, and the loop's output dtype."""
    given = tuple(type(exemplar(t)) if getattr(t, "weak", False) else
                  t.dtype if isinstance(t, Tensor) else type(t) if type(t) in (bool, int, float, complex)
                  else np.asarray(t).dtype for t in inputs)
    signature = {} if dtype is None else {"signature": (None,) * ufunc.nin + (dtype,) * ufunc.nout}
    loop = ufunc.resolve_dtypes(given + (None,) * ufunc.nout, casting=casting, **signature)
    return tuple(x if g == d else math_ops.cast(x, d) for x, g, d in zip(inputs, given, loop[:ufunc.nin])), loop[-1]


def _into(ufunc, result, out, where, casting):
    """numpy's `out=`: `result` cast to out's dtype and shape, out's values kept where `where` is false."""
    if not isinstance(out, Tensor):
        _refuse(ufunc, "__call__", f" with out= a {type(out).__name__}")
    location = user_location(4)
    if box_of(out) != ARRAY:
        raise TypeError(f"np.{ufunc.__name__} with out= a {'Python number' if out.weak else 'numpy scalar'}: return "
                        f"arrays must be of ArrayType (at {location})")
    if result.dtype != out.dtype and not np.can_cast(result.dtype, out.dtype, casting):
        raise TypeError(f"Cannot cast ufunc '{ufunc.__name__}' output from {result.dtype!r} to {out.dtype!r} with "
                        f"casting rule '{casting}' (at {location})")
    shape = broadcast_shapes(result.shape, out.shape, np.shape(where))
    if shape != out.shape:
        raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't match the broadcast "
                         f"shape {shape} (at {location})")

    def compute(current):
        new = math_ops.cast(result, out.dtype) if result.dtype != out.dtype else result
        new = math_ops.where(where, new, current)  # out's shape, and box
        if new.shape == () and box_of(out) == ARRAY and box_of(new) != ARRAY:
            new = math_ops.where(True, new, new)
        return new
    # `x *= y` is np.multiply(x, y, out=x): named by its operator where it has one
    symbol = _OPERATOR_SYMBOLS[ufunc] + "=" if ufunc in _OPERATOR_SYMBOLS else f"np.{ufunc.__name__}(..., out=)"
    # out's memory is written, as by `out[...] = ...`, and numpy gives back out itself
    memory.update(out, compute, "the out= array", symbol, location)
    return out


def _at(ufunc, a, indices, b=None, **kwargs):
    """`ufunc.at(a, indices[, b])`: numpy's unbuffered in-place update (a repeated index applies
    each time), on a tensor's memory; into a numpy array with tensor indices or values it is refused
    (the array cannot hold them, and no variable can be rebound by a call)."""
    if kwargs or ufunc.nout != 1 or ufunc not in UFUNC_OPS or (ufunc.nin == 2) != (b is not None):
        _refuse(ufunc, "at")
    if not isinstance(a, Tensor):
        raise ConversionError(f"np.{ufunc.__name__}.at into a numpy array with tensor indices or values is not "
                              f"supported (at {user_location(3)}); make the array a tensor first (it is one "
                              f"once it depends on an argument), or write `a[indices] op= b` where no index repeats")
    array_ops.ufunc_at(ufunc, a, indices, b, user_location(3))


def _reduce(ufunc, x, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    """`ufunc.reduce` as numpy does it (axis 0 unless told); `out` and a `where` mask are refused."""
    given = [k for k, v, default in (("out", out, None), ("where", where, True)) if v is not default]
    if given:
        _refuse(ufunc, "reduce", f" with {', '.join(f'{k}=' for k in given)}")
    if ufunc.nin != 2 or ufunc.nout != 1 or ufunc not in UFUNC_OPS:
        _refuse(ufunc, "reduce")
    if initial is np._NoValue and dtype is None and ufunc in UFUNC_REDUCTIONS:
        return UFUNC_REDUCTIONS[ufunc](x, axis, keepdims)
    if isinstance(initial, Tensor) or initial is None:
        _refuse(ufunc, "reduce", f" with initial={'a tensor' if initial is not None else 'None'}")
    initial = None if initial is np._NoValue else initial.item() if isinstance(initial, np.generic) else initial
    return math_ops.ufunc_reduce(ufunc.__name__, x, axis, dtype, keepdims, initial)


def _accumulate(ufunc, x, axis=0, dtype=None, out=None):
    """`ufunc.accumulate` (np.add.accumulate is np.cumsum along axis 0)."""
    if out is not None:
        _refuse(ufunc, "accumulate", " with out=")
    if ufunc.nin != 2 or ufunc.nout != 1 or ufunc not in UFUNC_OPS:
        _refuse(ufunc, "accumulate")
    return math_ops.accumulate(ufunc.__name__, x, axis, dtype)
