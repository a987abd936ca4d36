"""numpy's array creation with tensor arguments: `np.zeros(n)` for a tensor n, `np.full(3, t)`,
`np.arange(n)` (a length known only when the graph runs is a `None` dim), `np.eye(n)`,
`np.array([t, 1.0])`, `np.asarray(t)`, and `np.linspace(t0, t1)`.

numpy's creation functions written in C do not dispatch through `__array_function__`: given a
tensor they ask for its value (`Tensor.__array__`, which raises). Converted code calls them
through `ag__.call` (operators/call.py), which takes them from `CALLS` here: the graph form when
an argument holds a tensor, numpy itself otherwise (a constant).
"""
import numpy as np

from ...errors import ConversionError, user_location
from ...runtime.boxes import ARRAY, box_of
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..core import convert_to_tensor, holds_tensor, result_dtype
from .common import keywords, python_ints_fit


def _shape(shape, name):
    if isinstance(shape, Tensor):
        if shape.dtype.kind not in "iu":
            raise TypeError(f"'{shape.dtype}' object cannot be interpreted as an integer (np.{name})")
        return (shape,) if shape.ndim == 0 else shape
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for d in dims:
        if isinstance(d, Tensor) and (d.ndim or d.dtype.kind not in "iu"):
            raise TypeError(f"np.{name}: a dimension must be an integer scalar, got {d!r}")
    return dims


def _filled(name, op):
    def filled(shape, dtype=float, order="C", *, device=None, like=None):
        keywords(name, dict(order=order, device=device, like=like), order="C", device=None, like=None)
        return op(_shape(shape, name), np.float64 if dtype is None else dtype)
    filled.__name__ = name
    return filled


def _full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    keywords("full", dict(order=order, device=device, like=like), order="C", device=None, like=None)
    if dtype is None:  # numpy: the dtype of np.asarray(fill_value)
        dtype = np.asarray(fill_value).dtype if not isinstance(fill_value, Tensor) else \
            np.dtype(type(fill_value.dtype.type(0).item())) if fill_value.weak else fill_value.dtype
    python_ints_fit(fill_value, dtype)
    value = math_ops.cast(fill_value, dtype)
    if np.ndim(value) == 0:
        return array_ops.fill(_shape(shape, "full"), value)
    return array_ops.identity(array_ops.broadcast_to(value, _shape(shape, "full")))


def _arange(*args, dtype=None, device=None, like=None, **bounds):
    keywords("arange", dict(device=device, like=like), device=None, like=None)
    if bounds:  # arange(start=..., stop=..., step=...)
        args = args + tuple(bounds.pop(k) for k in ("start", "stop", "step") if k in bounds)
        if bounds:
            raise TypeError(f"arange() got an unexpected keyword argument {next(iter(bounds))!r}")
    if not 1 <= len(args) <= 3:
        raise TypeError(f"arange() takes from 1 to 3 positional arguments but {len(args)} were given")
    if len(args) == 1:
        return array_ops.range(args[0], dtype=dtype)
    return array_ops.range(*args, dtype=dtype)


def _eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    keywords("eye", dict(order=order, device=device, like=like), order="C", device=None, like=None)
    for value in (N, M, k):
        if isinstance(value, Tensor) and (value.ndim or value.dtype.kind not in "iu"):
            raise TypeError(f"np.eye: N, M and k must be integers, got {value!r}")
    rows = array_ops.range(N) if isinstance(N, Tensor) else np.arange(N)
    cols = rows if M is None else array_ops.range(M) if isinstance(M, Tensor) else np.arange(M)
    diagonal = math_ops.equal(math_ops.subtract(array_ops.getitem(cols, (None, slice(None))) if isinstance(cols, Tensor)
                                                else cols[None, :],
                                                array_ops.getitem(rows, (slice(None), None)) if isinstance(rows, Tensor)
                                                else rows[:, None]), k)
    return math_ops.cast(diagonal, np.float64 if dtype is None else dtype)


def _identity(n, dtype=None, *, like=None):
    keywords("identity", dict(like=like), like=None)
    return _eye(n, dtype=dtype)


def _as_array(value):
    """A tensor as the ndarray numpy's array() gives: a 0-d value boxed as an array, not a scalar."""
    if value.ndim == 0 and (value.weak or box_of(value) != ARRAY):
        value = value.astype(np.dtype(type(value.dtype.type(0).item()))) if value.weak else value
        return math_ops.where(True, value, value)  # Select boxes a 0-d result as an array
    return value


