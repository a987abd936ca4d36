"""numpy's counting and statistics functions on tensors: `np.histogram bincount unique interp cov
corrcoef`, each numpy's own function as one op (ops/statistics_ops.py), so results are numpy's
bit for bit; lengths known only when the graph runs (unique's) are `None` dims."""
import numpy as np

from ...errors import ConversionError, user_location
from ...runtime.graph import Tensor
from ..linalg_ops import call
from ..statistics_ops import OPS


def _array(v):
    return v if isinstance(v, Tensor) or v is None else np.asarray(v)


def _histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 - numpy's names
    if isinstance(bins, (list, tuple)):
        bins = np.asarray(bins)
    if isinstance(bins, np.integer):
        bins = int(bins)
    kwargs = {k: v for k, v in (("range", range), ("density", density), ("weights", _array(weights)))
              if v is not None}
    counts, edges = call(OPS["histogram"], _array(a), bins, **kwargs)
    # numpy gives a 1-D array `bins` back as the edges (`np.asarray(bins)`): the same array, as eagerly
    return counts, (bins if isinstance(bins, Tensor) and bins.ndim == 1 else edges)


def _bincount(x, weights=None, minlength=0):
    if isinstance(minlength, Tensor):
        raise ConversionError(f"np.bincount(..., minlength=) a tensor is not supported (at {user_location(3)})")
    kwargs = {"minlength": int(minlength)} if minlength else {}
    if weights is not None:
        kwargs["weights"] = _array(weights)
    return call(OPS["bincount"], _array(x), **kwargs)


def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
            sorted=True):  # noqa: A002 - numpy's name
    flags = dict(return_index=bool(return_index), return_inverse=bool(return_inverse),
                 return_counts=bool(return_counts))
    kwargs = {k: v for k, v in flags.items() if v}
    if axis is not None:
        kwargs["axis"] = int(axis)
    if not equal_nan:
        kwargs["equal_nan"] = False
    if not sorted:
        kwargs["sorted"] = False
    return call(OPS["unique"], _array(ar), **kwargs)


def _interp(x, xp, fp, left=None, right=None, period=None):
    kwargs = {k: v for k, v in (("left", left), ("right", right), ("period", period)) if v is not None}
    return call(OPS["interp"], _array(x), _array(xp), _array(fp), **kwargs)


def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    kwargs = dict(rowvar=bool(rowvar), bias=bool(bias))
    for key, value in (("ddof", ddof), ("fweights", _array(fweights)), ("aweights", _array(aweights))):
        if value is not None:
            kwargs[key] = value
    if dtype is not None:
        kwargs["dtype"] = np.dtype(dtype)
    return call(OPS["cov"], _array(m), _array(y), **kwargs)


def _corrcoef(x, y=None, rowvar=True, *, dtype=None):
    kwargs = {"rowvar": bool(rowvar)}
    if dtype is not None:
        kwargs["dtype"] = np.dtype(dtype)
    return call(OPS["corrcoef"], _array(x), _array(y), **kwargs)


FUNCTIONS = {np.histogram: _histogram, np.bincount: _bincount, np.unique: _unique, np.interp: _interp,
             np.cov: _cov, np.corrcoef: _corrcoef}
