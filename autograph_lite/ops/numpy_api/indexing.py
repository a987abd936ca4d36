"""numpy's indexing functions on tensors: `np.take`, `np.take_along_axis`, `np.nonzero` and what
it gives (`argwhere`, `flatnonzero`, `np.where(c)`), `np.searchsorted`. Results whose length
depends on the values (nonzero) have a `None` dim, as boolean-mask indexing does."""
import numpy as np

from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..core import convert_to_tensor, result_dtype
from .common import keywords, static_dim


def _take(a, indices, axis=None, out=None, mode="raise"):
    keywords("take", dict(out=out), out=None)
    if not isinstance(a, Tensor):
        a = np.asarray(a)
    if axis is None:
        a, axis = (array_ops.reshape(a, (-1,)) if isinstance(a, Tensor) else a.reshape(-1)), 0
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if mode != "raise":
        n = static_dim(a, axis, "take") if isinstance(a, Tensor) else a.shape[axis]
        if isinstance(indices, Tensor):
            indices = math_ops.mod(indices, n) if mode == "wrap" else math_ops.minimum(math_ops.maximum(indices, 0),
                                                                                        n - 1)
        else:
            indices = np.mod(indices, n) if mode == "wrap" else np.clip(indices, 0, n - 1)
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
        if indices.size == 0:  # numpy converts indices to intp: an empty list is no float index
            indices = indices.astype(np.intp)
    return array_ops.gather(a, indices, axis)


def _take_along_axis(arr, indices, axis=-1):
    return array_ops.take_along_axis(arr, indices, axis)


def _nonzero(a):
    return array_ops.nonzero(a)


def _argwhere(a):
    if a.ndim == 0:
        return array_ops.getitem(_argwhere(array_ops.reshape(a, (1,))), (slice(None), slice(0, 0)))
    return array_ops.stack(array_ops.nonzero(a), axis=1)


def _flatnonzero(a):
    return array_ops.nonzero(array_ops.reshape(a, (-1,)))[0]


def _searchsorted(a, v, side="left", sorter=None):
    if sorter is not None:
        a = array_ops.gather(a, sorter)
    return array_ops.searchsorted(a, v, side)


def _select(condlist, choicelist, default=0):
    """numpy's select: `default`, then each choice where its condition holds, the first condition
    winning, in the dtype numpy's result_type gives the choices and default."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    # numpy keeps Python numbers weak here (NEP 50), arrays by their dtype
    choices = [c if isinstance(c, Tensor) or type(c) in (int, float, complex) else np.asarray(c)
               for c in (*choicelist, default)]
    dtype = result_dtype(lambda *values: np.empty((), np.result_type(*values)),
                         [convert_to_tensor(c) for c in choices])
    for i, cond in enumerate(condlist):
        if (cond.dtype if isinstance(cond, Tensor) else np.asarray(cond).dtype) != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    result = math_ops.cast(choices[-1], dtype)
    for cond, choice in zip(reversed(condlist), reversed(choices[:-1])):
        result = math_ops.where(cond, math_ops.cast(choice, dtype), result)
    return result


FUNCTIONS = {
    np.take: _take, np.take_along_axis: _take_along_axis, np.nonzero: _nonzero, np.argwhere: _argwhere,
    np.flatnonzero: _flatnonzero, np.searchsorted: _searchsorted, np.select: _select,
}
