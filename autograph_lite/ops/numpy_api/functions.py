"""numpy functions on tensors (NEP 18): `np.zeros_like(t)`, `np.where(c, t, 0)`, `np.concatenate`.

Each entry takes numpy's parameters and builds the result from ag ops; a keyword whose value has
no graph form is refused by name (`common.keywords`).
"""
import math

import numpy as np

from ...errors import ConversionError, user_location
from ...runtime.boxes import PYTHON, SCALAR, VARIES, box_of
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..logging_ops import warn_if
from ..core import CHECK_FITS, apply, broadcast_shapes, convert_to_tensor, normalize_axes, normalize_axis, result_dtype
from .common import NO, keywords, python_ints_fit, static_shape


def _dtype_argument(dtype):
    """A dtype argument as numpy takes it: a numpy scalar stands for its dtype; an array or a Python
    number is not one (numpy's TypeError)."""
    if isinstance(dtype, Tensor):
        box = box_of(dtype)
        if box == SCALAR:
            return dtype.dtype
        if box == PYTHON:
            raise TypeError("Cannot interpret a Python number as a data type")
        if box == VARIES:
            raise ConversionError(f"a value that is a numpy scalar on some runs and an array on others is given "
                                  f"as a dtype (at {user_location(3)}): numpy takes the scalar's dtype and refuses "
                                  f"the array; pass a dtype")
        raise TypeError("Cannot construct a dtype from an array")
    return dtype


def _like(name, op):
    def like(a, dtype=None, order="K", subok=True, shape=None, **rest):
        keywords(name, dict(order=order, subok=subok, **rest), order="K", subok=True, device=None)
        dtype = _dtype_argument(dtype)
        if shape is None:
            return op(a, dtype)
        return array_ops.zeros(shape, a.dtype if dtype is None else dtype) if op is not array_ops.ones_like \
            else array_ops.ones(shape, a.dtype if dtype is None else dtype)
    return like


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **rest):
    keywords("full_like", dict(order=order, subok=subok, **rest), order="K", subok=True, device=None)
    dtype = a.dtype if dtype is None else np.dtype(_dtype_argument(dtype))
    python_ints_fit(fill_value, dtype)
    return array_ops.fill(array_ops.shape(a) if shape is None else shape, math_ops.cast(fill_value, dtype))


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    keywords("reshape", dict(order=order, copy=copy), order="C", copy=None)
    return array_ops.reshape(a, newshape if shape is None else shape)


def _transpose(a, axes=None):
    if axes is not None and not isinstance(axes, (tuple, list)) and hasattr(type(axes), "__index__"):
        axes = (axes,)  # numpy takes a single axis for a 1-d array (`np.transpose(v, 0)`)
    if axes is not None:
        axes = tuple(int(i) % a.ndim if -a.ndim <= int(i) < a.ndim else int(i) for i in axes)
    return array_ops.transpose(a, axes)


def _ravel(a, order="C"):
    keywords("ravel", dict(order=order), order="C")
    return array_ops.reshape(a, (-1,))


def _squeeze(a, axis=None):
    if a.ndim == 0 and isinstance(axis, int) and axis in (0, -1):
        axis = None  # numpy takes an int axis 0 or -1 of a 0-d array (not in a tuple), and squeezes nothing
    return array_ops.squeeze(a, axis)


