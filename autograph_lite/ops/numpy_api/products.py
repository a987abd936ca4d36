"""numpy's products on tensors: `np.dot` (any dims), `vdot`, `inner`, `outer`, `tensordot`,
`einsum`, `kron`, `cross` (np.matmul is a ufunc: ufuncs.py).

Beyond what `matmul` computes, each is numpy's own function as one op (ops/linalg_ops.py), so
results are numpy's bit for bit.
"""
import numpy as np

from ...errors import ConversionError, user_location
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..linalg_ops import OPS, call
from .common import keywords


def _operand(v):
    # numpy's products convert a Python scalar or list to an array: strong, not weak as in a ufunc
    return v if isinstance(v, Tensor) else np.asarray(v)


def _dot(a, b, out=None):
    """numpy's dot, its own function for every rank: for vectors and matrices of floats it copies an
    operand whose strides BLAS cannot take (negative, or 0 along an axis longer than 1) and calls
    BLAS, where np.matmul sums such a view in its own loop, so matmul's rounding is not dot's."""
    keywords("dot", dict(out=out), out=None)
    return call(OPS["dot"], _operand(a), _operand(b))


def _vdot(a, b):
    return call(OPS["vdot"], _operand(a), _operand(b))


def _inner(a, b):
    # numpy's own inner, also of a 0-d operand: its loop sums each product onto 0, so -3.0 * 0 is
    # +0.0 where multiply gives -0.0 (fuzzer seed 1126006348)
    return call(OPS["inner"], _operand(a), _operand(b))


def _outer(a, b, out=None):
    keywords("outer", dict(out=out), out=None)
    a = array_ops.reshape(a, (-1, 1)) if isinstance(a, Tensor) else np.ravel(a)[:, None]
    b = array_ops.reshape(b, (1, -1)) if isinstance(b, Tensor) else np.ravel(b)[None, :]
    return math_ops.multiply(a, b)


def _tensordot(a, b, axes=2):
    if isinstance(axes, Tensor):
        raise ConversionError(f"np.tensordot with axes= a tensor is not supported (at {user_location(3)})")
    try:
        axes = int(axes)
    except TypeError:
        axes = tuple(int(i) if np.ndim(i) == 0 else tuple(int(j) for j in i) for i in axes)
    return call(OPS["tensordot"], _operand(a), _operand(b), axes=axes)


def _einsum(*operands, out=None, optimize=False, **kwargs):
    keywords("einsum", dict(out=out), out=None)
    if not isinstance(operands[0], str):
        raise ConversionError(f"np.einsum's interleaved form (operand, sublist, ...) is not supported on tensors "
                              f"(at {user_location(3)}); give the subscripts as a string")
    if not isinstance(optimize, (bool, str)):
        raise ConversionError(f"np.einsum(..., optimize=) a contraction path is not supported on tensors (at "
                              f"{user_location(3)}); give True, False or 'greedy'/'optimal'")
    if "dtype" in kwargs and kwargs["dtype"] is not None:
        kwargs["dtype"] = np.dtype(kwargs["dtype"])
    return call(OPS["einsum"], operands[0], *map(_operand, operands[1:]), optimize=optimize, **kwargs)


def _kron(a, b):
    return call(OPS["kron"], _operand(a), _operand(b))


def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return call(OPS["cross"], _operand(a), _operand(b), axisa=int(axisa), axisb=int(axisb), axisc=int(axisc),
                axis=None if axis is None else int(axis))


FUNCTIONS = {np.dot: _dot, np.vdot: _vdot, np.inner: _inner, np.outer: _outer, np.tensordot: _tensordot,
             np.einsum: _einsum, np.kron: _kron, np.cross: _cross}

