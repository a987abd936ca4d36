"""Complex numbers on tensors: `np.real`, `np.imag`, `np.angle`, `np.iscomplexobj`,
`np.isrealobj`, and the attributes `t.real`, `t.imag`, `t.conj()`, `t.conjugate()` as ndarray's
(`np.conj`/`np.conjugate` and `np.abs` are ufuncs: ufuncs.py). complex64 and complex128 tensors
run through every op numpy defines on them; the C backend writes no complex code, so a region
holding a complex value runs numpy's kernels."""
import math

import numpy as np

from ...runtime.graph import Tensor
from .. import math_ops


def _angle(z, deg=False):
    """numpy's angle: arctan2(imag, real) of a complex z, arctan2(0, z) of a real one, in degrees
    when told (scaled as numpy's `a *= 180/pi`)."""
    if z.dtype.kind == "c":
        a = math_ops.arctan2(math_ops.imag(z), math_ops.real(z))
    else:
        a = math_ops.arctan2(0, z)
    return math_ops.multiply(a, 180 / math.pi) if deg else a


def _conj(x):
    # ndarray.conj() of a real array is the array itself, as numpy gives it
    return math_ops.conjugate(x) if x.dtype.kind == "c" else x


FUNCTIONS = {np.real: math_ops.real, np.imag: math_ops.imag, np.angle: _angle,
             np.iscomplexobj: lambda x: x.dtype.kind == "c", np.isrealobj: lambda x: x.dtype.kind != "c"}


def install():
    Tensor.real = property(math_ops.real)
    Tensor.imag = property(math_ops.imag)
    Tensor.conj = Tensor.conjugate = _conj
