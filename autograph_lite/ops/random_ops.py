"""Random numbers: each call draws fresh values, eagerly and in compiled graphs alike.

Eager and compiled calls draw from one generator per array module, so after
`set_seed(s)` the same sequence of calls gives the same numbers in either mode.
"""
import numbers
import threading

import numpy as np

from ..runtime.opdef import DTYPE, FLOAT, NUMBER, SHAPE
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
    if np.dtype(dtype).kind in "iu":
        def integers():
            return _generator(xp).integers(minval, maxval, size=shape, dtype=dtype)
        return integers

    def uniform():
        return _generator(xp).random(shape, dtype=dtype) * (maxval - minval) + minval
    return uniform


def _normal_kernel(xp, shape, mean, stddev, dtype):
    def normal():
        return _generator(xp).standard_normal(shape, dtype=dtype) * stddev + mean
    return normal


def _random_infer(shape, dtype, **_):
    return [(shape, dtype)]


UNIFORM = define("RandomUniform", _uniform_kernel, _random_infer, stateful=True,
                 attrs={"shape": SHAPE, "minval": NUMBER, "maxval": NUMBER, "dtype": DTYPE})
NORMAL = define("RandomNormal", _normal_kernel, _random_infer, stateful=True,
                attrs={"shape": SHAPE, "mean": FLOAT, "stddev": FLOAT, "dtype": DTYPE})


def _attrs(shape, a, b, dtype, names, integers=False):
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64) and not (integers and dtype.kind in "iu"):
        allowed = "float32, float64 or an integer dtype" if integers else "float32 or float64"
        raise TypeError(f"random values must be {allowed}, got {dtype}")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(int(d) for d in shape)
    for name, v in zip(names, (a, b)):
        if not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must be a Python number, got {type(v).__name__}")
    if dtype.kind in "iu":
        if not all(isinstance(v, numbers.Integral) for v in (a, b)):
            raise TypeError(f"random {dtype} values need integer minval and maxval, got {a!r} and {b!r}")
        info = np.iinfo(dtype)
        if not info.min <= a < b <= info.max + 1:
            raise ValueError(f"random {dtype} values need {info.min} <= minval < maxval <= {info.max + 1}, "
                             f"got minval={a} and maxval={b}")
        return {"shape": shape, names[0]: int(a), names[1]: int(b), "dtype": dtype}
    return {"shape": shape, names[0]: float(a), names[1]: float(b), "dtype": dtype}


def uniform(shape, minval=0, maxval=None, dtype=np.float64):
    """Uniform samples in [minval, maxval) with a static `shape`.

    Float dtypes: maxval defaults to 1.0. Integer dtypes (as TensorFlow): integers drawn
    uniformly from minval (inclusive) to maxval (exclusive), which must be given, like
    numpy's `Generator.integers(minval, maxval)`.

        ag.random.uniform((3,), 0, 10, dtype=np.int32)
    """
    if maxval is None:
        if np.dtype(dtype).kind in "iu":
            raise ValueError(f"ag.random.uniform with dtype {np.dtype(dtype)} needs maxval "
                             f"(integers are drawn from [minval, maxval))")
        maxval = 1.0
    return apply(UNIFORM, (), _attrs(shape, minval, maxval, dtype, ("minval", "maxval"), integers=True))


def normal(shape, mean=0.0, stddev=1.0, dtype=np.float64):
    """Normal samples with the given mean and standard deviation, static `shape`."""
    return apply(NORMAL, (), _attrs(shape, mean, stddev, dtype, ("mean", "stddev")))
