"""numpy's linear algebra, products, statistics and complex functions on tensors (issue 25
part 2, area B): compiled vs eager, bit for bit, on two dtypes or more, with a broadcasting or
axis case and an edge case each (empty, NaN, a singular matrix raising numpy's LinAlgError).

Every entry of the area modules' `FUNCTIONS` has cases here (`test_every_entry_is_tested`).
"""
import inspect
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from autograph_lite.ops.numpy_api import complex_numbers, linalg, products, statistics
from helpers import force_native, identical_both_ways

AREAS = (products, linalg, statistics, complex_numbers)
DTYPES = [np.float64, np.float32]


def both(fn, *args):
    """Compiled vs eager, identical; or, where eager raises, the same builtin error type (numpy's
    LinAlgError of a singular matrix included, raised when the graph runs)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            fn(*args)
    except Exception as e:  # noqa: BLE001 - whatever eager raises, compiled raises too
        expected = e.__class__ if isinstance(e, np.linalg.LinAlgError) else next(
            t for t in type(e).__mro__ if t.__module__ == "builtins")
        with pytest.raises(expected):
            ag.function(fn)(*args)
        return None
    return identical_both_ways(fn, *args)


def data(dtype, shape=(3, 4)):
    values = np.array([3, -1, 4, 1, -5, 9, 2, -6, 5, 3, -5, 8, 9, 7, -9, 3, 2, 3, 8, 4, -6, 2, 6, 4])
    return (values[:int(np.prod(shape))].reshape(shape) * (0.5 if np.dtype(dtype).kind == "f" else 1)).astype(dtype)


def spd(a):
    """A symmetric positive definite 3x3 matrix made from `a` (3, 4) in the graph: a a^T + 10 I."""
    return a @ a.T + np.eye(3, dtype=a.dtype) * 10


CASES = {  # name -> functions of one array `a` of shape (3, 4)
    # products
    "dot": [lambda a: np.dot(a, a.T), lambda a: np.dot(a[None], a.T), lambda a: np.dot(a[0], a.T),
            lambda a: np.dot(a.reshape(3, 2, 2), a[:2]), lambda a: np.dot(a, a.reshape(2, 4, 3)),
            lambda a: np.dot(a[:, :0], a[:0]), lambda a: np.dot(a, 2), lambda a: np.dot(a, a)],  # last: mismatch
    "vdot": [lambda a: np.vdot(a, a), lambda a: np.vdot(a[0], a[1]), lambda a: np.vdot(a[:0], a[:0]),
             lambda a: np.vdot(a, [1.5, 2, 3, 4] * 3)],
    "inner": [lambda a: np.inner(a, a), lambda a: np.inner(a[0], a[1]), lambda a: np.inner(a[None], a[1]),
              lambda a: np.inner(a, 2.5), lambda a: np.inner(a[:, :0], a[:, :0])],
    "outer": [lambda a: np.outer(a[0], a[1]), lambda a: np.outer(a, a[0]), lambda a: np.outer(a[0], [1.5, 2.0]),
              lambda a: np.outer(a[:0], a)],
    "tensordot": [lambda a: np.tensordot(a, a, 2), lambda a: np.tensordot(a, a.T, 1),
                  lambda a: np.tensordot(a, a, axes=([0], [0])), lambda a: np.tensordot(a, a, axes=((0, 1), (0, 1))),
                  lambda a: np.tensordot(a[None], a, axes=[[-1], [1]]), lambda a: np.tensordot(a[:0], a[:0], 0)],
    "einsum": [lambda a: np.einsum("ij,kj->ik", a, a), lambda a: np.einsum("ij->", a), lambda a: np.einsum("ij", a),
               lambda a: np.einsum("ij,j", a, a[0]), lambda a: np.einsum("...j,j->...", a[None], a[1]),
               lambda a: np.einsum("ii->i", a[:, :3]), lambda a: np.einsum("ij,ij->i", a, a, optimize=True),
               lambda a: np.einsum("i,j->ij", a[0], a[1], dtype=np.float64), lambda a: np.einsum("ij->j", a[:0]),
               lambda a: np.einsum("bi,bj->bij", a, a)],
    "kron": [lambda a: np.kron(a, a[:2, :2]), lambda a: np.kron(a[0], a), lambda a: np.kron(a, 2),
             lambda a: np.kron(a[:0], a)],
    "cross": [lambda a: np.cross(a[:, :3], a[:, 1:]), lambda a: np.cross(a[:, :2], a[:, 2:]),
              lambda a: np.cross(a[0, :3], a[:, 1:]), lambda a: np.cross(a.T[:3], a.T[1:], axis=0),
              lambda a: np.cross(a[:, :3], a[:, :2], axisc=0), lambda a: np.cross(a[:0, :3], a[:0, :3]),
              lambda a: np.cross(a, a)],  # dimension 4: numpy's ValueError
    # linear algebra
    "cholesky": [lambda a: np.linalg.cholesky(spd(a)), lambda a: np.linalg.cholesky(np.stack([spd(a), spd(a) * 2])),
                 lambda a: np.linalg.cholesky(spd(a), upper=True), lambda a: np.linalg.cholesky(-spd(a)),
                 lambda a: np.linalg.cholesky(spd(a)[:0, :0])],
    "inv": [lambda a: np.linalg.inv(spd(a)), lambda a: np.linalg.inv(np.stack([spd(a), a[:, :3]])),
            lambda a: np.linalg.inv(a[:, :3] * 0), lambda a: np.linalg.inv(a)],  # singular; not square
    "solve": [lambda a: np.linalg.solve(spd(a), a), lambda a: np.linalg.solve(spd(a), a[:, 0]),
              lambda a: np.linalg.solve(np.stack([spd(a), spd(a) + 1]), a), lambda a: np.linalg.solve(a[:, :3] * 0, a)],
    "det": [lambda a: np.linalg.det(spd(a)), lambda a: np.linalg.det(np.stack([spd(a), a[:, 1:]])),
            lambda a: np.linalg.det(a[:, :3] * 0), lambda a: np.linalg.det(a[:0, :0])],
    "slogdet": [lambda a: np.linalg.slogdet(spd(a)), lambda a: np.linalg.slogdet(np.stack([a[:, :3], -spd(a)])),
                lambda a: np.linalg.slogdet(a[:, :3] * 0)],
    "qr": [lambda a: np.linalg.qr(a), lambda a: np.linalg.qr(a.T, mode="complete"), lambda a: np.linalg.qr(a, "r"),
           lambda a: np.linalg.qr(np.stack([a, a * 2])), lambda a: np.linalg.qr(a[:0])],
    "eigh": [lambda a: np.linalg.eigh(spd(a)), lambda a: np.linalg.eigh(spd(a), UPLO="U"),
             lambda a: np.linalg.eigh(np.stack([spd(a), spd(a) * 3])), lambda a: np.linalg.eigh(spd(a)[:0, :0])],
    "eigvalsh": [lambda a: np.linalg.eigvalsh(spd(a)), lambda a: np.linalg.eigvalsh(np.stack([spd(a), -spd(a)]))],
    "svd": [lambda a: np.linalg.svd(a), lambda a: np.linalg.svd(a, full_matrices=False),
            lambda a: np.linalg.svd(a, compute_uv=False), lambda a: np.linalg.svd(np.stack([a, a.T[:3]])),
            lambda a: np.linalg.svd(a[0])],  # 1-D: numpy's LinAlgError
    "norm": [lambda a: np.linalg.norm(a), lambda a: np.linalg.norm(a, axis=1), lambda a: np.linalg.norm(a, 1),
             lambda a: np.linalg.norm(a, np.inf), lambda a: np.linalg.norm(a, "fro"), lambda a: np.linalg.norm(a, "nuc"),
             lambda a: np.linalg.norm(a[0], 3), lambda a: np.linalg.norm(a, axis=(0, 1), keepdims=True),
             lambda a: np.linalg.norm(a, -np.inf, axis=0), lambda a: np.linalg.norm(a[:0]),
             lambda a: np.linalg.norm(a * np.nan), lambda a: np.linalg.norm(a, 2)],
    "pinv": [lambda a: np.linalg.pinv(a), lambda a: np.linalg.pinv(np.stack([a, a * 0])),
             lambda a: np.linalg.pinv(spd(a), hermitian=True)],
    "matrix_power": [lambda a: np.linalg.matrix_power(spd(a), 3), lambda a: np.linalg.matrix_power(spd(a), 0),
                     lambda a: np.linalg.matrix_power(spd(a), -2), lambda a: np.linalg.matrix_power(a, 2)],
    "matrix_rank": [lambda a: np.linalg.matrix_rank(a), lambda a: np.linalg.matrix_rank(np.stack([a, a * 0])),
                    lambda a: np.linalg.matrix_rank(spd(a), hermitian=True), lambda a: np.linalg.matrix_rank(a, tol=1e9)],
    "multi_dot": [lambda a: np.linalg.multi_dot([a, a.T, a]), lambda a: np.linalg.multi_dot([a[0], a.T, a, a[1]]),
                  lambda a: np.linalg.multi_dot([a[:0], a.T[:, :0]]), lambda a: np.linalg.multi_dot([a, a])],
    "cond": [lambda a: np.linalg.cond(spd(a)), lambda a: np.linalg.cond(a), lambda a: np.linalg.cond(spd(a), 1),
             lambda a: np.linalg.cond(np.stack([spd(a), spd(a) * 2]), "fro"), lambda a: np.linalg.cond(a[:, :3] * 0, 1)],
    "svdvals": [lambda a: np.linalg.svdvals(a), lambda a: np.linalg.svdvals(np.stack([a, a * 2])),
                lambda a: np.linalg.svdvals(a[:0])],
    "matrix_norm": [lambda a: np.linalg.matrix_norm(a), lambda a: np.linalg.matrix_norm(a, ord=1, keepdims=True),
                    lambda a: np.linalg.matrix_norm(np.stack([a, -a]), ord="nuc"), lambda a: np.linalg.matrix_norm(a[:0])],
    "vector_norm": [lambda a: np.linalg.vector_norm(a), lambda a: np.linalg.vector_norm(a, axis=-1, ord=1),
                    lambda a: np.linalg.vector_norm(a, keepdims=True), lambda a: np.linalg.vector_norm(a, axis=(0, 1), ord=np.inf),
                    lambda a: np.linalg.vector_norm(a[:0], ord=3)],
    "linalg.tensordot": [lambda a: np.linalg.tensordot(a, a), lambda a: np.linalg.tensordot(a, a.T, axes=1),
                         lambda a: np.linalg.tensordot(a, a, axes=([0], [0]))],
    "linalg.outer": [lambda a: np.linalg.outer(a[0], a[1]), lambda a: np.linalg.outer(a[0], a[1, :0])],
    "linalg.cross": [lambda a: np.linalg.cross(a[:, :3], a[:, 1:]), lambda a: np.linalg.cross(a[0, :3], a[:, 1:]),
                     lambda a: np.linalg.cross(a.T[:3], a.T[1:], axis=0)],
    "linalg.trace": [lambda a: np.linalg.trace(a), lambda a: np.linalg.trace(np.stack([a, a]), offset=1),
                     lambda a: np.linalg.trace(a, offset=-1, dtype=np.float64), lambda a: np.linalg.trace(a[:0])],
    "linalg.diagonal": [lambda a: np.linalg.diagonal(a), lambda a: np.linalg.diagonal(np.stack([a, a]), offset=2),
                        lambda a: np.linalg.diagonal(a, offset=-2), lambda a: np.linalg.diagonal(a, offset=9)],
    "linalg.vecdot": [lambda a: np.linalg.vecdot(a, a), lambda a: np.linalg.vecdot(a, a[0]),
                      lambda a: np.linalg.vecdot(a, a, axis=0), lambda a: np.linalg.vecdot(a[:0], a[:0])],
    "linalg.matmul": [lambda a: np.linalg.matmul(a, a.T), lambda a: np.linalg.matmul(a[None], a.T),
                      lambda a: np.linalg.matmul(a[0], a.T)],
    "linalg.matrix_transpose": [lambda a: np.linalg.matrix_transpose(a), lambda a: np.linalg.matrix_transpose(a[None]),
                         lambda a: np.linalg.matrix_transpose(a[0])],  # 1-D: numpy's ValueError
    # counting and statistics
    "histogram": [lambda a: np.histogram(a), lambda a: np.histogram(a, 3), lambda a: np.histogram(a, 4, weights=a * 2),
                  lambda a: np.histogram(a, [-3, 0, 1, 5]), lambda a: np.histogram(a, 5, range=(0, 3), density=True),
                  lambda a: np.histogram(a, a[0] * 0 + np.arange(4)), lambda a: np.histogram(a, "auto"),
                  lambda a: np.histogram(a[:0], 2), lambda a: np.histogram(a * np.nan)],  # last: NaN's ValueError
    "bincount": [lambda a: np.bincount(np.abs(np.ravel(a)).astype(np.int64)),
                 lambda a: np.bincount(np.abs(a[0]).astype(np.intp), weights=a[1]),
                 lambda a: np.bincount(np.abs(a[0]).astype(np.intp), minlength=20),
                 lambda a: np.bincount(np.abs(a[0, :0]).astype(np.intp)),
                 lambda a: np.bincount(a[0].astype(np.intp))],  # negative: numpy's ValueError
    "unique": [lambda a: np.unique(a), lambda a: np.unique(a, return_counts=True),
               lambda a: np.unique(a, True, True, True), lambda a: np.unique(np.concatenate([a, a]), axis=0),
               lambda a: np.unique(a[:, :2] // 2, axis=1, return_inverse=True), lambda a: np.unique(a[:0]),
               lambda a: np.unique(np.where(a > 2, np.nan, a)), lambda a: np.unique(a, sorted=False),
               lambda a: np.unique(np.where(a > 2, np.nan, a), equal_nan=False)],
    "interp": [lambda a: np.interp(a, [-2, 0, 3], [1, 2, 0]), lambda a: np.interp(a[0], np.arange(4.0) + a[1, 0] * 0, a[2]),
               lambda a: np.interp(a, [0, 1], [0.5, 1.5], left=-1, right=9), lambda a: np.interp(2.5, [0, 4], a[0, :2]),
               lambda a: np.interp(a, [0, 2, 4], [1, 0, 1], period=3), lambda a: np.interp(a[:0], [0, 1], [2, 3]),
               lambda a: np.interp(a * np.nan, [0, 1], [2, 3])],
    "cov": [lambda a: np.cov(a), lambda a: np.cov(a.T), lambda a: np.cov(a, rowvar=False), lambda a: np.cov(a[0]),
            lambda a: np.cov(a, a * 2), lambda a: np.cov(a, bias=True), lambda a: np.cov(a, ddof=2),
            lambda a: np.cov(a, fweights=[1, 2, 1, 3]), lambda a: np.cov(a, aweights=np.abs(a[0]) + 1),
            lambda a: np.cov(a, dtype=np.float32), lambda a: np.cov(a[:, :1])],  # one observation: NaN, as numpy
    "corrcoef": [lambda a: np.corrcoef(a), lambda a: np.corrcoef(a, rowvar=False), lambda a: np.corrcoef(a[0], a[1]),
                 lambda a: np.corrcoef(a[0]), lambda a: np.corrcoef(a * 0)],  # constant rows: NaN
    # complex numbers (also run on complex dtypes below)
    "real": [lambda a: np.real(a), lambda a: np.real(a * 1j + a), lambda a: np.real(a[0, 0] + 2j),
             lambda a: np.real(a[:0] * 1j), lambda a: np.real(np.exp(a * 1j))[None] + a],
    "imag": [lambda a: np.imag(a), lambda a: np.imag(a * 1j - 2), lambda a: np.imag(a[0, 0] * 1j),
             lambda a: np.imag(a[:0])],
    "angle": [lambda a: np.angle(a), lambda a: np.angle(a + 1j * a[::-1]), lambda a: np.angle(a * 1j, deg=True),
              lambda a: np.angle(a[0, 0] - 1j), lambda a: np.angle(a[:0]), lambda a: np.angle(a * np.nan + 1j)],
    "iscomplexobj": [lambda a: (np.iscomplexobj(a), np.iscomplexobj(a * 1j))],
    "isrealobj": [lambda a: (np.isrealobj(a), np.isrealobj(a * 1j))],
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_function_matches_eager(name, dtype):
    for fn in CASES[name]:
        both(fn, data(dtype))


@pytest.mark.parametrize("name", ["dot", "vdot", "inner", "tensordot", "einsum", "kron", "cross", "det", "solve",
                                  "histogram", "unique", "cov", "corrcoef", "interp"])
def test_integer_operands(name):
    for fn in CASES[name]:
        both(fn, data(np.int64))


COMPLEX = ["real", "imag", "angle", "iscomplexobj", "dot", "vdot", "inner", "einsum", "kron", "cross", "inv",
           "solve", "det", "qr", "eigh", "svd", "norm", "unique", "cov", "corrcoef", "histogram"]


@pytest.mark.parametrize("name", COMPLEX)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_operands(name, dtype):
    for fn in CASES[name]:
        both(fn, data(dtype) + 1j * data(dtype)[::-1])


def test_complex_numbers_end_to_end():
    z = (np.arange(6) - 2.5 + 1j * np.linspace(-1, 2, 6)).astype(np.complex128)
    both(lambda z: (z * z + 1j - z / (2 + 1j), z + np.complex64(1 + 2j), abs(z), z ** 2, z @ z, z.sum(), z == z), z)
    both(lambda z: (np.exp(z), np.log(z), np.sqrt(z), np.conj(z), np.abs(z), np.real(z) + 1j * np.imag(z)), z)
    both(lambda z: (z.real, z.imag, z.conj(), z.conjugate(), z[0].real, z[0].conj()), z)
    both(lambda z: (z.astype(np.complex64) * 2, np.float32(2) * z.astype(np.complex64)), z)
    x = np.linspace(-1, 1, 5)
    both(lambda x: (x.real, x.imag, x.conj(), np.real(x[0]), np.imag(2.5)), x)

    def mandelbrot(c, n):
        z = np.zeros_like(c)
        for _ in range(n):
            z = np.where(np.abs(z) < 2, z * z + c, z)
        return z, np.angle(z)

    both(mandelbrot, z * 0.3, 5)


def test_complex_regions_run_numpy_under_native(monkeypatch):
    force_native(monkeypatch)
    z = (np.arange(6) - 2.5 + 1j * np.linspace(-1, 2, 6)).astype(np.complex64)

    def loop(z, n):
        acc = z * 0
        i = 0
        while i < n:
            acc = acc * (0.5 + 0.5j) + z
            i += 1
        return acc, np.abs(acc).sum()

    both(loop, z, 7)


def test_every_entry_is_tested():  # np.linalg's array-API names that np. also has: "linalg.<name>"
    entries = {f"linalg.{f.__name__}" if f.__module__ == "numpy.linalg" and hasattr(np, f.__name__)
               else f.__name__ for area in AREAS for f in area.FUNCTIONS}
    assert entries <= set(CASES)


def test_results_are_numpys_named_tuples():
    a = data(np.float64)
    assert type(both(lambda a: np.linalg.qr(a), a)).__name__ == "QRResult"
    assert type(both(lambda a: np.linalg.svd(a), a)).__name__ == "SVDResult"
    assert both(lambda a: np.linalg.eigh(spd(a)).eigenvalues, a).shape == (3,)


def test_singular_matrix_raises_numpys_linalg_error_when_the_graph_runs():
    f = ag.function(lambda a: np.linalg.inv(a))
    np.testing.assert_array_equal(f(np.eye(2) * 2), np.linalg.inv(np.eye(2) * 2))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        f(np.zeros((2, 2)))


def test_npbench_azimint_hist_and_covariance2():
    def azimint_hist(data, radius, npt):
        histu = np.histogram(radius, npt)[0]
        histw = np.histogram(radius, npt, weights=data)[0]
        return histw / histu

    rng = np.random.default_rng(0)
    radius, values = rng.uniform(0, 10, 1000), rng.uniform(-1, 1, 1000)
    result = both(azimint_hist, values, radius, 20)
    assert result.shape == (20,)
    both(lambda data: np.cov(np.transpose(data)), rng.normal(size=(30, 8)))


def test_run_time_lengths_are_none_dims():
    f = ag.function(lambda a: (np.unique(a), np.bincount(a)))
    a = np.array([3, 1, 3, 0])
    graph = f.get_concrete_function(a).graph
    assert [t.shape for t in graph.outputs] == [(None,), (None,)]
    for x in (a, np.array([7, 7])):
        for got, expected in zip(f(x), (np.unique(x), np.bincount(x))):
            np.testing.assert_array_equal(got, expected)


def test_npbench_cholesky2_and_products():
    def kernel(A):
        return np.linalg.cholesky(A) + np.triu(A, k=1)

    a = data(np.float64)
    both(lambda a: kernel(spd(a)), a)


# operands as a product meets them: a view BLAS cannot take (flipped, a step of 0), a strided one, a
# C array, a transpose; vectors of 40 (BLAS's sums round unlike a loop's) and of one element
VECTORS = [lambda v: v[:40], lambda v: np.flip(v[:40]), lambda v: v[:80:2], lambda v: v[79::-2],
           lambda v: np.broadcast_to(v[:1], (40,)), lambda v: v[:40] * 2, lambda v: v[:1], lambda v: v[::-1][:1]]
MATRICES = [lambda m: m[:5, :40], lambda m: m[:5, :40][::-1], lambda m: m[:10:2, :40],
            lambda m: np.broadcast_to(m[:1, :40], (5, 40)), lambda m: m[:40, :5].T, lambda m: m[:5, :40] * 2,
            lambda m: m[:1, :40], lambda m: m[:5, :1]]


def all_products(v, w, m):
    """np.dot, @, np.inner and np.vdot of every pair of layouts of vectors and matrices."""
    out = []
    for f in VECTORS:
        for g in VECTORS:
            a, b = f(v), g(w)
            if a.shape == b.shape:
                out += [np.dot(a, b), a @ b, np.inner(a, b), np.vdot(a, b)]
    for f in MATRICES:
        for g in VECTORS:
            a, b = f(m), g(w)
            if a.shape[1] == b.shape[0]:
                out += [np.dot(a, b), a @ b]
            if a.shape[0] <= b.shape[0]:
                out += [np.dot(b[:a.shape[0]], a), b[:a.shape[0]] @ a]
        for g in MATRICES:
            a, b = f(m), g(m)
            if a.shape[1] == b.shape[1]:
                out += [np.dot(a, b.T), a @ b.T, np.inner(a, b)]
    return tuple(out)


def bits_both_ways(fn, *args):
    """fn eagerly and compiled (past native code's tier-up, where it runs): the same types, dtypes
    and bits (a signed zero's sign too) of each result in the tuple fn returns."""
    eager = fn(*args)
    compiled = ag.function(fn)
    for _ in range(4):
        result = compiled(*args)
        assert len(result) == len(eager)
        for k, (e, c) in enumerate(zip(eager, result)):
            assert type(c) is type(e) and np.asarray(c).dtype == np.asarray(e).dtype, k
            assert np.asarray(c).tobytes() == np.asarray(e).tobytes(), (k, e, c)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
def test_products_of_every_layout_are_numpys_bit_for_bit(dtype):
    """np.dot copies an operand BLAS cannot take (a negative step, a step of 0) and calls BLAS;
    np.matmul sums such a view in its own loop, and np.dot of one-element vectors is their product
    where matmul's sum onto 0 turns -0.0 into 0.0: each traced as numpy computes it. Two equal
    products of one array (`m[:5] * 2`, twice) stay two arrays: numpy's BLAS call for one array
    and its transpose is syrk's, which rounds otherwise (native code: test_native_views.py)."""
    rng = np.random.default_rng(11)
    v, w, m = (rng.standard_normal(shape) * 100 for shape in (80, 80, (40, 40)))
    if np.dtype(dtype).kind == "c":
        v, w, m = v + 1j * w, w - 1j * v, m + 1j * m.T
    v[0], w[0], v[-1], w[-1] = -1.5, 0.0, 0.0, -2.5  # one-element products of -0.0
    bits_both_ways(all_products, *(x.astype(dtype) for x in (v, w, m)))


@pytest.mark.parametrize("fn", [
    lambda a: np.sum(np.linalg.inv(spd(a)) * np.arange(9.0).reshape(3, 3)),
    lambda a: np.linalg.det(spd(a)),
    lambda a: np.sum(np.linalg.solve(spd(a), a) * a),
    lambda a: np.sum(np.linalg.solve(spd(a), a[:, 0]) * np.arange(3.0)),
    lambda a: np.sum(np.linalg.cholesky(spd(a)) * np.arange(9.0).reshape(3, 3)),
    lambda a: np.sum(np.linalg.cholesky(spd(a), upper=True) * np.arange(9.0).reshape(3, 3)),
    lambda a: np.linalg.norm(a) + np.sum(np.linalg.norm(a, axis=0)) + np.sum(np.linalg.norm(a, 2, axis=1)),
    lambda a: np.sum(np.dot(a.reshape(3, 2, 2), a[:2]) * np.arange(24.0).reshape(3, 2, 4)),
    lambda a: np.sum(np.dot(a[0], a.reshape(1, 4, 3)) * np.arange(3.0)),
    lambda a: np.sum(np.einsum("ij,kj->ik", a, a * a) * np.arange(9.0).reshape(3, 3)),
    lambda a: np.einsum("ij->", a * a) + np.sum(np.einsum("ij,j", a, a[0])) + np.sum(np.einsum("bi,bj->bij", a, a)),
    lambda a: np.sum(np.einsum("ij,jk", a, np.arange(8.0).reshape(4, 2)) ** 2),
    lambda a: np.sum(np.einsum("ii->i", a[:, :3]) * np.arange(3.0)) + np.einsum("ii", a[:, 1:] * a[:, :3]),
    lambda a: np.sum(np.einsum("iij,k->jk", np.stack([a[:, :3]] * 3, -1), a[0]) ** 2),
    lambda a: np.sum(np.tensordot(a, a * 2, axes=([0], [0])) * np.arange(16.0).reshape(4, 4)),
    lambda a: np.sum(np.tensordot(a.reshape(3, 2, 2), a, axes=((0,), (0,))) ** 2) + np.tensordot(a, a, 2),
    lambda a: np.sum(np.inner(a, a * a) * np.arange(9.0).reshape(3, 3)) + np.inner(a[0], a[1]),
    lambda a: np.vdot(a, a * a) + np.vdot(a[0], np.arange(4.0)),
    lambda a: np.linalg.slogdet(spd(a))[1] + np.sum(np.linalg.slogdet(np.stack([spd(a), spd(a) * 2])).logabsdet),
    lambda a: np.sum(np.linalg.matrix_power(spd(a) * 0.1, 3) * np.arange(9.0).reshape(3, 3))
    + np.sum(np.linalg.matrix_power(spd(a), -2)) + np.sum(np.linalg.matrix_power(spd(a), 1)),
    lambda a: np.sum(np.kron(a, a[:2, :2] * 3) * np.arange(48.0).reshape(6, 8)) + np.sum(np.kron(a[0], a) ** 2),
    lambda a: np.sum(np.linalg.eigh(spd(a))[0] * np.arange(3.0)),
    lambda a: np.sum(np.abs(np.linalg.eigh(spd(a) + a[:, :3])[1]) * np.arange(9.0).reshape(3, 3)),
    lambda a: np.sum(np.linalg.eigh(a[:, :3] * np.arange(1.0, 4.0), UPLO="U").eigenvalues ** 2),  # one triangle read
    lambda a: np.sum(np.linalg.eigvalsh(a[:, :3] * np.arange(1.0, 4.0)) * np.arange(3.0)),
    lambda a: np.sum(np.cov(a) * np.arange(9.0).reshape(3, 3)) + np.cov(a[0]) + np.sum(np.cov(a, rowvar=False, ddof=0)),
    lambda a: np.sum(np.cov(a, bias=True) ** 2),
    lambda a: np.sum(np.linalg.qr(a.T)[0] * np.arange(12.0).reshape(4, 3)) + np.sum(np.linalg.qr(a.T).R ** 2),
    lambda a: np.sum(np.linalg.qr(a[:, :3], "r") * np.arange(9.0).reshape(3, 3)),
    lambda a: np.sum(np.linalg.qr(np.stack([a.T, a.T * 2]))[0][:, :, 0]),
    lambda a: np.sum(np.linalg.svd(a, compute_uv=False) * np.arange(1.0, 4.0)),
    lambda a: np.sum(np.abs(np.linalg.svd(a, full_matrices=False)[0]) * np.arange(9.0).reshape(3, 3)),
    lambda a: np.sum(np.abs(np.linalg.svd(a, full_matrices=False).Vh) * np.arange(12.0).reshape(3, 4)),
    lambda a: np.sum(np.abs(np.linalg.svd(a.T, full_matrices=False).U) * np.arange(12.0).reshape(4, 3)),
    lambda a: np.sum(np.linalg.svd(a[:, :3] + spd(a)) .S ** 3) + np.sum(np.abs(np.linalg.svd(a[:, :3] + spd(a)).U)),
    lambda a: np.sum(np.corrcoef(a) * np.arange(9.0).reshape(3, 3)) + np.sum(np.corrcoef(a, rowvar=False) ** 3),
    lambda a: np.sum(np.add.accumulate(a * a, axis=1) * np.arange(12.0).reshape(3, 4)) + np.sum(np.add.accumulate(a[0])),
    lambda a: np.sum(np.add.reduce(a * a, axis=0, initial=2.0) * np.arange(4.0)) + np.add.reduce(a, None, np.float64),
])
def test_gradients_match_finite_differences(fn):
    from helpers import check_grad
    check_grad(fn, data(np.float64))


def _line_of(marker):
    lines, start = inspect.getsourcelines(_refusals)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def _refusals():
    return [
        (lambda a: np.einsum(a, [0, 1]), r"np\.einsum's interleaved form", "#interleaved"),  #interleaved
        (lambda a: np.einsum("ij->i", a, out=a[:, 0]), r"np\.einsum\(\.\.\., out=\)", "#einsum_out"),  #einsum_out
        (lambda a: np.linalg.qr(a, "raw"), r"np\.linalg\.qr\(\.\.\., mode='raw'\)", "#raw"),  #raw
        (lambda a: np.linalg.eig(a[:, :3]), r"np\.linalg\.eig is not supported on tensors", "#eig"),  #eig
        (lambda a: np.dot(a, a.T, out=a), r"np\.dot\(\.\.\., out=\)", "#dot_out"),  #dot_out
        (lambda a: np.linalg.matrix_power(a[:, :3], a[0, 0].astype(int)),  #power
         r"np\.linalg\.matrix_power\(\.\.\., n=\) a tensor", "#power"),
        (lambda a: np.bincount(a[0].astype(int), minlength=a[0, 0].astype(int)),  #minlength
         r"np\.bincount\(\.\.\., minlength=\) a tensor", "#minlength"),
        (lambda a: np.histogramdd(a), r"np\.histogramdd is not supported on tensors", "#histogramdd"),  #histogramdd
        (lambda a: np.linalg.matrix_rank(a[0]), r"np\.linalg\.matrix_rank of a 1-D tensor", "#rank1"),  #rank1
    ]


@pytest.mark.parametrize("case", range(len(_refusals())))
def test_unsupported_calls_name_themselves_and_the_users_line(case):
    fn, message, marker = _refusals()[case]
    with pytest.raises(ConversionError, match=message) as info:
        ag.function(fn)(data(np.float64))
    assert f"test_numpy_api_b.py:{_line_of(marker)}" in str(info.value)


def test_inside_tensor_loops_and_branches_under_native(monkeypatch):
    force_native(monkeypatch)

    def iterate(a, n):
        x = a[:, 0]
        i = 0
        while i < n:
            x = np.linalg.solve(spd(a), x) * 2 + np.einsum("ij,j->i", a, a[0]) * 0.01
            if np.linalg.norm(x) > 1:
                x = x / np.linalg.norm(x)
            i += 1
        counts = np.bincount((np.abs(x) * 10).astype(np.int64))
        return x, counts, np.histogram(x, 3)[0], x.astype(np.int32) & 3

    for n in (0, 1, 4):
        both(iterate, data(np.float64), n)


def test_einsum_of_one_operand_is_a_view_as_numpys():
    def update_diagonal(a):
        b = a * 1.0
        d = np.einsum("ii->i", b)  # numpy gives b's diagonal itself
        d += 1
        return b, d

    with pytest.raises(ConversionError, match="view of another array made by Einsum"):  # never b without the update
        ag.function(update_diagonal)(np.arange(9.0).reshape(3, 3))
    both(lambda a: np.einsum("ii->i", a[:, :3] * 1.0) * 2 + np.einsum("ij->ji", a).sum(), data(np.float64))


def test_a_device_module_without_the_function_names_it():
    from autograph_lite.ops.linalg_ops import OPS as NUMPY_FUNCTION_OPS
    import types
    bare = types.SimpleNamespace(__name__="bare_module", linalg=types.SimpleNamespace())
    with pytest.raises(NotImplementedError, match=r"np\.linalg\.svdvals has no bare_module form"):
        NUMPY_FUNCTION_OPS["linalg.svdvals"].kernel(bare, args=(), kwargs=())


def test_saved_and_loaded(tmp_path):
    def fn(a, bins):
        return (np.linalg.inv(spd(a)), np.einsum("ij,kj->ik", a, a), np.linalg.norm(a, np.inf),
                np.histogram(a, bins, weights=a)[0], np.unique(a, return_counts=True), a.astype(np.int64) >> 1)

    a = data(np.float64)
    f = ag.function(fn)
    expected = fn(a, 4)
    f(a, 4)
    ag.save(f, str(tmp_path / "b.agz"))
    loaded = ag.load(str(tmp_path / "b.agz"))
    from helpers import assert_identical
    assert_identical(expected, loaded(a, 4))
