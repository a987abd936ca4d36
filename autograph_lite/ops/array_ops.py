"""Array creation, shape manipulation, gathering and indexing.

Ops that take a shape accept a Python tuple, a tuple holding scalar Tensors, or a
1-D integer Tensor; dims the trace cannot know become None.
"""
import builtins
import numbers

import numpy as np

from ..errors import UnknownRank, user_location
from ..runtime import devices, memory
from ..runtime.graph import Slot, Tensor
from ..runtime.lowering import SPELLINGS, STORE_SPELLINGS
from ..runtime.opdef import AXES, BOOL, CONST, DTYPE, INDEX, INT, STR, OptionalOf, TupleOf, always
from .core import (apply, broadcast_shapes, define, normalize_axes, normalize_axis,
                   result_dtype, static_ints)

OPS = {}


def constant_value(t):
    """The value of `t` if the trace knows it (a Const node), else None."""
    return t.node.attrs["value"] if t.node.opdef is CONST else None


def known_int(t, depth=8):
    """The value of integer scalar `t` where the trace knows it: a constant, a dim of a known
    shape, or integer arithmetic on such values (`ag.shape(a)[0] + 1`), else None. A shape
    made from it is then static, as the same shape made from Python ints is."""
    node = t.node
    if t.ndim > 1 or t.dtype.kind not in "iu" or node is None:
        return None
    if node.opdef is CONST:
        return node.attrs["value"]
    if node.opdef.static_value is not None:
        return node.opdef.static_value(node)
    if depth == 0 or node.opdef.kernel is None or node.opdef.stateful or len(node.outputs) != 1 or not (
            node.opdef.elementwise or node.op in ("StridedSlice", "Cast")):
        return None
    values = [known_int(i, depth - 1) for i in node.inputs]
    if any(v is None for v in values):
        return None
    try:
        with np.errstate(all="raise"):
            return node.opdef.kernel(np, **node.attrs)(*values)
    except (ArithmeticError, IndexError, ValueError, TypeError):
        return None  # it raises when the graph runs, where eager raises


def static_shape_of(t):
    """What the trace knows of the shape held by 1-D int Tensor `t`: a tuple, dims may be None."""
    value = constant_value(t)
    if value is not None:
        return tuple(int(d) for d in np.asarray(value).reshape(-1))
    if t.node.op == "Shape":
        return t.node.inputs[0].shape
    if t.node.op == "Stack":
        dims = [known_int(i) for i in t.node.inputs]
        return tuple(None if d is None or d < 0 else int(d) for d in dims)  # a negative dim raises when run
    if t.ndim != 1 or t.shape[0] is None:
        raise UnknownRank(f"a shape must be a 1-D tensor of known length, got {t!r}")
    return (None,) * t.shape[0]


def _shape_input(shape):
    """A shape argument as one value: a Python tuple, or a 1-D Tensor if any dim is symbolic."""
    if isinstance(shape, Tensor):
        return shape
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    dims = tuple(shape)
    if any(isinstance(d, Tensor) for d in dims):
        return stack([cast_int(d) for d in dims])
    return tuple(int(d) for d in dims)


def cast_int(d):
    return d.astype(np.int64) if isinstance(d, Tensor) else int(d)  # Tensor.astype is math_ops.cast


def _as_shape(s):
    return s if isinstance(s, tuple) else tuple(int(d) for d in s.tolist())


# --- creation -----------------------------------------------------------------------------

def constant(value, dtype=None):
    """`value` as an array on the current device (numpy's dtype rules unless `dtype`)."""
    if isinstance(value, Tensor):
        return value if dtype is None else value.astype(dtype)
    return devices.current().xp.asarray(value, dtype=dtype)


def _values_beyond_first(node):
    """`value_errors` of an op whose other inputs are indices or a shape: values known only when the
    graph runs (not constants) can be out of range."""
    return any(t.node.opdef is not CONST for t in node.inputs[1:])


def _shape_from_values(node):
    """`value_errors` of an op making an array of a shape given as a tensor (a negative dim raises)."""
    return node.inputs[0].node.opdef is not CONST


def _checked_before(node):
    """`value_errors` of Range: a zero step, its one error, is checked before it where Python's
    range() takes tensors (converted code iterates such a range without running it)."""
    return False


def _filled(op_name, public, xp_fn):
    def kernel(xp, dtype):
        fn = getattr(xp, xp_fn)
        return lambda s: fn(_as_shape(s), dtype)

    OPS[public] = opdef = define(op_name, kernel, lambda s, dtype: [(static_shape_of(s), dtype)],
                                 attrs={"dtype": DTYPE}, value_errors=_shape_from_values, fresh=True)

    def op(shape, dtype=np.float64):
        return apply(opdef, (_shape_input(shape),), {"dtype": np.dtype(dtype)})
    op.__name__ = op.__qualname__ = public
    op.__doc__ = f"An array of the given shape filled with {public[:-1]}s (float64 unless `dtype`)."
    return op


zeros = _filled("Zeros", "zeros", "zeros")
ones = _filled("Ones", "ones", "ones")


def _fill_infer(s, value):
    if value.ndim:
        raise ValueError(f"fill value must be a scalar, got shape {value.shape}")
    return [(static_shape_of(s), value.dtype)]


OPS["fill"] = define("Fill", lambda xp: lambda s, v: xp.full(_as_shape(s), v), _fill_infer,
                     value_errors=_shape_from_values)


