"""The device layer: which array module (numpy or cupy) runs kernels, and placement.

Ops never import cupy; they receive the array module `xp` from here. A device is an array
module with numpy's API and an `ndarray` type: numpy (the CPU), cupy ("gpu", found when
first asked for), or one `register`ed by name (the tests' strict stand-in for cupy).
"""
import contextlib
import random
import sys
import threading

import numpy as np

GPU_EXTRA_HINT = 'pip install "autograph_lite[gpu]"'


class Device:
    def __init__(self, name, xp):
        self.name, self.xp = name, xp
        self.transfers = 0        # host<->device copies made by the runtime
        self.predicate_reads = 0  # of which: a branch or loop condition read by the host

    def read_predicate(self, value):
        """A device scalar condition as a Python bool (one small device-to-host copy)."""
        if is_device_array(value):
            self.transfers += 1
            self.predicate_reads += 1
        return bool(value)

    def put(self, value):
        """`value` as an array of this device, copying across devices when needed."""
        if self.xp is np:
            if is_device_array(value):
                self.transfers += 1
                return value.get()
            return value
        if is_device_array(value):
            return value
        self.transfers += 1
        return self.xp.asarray(value)

    def __repr__(self):
        return f"Device({self.name!r})"


CPU = Device("cpu", np)
_devices = {"cpu": CPU}
_by_array_type = {}  # the ndarray type of a device's module -> that Device


def register(name, xp):
    """Device `name`, whose arrays are `xp.ndarray`s made and computed by module `xp` (added once:
    registering it again gives the same Device)."""
    name = name.lower()
    device = _devices.get(name)
    if device is not None and device.xp is xp:
        return device
    device = _devices[name] = Device(name, xp)
    _by_array_type[xp.ndarray] = device
    return device


def get(name):
    """The Device called `name` ('cpu', 'gpu' or a `register`ed name); a clear error if the GPU
    is unavailable."""
    name = name.lower().split(":")[0]
    if name in _devices:
        return _devices[name]
    if name not in ("gpu", "cuda"):
        known = ", ".join(repr(n) for n in sorted({*_devices, "gpu"}))
        raise ValueError(f"unknown device {name!r}: use one of {known}")
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except ImportError:
        raise RuntimeError(f"device 'gpu' needs cupy, which is not installed: {GPU_EXTRA_HINT}") from None
    except Exception as e:  # cupy present, driver or GPU missing
        raise RuntimeError(f"device 'gpu' is unavailable: {e}. Install a CUDA GPU driver "
                           f"and {GPU_EXTRA_HINT}") from None
    _devices["cuda"] = register("gpu", cupy)
    return _devices["gpu"]


_HOST_TYPES = (np.ndarray, float, int, bool, np.float32, np.float64, np.int32, np.int64, np.bool_)


def device_of(value):
    """The Device whose array `value` is, or None for a host value (cupy is not imported to
    tell: a value of a `cupy` type means cupy is there)."""
    t = type(value)
    if t in _HOST_TYPES:
        return None
    device = _by_array_type.get(t)
    if device is None and t.__module__.startswith("cupy") and t.__name__ == "ndarray":
        return get("gpu")
    return device


def module_device(xp):
    """The Device whose array module is `xp`."""
    return next(d for d in _devices.values() if d.xp is xp)


def generator_device(value):
    """The Device whose arrays random generator `value` makes (numpy's `Generator`,
    `RandomState` or bit generator, Python's `random.Random`: the CPU; a device module's own `random.Generator` or
    `random.RandomState`, cupy's: that device), or None when `value` is not a generator."""
    if isinstance(value, (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)):
        return CPU  # Python's `random` module too: its functions are methods of a random.Random
    t = type(value)
    for device in list(_devices.values()):
        xp_random = getattr(device.xp, "random", None)
        if any(t is getattr(xp_random, name, None) for name in ("Generator", "RandomState")):
            return device
        if value is xp_random and device is not CPU:  # its global functions' state (cupy.random)
            return device
    if t.__module__.startswith("cupy") and t.__name__ in ("Generator", "RandomState"):
        return get("gpu")  # cupy's, before anything asked for the GPU device
    if value is sys.modules.get("cupy.random"):
        return get("gpu")
    return None


def random_function_device(f):
    """The Device whose array module's `random` namespace holds `f` (`cupy.random.rand`, its
    `default_rng`, its `RandomState`: the GPU), or None. numpy's global functions are methods of
    its global RandomState instead (`generator_device` of their `__self__`)."""
    name = getattr(f, "__name__", None)
    if not isinstance(name, str):
        return None
    if (getattr(f, "__module__", None) or "").startswith("cupy.random"):
        get("gpu")  # registers cupy's device, which holds `f`
    for device in list(_devices.values()):
        if device is not CPU and getattr(getattr(device.xp, "random", None), name, None) is f:
            return device
    return None


def scatter_add(xp):
    """`fn(out, index, values)` adding `values` into `out[index]`, a repeated index as often as it
    repeats (numpy's `add.at`; `cupyx.scatter_add` on a cupy whose ufuncs have no `.at`), or None."""
    add_at = getattr(getattr(xp, "add", None), "at", None)
    if add_at is None and getattr(xp, "__name__", "") == "cupy":
        import cupyx
        return cupyx.scatter_add
    return add_at


def to_host(value, scalar=False):
    """`value` as a host value: a device array copied to a numpy array (a counted transfer),
    anything else as it is; with `scalar`, a 0-d device array becomes a numpy scalar."""
    if not is_device_array(value):
        return value
    value = CPU.put(value)
    return value[()] if scalar and value.ndim == 0 else value


def is_device_array(value):
    """True for an array of a device other than the CPU (cupy's, the stand-in's)."""
    return device_of(value) is not None


def array_module(values):
    """The module of the first device array among `values` (cupy), else numpy."""
    for v in values:
        device = device_of(v)
        if device is not None:
            return device.xp
    return np


class _Placement(threading.local):
    device = CPU  # a class default: reading it is a plain attribute hit on the hot call path


_placement = _Placement()


def current():
    """The device chosen by the innermost `with ag.device(...)` block (cpu by default)."""
    return _placement.device


@contextlib.contextmanager
def device(name):
    """Place eager array creation and compiled functions called in this block on `name`."""
    previous = current()
    _placement.device = get(name)
    try:
        yield _placement.device
    finally:
        _placement.device = previous
