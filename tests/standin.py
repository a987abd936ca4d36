"""A strict stand-in for cupy, so the GPU runtime's placement logic runs (and is tested) on a
machine without a GPU: `AG_TEST_DEVICE=standin` makes it the suite's default device.

It behaves like cupy where placement is concerned:
- its arrays live on a pretend device: `__array__` raises, as cupy's does, so nothing turns
  one into a numpy array by accident; its functions refuse numpy arrays (cupy raises
  TypeError for them) and take Python and numpy scalars, except those that take cupy's own
  arrays only (`stack`, `concatenate`, `expand_dims`, the condition of `where`);
- every copy between host and device is counted in `COPIES`: `asarray`/`array` of host data
  ("to_device"); `.get()`, `bool()`, `int()`, `float()`, `.item()`, `.tolist()` and printing
  ("to_host");
- reductions give 0-d arrays, not scalars, as cupy's do; numpy ufuncs and functions called on
  its arrays dispatch to it (cupy's `__array_ufunc__`/`__array_function__`).
Underneath, the data are numpy arrays, so results are numpy's bit for bit. Its `RawModule`
builds the generated CUDA source for the CPU (tests/cuda_emulation.py) and launches it thread
by thread, counting launches in `LAUNCHES`; without a C++ compiler it has none, as a module
without raw kernels (fused chains then run op by op).
"""
import collections
import functools
import sys
import types

import numpy as np

COPIES = collections.Counter()  # "to_device", "to_host"
_REFUSED = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
            "NumPy array explicitly.")


def _unwrap(value):
    """numpy data of stand-in arrays inside `value`; a numpy array is refused, as cupy does."""
    if type(value) is ndarray:
        return value._data
    if type(value) is np.ndarray:
        raise TypeError(f"Unsupported type {type(value)} (the stand-in device, like cupy, takes no "
                        f"numpy arrays: move them with asarray)")
    if type(value) in (list, tuple):
        return type(value)(_unwrap(v) for v in value)
    return value


def _wrap(value):
    if isinstance(value, np.ndarray):
        return ndarray(value)
    if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_)):
        return ndarray(np.asarray(value))  # cupy's reductions give 0-d arrays
    if type(value) in (list, tuple):
        return type(value)(_wrap(v) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # numpy's QRResult, EighResult, ...
        return type(value)(*(_wrap(v) for v in value))
    return value


def _device_function(fn):
    @functools.wraps(fn)
    def on_device(*args, **kwargs):
        with np.errstate(all="ignore"):  # a GPU raises no floating-point flags: cupy never warns
            return _wrap(fn(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))
    return on_device


def _to_host(data):
    COPIES["to_host"] += 1
    return data


class ndarray:
    __slots__ = ("_data",)
    __array_priority__ = 1000

    def __init__(self, data):
        assert type(data) is np.ndarray
        self._data = data

    # --- what cupy refuses, and what copies ---
    def __array__(self, *args, **kwargs):
        raise TypeError(_REFUSED)

    def get(self):
        return _to_host(self._data).copy()

    def __bool__(self):
        return bool(_to_host(self._data))

    def __int__(self):
        return int(_to_host(self._data))

    def __float__(self):
        return float(_to_host(self._data))

    def __index__(self):
        return _to_host(self._data).__index__()

    def item(self, *args):
        return _to_host(self._data).item(*args)

    def tolist(self):
        return _to_host(self._data).tolist()

    def __repr__(self):
        return repr(_to_host(self._data))

    def __str__(self):
        return str(_to_host(self._data))

    def __format__(self, spec):
        return format(_to_host(self._data), spec)

    # --- numpy calling us: dispatch to the device, refusing numpy arrays ---
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # numpy hands a numpy scalar operand over as a 0-d array: cupy takes it as the scalar
        inputs = tuple(x[()] if type(x) is np.ndarray and x.ndim == 0 else x for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        with np.errstate(all="ignore"):
            result = getattr(ufunc, method)(*_unwrap(inputs), **{k: v for k, v in kwargs.items() if k != "out"},
                                         **({"out": kwargs["out"]} if out is not None else {}))
        return out[0] if out is not None and len(out) == 1 else _wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        return _wrap(func(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()}))

    # --- the rest: numpy's, on device data ---
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    itemsize = property(lambda self: self._data.itemsize)
    nbytes = property(lambda self: self._data.nbytes)
    strides = property(lambda self: self._data.strides)
    flags = property(lambda self: self._data.flags)
    T = property(lambda self: ndarray(self._data.T))

    @property
    def data(self):
        """The device pointer, as cupy's `a.data.ptr`."""
        return _Pointer(self._data.ctypes.data)

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (_wrap(row) for row in self._data)

    def __getitem__(self, key):
        return _wrap(self._data[_unwrap_index(key)])

    def __setitem__(self, key, value):
        if type(value) is np.ndarray:
            COPIES["to_device"] += 1  # cupy copies a numpy value in
        else:
            value = _unwrap(value)
        self._data[_unwrap_index(key)] = value

    def __getattr__(self, name):
        if name.startswith("__"):  # numpy's protocols (__array_interface__, ...) are not forwarded
            raise AttributeError(name)
        attr = getattr(self._data, name)
        return _device_function(attr) if callable(attr) else _wrap(attr)

    def __hash__(self):
        raise TypeError("unhashable type: 'ndarray'")


class _Pointer:
    def __init__(self, ptr):
        self.ptr = ptr


def _unwrap_index(key):
    if type(key) is np.ndarray:
        COPIES["to_device"] += 1  # cupy copies a numpy index array in
        return key
    if type(key) is tuple:
        return tuple(_unwrap_index(k) for k in key)
    return _unwrap(key)


def _operator(ufunc, reflected=False):
    def op(self, other):
        if type(other) not in (ndarray, np.ndarray) and not isinstance(other, (int, float, bool, complex, np.generic)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        with np.errstate(all="ignore"):
            return _wrap(ufunc(_unwrap(a), _unwrap(b)))
    return op


for _name, _ufunc in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide),
                      ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power),
                      ("matmul", np.matmul), ("and", np.bitwise_and), ("or", np.bitwise_or),
                      ("xor", np.bitwise_xor), ("lshift", np.left_shift), ("rshift", np.right_shift)]:
    setattr(ndarray, f"__{_name}__", _operator(_ufunc))
    setattr(ndarray, f"__r{_name}__", _operator(_ufunc, reflected=True))