def fill(dims, value):
    """An array of shape `dims` with every element `value` (numpy.full)."""
    return apply(OPS["fill"], (_shape_input(dims), value))


def _like(op_name, public, xp_fn):
    def kernel(xp, dtype=None):
        fn = getattr(xp, xp_fn)
        return lambda x: fn(x, dtype=dtype)

    OPS[public] = opdef = define(op_name, kernel, lambda x, dtype=None: [(x.shape, dtype or x.dtype)],
                                 attrs={"dtype": OptionalOf(DTYPE)},
                                 may_raise=False)

    def op(x, dtype=None):
        return apply(opdef, (x,), {"dtype": None if dtype is None else np.dtype(dtype)})
    op.__name__ = op.__qualname__ = public
    op.__doc__ = f"An array shaped like `x` filled with {xp_fn[:-6]}s (dtype of `x` unless given)."
    return op


zeros_like = _like("ZerosLike", "zeros_like", "zeros_like")
ones_like = _like("OnesLike", "ones_like", "ones_like")


def _range_infer(*bounds, dtype=None):
    values = [constant_value(b) for b in bounds]
    if dtype is None:
        dtype = np.arange(*[1 if b.weak else np.ones((), b.dtype) for b in bounds]).dtype
    length = None
    if all(v is not None for v in values):
        length = len(np.arange(*values))
    return [((length,), dtype)]


OPS["range"] = define("Range", lambda xp, dtype=None: lambda *b: xp.arange(*b, dtype=dtype), _range_infer,
                      attrs={"dtype": OptionalOf(DTYPE)}, value_errors=_checked_before)


def range(start, limit=None, delta=1, dtype=None):  # noqa: A001 - TF's name
    """numpy.arange(start, limit, delta); bounds may be Tensors (the length is then None)."""
    bounds = (0, start, delta) if limit is None else (start, limit, delta)
    if type(delta) is int and delta == 1:
        bounds = bounds[1:2] if limit is None else bounds[:2]
    return apply(OPS["range"], bounds, {"dtype": None if dtype is None else np.dtype(dtype)})


# --- joining ------------------------------------------------------------------------------

def _unify(dims, what):
    known = {d for d in dims if d is not None}
    if len(known) > 1:
        raise ValueError(f"{what}: sizes {sorted(known)} differ")
    return known.pop() if known else None


def _concat_infer(*values, axis=0):
    ranks = {v.ndim for v in values}
    if len(ranks) != 1 or 0 in ranks:
        raise ValueError(f"all inputs must have the same rank >= 1, got shapes {[v.shape for v in values]}")
    ndim = ranks.pop()
    axis = normalize_axis(axis, ndim)
    shape = []
    for i in builtins.range(ndim):
        dims = [v.shape[i] for v in values]
        shape.append((None if None in dims else sum(dims)) if i == axis else _unify(dims, f"dim {i}"))
    return [(tuple(shape), result_dtype(lambda *a: np.concatenate([np.atleast_1d(x) for x in a]), values))]


def _joining(join):
    """A Stack or Concat kernel: numpy's function takes Python and numpy numbers as it takes
    arrays (asarray of each); a device's (cupy's) takes its own arrays only, so each becomes one
    first, as numpy would make it."""
    def kernel(xp, axis=0):
        if xp is np:
            return lambda *v: getattr(np, join)(v, axis=axis)
        return lambda *v: getattr(xp, join)([x if isinstance(x, xp.ndarray) else xp.asarray(x) for x in v],
                                            axis=axis)
    return kernel


OPS["concat"] = define("Concat", _joining("concatenate"), _concat_infer,
                       attrs={"axis": INT}, primitive="concatenate")


def concat(values, axis=0):
    """Join a list of arrays along an existing `axis` (numpy.concatenate)."""
    return apply(OPS["concat"], tuple(values), {"axis": axis})


def _stack_infer(*values, axis=0):
    ranks = {v.ndim for v in values}
    if len(ranks) != 1:
        raise ValueError(f"all inputs must have the same rank, got shapes {[v.shape for v in values]}")
    ndim = ranks.pop()
    axis = normalize_axis(axis, ndim + 1)
    shape = [_unify([v.shape[i] for v in values], f"dim {i}") for i in builtins.range(ndim)]
    shape.insert(axis, len(values))
    return [(tuple(shape), result_dtype(lambda *a: np.stack(a), values))]


OPS["stack"] = define("Stack", _joining("stack"), _stack_infer,
                      attrs={"axis": INT})


def stack(values, axis=0):
    """Join a list of same-shaped arrays along a new `axis` (numpy.stack)."""
    return apply(OPS["stack"], tuple(values), {"axis": axis})


# --- shape manipulation -------------------------------------------------------------------

def _reshape_infer(x, s):
    target = list(static_shape_of(s))
    if target.count(-1) > 1:
        raise ValueError(f"can only infer one dimension (-1) of the new shape {tuple(target)}")
    size = None if None in x.shape else int(np.prod(x.shape, dtype=np.int64))
    rest = [d for d in target if d != -1]
    if -1 in target:
        known = None not in rest
        target[target.index(-1)] = size // int(np.prod(rest, dtype=np.int64)) if size is not None and known and np.prod(rest) else None
    elif size is not None and None not in target and int(np.prod(target, dtype=np.int64)) != size:
        raise ValueError(f"cannot reshape a tensor of shape {x.shape} ({size} elements) into shape {tuple(target)}")
    return [(tuple(target), x.dtype)]