def _expand_dims(a, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out_ndim = a.ndim + len(axes)
    axes = sorted(normalize_axis(i, out_ndim) for i in axes)
    if len(set(axes)) != len(axes):
        raise ValueError("repeated axis")
    for i in axes:
        a = array_ops.expand_dims(a, i)
    return a


def _where(condition, x=NO, y=NO):
    if x is NO and y is NO:  # numpy: np.asarray(condition).nonzero()
        return array_ops.nonzero(condition)
    if x is NO or y is NO:
        raise ValueError("either both or neither of x and y should be given")
    return math_ops.where(condition, x, y)


_CLIP_NEEDS_A_BOUND = np.lib.NumpyVersion(np.__version__) < "2.1.0"


def _clip(a, a_min=NO, a_max=NO, out=None, *, min=NO, max=NO, **rest):  # noqa: A002 - numpy's names
    keywords("clip", dict(out=out, **rest), out=None)
    low = min if a_min is NO else a_min
    high = max if a_max is NO else a_max
    low, high = (None if bound is NO else bound for bound in (low, high))
    if low is None and high is None and _CLIP_NEEDS_A_BOUND:
        raise ValueError("One of max or min must be given")
    if not isinstance(a, Tensor):  # a number or an array with a tensor bound: numpy clips np.asarray(a)
        a = convert_to_tensor(np.asarray(a))
    elif a.weak:  # a Python number known only when the graph runs: np.asarray's dtype, no longer weak
        a = math_ops.cast(a, np.asarray(a.dtype.type(0).item()).dtype)
    if a.dtype.kind in "iu":
        low, high = _int_bound(a.dtype, low, lower=True), _int_bound(a.dtype, high, lower=False)
    if low is None and high is None:
        return math_ops.maximum(a, a)  # numpy >= 2.1 gives a copy, through its ufunc (a 0-d one as a scalar)
    if high is None:
        return math_ops.maximum(a, low)
    if low is None:
        return math_ops.minimum(a, high)
    return _clip_between(a, low, high)


def _int_bound(dtype, bound, lower):
    """numpy's `_clip` for an integer array: a Python int bound at or beyond the dtype's end is no
    bound (`np.clip(uint8_t, -1, 10)`); one beyond the other end stays, to raise numpy's OverflowError."""
    info = np.iinfo(dtype)
    end = info.min if lower else info.max
    if type(bound) is int:
        return None if (bound <= end if lower else bound >= end) else bound
    if isinstance(bound, Tensor) and bound.weak and bound.dtype.kind in "iu":
        # a Python int known only when the graph runs (a loop counter): at or beyond the end it
        # clips nothing; beyond the other end it is numpy's OverflowError, checked when the graph runs
        beyond = math_ops.less_equal(bound, end) if lower else math_ops.greater_equal(bound, end)
        bound = math_ops.where(beyond, np.int64(end), bound)
        apply(CHECK_FITS, (bound,), {"dtype": np.dtype(dtype), "location": user_location(3)})
        return math_ops.cast(bound, dtype)
    return bound


def _clip_between(a, low, high):
    """numpy's clip ufunc, bit for bit: its loop for floats keeps x at a tie with a bound (-0.0
    clipped to [0.0, 1.0] stays -0.0) and gives a NaN bound itself where both bounds are constant
    over the loop; otherwise it is minimum(maximum(x, low), high). float16's loop keeps x at a
    tie and a NaN x either way."""
    x, low, high = (convert_to_tensor(v) for v in (a, low, high))
    dtype = result_dtype(np.clip, (x, low, high))
    shape = broadcast_shapes(x.shape, low.shape, high.shape)
    if dtype.kind != "f" or (dtype != np.float16 and not _constant_in_inner_loop(shape, low, high)):
        return math_ops.minimum(math_ops.maximum(a, low), high)
    x, low, high = (math_ops.cast(v, dtype) for v in (x, low, high))
    if dtype == np.float16:
        t = math_ops.where(math_ops.logical_or(math_ops.isnan(x), math_ops.greater_equal(x, low)), x, low)
        clipped = math_ops.where(math_ops.logical_or(math_ops.isnan(t), math_ops.less_equal(t, high)), t, high)
    else:
        t = math_ops.where(math_ops.less(x, low), low, x)
        t = math_ops.where(math_ops.greater(t, high), high, t)
        clipped = math_ops.where(math_ops.isnan(low), low, math_ops.where(math_ops.isnan(high), high, t))
    # where() boxes a 0-d result as an array; numpy's ufunc gives a scalar
    return array_ops.getitem(clipped, ()) if clipped.ndim == 0 else clipped


def _constant_in_inner_loop(shape, low, high):
    """Whether numpy's clip loop over an array of `shape` sees both bounds constant (a step of 0):
    0-d bounds, or bounds of one element broadcast over more than one (a length known only when
    the graph runs counts as more). Bounds of other shapes, even constant along the last axis,
    numpy's iterator walks with a step."""
    if low.ndim == 0 and high.ndim == 0:
        return True
    return all(all(d == 1 for d in b.shape) for b in (low, high)) and any(d != 1 for d in shape)


def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NO, *, where=NO, mean=NO, correction=NO,
         name="var"):
    """numpy's `_methods._var`: the mean summed in `dtype` (float64 for ints and bools), divided by the
    count as an intp (the quotient cast back to the sum's dtype), then the squared deviations (of a
    complex array: the squared magnitudes, floats) summed and divided by max(count - ddof, 0) the same way."""
    keywords(name, dict(out=out, where=where, mean=mean), out=None, where=True, mean=None)
    if correction is not NO:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    keepdims = keepdims is not NO and bool(keepdims)
    axes = normalize_axes(math_ops._axis_attr(axis), a.ndim)
    count = math.prod(static_shape(a, name)[i] for i in axes)
    if ddof >= count:  # numpy warns before it computes, on every call
        warn_if(True, "Degrees of freedom <= 0 for slice", user_location(3))
    if dtype is None and a.dtype.kind in "biu":
        dtype = np.float64
    x = a if dtype is None else math_ops.cast(a, dtype)
    total = math_ops.reduce_sum(x, axes, True)
    mean_ = math_ops.cast(math_ops.divide(total, np.intp(count)), total.dtype)
    deviation = math_ops.subtract(a, mean_)
    if deviation.dtype.kind == "c":  # |x - mean|**2, a float: numpy squares the parts and adds them
        real, imag = math_ops.real(deviation), math_ops.imag(deviation)
        squares = math_ops.add(math_ops.multiply(real, real), math_ops.multiply(imag, imag))
    else:
        squares = math_ops.multiply(deviation, deviation)
    if dtype is not None:
        squares = math_ops.cast(squares, dtype)
    ret = math_ops.reduce_sum(squares, axes, keepdims)
    ret = math_ops.cast(math_ops.divide(ret, np.intp(builtins_max(count - ddof, 0))), ret.dtype)
    return math_ops.sqrt(ret) if name == "std" else ret


