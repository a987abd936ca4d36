"""The device layer: which array module (numpy or cupy) runs kernels, and placement.

Ops never import cupy; they receive the array module `xp` from here.
"""
import contextlib
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
        if is_gpu_array(value):
            self.transfers += 1
            self.predicate_reads += 1
        return bool(value)

    def put(self, value):
        """`value` as an array of this device, copying across devices when needed."""
        if self.xp is np:
            if is_gpu_array(value):
                self.transfers += 1
                return value.get()
            return value
        if is_gpu_array(value):
            return value
        self.transfers += 1
        return self.xp.asarray(value)

    def __repr__(self):
        return f"Device({self.name!r})"


CPU = Device("cpu", np)
_devices = {"cpu": CPU}


def get(name):
    """The Device called `name` ('cpu' or 'gpu'); a clear error if the GPU is unavailable."""
    name = name.lower().split(":")[0]
    if name in _devices:
        return _devices[name]
    if name not in ("gpu", "cuda"):
        raise ValueError(f"unknown device {name!r}: use 'cpu' or 'gpu'")
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except ImportError:
        raise RuntimeError(f"device 'gpu' needs cupy, which is not installed: {GPU_EXTRA_HINT}") from None
    except Exception as e:  # cupy present, driver or GPU missing
        raise RuntimeError(f"device 'gpu' is unavailable: {e}. Install a CUDA GPU driver "
                           f"and {GPU_EXTRA_HINT}") from None
    _devices["gpu"] = _devices["cuda"] = Device("gpu", cupy)
    return _devices["gpu"]


def is_gpu_array(value):
    return type(value).__module__.startswith("cupy")


_HOST_TYPES = (np.ndarray, float, int, bool, np.float32, np.float64, np.int32, np.int64, np.bool_)


def array_module(values):
    """cupy if any of `values` is a cupy array, else numpy."""
    for v in values:
        if type(v) not in _HOST_TYPES and is_gpu_array(v):
            return get("gpu").xp
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