def _always(node):
    return True


OPS["reshape"] = define("Reshape", lambda xp: lambda x, s: xp.reshape(x, _as_shape(s)), _reshape_infer,
                        view=_always, reshapes=True, value_errors=_values_beyond_first)


def reshape(x, shape):
    """`x` with a new shape holding the same elements; one dim may be -1 (numpy.reshape)."""
    return apply(OPS["reshape"], (x, _shape_input(shape)))


def _transpose_infer(x, perm=None):
    perm = tuple(reversed(builtins.range(x.ndim))) if perm is None else tuple(normalize_axis(p, x.ndim) for p in perm)
    if sorted(perm) != list(builtins.range(x.ndim)):
        raise ValueError(f"perm {perm} is not a permutation of the {x.ndim} axes of shape {x.shape}")
    return [(tuple(x.shape[p] for p in perm), x.dtype)]


def _transpose_of_transpose(node):
    """transpose(transpose(x)) is x when the two permutations undo each other."""
    inner = node.inputs[0]
    if inner.node.op != node.op:
        return None
    x = inner.node.inputs[0]
    identity = tuple(builtins.range(x.ndim))
    p1 = inner.node.attrs["perm"] or tuple(reversed(identity))
    p2 = node.attrs["perm"] or tuple(reversed(identity))
    return x if tuple(p1[i] for i in p2) == identity else None


OPS["transpose"] = define("Transpose", lambda xp, perm=None: lambda x: xp.transpose(x, perm), _transpose_infer,
                          attrs={"perm": OptionalOf(TupleOf(INT))},
                          may_raise=False, simplify=_transpose_of_transpose, view=_always, primitive="transpose")


def transpose(x, perm=None):
    """`x` with its axes permuted by `perm` (reversed when None), numpy.transpose."""
    return apply(OPS["transpose"], (x,), {"perm": None if perm is None else tuple(static_ints(perm, "perm"))})


def _static_shape(node):
    shape = node.inputs[0].shape
    return None if None in shape else np.array(shape, np.int64)


def _static_size(node):
    shape = node.inputs[0].shape
    return None if None in shape else np.int64(np.prod(shape, dtype=np.int64))


OPS["shape"] = define("Shape", lambda xp: lambda x: xp.asarray(x.shape, dtype=xp.int64),
                      lambda x: [((x.ndim,), np.dtype(np.int64))], may_raise=False, static_value=_static_shape)


def shape(x):
    """The shape of `x` as a 1-D int64 array (known at run time even where the trace has None)."""
    return apply(OPS["shape"], (x,))


OPS["size"] = define("Size", lambda xp: lambda x: xp.asarray(x.size, dtype=xp.int64),
                     lambda x: [((), np.dtype(np.int64))], may_raise=False, static_value=_static_size)


def size(x):
    """The number of elements of `x`, as an int64 scalar array."""
    return apply(OPS["size"], (x,))


def _expand_dims_infer(x, axis):
    axis = normalize_axis(axis, x.ndim + 1)
    return [(x.shape[:axis] + (1,) + x.shape[axis:], x.dtype)]


def _expand_dims_kernel(xp, axis):
    if xp is np:
        return lambda x: np.expand_dims(x, axis)
    # a device's expand_dims (cupy's) takes its own arrays only: a Python or numpy number (a stacked
    # list's item) becomes one first
    return lambda x: xp.expand_dims(x if isinstance(x, xp.ndarray) else xp.asarray(x), axis)


OPS["expand_dims"] = define("ExpandDims", _expand_dims_kernel, _expand_dims_infer,
                            attrs={"axis": INT},
                            may_raise=False, view=_always)


def expand_dims(x, axis):
    """`x` with a new size-1 axis inserted at `axis`."""
    return apply(OPS["expand_dims"], (x,), {"axis": static_ints(axis, "axis")})


def _squeeze_infer(x, axis=None):
    if axis is None:
        if None in x.shape:
            raise ValueError(f"squeeze of shape {x.shape} with unknown dims needs an explicit axis")
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axes(axis, x.ndim)
        bad = [a for a in axes if x.shape[a] not in (1, None)]
        if bad:
            raise ValueError(f"cannot squeeze axis {bad[0]} of shape {x.shape}: its size is not 1")
    return [(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)]


OPS["squeeze"] = define("Squeeze", lambda xp, axis=None: lambda x: xp.squeeze(x, axis), _squeeze_infer,
                        attrs={"axis": AXES}, view=_always)


def squeeze(x, axis=None):
    """`x` without its size-1 axes (only `axis` if given)."""
    return apply(OPS["squeeze"], (x,), {"axis": static_ints(axis, "axis")})


def _pad_widths(paddings, ndim):
    paddings = static_ints(paddings, "paddings")
    widths = tuple(tuple(int(w) for w in pair) for pair in np.asarray(paddings, dtype=object).reshape(-1, 2))
    if len(widths) != ndim or any(w < 0 for pair in widths for w in pair):
        raise ValueError(f"paddings must be {ndim} pairs (before, after) of non-negative ints, got {paddings!r}")
    return widths


