"""Random numbers: each call draws fresh values, eagerly and in compiled graphs alike.

Eager and compiled calls draw from one generator per array module, so after
`set_seed(s)` the same sequence of calls gives the same numbers in either mode.
"""
import numbers
import threading

import numpy as np

from .core import apply, define

_lock = threading.Lock()
_seed = None
_generators = {}  # array module -> Generator


def set_seed(seed):
    """Reset every random generator to `seed`; later draws are reproducible."""
    global _seed
    with _lock:
        _seed = int(seed)
        _generators.clear()


def _generator(xp):
    with _lock:
        gen = _generators.get(xp)
        if gen is None:
            gen = _generators[xp] = xp.random.default_rng(_seed)
        return gen


def _uniform_kernel(xp, shape, minval, maxval, dtype):
    def uniform():
        return _generator(xp).random(shape, dtype=dtype) * (maxval - minval) + minval
    return uniform


def _normal_kernel(xp, shape, mean, stddev, dtype):
    def normal():
        return _generator(xp).standard_normal(shape, dtype=dtype) * stddev + mean
    return normal


def _random_infer(shape, dtype, **_):
    return [(shape, dtype)]


UNIFORM = define("RandomUniform", _uniform_kernel, _random_infer, stateful=True)
NORMAL = define("RandomNormal", _normal_kernel, _random_infer, stateful=True)


def _attrs(shape, a, b, dtype, names):
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"random values must be float32 or float64, got {dtype}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(int(d) for d in shape)
    for name, v in zip(names, (a, b)):
        if not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must be a Python number, got {type(v).__name__}")
    return {"shape": shape, names[0]: float(a), names[1]: float(b), "dtype": dtype}


def uniform(shape, minval=0.0, maxval=1.0, dtype=np.float64):
    """Uniform samples in [minval, maxval) with a static `shape`."""
    return apply(UNIFORM, (), _attrs(shape, minval, maxval, dtype, ("minval", "maxval")))


def normal(shape, mean=0.0, stddev=1.0, dtype=np.float64):
    """Normal samples with the given mean and standard deviation, static `shape`."""
    return apply(NORMAL, (), _attrs(shape, mean, stddev, dtype, ("mean", "stddev")))
