"""`np.linalg` on tensors: `cholesky solve inv det slogdet qr eigh eigvalsh svd norm pinv
matrix_power`, each numpy's own function as one op (ops/linalg_ops.py): numpy's results bit for
bit, its result types (`QRResult`, `EighResult`, ...) and its `LinAlgError` when the graph runs
(a singular matrix, one not positive definite)."""
import numpy as np
from numpy.linalg import _linalg

from ...errors import ConversionError, user_location
from ...runtime.graph import Tensor
from .. import array_ops, math_ops
from ..linalg_ops import OPS, call


def _matrix(a):
    return a if isinstance(a, Tensor) else np.asarray(a)


def _static(name, **given):
    for key, value in given.items():
        if isinstance(value, Tensor):
            raise ConversionError(f"np.linalg.{name}(..., {key}=) a tensor is not supported (at {user_location(4)})")


def _cholesky(a, /, *, upper=False):
    _static("cholesky", upper=upper)
    return call(OPS["linalg.cholesky"], _matrix(a), **({"upper": bool(upper)} if upper else {}))


def _qr(a, mode="reduced"):
    _static("qr", mode=mode)
    if mode not in ("reduced", "complete", "r"):
        raise ConversionError(f"np.linalg.qr(..., mode={mode!r}) is not supported on tensors (at {user_location(3)})")
    result = call(OPS["linalg.qr"], _matrix(a), mode=mode)
    return result if mode == "r" else _linalg.QRResult(*result)


def _eigh(a, UPLO="L"):  # noqa: N803 - numpy's name
    _static("eigh", UPLO=UPLO)
    return _linalg.EighResult(*call(OPS["linalg.eigh"], _matrix(a), UPLO=UPLO))


def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    _static("svd", full_matrices=full_matrices, compute_uv=compute_uv, hermitian=hermitian)
    result = call(OPS["linalg.svd"], _matrix(a), full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                  hermitian=bool(hermitian))
    return _linalg.SVDResult(*result) if compute_uv else result


def _norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - numpy's name
    _static("norm", ord=ord, axis=axis)
    if isinstance(axis, list):
        axis = tuple(axis)
    if isinstance(ord, np.generic):
        ord = ord.item()  # noqa: A001 - a Python number, an attr of the node
    return call(OPS["linalg.norm"], _matrix(x), ord=ord, axis=axis, keepdims=bool(keepdims))


def _slogdet(a):
    return _linalg.SlogdetResult(*call(OPS["linalg.slogdet"], _matrix(a)))


def _pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    _static("pinv", rcond=rcond, rtol=rtol)
    kwargs = {} if rtol is np._NoValue else {"rtol": rtol}
    if rcond is not None:
        kwargs["rcond"] = rcond
    return call(OPS["linalg.pinv"], _matrix(a), hermitian=bool(hermitian), **kwargs)


def _matrix_power(a, n):
    _static("matrix_power", n=n)
    a = _matrix(a)
    power = call(OPS["linalg.matrix_power"], a, int(n))  # (for n = 1 too: numpy checks a is square)
    return a if int(n) == 1 and isinstance(a, Tensor) else power  # numpy gives `a` itself back for n = 1


def _matrix_rank(A, tol=None, hermitian=False, *, rtol=None):  # noqa: N803 - numpy's name
    _static("matrix_rank", tol=tol, rtol=rtol)
    if _matrix(A).ndim < 2:  # numpy's is a Python int then
        raise ConversionError(f"np.linalg.matrix_rank of a {_matrix(A).ndim}-D tensor is not supported (at "
                              f"{user_location(3)}); give a matrix")
    kwargs = {k: v for k, v in (("tol", tol), ("rtol", rtol)) if v is not None}
    return call(OPS["linalg.matrix_rank"], _matrix(A), hermitian=bool(hermitian), **kwargs)


def _array_api(path, **static):
    """numpy 2's array-API functions in np.linalg (`np.linalg.vecdot`, `matrix_norm`, ...): keyword-only
    parameters, passed as given."""
    def function(*arrays, **kwargs):
        _static(path, **{k: v for k, v in kwargs.items() if k != "dtype"})
        if "dtype" in kwargs and kwargs["dtype"] is not None:
            kwargs["dtype"] = np.dtype(kwargs["dtype"])
        return call(OPS[f"linalg.{path}"], *map(_matrix, arrays), **kwargs)
    return function


def _multi_dot(arrays, *, out=None):
    if out is not None:
        raise ConversionError(f"np.linalg.multi_dot(..., out=) is not supported on tensors (at {user_location(3)})")
    return call(OPS["linalg.multi_dot"], [_matrix(a) for a in arrays])


FUNCTIONS = {
    np.linalg.cholesky: _cholesky,
    np.linalg.inv: lambda a: call(OPS["linalg.inv"], _matrix(a)),
    np.linalg.solve: lambda a, b: call(OPS["linalg.solve"], _matrix(a), _matrix(b)),
    np.linalg.det: lambda a: call(OPS["linalg.det"], _matrix(a)),
    np.linalg.slogdet: _slogdet,
    np.linalg.qr: _qr, np.linalg.eigh: _eigh,
    np.linalg.eigvalsh: lambda a, UPLO="L": call(OPS["linalg.eigvalsh"], _matrix(a), UPLO=UPLO),
    np.linalg.svd: _svd, np.linalg.norm: _norm, np.linalg.pinv: _pinv, np.linalg.matrix_power: _matrix_power,
    np.linalg.matrix_rank: _matrix_rank, np.linalg.multi_dot: _multi_dot,
    np.linalg.cond: lambda x, p=None: call(OPS["linalg.cond"], _matrix(x), p),
    # numpy 2's array-API names
    **{getattr(np.linalg, name): _array_api(name) for name in (
        "svdvals", "matrix_norm", "vector_norm", "tensordot", "outer", "cross", "trace", "diagonal", "vecdot")},
    np.linalg.matmul: lambda x1, x2, /: math_ops.matmul(_matrix(x1), _matrix(x2)),
    np.linalg.matrix_transpose: lambda x, /: array_ops.transpose(x, (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2))
    if x.ndim >= 2 else _refuse_vector("matrix_transpose", x),
}


def _refuse_vector(name, x):
    raise ValueError(f"np.linalg.{name}: the input must be at least two-dimensional, not {x.ndim}-D")