def _pad_infer(x, c, paddings):
    shape_ = tuple(None if d is None else d + a + b for d, (a, b) in zip(x.shape, paddings))
    if c.ndim != 0:
        raise ValueError(f"constant_values must be a scalar, got shape {c.shape}")
    return [(shape_, x.dtype)]


def _pad_kernel(xp, paddings):
    return lambda x, c: xp.pad(x, paddings, mode="constant", constant_values=c)


OPS["pad"] = define("Pad", _pad_kernel, _pad_infer, attrs={"paddings": TupleOf(TupleOf(INT))})


def pad(x, paddings, constant_values=0):
    """`x` with `paddings[i] = (before, after)` elements of `constant_values` added on each side
    of axis i (numpy.pad in "constant" mode; TensorFlow's tf.pad).

        ag.pad(x, [[1, 1], [0, 2]])
    """
    ndim = x.ndim if isinstance(x, Tensor) else np.ndim(x)
    return apply(OPS["pad"], (x, constant_values), {"paddings": _pad_widths(paddings, ndim)})


def _copy_kernel(xp):
    return lambda x: x.copy() if hasattr(x, "copy") else xp.asarray(x)


def _copy_not_needed(node):
    """A copy that the graph does not return is its input: a graph's values are not updated in
    place, except where the buffer-reuse pass proves no other reader sees it (ag.grad's copies of
    the differentiated arguments: W5 copied w1 on every step)."""
    return node.inputs[0]


OPS["identity"] = define("Identity", _copy_kernel, lambda x: [(x.shape, x.dtype)], weak_result=True,
                         primitive="identity", simplify=_copy_not_needed)


def identity(x):
    """A copy of `x` with the same shape, dtype and values (TensorFlow's tf.identity)."""
    return apply(OPS["identity"], (x,))


# --- gather and indexing ------------------------------------------------------------------

def _gather_infer(params, indices, axis=0):
    if not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"gather indices must be integers, got {indices.dtype}")
    axis = normalize_axis(axis, params.ndim)
    return [(params.shape[:axis] + indices.shape + params.shape[axis + 1:], params.dtype)]


OPS["gather"] = define("Gather", lambda xp, axis=0: lambda p, i: xp.take(p, i, axis=axis), _gather_infer,
                       attrs={"axis": INT}, value_errors=always)


def gather(params, indices, axis=0):
    """Slices of `params` along `axis` at `indices` (numpy.take)."""
    return apply(OPS["gather"], (params, indices), {"axis": static_ints(axis, "axis")})


def _filler(index):
    """fill(values): `index` with each Slot k replaced by values[k], as a function written once per
    node (a loop's store `out[:, i, j, :] = v` runs it every iteration: NPBench's resnet 2,353 times)."""
    constants = {}

    def expr(item):
        if isinstance(item, Slot):
            return f"v[{item.k}]"
        if isinstance(item, slice):
            return f"slice({expr(item.start)}, {expr(item.stop)}, {expr(item.step)})"
        name = f"c{len(constants)}"
        constants[name] = item
        return name
    return eval(f"lambda v: ({''.join(expr(i) + ', ' for i in index)})", constants)


def _getitem_kernel(xp, index):
    if not any(isinstance(i, Slot) or isinstance(i, slice) and any(
            isinstance(b, Slot) for b in (i.start, i.stop, i.step)) for i in index):
        return lambda x: x[index]
    fill = _filler(index)
    return lambda x, *values: x[fill(values)]


def _slice_length(s, dim, values):
    bounds = [values[b.k] if isinstance(b, Slot) else b for b in (s.start, s.stop, s.step)]
    if dim is None or any(isinstance(b, Tensor) for b in bounds):
        return dim if all(b is None for b in bounds) else None
    return len(builtins.range(*slice(*bounds).indices(dim)))


def _getitem_infer(x, *values, index):
    values = [v if constant_value(v) is None else np.asarray(constant_value(v)) for v in values]

    def consumed(item):
        if item is None or item is Ellipsis:
            return 0
        if isinstance(item, Slot) and values[item.k].dtype == np.bool_:
            return values[item.k].ndim
        return 1

    n_consumed = sum(consumed(i) for i in index)
    if Ellipsis in index:
        pos = index.index(Ellipsis)
        index = index[:pos] + (slice(None),) * (x.ndim - n_consumed) + index[pos + 1:]
    # numpy's rule: with an array index, integers are advanced indices too; the advanced indices'
    # shapes broadcast, in place where they stand together, else first (`x[0, :, idx]`: idx's dims lead)
    def is_array(item):
        return isinstance(item, Slot) and (values[item.k].ndim > 0 or values[item.k].dtype == np.bool_)
    arrays = [i for i in index if is_array(i)]
    if len(arrays) > 1 and any(values[i.k].dtype == np.bool_ for i in arrays):
        raise IndexError("a boolean array index with another array index is not supported")
    shape, dim_iter, advanced, spots = [], iter(enumerate(x.shape)), [], []
    for item in index:
        if item is None:
            shape.append(1)
            continue
        axis, dim = next(dim_iter, (None, None))
        if axis is None:
            raise IndexError(f"too many indices for a tensor of rank {x.ndim}")
        if isinstance(item, slice):
            shape.append(_slice_length(item, dim, values))
            continue
        if isinstance(item, numbers.Integral):
            if dim is not None and not -dim <= item < dim:
                raise IndexError(f"index {item} is out of bounds for axis {axis} with size {dim}")
            if arrays:
                advanced.append(())
                spots.append(len(shape))
            continue
        v = values[item.k]  # a Tensor (or array) index
        if not (np.issubdtype(v.dtype, np.integer) or v.dtype == np.bool_):
            raise IndexError(f"tensor indices must be integers or booleans, got {v.dtype}")
        if v.dtype == np.bool_:
            for _ in builtins.range(v.ndim - 1):
                next(dim_iter)
            advanced.append((None,))
        else:
            advanced.append(tuple(v.shape))
        spots.append(len(shape))
    if advanced:
        together = len(set(spots)) == 1  # nothing (a slice, a new axis) between them
        at = spots[0] if together else 0
        shape[at:at] = list(broadcast_shapes(*advanced))
    shape.extend(d for _, d in dim_iter)
    return [(tuple(shape), x.dtype)]


