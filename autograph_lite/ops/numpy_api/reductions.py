"""numpy's reductions on tensors beyond ndarray's own methods (`np.sum` & co. are in methods.py):
`np.argmin`, `np.cumsum`, `np.ptp`, `np.count_nonzero`, the nan-ignoring ones and `np.median`,
each built as numpy computes it so results and dtypes are numpy's bit for bit."""
import numpy as np

from ...errors import user_location
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..core import apply, normalize_axes, normalize_axis
from ..logging_ops import ASSERT, warn_if
from . import functions
from .common import NO, dims, keywords, static_dim, static_shape


def _keep(result, a, axis):
    """`result` of reducing `a` over `axis` with the reduced axes back as 1s (keepdims=True)."""
    for i in normalize_axes(math_ops._axis_attr(axis), a.ndim):  # in increasing order
        result = array_ops.expand_dims(result, i)
    return result


def _arg(name, op):
    def arg(a, axis=None, out=None, *, keepdims=NO):
        keywords(name, dict(out=out), out=None)
        result = op(a, axis)
        return _keep(result, a, axis) if keepdims is not NO and keepdims else result
    arg.__name__ = name
    return arg


def _cumulative(name, op):
    def cumulative(a, axis=None, dtype=None, out=None):
        keywords(name, dict(out=out), out=None)
        return op(a, axis, dtype)
    cumulative.__name__ = name
    return cumulative


def _ptp(a, axis=None, out=None, keepdims=NO):
    keywords("ptp", dict(out=out), out=None)
    keepdims = keepdims is not NO and bool(keepdims)
    return math_ops.subtract(math_ops.reduce_max(a, axis, keepdims), math_ops.reduce_min(a, axis, keepdims))


def _count_nonzero(a, axis=None, *, keepdims=False):
    # numpy: a.astype(bool).sum(axis, dtype=np.intp)
    return math_ops.reduce_sum(math_ops.cast(a, np.bool_), math_ops._axis_attr(axis), bool(keepdims))


def _scalar_box(t):
    """A 0-d result as the numpy scalar numpy's reductions give (where() gives a 0-d array)."""
    return array_ops.getitem(t, ()) if isinstance(t, Tensor) and t.ndim == 0 else t


def _nansum(a, axis=None, dtype=None, out=None, keepdims=NO, initial=NO, where=NO):
    keywords("nansum", dict(out=out, initial=initial, where=where), out=None, initial=NO, where=True)
    if a.dtype.kind in "fc":
        a = math_ops.where(math_ops.isnan(a), 0, a)
    return a.sum(axis, dtype, keepdims=keepdims)


def _replace_nan(a, value):
    """numpy's `_replace_nan`: a float array with NaN replaced by `value` (other dtypes as they are)."""
    return math_ops.where(math_ops.isnan(a), value, a) if a.dtype.kind in "fc" else a


def _nanprod(a, axis=None, dtype=None, out=None, keepdims=NO, initial=NO, where=NO):
    keywords("nanprod", dict(out=out, initial=initial, where=where), out=None, initial=NO, where=True)
    return _replace_nan(a, 1).prod(axis, dtype, keepdims=keepdims)


def _nan_cumulative(name, op, value):
    def cumulative(a, axis=None, dtype=None, out=None):
        keywords(name, dict(out=out), out=None)
        return op(_replace_nan(a, value), axis, dtype)
    cumulative.__name__ = name
    return cumulative


def _nan_arg(name, op, fill):
    """numpy's nanargmin/nanargmax: NaN replaced by +-inf; a slice of NaN only is numpy's
    ValueError, raised when the graph runs."""
    def arg(a, axis=None, out=None, *, keepdims=NO):
        keywords(name, dict(out=out), out=None)
        if a.dtype.kind in "fc":
            mask = math_ops.isnan(a)
            apply(ASSERT, (math_ops.logical_not(math_ops.reduce_any(math_ops.reduce_all(mask, axis))),),
                  {"message": "All-NaN slice encountered", "location": user_location(3), "error": "ValueError"})
            a = math_ops.where(mask, fill, a)
        result = op(a, axis)
        return _keep(result, a, axis) if keepdims is not NO and keepdims else result
    arg.__name__ = name
    return arg


