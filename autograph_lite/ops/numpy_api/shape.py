"""numpy's shape functions on tensors: axes moved, arrays joined and split, tiled, repeated,
rolled, flipped, padded, broadcast, diagonals and grids, each built from ag ops as numpy
builds it (numpy's own Python implementation, ported), so values, dtypes and boxes are numpy's."""
import numpy as np

from ...errors import ConversionError, user_location
from ...runtime import memory
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..core import normalize_axes, normalize_axis
from .common import NO, dims, keywords, static_dim, static_shape


def _ndim(a):
    return a.ndim if isinstance(a, Tensor) else np.ndim(a)


def _reshape(a, shape):
    return array_ops.reshape(a, shape) if isinstance(a, Tensor) else np.reshape(a, shape)


def _swapaxes(a, axis1, axis2):
    perm = list(range(a.ndim))
    i, j = normalize_axis(axis1, a.ndim, "axis1"), normalize_axis(axis2, a.ndim, "axis2")
    perm[i], perm[j] = perm[j], perm[i]
    return array_ops.transpose(a, perm)


def _axis_tuple(axis, ndim, what):
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(normalize_axis(int(i), ndim, what) for i in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in `{what}` argument")
    return axes


def _moveaxis(a, source, destination):
    source = _axis_tuple(source, a.ndim, "source")
    destination = _axis_tuple(destination, a.ndim, "destination")
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(a.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return array_ops.transpose(a, order)


def _at_least(ndim, where):
    """`a` with 1s added (at `where`'s places, numpy's atleast_{1,2,3}d) until it has `ndim` dims."""
    def one(a):
        if not isinstance(a, Tensor):
            return (np.atleast_1d, np.atleast_2d, np.atleast_3d)[ndim - 1](a)
        if a.ndim >= ndim:
            return a
        return array_ops.getitem(a, where[a.ndim])
    return one


_ATLEAST = {1: _at_least(1, {0: (None,)}),
            2: _at_least(2, {0: (None, None), 1: (None, slice(None))}),
            3: _at_least(3, {0: (None, None, None), 1: (None, slice(None), None), 2: (Ellipsis, None)})}


def _atleast(ndim):
    def atleast(*arys):
        out = tuple(_ATLEAST[ndim](a) for a in arys)
        return out[0] if len(out) == 1 else out
    atleast.__name__ = f"atleast_{ndim}d"
    return atleast


def _join(name, prepare, axis_of):
    def join(tup, *, dtype=None, casting="same_kind"):
        keywords(name, dict(dtype=dtype, casting=casting), dtype=None, casting="same_kind")
        arrays = [prepare(a) for a in tup]
        if not arrays:
            raise ValueError("need at least one array to concatenate")
        return array_ops.concat(arrays, axis_of(arrays))
    join.__name__ = name
    return join


def _column(v):
    if _ndim(v) >= 2:
        return v
    v = _ATLEAST[1](v)
    return array_ops.getitem(v, (slice(None), None)) if isinstance(v, Tensor) else np.asarray(v)[:, None]


def _column_stack(tup):
    arrays = [_column(v) for v in tup]
    return array_ops.concat(arrays, 1)


def _split_points(name, a, indices_or_sections, axis):
    try:
        return [0] + [int(i) for i in indices_or_sections], None
    except TypeError:  # a number of sections
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        total = static_dim(a, axis, name)
        each, extras = divmod(total, sections)
        if name == "split" and extras:
            raise ValueError("array split does not result in an equal division") from None
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        return list(np.cumsum(sizes)), total


def _splitter(name):
    def split(ary, indices_or_sections, axis=0):
        axis = normalize_axis(axis, ary.ndim)
        points, total = _split_points(name, ary, indices_or_sections, axis)
        bounds = points + [None] if total is None else points
        before = (slice(None),) * axis
        return [array_ops.getitem(ary, before + (slice(int(bounds[i]), None if bounds[i + 1] is None
                                                          else int(bounds[i + 1])),))
                for i in range(len(bounds) - 1)]
    split.__name__ = name
    return split


def _new_array(x):
    """`x` as the new array numpy's function gives (np.tile(x, 1) is a copy, not the reshaped view of
    x it is built as here; a reshape of a new array is one too, which may be written): a copy the
    optimizer drops where the graph does not return it."""
    return x if x.node.opdef.fresh else array_ops.identity(x)


def _tile(A, reps):
    try:
        reps = tuple(int(r) for r in reps)
    except TypeError:
        reps = (int(reps),)
    d = len(reps)
    shape = static_shape(A, "tile")
    shape = (1,) * (d - len(shape)) + shape
    reps = (1,) * (len(shape) - d) + reps
    c = array_ops.reshape(A, shape)
    spread = array_ops.broadcast_to(array_ops.reshape(c, tuple(x for s in shape for x in (1, s))),
                                    tuple(x for r, s in zip(reps, shape) for x in (r, s)))
    return _new_array(array_ops.reshape(spread, tuple(r * s for r, s in zip(reps, shape))))


def _repeat(a, repeats, axis=None):
    if isinstance(repeats, Tensor):
        raise ConversionError(f"np.repeat with repeats given as a tensor (a length known only when the graph "
                              f"runs) is not supported on tensors (at {user_location(3)})")
    if axis is None:
        a, axis = array_ops.reshape(a, (-1,)), 0
    axis = normalize_axis(axis, a.ndim)
    n = static_dim(a, axis, "repeat")
    counts = np.asarray(repeats)
    if None not in a.shape and (counts.ndim == 0 or counts.shape == (1,)):
        r = int(counts.reshape(-1)[0])
        if r < 0:
            raise ValueError("repeats may not contain negative values.")
        spread = array_ops.broadcast_to(array_ops.expand_dims(a, axis + 1),
                                        a.shape[:axis + 1] + (r,) + a.shape[axis + 1:])
        return _new_array(array_ops.reshape(spread, a.shape[:axis] + (n * r,) + a.shape[axis + 1:]))
    return array_ops.gather(a, np.repeat(np.arange(n), counts), axis)


def _roll(a, shift, axis=None):
    if axis is None:
        return _new_array(array_ops.reshape(_roll(array_ops.reshape(a, (-1,)), shift, 0), dims(a)))
    shifts = {}
    if isinstance(shift, Tensor):
        if not isinstance(axis, (int, np.integer)) or shift.ndim:
            raise ConversionError(f"np.roll by a tensor of shifts along several axes is not supported on "
                                  f"tensors (at {user_location(3)})")
        shifts[normalize_axis(axis, a.ndim)] = shift
    else:
        for sh, ax in np.broadcast(shift, axis):
            ax = normalize_axis(int(ax), a.ndim)
            shifts[ax] = shifts.get(ax, 0) + int(sh)
    out = a
    for ax, sh in shifts.items():
        n = static_dim(a, ax, "roll")
        if n == 0:
            continue
        index = math_ops.mod(math_ops.subtract(np.arange(n), sh), n) if isinstance(sh, Tensor) \
            else (np.arange(n) - sh) % n
        out = array_ops.gather(out, index, ax)
    return out if out is not a else array_ops.identity(a)


def _flip(m, axis=None):
    if m.weak:  # a Python number held as a tensor: numpy's asarray makes it a strong 0-d array
        m = m.astype(np.dtype(type(m.dtype.type(0).item())))
    axes = range(m.ndim) if axis is None else normalize_axes(axis, m.ndim)
    index = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim))
    return array_ops.getitem(m, index)