def _basic_index(node):
    """numpy gives a view for basic indexing: every tensor part of the index a scalar, not a bool."""
    return all(t.ndim == 0 and t.dtype != np.bool_ for t in node.inputs[1:])


def _same_index(store, item):
    """Whether SetItem node `store` and StridedSlice node `item` name the same elements: one index
    template, filled by the same tensors."""
    values = store.inputs[2:]
    return store.attrs["index"] == item.attrs["index"] and len(item.inputs) - 1 == len(values) \
        and all(a is b for a, b in zip(item.inputs[1:], values))


def _index_may_raise(node):
    """`value_errors` of an item read: an index known only when the graph runs may be out of range,
    but for the index a store into the same array just used (`x[i] += v` reads x[i] after storing)."""
    x = node.inputs[0]
    stored = x.node.opdef is OPS["setitem"] and _same_index(x.node, node)
    return not stored and _values_beyond_first(node)


OPS["getitem"] = define("StridedSlice", _getitem_kernel, _getitem_infer, attrs={"index": INDEX}, view=_basic_index,
                        value_errors=_index_may_raise)


def _getitem_inline(xp, a, bind, index):
    """`x[...]` written as Python subscript syntax, tensor parts of the index by name."""
    def part(v):
        if isinstance(v, Slot):
            return a[1 + v.k]
        if v is None or isinstance(v, (int, np.integer)):
            return repr(None if v is None else int(v))
        return bind(v)  # arrays, lists: bound as values

    def item(i):
        if i is Ellipsis:
            return "..."
        if isinstance(i, slice):
            bounds = ["" if b is None else part(b) for b in (i.start, i.stop, i.step)]
            return ":".join(bounds[:2]) + (f":{bounds[2]}" if bounds[2] else "")
        return part(i)
    items = [item(i) for i in index]
    if not items:  # x[()]: a 0-d array's element (a numpy scalar)
        return f"{a[0]}[()]"
    return f"{a[0]}[{', '.join(items)}{',' if len(items) == 1 and items[0] in ('None', '...') else ''}]"


SPELLINGS[OPS["getitem"]] = _getitem_inline


def getitem(x, index):
    """`x[index]`: ints, slices (bounds may be Tensors), None, Ellipsis, one array index."""
    template, extra = _index_template(index)
    return apply(OPS["getitem"], (x, *extra), {"index": template})



# --- item assignment: functional updates of an array (runtime/memory.py) --------------------

def _setitem_kernel(xp, index, **store):
    copy = store.get("copy", True)  # copy=False: into x's own buffer (passes/buffer_reuse.py, "store")
    fill = _filler(index)

    def set_item(x, value, *values):
        out = x.copy() if copy else x
        out[fill(values)] = value  # numpy's own assignment: its casting, broadcasting and errors
        return out
    return set_item


def _setitem_infer(x, value, *values, index):
    ((target, _),) = _getitem_infer(x, *values, index=index)
    shape = tuple(value.shape)
    while len(shape) > len(target) and shape[0] == 1:  # numpy drops leading 1s of the value
        shape = shape[1:]
    if len(shape) > len(target) or any(v not in (1, t) for v, t in zip(reversed(shape), reversed(target))
                                       if v is not None and t is not None):
        raise ValueError(f"could not broadcast input array from shape {value.shape} into shape {target}")
    return [(x.shape, x.dtype)]


# `x[index] = value` as a new array: x with value (broadcast, cast to x's dtype as numpy assigns)
# at index; repeated array indices: the last write wins, as numpy's assignment
def _store_of_its_own_item(node):
    """`x[i] = x[i]` is x: what `x[1:] -= v` leaves after its update through the view (numpy's
    `tmp = x[1:]; tmp -= v; x[1:] = tmp`); the store copied NPBench's fdtd_2d arrays 180 times a call.
    `x[:] = v` (every element, v of x's shape and dtype) is v: it copied NPBench's doitgen's A first."""
    x, value, *values = node.inputs
    if not values and x.ndim and all(i == slice(None) or i is Ellipsis for i in node.attrs["index"]) \
            and value.shape == x.shape and None not in x.shape and value.dtype == x.dtype:
        return value
    item = value.node
    if item.opdef is OPS["getitem"] and item.inputs[0] is x and _same_index(node, item):
        return x
    return None


def _store_may_raise(node):
    """An index out of range, inf into ints: a store is kept though unused, but for `x[i] = x[i]`,
    whose read of the item raised first if any did."""
    return _store_of_its_own_item(node) is None