def _nanmean(a, axis=None, dtype=None, out=None, keepdims=NO, *, where=NO):
    """numpy's nanmean: the sum of the non-NaN values over their count (an intp), divided as
    numpy's `_divide_by_count` does (the quotient cast back to the sum's dtype)."""
    keywords("nanmean", dict(out=out, where=where), out=None, where=True)
    if a.dtype.kind not in "fc":
        return a.mean(axis, dtype, keepdims=keepdims)
    mask = math_ops.isnan(a)
    count = math_ops.logical_not(mask).sum(axis, np.intp, keepdims=keepdims)
    empty = math_ops.equal(count, 0)
    warn_if(empty, "Mean of empty slice", user_location(3))
    total = math_ops.where(mask, 0, a).sum(axis, dtype, keepdims=keepdims)
    # numpy divides with floating-point errors ignored: an empty slice's 0 / 0 is NaN, silently
    average = math_ops.cast(math_ops.divide(total, math_ops.where(empty, 1, count)), total.dtype)
    return _scalar_box(math_ops.where(empty, np.nan, average))


def _nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=NO, *, where=NO, mean=NO, correction=NO,
            name="nanvar"):
    """numpy's nanvar step for step: the mean of the non-NaN values (kept dims), the deviations
    squared with NaN's places 0, summed, over count - ddof (NaN where that is <= 0)."""
    keywords(name, dict(out=out, where=where, mean=mean), out=None, where=True, mean=NO)
    if a.ndim == 0 and a.dtype.kind in "fc" and type(axis) in (int, np.intp, np.int64, np.int32) and axis in (0, -1):
        # numpy reduces a 0-d float (a numpy scalar once masked) over an int axis 0 or -1 as over
        # all axes (seed 23001199); a tuple axis or another int is numpy's AxisError
        axis = None
    if axis is not None:
        np.lib.array_utils.normalize_axis_tuple(axis, a.ndim)  # numpy's AxisError for an axis out of bounds
    if a.dtype.kind not in "fc":
        return functions._var(a, axis, dtype, None, ddof, keepdims, correction=correction, name=name[3:])
    if correction is not NO:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    keepdims = keepdims is not NO and bool(keepdims)
    axis = math_ops._axis_attr(axis)
    mask = math_ops.isnan(a)
    arr = math_ops.where(mask, 0, a)
    count = math_ops.logical_not(mask).sum(axis, np.intp, keepdims=True)
    total = arr.sum(axis, dtype, keepdims=True)
    # numpy divides with floating-point errors ignored; an empty slice's mean is not used (its
    # deviations are all masked, its variance NaN), so 1 stands for its count of 0
    average = math_ops.cast(math_ops.divide(total, math_ops.maximum(count, 1)), total.dtype)
    arr = math_ops.where(mask, 0, math_ops.cast(math_ops.subtract(arr, average), arr.dtype))
    # numpy's nanvar squares a complex deviation as (d * conj(d)).real, a float
    squares = math_ops.real(math_ops.multiply(arr, math_ops.conjugate(arr))) if arr.dtype.kind == "c" \
        else math_ops.multiply(arr, arr)
    var = squares.sum(axis, dtype, keepdims=keepdims)
    if not keepdims:
        count = array_ops.squeeze(count, axis)
    dof = math_ops.subtract(count, ddof)
    bad = math_ops.less_equal(dof, 0)
    var = math_ops.cast(math_ops.divide(var, math_ops.where(bad, 1, dof)), var.dtype)
    warn_if(bad, "Degrees of freedom <= 0 for slice.", user_location(3))
    var = _scalar_box(math_ops.where(bad, np.nan, var))
    return math_ops.sqrt(var) if name == "nanstd" else var


def _nanstd(a, *args, **kwargs):
    return _nanvar(a, *args, name="nanstd", **kwargs)