def _fliplr(m):
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return array_ops.getitem(m, (slice(None), slice(None, None, -1)))


def _flipud(m):
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return array_ops.getitem(m, (slice(None, None, -1), Ellipsis))


def _rot90(m, k=1, axes=(0, 1)):
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if axes[0] >= m.ndim or axes[0] < -m.ndim or axes[1] >= m.ndim or axes[1] < -m.ndim:
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k %= 4
    if k == 0:
        return array_ops.getitem(m, (slice(None),))
    if k == 2:
        return _flip(_flip(m, axes[0]), axes[1])
    perm = list(range(m.ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return array_ops.transpose(_flip(m, axes[1]), perm)
    return _flip(array_ops.transpose(m, perm), axes[1])


def _broadcast_to(array, shape, subok=False):
    keywords("broadcast_to", dict(subok=subok), subok=False)
    return array_ops.broadcast_to(array, (shape,) if isinstance(shape, (int, np.integer)) else shape)


# np.pad's index-mapping modes: where in the axis of length n each padded position reads
_PAD_INDEX = {
    "edge": lambda i, n: np.clip(i, 0, n - 1),
    "wrap": lambda i, n: i % n,
    "reflect": lambda i, n: np.zeros_like(i) if n == 1 else np.where(
        i % (2 * n - 2) < n, i % (2 * n - 2), 2 * n - 2 - i % (2 * n - 2)),
    "symmetric": lambda i, n: np.where(i % (2 * n) < n, i % (2 * n), 2 * n - 1 - i % (2 * n)),
}


def _pad(array, pad_width, mode="constant", **kwargs):
    if callable(mode) or mode not in ("constant", *_PAD_INDEX):
        raise ConversionError(f"np.pad(..., mode={mode!r}) is not supported on tensors (at {user_location(3)}); "
                              f"the modes that are: 'constant', {', '.join(repr(m) for m in _PAD_INDEX)}")
    if mode == "constant":
        keywords("pad", {k: v for k, v in kwargs.items() if k != "constant_values"})
    elif mode in ("reflect", "symmetric"):
        keywords("pad", kwargs, reflect_type="even")
    else:
        keywords("pad", kwargs)
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    widths = np.broadcast_to(widths, (array.ndim, 2))
    if (widths < 0).any():
        raise ValueError("index can't contain negative values")
    if array.ndim == 0:  # nothing to pad: numpy's copy, a 0-d array
        return math_ops.where(True, array, array)
    if mode == "constant":
        value = kwargs.get("constant_values", 0)
        if np.ndim(value) != 0:
            raise ConversionError(f"np.pad(..., constant_values=) with a value per axis is not supported on "
                                  f"tensors (at {user_location(3)}); give one value")
        return array_ops.pad(array, widths.tolist(), value)
    out = array
    for axis, (before, after) in enumerate(widths.tolist()):
        if before == after == 0:
            continue
        n = static_dim(array, axis, "pad")
        if n == 0:
            raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
        out = array_ops.gather(out, _PAD_INDEX[mode](np.arange(-before, n + after), n), axis)
    return out if out is not array else array_ops.identity(array)


def _diagonal(a, offset=0, axis1=0, axis2=1):
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    axis1, axis2 = normalize_axis(axis1, a.ndim), normalize_axis(axis2, a.ndim)
    if axis1 == axis2:
        raise ValueError("axis1 and axis2 cannot be the same")
    rest = [i for i in range(a.ndim) if i not in (axis1, axis2)]
    n1, n2 = static_dim(a, axis1, "diagonal"), static_dim(a, axis2, "diagonal")
    shape = dims(a)
    rows = np.arange(max(0, -offset), n1)
    rows = rows[rows + offset < n2]
    flat = array_ops.reshape(array_ops.transpose(a, rest + [axis1, axis2]), tuple(shape[i] for i in rest) + (n1 * n2,))
    out = array_ops.gather(flat, rows * n2 + rows + offset, len(rest))
    # numpy's diagonal is a read-only view: a write to it raises numpy's ValueError (seed 1180015732),
    # and a write to `a` shows in it (here: makes it stale)
    out = array_ops.broadcast_to(out, array_ops.shape(out) if None in out.shape else out.shape)
    if isinstance(a, Tensor):
        memory.track_computed_view(a, out)
    return out


def _diag(v, k=0):
    if v.ndim == 2:
        return _diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = static_shape(v, "diag")[0] + abs(k)
    padded = array_ops.pad(v, [(0, abs(k))])
    values = array_ops.getitem(padded, (slice(None), None) if k >= 0 else (None, slice(None)))
    return math_ops.where(np.eye(n, k=k, dtype=bool), values, np.zeros(1, v.dtype))


def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    keywords("trace", dict(out=out), out=None)
    diagonal = _diagonal(a, offset, axis1, axis2)
    if dtype is None:
        return math_ops.reduce_sum(diagonal, -1)
    # summed in `dtype`: a wider integer sum cast back wraps as numpy's int8 accumulator does
    total = math_ops.reduce_sum(math_ops.cast(diagonal, dtype), -1)
    return total if total.dtype == np.dtype(dtype) else math_ops.cast(total, dtype)


def _diff(a, n=1, axis=-1, prepend=NO, append=NO):
    """numpy's diff: `n` times the differences of neighbours along `axis` (not_equal for bools),
    after joining `prepend` and `append` (a scalar broadcast to one slice)."""
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, a.ndim)
    combined = []
    for extra in (prepend, None, append):
        if extra is None:
            combined.append(a)
        elif extra is not NO:
            if _ndim(extra) == 0:
                shape = tuple(1 if i == axis else d for i, d in enumerate(dims(a)))
                extra = array_ops.broadcast_to(extra, shape) if isinstance(extra, Tensor) else np.broadcast_to(extra,
                                                                                                               shape)
            combined.append(extra)
    if len(combined) > 1:
        a = array_ops.concat(combined, axis)
    before = (slice(None),) * axis
    op = math_ops.not_equal if a.dtype == np.bool_ else math_ops.subtract
    for _ in range(n):
        a = op(array_ops.getitem(a, before + (slice(1, None),)), array_ops.getitem(a, before + (slice(None, -1),)))
    return a


def _ravel(a):
    return array_ops.reshape(a, (-1,)) if isinstance(a, Tensor) else np.ravel(a)


def _append(arr, values, axis=None):
    if axis is None:
        arr = arr if _ndim(arr) == 1 else _ravel(arr)
        values, axis = _ravel(values), _ndim(arr) - 1
    return array_ops.concat([arr, values], axis)


def _delete(arr, obj, axis=None):
    """numpy's delete with the deleted positions known while tracing (ints, slices, arrays, masks):
    the kept ones gathered."""
    if isinstance(obj, Tensor):
        raise ConversionError(f"np.delete of positions given as a tensor is not supported on tensors (at "
                              f"{user_location(3)})")
    if axis is None:
        arr, axis = array_ops.reshape(arr, (-1,)), 0
    axis = normalize_axis(axis, arr.ndim)
    kept = np.delete(np.arange(static_dim(arr, axis, "delete")), obj)
    return array_ops.gather(arr, kept, axis)


def _resize(a, new_shape):
    new_shape = (int(new_shape),) if isinstance(new_shape, (int, np.integer)) else tuple(int(d) for d in new_shape)
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size = int(np.prod(static_shape(a, "resize"), dtype=np.int64))
    new_size = int(np.prod(new_shape, dtype=np.int64))
    if size == 0 or new_size == 0:
        return array_ops.zeros(new_shape, a.dtype)
    return _new_array(array_ops.reshape(array_ops.gather(array_ops.reshape(a, (-1,)), np.arange(new_size) % size),
                                        new_shape))


def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    s0 = (1,) * ndim
    output = [_reshape(x, s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = _reshape(output[0], (1, -1) + s0[2:])
        output[1] = _reshape(output[1], (-1, 1) + s0[2:])
    if not sparse:
        dims = []
        for i in range(ndim):
            lengths = [o.shape[i] for o in output if o.shape[i] != 1]
            known = [d for d in lengths if d is not None]
            dims.append(known[0] if known else next(
                (array_ops.shape(o)[i] for o in output if isinstance(o, Tensor) and o.shape[i] is None), 1))
        output = [array_ops.broadcast_to(o, tuple(dims)) for o in output]
    if copy:
        output = [array_ops.identity(o) if isinstance(o, Tensor) else np.copy(o) for o in output]
    return tuple(output)


FUNCTIONS = {
    np.swapaxes: _swapaxes, np.moveaxis: _moveaxis,
    np.atleast_1d: _atleast(1), np.atleast_2d: _atleast(2), np.atleast_3d: _atleast(3),
    np.vstack: _join("vstack", _ATLEAST[2], lambda arrays: 0),
    np.hstack: _join("hstack", _ATLEAST[1], lambda arrays: 0 if _ndim(arrays[0]) == 1 else 1),
    np.dstack: _join("dstack", _ATLEAST[3], lambda arrays: 2),
    np.column_stack: _column_stack,
    np.split: _splitter("split"), np.array_split: _splitter("array_split"),
    np.tile: _tile, np.repeat: _repeat, np.roll: _roll,
    np.flip: _flip, np.fliplr: _fliplr, np.flipud: _flipud, np.rot90: _rot90,
    np.broadcast_to: _broadcast_to, np.pad: _pad,
    np.diag: _diag, np.diagonal: _diagonal, np.trace: _trace, np.meshgrid: _meshgrid, np.diff: _diff,
    np.append: _append, np.delete: _delete, np.resize: _resize,
}