OPS["setitem"] = define("SetItem", _setitem_kernel, _setitem_infer, attrs={"index": INDEX}, fresh=True, box="array",
                        in_place="store", value_errors=_store_may_raise, simplify=_store_of_its_own_item)
STORE_SPELLINGS[OPS["setitem"]] = lambda xp, a, bind, index: _getitem_inline(xp, [a[0], *a[2:]], bind, index)


def _ufunc_at_kernel(xp, ufunc, index, unary):
    fill = _filler(index)

    def at(x, *rest):
        out = x.copy()
        value, values = (None, rest) if unary else (rest[0], rest[1:])
        method = getattr(xp, ufunc).at  # numpy's own: unbuffered, so a repeated index applies each time
        method(out, fill(values)) if unary else method(out, fill(values), value)
        return out
    return at


def _ufunc_at_infer(x, *rest, ufunc, index, unary):
    _getitem_infer(x, *(rest if unary else rest[1:]), index=index)  # the index's own errors
    return [(x.shape, x.dtype)]


# `np.add.at(x, index, value)` as a new array: x with the ufunc applied at index, once per occurrence
OPS["ufunc_at"] = define("UfuncAt", _ufunc_at_kernel, _ufunc_at_infer,
                         attrs={"ufunc": STR, "index": INDEX, "unary": BOOL}, fresh=True, box="array",
                         value_errors=always)


def ufunc_at(ufunc, x, index, value=None, location=None):
    """`ufunc.at(x, index[, value])` on handle `x`: a functional update of its memory, as `x[index] = v`."""
    template, extra = _index_template(index)
    unary = ufunc.nin == 1
    inputs = (*extra,) if unary else (value, *extra)
    memory.update(x, lambda current: apply(OPS["ufunc_at"], (current, *inputs),
                                           {"ufunc": ufunc.__name__, "index": template, "unary": unary}),
                  "an array", f"np.{ufunc.__name__}.at", location or user_location(2))


def _index_template(index):
    """(template with Slots, the tensor and array parts) of a subscript, as getitem stages it."""
    index = index if isinstance(index, tuple) else (index,)
    extra = []

    def slot(value):
        if isinstance(value, Tensor) or isinstance(value, (np.ndarray, list)):
            extra.append(value)
            return Slot(len(extra) - 1)
        return value

    template = tuple(slice(slot(i.start), slot(i.stop), slot(i.step)) if isinstance(i, slice) else slot(i)
                     for i in index)
    return template, extra


def set_item(x, index, value, label="an array", location=None):
    """`x[index] = value` on handle `x`: its memory gets the new contents, and every view and
    alias of it reads them (runtime/memory.py)."""
    if x.weak or (x.shape == () and x.box == "scalar"):
        raise TypeError(f"'{'int' if x.weak else 'numpy scalar'}' object does not support item assignment "
                        f"(at {location or user_location(2)})")
    template, extra = _index_template(index)
    memory.update(x, lambda current: apply(OPS["setitem"], (current, value, *extra), {"index": template}),
                  label, "[...] =", location or user_location(2))


def _replay_getitem(node, base):
    return apply(OPS["getitem"], (base, *node.inputs[1:]), {"index": node.attrs["index"]})


def _scatter_getitem(node, before, new):
    return apply(OPS["setitem"], (before, new, *node.inputs[1:]), {"index": node.attrs["index"]})


def _replay_same(node, base):
    return apply(node.opdef, (base,), node.attrs)


def _scatter_transpose(node, before, new):
    perm = node.attrs["perm"]
    perm = tuple(reversed(builtins.range(new.ndim))) if perm is None else tuple(p % new.ndim for p in perm)
    return transpose(new, tuple(sorted(builtins.range(len(perm)), key=lambda i: perm[i])))


def _scatter_reshape_back(node, before, new):
    return reshape(new, shape(before) if None in before.shape else before.shape)


memory.VIEWS[OPS["getitem"]] = memory.ViewRule(_replay_getitem, _scatter_getitem)
memory.VIEWS[OPS["transpose"]] = memory.ViewRule(_replay_same, _scatter_transpose)
memory.VIEWS[OPS["expand_dims"]] = memory.ViewRule(_replay_same, _scatter_reshape_back)
memory.VIEWS[OPS["squeeze"]] = memory.ViewRule(_replay_same, _scatter_reshape_back)


# --- broadcasting, sorting, searching -----------------------------------------------------

def _broadcast_to_infer(x, s):
    target = static_shape_of(s)
    if any(t is not None and t < 0 for t in target):
        raise ValueError("all elements of broadcast shape must be non-negative")  # numpy's words
    if len(target) < x.ndim:
        raise ValueError(f"cannot broadcast a tensor of shape {x.shape} to the shape {target} of fewer dims")
    for d, t in zip(reversed(x.shape), reversed(target)):
        if None not in (d, t) and d not in (1, t):
            raise ValueError(f"operands could not be broadcast together with remapped shapes "
                             f"[original->remapped]: {x.shape} and requested shape {target}")
    return [(target, x.dtype)]


OPS["broadcast_to"] = define("BroadcastTo", lambda xp: lambda x, s: xp.broadcast_to(x, _as_shape(s)),
                             _broadcast_to_infer, view=_always, value_errors=_values_beyond_first)