def _average(a, axis=None, weights=None, returned=False, *, keepdims=NO):
    """numpy's average: the mean, or the sum of a * weights (in a float dtype) over the weights' sum
    (a zero sum is numpy's ZeroDivisionError, raised when the graph runs)."""
    axes = None if axis is None else normalize_axes(axis, a.ndim)
    keep = {} if keepdims is NO else {"keepdims": keepdims}
    if weights is None:
        avg = a.mean(axes, **keep)
        if not returned:
            return avg
        if None in a.shape:  # numpy's avg.dtype.type(a.size / avg.size), counted when the graph runs
            scale = math_ops.cast(math_ops.divide(array_ops.size(a), array_ops.size(avg)), avg.dtype)
        else:
            scale = avg.dtype.type(int(np.prod(a.shape, dtype=np.int64)) / int(np.prod(avg.shape, dtype=np.int64)))
    else:
        weights = weights if isinstance(weights, Tensor) else np.asarray(weights)
        if tuple(weights.shape) != tuple(a.shape):
            if axes is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if weights.ndim != 1:
                raise TypeError("1D weights expected when shapes of a and weights differ.")
            if len(axes) != 1 or weights.shape[0] != a.shape[axes[0]]:
                raise ValueError("Length of weights not compatible with specified axis.")
            weights = _reshape(weights, tuple(-1 if i == axes[0] else 1 for i in range(a.ndim)))
        result = np.result_type(a.dtype, weights.dtype, *(("f8",) if a.dtype.kind in "biu" else ()))
        scale = math_ops.reduce_sum(math_ops.cast(weights, result), axes, keepdims is not NO and bool(keepdims))
        if isinstance(scale, Tensor):
            apply(ASSERT, (math_ops.logical_not(math_ops.reduce_any(math_ops.equal(scale, 0.0))),),
                  {"message": "Weights sum to zero, can't be normalized", "location": user_location(3),
                   "error": "ZeroDivisionError"})
        elif np.any(scale == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        product = math_ops.multiply(math_ops.cast(a, result), math_ops.cast(weights, result))
        avg = math_ops.divide(product.sum(axes, **keep), scale)
    if not returned:
        return avg
    if tuple(np.shape(scale)) != tuple(avg.shape):
        scale = array_ops.identity(array_ops.broadcast_to(scale, dims(avg)))
    return avg, scale


def _reshape(a, shape):
    return array_ops.reshape(a, shape) if isinstance(a, Tensor) else np.reshape(a, shape)


def _nan_extreme(name, reduce, ufunc):
    """numpy's nanmax/nanmin: fmax.reduce / fmin.reduce itself, NaN only where a slice is all
    NaN. Not maximum.reduce over the NaNs made -inf: of 0.0 and -0.0 the two pick another one
    (fuzzer seed 1190016447), and numpy's SIMD loops pick by position, so only its own loop agrees."""
    def extreme(a, axis=None, out=None, keepdims=NO, initial=NO, where=NO):
        keywords(name, dict(out=out, initial=initial, where=where), out=None, initial=NO, where=True)
        keepdims = keepdims is not NO and bool(keepdims)
        axis = math_ops._axis_attr(axis)
        if a.dtype.kind not in "fc":
            return reduce(a, axis, keepdims)
        result = math_ops.ufunc_reduce(ufunc, a, axis, keepdims=keepdims)
        warn_if(math_ops.isnan(result), "All-NaN slice encountered", user_location(3), after=(result,))
        return _scalar_box(result)
    extreme.__name__ = name
    return extreme


def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy's median: the middle one or two of the values along `axis` in order (numpy
    partitions, a sort puts the same values there), averaged by np.mean; NaN where the slice
    holds one (numpy's `_median_nancheck`: the largest sorts last, NaN)."""
    keywords("median", dict(out=out, overwrite_input=overwrite_input), out=None, overwrite_input=False)
    x, along = a, axis
    if axis is None:
        x, along = array_ops.reshape(a, (-1,)), 0
    elif not isinstance(axis, (int, np.integer)):  # several axes: moved last and merged, as numpy's _ureduce
        axes = normalize_axes(tuple(axis), a.ndim)
        rest = [i for i in range(a.ndim) if i not in axes]
        shape = static_shape(a, "median")
        x = array_ops.reshape(array_ops.transpose(a, rest + list(axes)), tuple(shape[i] for i in rest) + (-1,))
        along = -1
    along = normalize_axis(along, x.ndim)
    size = static_dim(x, along, "median")
    ordered = array_ops.sort(x, along)
    middle = size // 2
    before = (slice(None),) * along
    picked = ordered[before + (slice(middle, middle + 1) if size % 2 else slice(middle - 1, middle + 1),)]
    result = math_ops.reduce_mean(picked, along)
    if a.dtype.kind in "fc" and size > 0:
        last = ordered[before + (-1,)]
        result = _scalar_box(math_ops.where(math_ops.isnan(last), last, result))
    return _keep(result, a, axis) if keepdims else result


FUNCTIONS = {
    np.argmin: _arg("argmin", math_ops.argmin), np.argmax: _arg("argmax", math_ops.argmax),
    np.cumsum: _cumulative("cumsum", math_ops.cumsum), np.cumprod: _cumulative("cumprod", math_ops.cumprod),
    np.ptp: _ptp, np.count_nonzero: _count_nonzero,
    np.nansum: _nansum, np.nanmean: _nanmean,
    np.nanmax: _nan_extreme("nanmax", math_ops.reduce_max, "fmax"),
    np.nanmin: _nan_extreme("nanmin", math_ops.reduce_min, "fmin"),
    np.median: _median,
    np.nanprod: _nanprod,
    np.nancumsum: _nan_cumulative("nancumsum", math_ops.cumsum, 0),
    np.nancumprod: _nan_cumulative("nancumprod", math_ops.cumprod, 1),
    np.nanargmin: _nan_arg("nanargmin", math_ops.argmin, np.inf),
    np.nanargmax: _nan_arg("nanargmax", math_ops.argmax, -np.inf),
    np.nanvar: _nanvar, np.nanstd: _nanstd, np.average: _average,
}