for _name, _ufunc in [("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                      ("eq", np.equal), ("ne", np.not_equal)]:
    setattr(ndarray, f"__{_name}__", _operator(_ufunc))
for _name, _ufunc in [("neg", np.negative), ("pos", np.positive), ("abs", np.absolute), ("invert", np.invert)]:
    setattr(ndarray, f"__{_name}__", (lambda u: lambda self: _wrap(u(self._data)))(_ufunc))


# --- the module's functions -----------------------------------------------------------------

def asarray(value, dtype=None, order=None):
    """To the device: a copy of host data (counted), or a stand-in array as it is."""
    if type(value) is ndarray:
        return value if dtype is None or value.dtype == dtype else value.astype(dtype)
    COPIES["to_device"] += 1
    return ndarray(np.array(_unwrap_host(value), dtype=dtype, order=order or "K"))


def array(value, dtype=None, copy=True, order="K", ndmin=0):
    if type(value) is ndarray:
        return ndarray(np.array(value._data, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    COPIES["to_device"] += 1
    return ndarray(np.array(_unwrap_host(value), dtype=dtype, order=order, ndmin=ndmin))


def _unwrap_host(value):
    if type(value) in (list, tuple):
        return type(value)(_unwrap_host(v) for v in value)
    return value._data if type(value) is ndarray else value


def asnumpy(value):
    return value.get() if type(value) is ndarray else np.asarray(value)


def get_array_module(*values):
    return sys.modules[__name__] if any(type(v) is ndarray for v in values) else np


def _draw_method(name):
    def method(self, *args, **kwargs):
        return _device_function(getattr(self._rng, name))(*args, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


class _DeviceGenerator:
    """Draws of numpy's generator `_rng`, made on the device; like cupy's generators, whose
    state is a cuRAND handle, it cannot be copied."""

    def __init__(self, rng):
        self._rng = rng

    def __deepcopy__(self, memo):
        raise TypeError(f"cannot pickle '{type(self).__name__}' object (a device generator's state)")

    __reduce__ = __deepcopy__


class Generator(_DeviceGenerator):
    """`random.Generator`, as cupy's."""


class RandomState(_DeviceGenerator):
    """`random.RandomState(seed)`, as cupy's."""

    def __init__(self, seed=None):
        super().__init__(np.random.RandomState(_unwrap(seed)))

    def seed(self, seed=None):
        self._rng.seed(_unwrap(seed))


_GENERATOR_DRAWS = ("random", "integers", "standard_normal", "normal", "uniform", "exponential", "choice",
                    "permutation", "poisson", "binomial")
_RANDOM_STATE_DRAWS = ("rand", "randn", "random_sample", "randint", "standard_normal", "normal", "uniform",
                       "exponential", "choice", "permutation", "poisson", "binomial")
for _name in _GENERATOR_DRAWS:
    setattr(Generator, _name, _draw_method(_name))
for _name in _RANDOM_STATE_DRAWS:
    setattr(RandomState, _name, _draw_method(_name))


def _global_function(name):
    def draw(*args, **kwargs):
        return getattr(random.get_random_state(), name)(*args, **kwargs)
    draw.__name__ = draw.__qualname__ = name
    draw.__module__ = random.__name__
    return draw


# `random`, as cupy.random: generators, and global functions drawing from the current RandomState
random = types.ModuleType(f"{__name__}.random")
random._state = RandomState()
random.Generator, random.RandomState = Generator, RandomState


def _default_rng(seed=None):
    return Generator(np.random.default_rng(_unwrap(seed)))


def _get_random_state():
    return random._state


def _set_random_state(state):
    random._state = state


def _seed(seed=None):
    random._state.seed(seed)


for _name, _f in (("default_rng", _default_rng), ("get_random_state", _get_random_state),
                  ("set_random_state", _set_random_state), ("seed", _seed)):
    _f.__name__ = _f.__qualname__ = _name
    setattr(random, _name, _f)
for _name in _RANDOM_STATE_DRAWS:
    setattr(random, _name, _global_function(_name))


class _Cuda:
    """The few `cupy.cuda` calls the GPU benchmark makes."""

    class Device:
        def synchronize(self):
            pass

    class runtime:
        @staticmethod
        def getDeviceCount():
            return 1

        @staticmethod
        def getDeviceProperties(index):
            return {"name": b"stand-in (numpy)"}


cuda = _Cuda()


class RawModule:
    """`cupy.RawModule(code=...)`: the CUDA source built for the CPU (tests/cuda_emulation.py);
    `get_function(name)` launches a kernel as cupy's do, `kernel(grid, block, args)`, with
    stand-in arrays as pointers and numpy scalars by value. Without a C++ compiler there is no
    `RawModule` here, as on a module with no raw kernels (fused chains then run op by op)."""

    def __init__(self, code, options=()):
        import cuda_emulation
        self._source = code
        self._tag = "m"
        self._library = cuda_emulation.build([(self._tag, code)])

    def get_function(self, name):
        import cuda_emulation
        launch = cuda_emulation.launcher(self._library, self._source, name, self._tag)

        def kernel(grid, block, args):
            LAUNCHES[name] += 1
            values = []
            for a in args:
                if type(a) is np.ndarray:
                    raise TypeError("a numpy array passed to a raw kernel: cupy would refuse it")
                values.append(a._data.ctypes.data if type(a) is ndarray else a.item())
            launch(grid[0], block[0], *values)
        return kernel


LAUNCHES = collections.Counter()  # raw kernel name -> launches


def fuse(**kwargs):
    """`cupy.fuse()`: the function as it is (its ufunc calls run here one by one)."""
    return lambda fn: fn


class _Ufunc:
    """A numpy ufunc on device arrays, with its methods (`add.at`, `add.reduce`), as cupy's."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _device_function(self._ufunc)(*args, **kwargs)

    def __getattr__(self, name):
        if name == "reduce" and self.__name__ in ("fmax", "fmin"):  # as cupy 14's (seen on an H200)
            def refused(*args, **kwargs):
                raise NotImplementedError(f"`cupy_{self.__name__}.reduce` is not supported yet")
            return refused
        return _device_function(getattr(self._ufunc, name))


# cupy functions whose array arguments must be its own arrays: a Python or numpy number is a
# TypeError there ("Argument 'a' has incorrect type"), where numpy takes it
_ARRAYS_ONLY = {"expand_dims": 1, "stack": None, "concatenate": None, "where": 1}


def _arrays_only(name, fn):
    count = _ARRAYS_ONLY[name]

    @functools.wraps(fn)
    def strict(*args, **kwargs):
        arrays = list(args[0]) if count is None else args[:count]
        for a in arrays:
            if type(a) is not ndarray:
                raise TypeError(f"Argument 'a' has incorrect type (expected the stand-in's ndarray, got "
                                f"{type(a).__name__}): cupy.{name} takes its own arrays only")
        return fn(*args, **kwargs)
    return strict


def __getattr__(name):
    value = getattr(np, name)
    if isinstance(value, np.ufunc):
        return _Ufunc(value)
    if isinstance(value, type) or not callable(value):
        return value  # dtypes, scalar types, constants
    if name in _ARRAYS_ONLY:
        return _arrays_only(name, _device_function(value))
    return _device_function(value)


if __import__("cuda_emulation").compiler() is None:
    del RawModule


def device():
    """This module as the registered device "standin" (the same Device each time)."""
    from autograph_lite.runtime import devices
    return devices.register("standin", sys.modules[__name__])