builtins_max = max


def _std(a, *args, **kwargs):
    return _var(a, *args, name="std", **kwargs)


def _method(name):
    """`np.<name>(t, ...)` as numpy's fromnumeric does it: the Tensor method, which takes ndarray's
    parameters, with the keywords numpy was given (none left at numpy's `_NoValue`)."""
    def call(a, *args, **kwargs):
        return getattr(a, name)(*args, **{k: v for k, v in kwargs.items() if v is not NO})
    return call


def _copy(a, order="K", subok=False):
    keywords("copy", dict(order=order, subok=subok), order="K", subok=False)
    copied = array_ops.identity(a)
    # np.copy always gives an ndarray: a 0-d one where a is a numpy scalar (Select boxes so)
    return copied if a.ndim else math_ops.where(True, copied, copied)


def _joined(name, op):
    def join(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
        keywords(name, dict(out=out, dtype=dtype, casting=casting), out=None, dtype=None, casting="same_kind")
        arrays = list(arrays)
        if axis is None:
            if name == "stack":
                raise TypeError("axis=None is not supported by np.stack")
            arrays, axis = [array_ops.reshape(v, (-1,)) if isinstance(v, Tensor) else np.ravel(v)
                            for v in arrays], 0
        return op(arrays, axis)
    return join


def _triangle(name, lower):
    """numpy's triu/tril: where(tri mask, zeros, m) with the mask of the last two dims (a 1-D m is its rows)."""
    def triangle(m, k=0):
        shape = static_shape(m, name)[-2:]
        mask = np.tri(*shape, k=k - 1 if not lower else k, dtype=bool)
        if lower:
            return math_ops.where(mask, m, np.zeros(1, m.dtype))
        return math_ops.where(mask, np.zeros(1, m.dtype), m)
    return triangle


# numpy function -> graph form (numpy_api/__init__.py joins every module's FUNCTIONS into ARRAY_FUNCTIONS)
FUNCTIONS = {
    np.zeros_like: _like("zeros_like", array_ops.zeros_like),
    np.ones_like: _like("ones_like", array_ops.ones_like),
    # eager's contents are undefined (whatever the memory held); zeros are one such content
    np.empty_like: _like("empty_like", array_ops.zeros_like),
    np.full_like: _full_like,
    np.reshape: _reshape, np.transpose: _transpose, np.ravel: _ravel,
    np.squeeze: _squeeze,
    np.expand_dims: _expand_dims,
    np.where: _where, np.clip: _clip,
    np.var: _var, np.std: _std,
    **{getattr(np, name): _method(name) for name in ("sum", "mean", "prod", "max", "min", "any", "all")},
    np.amax: _method("max"), np.amin: _method("min"),
    np.copy: _copy,
    np.concatenate: _joined("concatenate", array_ops.concat), np.stack: _joined("stack", array_ops.stack),
    np.triu: _triangle("triu", False), np.tril: _triangle("tril", True),
    # numpy's shape queries, which the static shape answers (np.ndim(t) inside ufunc.outer too)
    np.ndim: lambda a: a.ndim, np.shape: lambda a: a.shape,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
}
