"""numpy's counting and statistics functions computed by numpy itself: `np.histogram`,
`bincount`, `unique`, `interp`, `cov`, `corrcoef` (ops made by `linalg_ops.numpy_function_op`).

A result whose length depends on the values (unique's, bincount's, histogram's of bins given as a
count known only when the graph runs) has a `None` dim, as a boolean mask's.
"""
import numpy as np

from ..runtime.graph import Tensor
from . import math_ops
from .array_ops import expand_dims, reshape, transpose
from .core import broadcast_shapes, grad_rule, normalize_axis
from .linalg_ops import _shape, call, numpy_function_op

OPS = {}


def _histogram_shapes(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 - numpy's names
    if weights is not None and broadcast_shapes(_shape(a), _shape(weights)) != tuple(_shape(a)):
        raise ValueError("weights should have the same shape as a.")
    if isinstance(bins, int) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError("`bins` must be positive, when an integer")
        return [(bins,), (bins + 1,)]
    if isinstance(bins, Tensor) and bins.ndim == 1:
        n = bins.shape[0]
        return [(None if n is None else n - 1,), (n,)]
    return [(None,), (None,)]  # a count known when the graph runs, or a rule's name ("auto")


def _bincount_shapes(x, weights=None, minlength=0):
    if len(_shape(x)) != 1:
        raise ValueError("object too deep for desired array")
    return [(None,)]


def _unique_shapes(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, **kwargs):
    shape = _shape(ar)
    if axis is None:
        unique, inverse = (None,), shape
    else:
        axis = normalize_axis(axis, len(shape))
        unique, inverse = shape[:axis] + (None,) + shape[axis + 1:], (shape[axis],)
    return [unique] + [(None,)] * bool(return_index) + [inverse] * bool(return_inverse) + [(None,)] * bool(return_counts)


def _variables(m, rowvar):
    shape = _shape(m)
    if len(shape) > 2:
        raise ValueError("m has more than 2 dimensions")
    rows = (1,) + tuple(shape) if len(shape) < 2 else tuple(shape)
    return rows[0] if rowvar or rows[0] == 1 else rows[1]


def _cov_shapes(m, y=None, rowvar=True, *args, **kwargs):
    n = _variables(m, rowvar)
    if y is not None:
        other = _variables(y, rowvar)
        n = None if None in (n, other) else n + other
    return [() if n == 1 else (n, n)]


for _path, _name, _shapes in [
        ("histogram", "Histogram", _histogram_shapes),
        ("bincount", "BinCount", _bincount_shapes),
        ("unique", "Unique", _unique_shapes),
        ("interp", "Interp", lambda x, xp, fp, **kwargs: [_shape(x)]),
        ("cov", "Cov", _cov_shapes),
        ("corrcoef", "CorrCoef", _cov_shapes)]:
    OPS[_path] = numpy_function_op(_name, _path, _shapes, example_dims=lambda d: min(d, 2))


@grad_rule(OPS["cov"])
def _cov_grad(node, dc):
    """C = Xc Xc^T / f (Xc: the observations less their mean, f: their count less ddof): dX =
    (dC + dC^T) Xc / f, which the centering leaves as it is (its rows sum to zero)."""
    kwargs = dict(node.attrs["kwargs"])
    ddof = kwargs.get("ddof")
    return [_observations_grad(node, dc, ddof if ddof is not None else 0 if kwargs.get("bias") else 1)]


@grad_rule(OPS["corrcoef"])
def _corrcoef_grad(node, dr):
    """R = C / sqrt(d d^T), d = diag(C): dC = dR / sqrt(d d^T), less on the diagonal half of
    sum_j (dR_ij + dR_ji) R_ij / C_ii; then as cov's (the scale 1/f cancels in R)."""
    m = node.inputs[0]
    r = node.outputs[0]
    kwargs = dict(node.attrs["kwargs"])
    c = call(OPS["cov"], m, None, rowvar=kwargs.get("rowvar", True))
    n = 1 if c.ndim == 0 else c.shape[0]
    c, r, dr = (reshape(t, (n, n)) for t in (c, r, dr))
    d = math_ops.multiply(c, np.eye(n)).sum(axis=1)  # the variances
    scale = math_ops.sqrt(math_ops.multiply(expand_dims(d, 1), expand_dims(d, 0)))
    sym = math_ops.add(dr, transpose(dr))
    diagonal = math_ops.divide(math_ops.multiply(math_ops.multiply(sym, r), 0.5).sum(axis=1), d)
    dc = math_ops.subtract(math_ops.divide(dr, scale), math_ops.multiply(expand_dims(diagonal, 1), np.eye(n)))
    return [_observations_grad(node, dc, 1)]


def _observations_grad(node, dc, ddof):
    kwargs = dict(node.attrs["kwargs"])
    args = node.attrs["args"]
    if len(node.inputs) != 1 or args[1] is not None or kwargs.get("dtype") is not None:
        raise NotImplementedError(f"the gradient of np.{node.op.lower()} is written for one array, no weights "
                                  f"and no dtype=")
    m = node.inputs[0]
    rowvar = kwargs.get("rowvar", True)
    x = reshape(m, (1, -1)) if m.ndim == 1 else m if rowvar else transpose(m)
    n_vars, n_obs = x.shape
    if n_obs is None or n_vars is None:
        raise NotImplementedError(f"the gradient of np.{node.op.lower()} needs the shape known at the trace")
    centered = math_ops.subtract(x, math_ops.reduce_mean(x, 1, True))
    dc = reshape(dc, (n_vars, n_vars))
    dx = math_ops.divide(math_ops.matmul(math_ops.add(dc, transpose(dc)), centered), float(max(n_obs - ddof, 0)))
    if m.ndim == 1:
        dx = reshape(dx, m.shape)
    elif not rowvar:
        dx = transpose(dx)
    return math_ops._to_input(dx, m)
