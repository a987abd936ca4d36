"""`TensorSpec`, the description of an array argument, and which values count as arrays.

An array argument is an ndarray (or a subclass that keeps ndarray's operators), a numpy
scalar or a GPU array; `_subclass_problem` says in words why other ndarray subclasses
(np.matrix, masked arrays, ...) are refused.
"""
import numpy as np

from .runtime import devices


class TensorSpec:
    """Describes an array argument: `shape` (dims may be None) and `dtype` (float32 by default)."""

    __slots__ = ("shape", "dtype", "name")

    def __init__(self, shape, dtype=np.float32, name=None):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype, self.name = np.dtype(dtype), name

    @classmethod
    def from_value(cls, value):
        return cls(value.shape, value.dtype)

    def __repr__(self):
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other):
        return isinstance(other, TensorSpec) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def mismatch(self, value):
        """Why `value` does not fit this spec, in words; None if it fits."""
        if isinstance(value, TensorSpec):
            shape, dtype, what = value.shape, value.dtype, repr(value)
        elif _is_array_input(value):
            refused = _subclass_problem(type(value))
            if refused:
                return f"got {refused}"
            shape, dtype = value.shape, value.dtype
            what = f"an array of shape {shape} and dtype {dtype}"
        else:
            return f"got {type(value).__name__} {value!r}, not an array"
        if dtype != self.dtype:
            return f"got {what}: dtype {dtype} is not {self.dtype}"
        if len(shape) != len(self.shape):
            return f"got {what}: rank {len(shape)} is not {len(self.shape)}"
        for axis, (want, have) in enumerate(zip(self.shape, shape)):
            if want is not None and want != have:
                return f"got {what}: dim {axis} is {have}, expected {want}"
        return None


def _is_array(value):
    t = type(value)
    return t is np.ndarray or isinstance(value, np.generic) or devices.is_device_array(value)


def _is_array_input(value):
    """An array argument: an ndarray (subclasses too), a numpy scalar or a GPU array."""
    return isinstance(value, (np.ndarray, np.generic)) or devices.is_device_array(value)


# ndarray methods whose override changes what an operation on the array means; a subclass
# may override the others (construction, printing, pickling, __array_finalize__).
_NDARRAY_SEMANTICS = frozenset(name for name in dir(np.ndarray) if name.startswith("__")) - {
    "__array_finalize__", "__array_priority__", "__class__", "__class_getitem__", "__copy__",
    "__deepcopy__", "__delattr__", "__dir__", "__doc__", "__format__", "__getattribute__",
    "__getstate__", "__hash__", "__init__", "__init_subclass__", "__new__", "__reduce__",
    "__reduce_ex__", "__repr__", "__setattr__", "__setstate__", "__sizeof__", "__str__",
    "__subclasshook__"}


def _subclass_problem(t):
    """Why arrays of type `t` cannot be array inputs, in words; None for ndarray and faithful subclasses.

    A compiled graph computes with ndarray semantics. np.memmap and subclasses that keep
    ndarray's operators are array inputs (their data read at each call); np.matrix, masked
    arrays and subclasses that override operators would compute something else than eager.
    """
    if t is np.ndarray or not issubclass(t, np.ndarray):
        return None
    if issubclass(t, np.matrix):
        return ("a numpy.matrix, whose operators differ from an ndarray's (`*` is a matrix product, "
                "results stay 2-D)")
    if issubclass(t, np.ma.MaskedArray):
        return "a masked array (numpy.ma), whose mask a compiled graph would ignore"
    mro = t.__mro__
    overridden = sorted({name for cls in mro[:mro.index(np.ndarray)] if cls is not np.memmap
                         for name in vars(cls) if name in _NDARRAY_SEMANTICS})
    if overridden:
        return (f"a {t.__name__}, an ndarray subclass overriding {', '.join(overridden)}, whose "
                f"operations may differ from an ndarray's")
    return None


def _python_to_array(spec, value):
    """A Python number passed where a TensorSpec is expected becomes an array of its dtype."""
    if isinstance(spec, TensorSpec) and isinstance(value, (bool, int, float)) and not _is_array(value):
        kind = np.asarray(value).dtype.kind
        if kind == spec.dtype.kind or (kind in "bi" and spec.dtype.kind in "iuf") or (kind == "f" and spec.dtype.kind == "f"):
            return np.asarray(value, dtype=spec.dtype)
    return value