def _array(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):  # noqa: A002
    keywords("array", dict(order=order, subok=subok, like=like), order="K", subok=False, like=None)
    return _converted("array", object, dtype, ndmin, copy=bool(copy))  # copy=None: the array itself, where it fits


def _asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    keywords("asarray", dict(order=order, device=device, like=like), order=None, device=None, like=None)
    return _converted("asarray", a, dtype, 0, copy=bool(copy))


def _converted(name, value, dtype, ndmin, copy):
    if isinstance(value, Tensor):
        out = value if dtype is None or np.dtype(dtype) == value.dtype else math_ops.cast(value, dtype)
        if copy and out is value:
            out = array_ops.identity(out)
    else:
        if dtype is not None:
            python_ints_fit(value, dtype)
        try:
            out = convert_to_tensor(value)  # a (nested) list holding tensors: stacked, as numpy does
        except (TypeError, ValueError) as e:
            raise type(e)(f"np.{name} of {value!r}: {e} (at {user_location(4)})") from None
        if dtype is not None:
            out = math_ops.cast(out, dtype)
    out = _as_array(out)
    for _ in range(ndmin - out.ndim):
        out = array_ops.expand_dims(out, 0)
    return out


def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """numpy's linspace, step for step: the float dtype of start and stop (Python numbers weak),
    arange(num) * step (or / div * delta where the step is 0), plus start, stop as the last."""
    keywords("linspace", dict(device=device), device=None)
    if isinstance(num, Tensor):
        raise ConversionError(f"np.linspace with num given as a tensor (a length known only when the graph "
                              f"runs) is not supported on tensors (at {user_location(3)})")
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    start, stop = (convert_to_tensor(v) for v in (start, stop))
    dt = result_dtype(lambda a, b: np.empty((), np.result_type(a, b)), (start, stop))
    if dt.kind not in "fc":
        dt = np.dtype(np.float64)
    integer_dtype = dtype is not None and np.issubdtype(dtype, np.integer)
    dtype = dt if dtype is None else np.dtype(dtype)
    delta = math_ops.subtract(math_ops.cast(stop, dt), math_ops.cast(start, dt))
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = math_ops.divide(delta, div)
        y = math_ops.where(math_ops.equal(step, 0), math_ops.multiply(np.divide(y, div), delta),
                           math_ops.multiply(y, step))
    else:
        step = np.nan
        y = math_ops.multiply(y, delta)
    y = math_ops.cast(math_ops.add(y, start), dt)
    if endpoint and num > 1:
        last = array_ops.expand_dims(array_ops.broadcast_to(math_ops.cast(stop, dt), y.shape[1:]), 0)
        y = array_ops.concat([array_ops.getitem(y, (slice(None, -1),)), last], 0)
    if axis != 0:
        from .shape import FUNCTIONS as shape_functions
        y = shape_functions[np.moveaxis](y, 0, axis)
    if integer_dtype:
        y = math_ops.floor(y)
    y = math_ops.cast(y, dtype)
    return (y, step) if retstep else y


def _tensor_call(numpy_fn, form):
    """`numpy_fn` itself, or its graph form where an argument holds a tensor."""
    def call(*args, **kwargs):
        if holds_tensor(args) or holds_tensor(list(kwargs.values())):
            return form(*args, **kwargs)
        return numpy_fn(*args, **kwargs)
    call.__name__ = call.__qualname__ = numpy_fn.__name__
    return call


# numpy creation functions that never dispatch to a Tensor argument -> their graph form, which
# operators/call.py calls in converted code when an argument holds a tensor
CALLS = {fn: _tensor_call(fn, form) for fn, form in {
    np.zeros: _filled("zeros", array_ops.zeros), np.ones: _filled("ones", array_ops.ones),
    # eager's contents are undefined (whatever the memory held); zeros are one such content
    np.empty: _filled("empty", array_ops.zeros),
    np.full: _full, np.arange: _arange, np.eye: _eye, np.identity: _identity,
    np.array: _array, np.asarray: _asarray, np.asanyarray: _asarray,
}.items()}

FUNCTIONS = {np.linspace: _linspace}