memory.READ_ONLY[OPS["broadcast_to"]] = _always


def broadcast_to(x, shape):
    """`x` broadcast to `shape` (numpy.broadcast_to: a read-only view)."""
    return apply(OPS["broadcast_to"], (x, _shape_input(shape)))


def _sort_infer(x, axis=-1, kind=None, stable=None):
    if axis is None:
        return [((None if None in x.shape else int(np.prod(x.shape, dtype=np.int64)),), x.dtype)]
    if x.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    normalize_axis(axis, x.ndim)
    return [(x.shape, x.dtype)]


def _sorting_kernel(name):
    def kernel(xp, axis=-1, kind=None, stable=None):
        # only the keywords given: an array module may lack numpy's newer ones (cupy has no `stable`)
        given = {k: v for k, v in (("kind", kind), ("stable", stable)) if v is not None}
        fn = getattr(xp, name)
        return lambda x: fn(x, axis=axis, **given)
    return kernel


OPS["sort"] = define("Sort", _sorting_kernel("sort"), _sort_infer,
                     attrs={"axis": OptionalOf(INT), "kind": OptionalOf(STR), "stable": OptionalOf(BOOL)})


def sort(x, axis=-1, kind=None, stable=None):
    """A sorted copy of `x` along `axis` (flattened when None), numpy.sort; NaNs sort last."""
    return apply(OPS["sort"], (x,), {"axis": axis, "kind": kind, "stable": stable})


def _argsort_infer(x, axis=-1, kind=None, stable=None):
    (shape, _), = _sort_infer(x, axis) if x.ndim or axis is None else [((), x.dtype)]
    return [(shape, np.dtype(np.intp))]


OPS["argsort"] = define("ArgSort", _sorting_kernel("argsort"), _argsort_infer,
                        attrs={"axis": OptionalOf(INT), "kind": OptionalOf(STR), "stable": OptionalOf(BOOL)})


def argsort(x, axis=-1, kind=None, stable=None):
    """The indices that sort `x` along `axis` (numpy.argsort)."""
    return apply(OPS["argsort"], (x,), {"axis": axis, "kind": kind, "stable": stable})


def _take_along_axis_infer(x, indices, axis):
    if not np.issubdtype(indices.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return [(indices.shape, x.dtype)]
    if indices.ndim != x.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    axis = normalize_axis(axis, x.ndim)
    shape = list(broadcast_shapes(tuple(1 if i == axis else d for i, d in enumerate(x.shape)),
                                  tuple(1 if i == axis else d for i, d in enumerate(indices.shape))))
    shape[axis] = indices.shape[axis]
    return [(tuple(shape), x.dtype)]


OPS["take_along_axis"] = define("TakeAlongAxis", lambda xp, axis: lambda x, i: xp.take_along_axis(x, i, axis=axis),
                                _take_along_axis_infer, attrs={"axis": OptionalOf(INT)},
                                value_errors=_values_beyond_first)  # an index out of range (fuzzer seed 1212007928)


def take_along_axis(x, indices, axis):
    """`x`'s elements at `indices` along `axis` (numpy.take_along_axis)."""
    return apply(OPS["take_along_axis"], (x, indices), {"axis": axis})


def _nonzero_infer(x):
    if x.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() "
                         "instead.")
    return [((None,), np.dtype(np.intp))] * x.ndim


def _nonzero_kernel(xp):
    def nonzero(x):
        out = xp.nonzero(x)
        return out if len(out) > 1 else out[0]  # one output per axis: a 1-D x's is the array itself
    return nonzero


OPS["nonzero"] = define("NonZero", _nonzero_kernel, _nonzero_infer, may_raise=False)


def nonzero(x):
    """The indices of `x`'s nonzero elements, one 1-D array per axis (numpy.nonzero); their
    length is known only when the graph runs."""
    out = apply(OPS["nonzero"], (x,))
    return out if isinstance(out, tuple) else (out,)


def _searchsorted_infer(a, v, side="left"):
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    return [(v.shape, np.dtype(np.intp))]


OPS["searchsorted"] = define("SearchSorted", lambda xp, side="left": lambda a, v: xp.searchsorted(a, v, side=side),
                             _searchsorted_infer, attrs={"side": STR}, may_raise=False)


def searchsorted(a, v, side="left"):
    """Where `v`'s elements would go in sorted 1-D `a` to keep it sorted (numpy.searchsorted)."""
    return apply(OPS["searchsorted"], (a, v), {"side": side})


# --- gradients ----------------------------------------------------------------------------

from .core import grad_rule  # noqa: E402
from .gradient_ops import SCATTER, float_dtype, scatter_add, sum_to  # noqa: E402

# math_ops sits above this module (its gradients use expand_dims, transpose, size), so the
# gradients here reach its cast and reduce_sum through Tensor.astype and Tensor.sum.


def _like(g, x):
    if g is None or not float_dtype(x):
        return None
    return g if g.dtype == x.dtype else g.astype(x.dtype)


@grad_rule(OPS["zeros"], OPS["ones"], OPS["zeros_like"], OPS["ones_like"], OPS["range"],
           OPS["shape"], OPS["size"])
def _constant_output_grad(node, *dys):
    return [None] * len(node.inputs)


@grad_rule(OPS["fill"])
def _fill_grad(node, dy):
    return [None, _like(dy.sum(), node.inputs[1])]


@grad_rule(OPS["concat"])
def _concat_grad(node, dy):
    axis = normalize_axis(node.attrs["axis"], dy.ndim)
    grads, start = [], 0
    for v in node.inputs:
        size_ = v.shape[axis] if v.shape[axis] is not None else shape(v)[axis]
        stop = start + size_
        grads.append(_like(dy[(slice(None),) * axis + (slice(start, stop),)], v))
        start = stop
    return grads


@grad_rule(OPS["stack"])
def _stack_grad(node, dy):
    axis = normalize_axis(node.attrs["axis"], dy.ndim)
    return [_like(dy[(slice(None),) * axis + (i,)], v) for i, v in enumerate(node.inputs)]


@grad_rule(OPS["reshape"])
def _reshape_grad(node, dy):
    x = node.inputs[0]
    return [_like(reshape(dy, shape(x) if None in x.shape else x.shape), x), None]


@grad_rule(OPS["transpose"])
def _transpose_grad(node, dy):
    x = node.inputs[0]
    perm = node.attrs["perm"]
    perm = tuple(reversed(range(x.ndim))) if perm is None else tuple(p % x.ndim for p in perm)
    inverse = tuple(sorted(range(len(perm)), key=lambda i: perm[i]))
    return [_like(transpose(dy, inverse), x)]


@grad_rule(OPS["expand_dims"], OPS["squeeze"])
def _reshape_like_grad(node, dy):
    x = node.inputs[0]
    return [_like(reshape(dy, shape(x) if None in x.shape else x.shape), x)]


@grad_rule(OPS["gather"])
def _gather_grad(node, dy):
    params, indices = node.inputs
    axis = normalize_axis(node.attrs["axis"], params.ndim)
    index = (slice(None),) * axis + (Slot(0),)
    return [_like(scatter_add(dy, params, [indices], index), params), None]


@grad_rule(OPS["getitem"])
def _getitem_grad(node, dy):
    x, *values = node.inputs
    return [_like(scatter_add(dy, x, values, node.attrs["index"]), x)] + [None] * len(values)


@grad_rule(SCATTER)  # beside getitem: each is the other's gradient
def _scatter_grad(node, dy):
    _, like, *values = node.inputs
    picked = apply(OPS["getitem"], (dy, *values), {"index": node.attrs["index"]})
    return [picked, None] + [None] * len(values)




@grad_rule(OPS["setitem"])
def _setitem_grad(node, dy):
    x, value, *values = node.inputs
    index = node.attrs["index"]
    # x's elements at index were overwritten: no gradient reaches them; value's is dy there,
    # summed over the axes it was broadcast along
    dx = _like(apply(OPS["setitem"], (dy, np.zeros((), dy.dtype), *values), {"index": index}), x)
    picked = apply(OPS["getitem"], (dy, *values), {"index": index})
    dv = _like(sum_to(picked, value), value) if float_dtype(value) else None
    return [dx, dv] + [None] * len(values)


@grad_rule(OPS["pad"])
def _pad_grad(node, dy):
    x = node.inputs[0]
    index = tuple(slice(a, None if b == 0 else -b) for a, b in node.attrs["paddings"])
    return [_like(dy[index], x), None]


@grad_rule(OPS["identity"])
def _identity_grad(node, dy):
    return [_like(dy, node.inputs[0])]


@grad_rule(OPS["broadcast_to"])
def _broadcast_to_grad(node, dy):
    return [_like(sum_to(dy, node.inputs[0]), node.inputs[0]), None]


@grad_rule(OPS["argsort"], OPS["nonzero"], OPS["searchsorted"])
def _index_output_grad(node, *dys):
    return [None] * len(node.inputs)


@grad_rule(OPS["sort"])
def _sort_grad(node, dy):
    """Each sorted element's cotangent goes back to where it came from: dy at the inverse of the
    (stable) sorting permutation."""
    x = node.inputs[0]
    axis = node.attrs["axis"]
    order = argsort(x, axis, stable=True)
    inverse = argsort(order, -1 if axis is None else axis, stable=True)
    dx = take_along_axis(dy, inverse, -1 if axis is None else axis)
    return [_like(dx if axis is not None else reshape(dx, shape(x) if None in x.shape else x.shape), x)]


def _positions(t, k):
    """0, 1, ... along axis k of `t`, shaped to broadcast against it."""
    dim = t.shape[k] if t.shape[k] is not None else shape(t)[k]
    return reshape(range(dim), (1,) * k + (-1,) + (1,) * (t.ndim - k - 1))


@grad_rule(OPS["take_along_axis"])
def _take_along_axis_grad(node, dy):
    x, indices = node.inputs
    axis = node.attrs["axis"]
    if axis is None:
        flat = reshape(x, (-1,))
        dx = scatter_add(dy, flat, [indices], (Slot(0),))
        return [_like(reshape(dx, shape(x) if None in x.shape else x.shape), x), None]
    axis = normalize_axis(axis, x.ndim)
    values, index = [], []
    for k in builtins.range(x.ndim):
        if k != axis and x.shape[k] == 1:  # x broadcast along k: every position reads its one element
            index.append(0)
            continue
        values.append(indices if k == axis else _positions(dy, k))
        index.append(Slot(len(values) - 1))
    return [_like(scatter_add(dy, x, values, tuple(index)), x), None]
