"""Views of run-time length in native C (runtime/native/render.py `Dim`): slices whose bounds come
from loop variables (`A[i, :j]`, `A[i + 1:, i]`, `np.flip(r[:k])`), the elementwise ops, stores and
vector products over them. NPBench's triangular loop nests, their ranges bounded by a 0-d array
argument, run as C While loops: each is checked against its eager run (returned values and the
arguments it updates in place, bit for bit) and its plan must say every While is native, so a
region falling back to numpy fails here."""


import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.runtime.native import compiler, loops
from helpers import force_native, native_regions

pytestmark = pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")


@pytest.fixture(autouse=True)
def native_on(monkeypatch):
    force_native(monkeypatch)


def all_native(fn, *args, exact=True):
    _, found = native_regions(fn, *args, exact=exact)
    assert found and all(r.native is not None and r.native.fn for r in found), found


# --- NPBench's polybench kernels, as written there, with the size passed as a 0-d array ---------

def cholesky(A, n):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, n):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def lu(A, n):
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]


def ludcmp(A, b, n):
    x = np.zeros_like(b)
    y = np.zeros_like(b)
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    for i in range(n):
        y[i] = b[i] - A[i, :i] @ y[:i]
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]
    return x, y


def gramschmidt(A, n):
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)
    for k in range(n):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


def durbin(r, n):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, n):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def syrk(alpha, beta, C, A, n, m):
    for i in range(n):
        C[i, :i + 1] *= beta
        for k in range(m):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def syr2k(alpha, beta, C, A, B, n, m):
    for i in range(n):
        C[i, :i + 1] *= beta
        for k in range(m):
            C[i, :i + 1] += (A[:i + 1, k] * alpha * B[i, k] +
                             B[:i + 1, k] * alpha * A[i, k])


def symm(alpha, beta, C, A, B, n, m):
    temp2 = np.empty((C.shape[1], ), dtype=C.dtype)
    C *= beta
    for i in range(n):
        for j in range(m):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


def trmm(alpha, A, B, n, m):
    for i in range(n):
        for j in range(m):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


def spd(n, seed=0):
    b = np.random.default_rng(seed).random((n, n))
    return b @ b.T + n * np.eye(n)


def test_cholesky_is_one_c_loop_nest():
    all_native(cholesky, spd(12), np.array(12))
    all_native(cholesky, spd(130), np.array(130))   # 16,900 elements: the loop variable's buffer


@pytest.mark.parametrize("kernel", [lu, ludcmp])
def test_lu_and_ludcmp_are_c_loop_nests(kernel):
    n = 14
    args = (spd(n),) + ((np.random.default_rng(1).random(n),) if kernel is ludcmp else ()) + (np.array(n),)
    all_native(kernel, *args)


def test_gramschmidt_columns_and_products():
    a = np.random.default_rng(2).random((11, 9))
    all_native(gramschmidt, a, np.array(9))


def test_durbin_flipped_prefixes():
    """np.dot of a flipped view, bit for bit: numpy's dot copies an operand of negative stride and
    calls BLAS on the copy (np.matmul would sum the view in its own loop); the C does as np.dot."""
    r = np.random.default_rng(3).random(40) / 40
    all_native(durbin, r, np.array(40))


@pytest.mark.parametrize("kernel", [syrk, syr2k, symm, trmm])
def test_symmetric_and_triangular_products(kernel):
    rng = np.random.default_rng(4)
    n, m = 9, 7
    if kernel is trmm:
        args = (np.float64(1.5), rng.random((n, n)), rng.random((n, m)), np.array(n), np.array(m))
    elif kernel is symm:
        args = (np.float64(1.5), np.float64(1.2), rng.random((n, m)), rng.random((n, n)), rng.random((n, m)),
                np.array(n), np.array(m))
    else:
        mats = (rng.random((n, m)),) * (2 if kernel is syr2k else 1)
        args = (np.float64(1.5), np.float64(1.2), rng.random((n, n)), *mats, np.array(n), np.array(m))
    all_native(kernel, *args)


def test_loop_nests_over_arrays_larger_than_locals_update_them_in_place():
    """Arrays of more than MAX_ELEMENTS: the loop variables' buffers, written in place by the
    stores (`C[i, :i + 1] *= beta` stores a view of itself back) and shared by the nested loop's two
    variables holding one array (the array and the memory behind its name)."""
    rng = np.random.default_rng(9)
    n, m = 130, 4
    all_native(syrk, np.float64(1.5), np.float64(1.2), rng.random((n, n)), rng.random((n, m)), np.array(n),
               np.array(m))
    all_native(gramschmidt, rng.random((140, 120)), np.array(3))


# --- Python's slice rules on run-time bounds ----------------------------------------------------

def dots_from_zero(x, y, n):
    out = np.ones(x.shape[0] + 1)
    for j in range(n + 1):          # j = 0: empty slices, whose dot is numpy's 0.0
        out[j] = np.dot(x[:j], y[:j])
    return out


def test_empty_slices_dot_to_zero():
    rng = np.random.default_rng(5)
    all_native(dots_from_zero, rng.random(6), rng.random(6), np.array(6))


def slice_bounds(x, n):
    out = np.zeros((x.shape[0], 6))
    for j in range(n):
        out[j, 0] = np.dot(x[j - 3:], x[j - 3:])           # a negative start counts from the end
        out[j, 1] = np.dot(x[:j + 100], x[:j + 100])       # a stop past the end is clamped
        out[j, 2] = np.dot(x[j:2], x[j:2])                 # empty once j >= 2
        out[j, 3] = np.dot(x[j::-1], x[j::-1])             # a negative step from a computed start
        out[j, 4] = np.dot(x[:j:2], x[1:j + 1:2])          # a step of 2
        out[j, 5] = np.dot(x[-j - 8:-2], x[-j - 8:-2])     # clamped below, negative stop
    return out


def test_negative_and_clamped_bounds_follow_pythons_slice_rules():
    all_native(slice_bounds, np.random.default_rng(6).random(6), np.array(6))


def stores_into_prefixes(a, n):
    for j in range(n):
        a[j, :j] += a[:j, j] * 2.0       # a row prefix updated from a column prefix
        a[j, j + 1:] = -1.0              # a scalar stored into a suffix (empty for the last row)
        a[:j, j] *= 0.5
    return a[0, 0]


def test_elementwise_stores_into_run_time_slices():
    all_native(stores_into_prefixes, np.random.default_rng(7).random((7, 7)), np.array(7))


def mismatched(x, n):
    total = 0.0
    for j in range(n):
        total += x[:j] @ x[1:3]          # lengths 2 only at j = 2; numpy raises at j = 0
    return total


def stretched(x, n):
    total = np.zeros(3)
    for j in range(n):
        total += x[j:j + 1] * x[:3]      # a run-time length 1 that numpy stretches
    return total


def test_run_time_lengths_numpy_stretches_or_refuses_run_as_eager():
    x = np.random.default_rng(8).random(5)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        mismatched(x, np.array(4))
    compiled = ag.function(mismatched)
    for _ in range(loops.TIER_UP_AFTER + 2):
        with pytest.raises(ValueError, match="mismatch in its core dimension"):
            compiled(x, np.array(4))
    (region,) = compiled.get_concrete_function(x, np.array(4)).plan.native
    assert region.native is not None and region.native.fn  # the C loop ran first, then Python raised
    all_native(stretched, x, np.array(4))


def add_rows_into_a_row(a, n):
    for k in range(n):
        a[7:8, 3:] += a[k:k + 1, 2:3].T     # (1, 1) += (1, 1), but (1, 0) once k is past the last row
    return a


def test_an_update_whose_result_has_another_run_time_shape_runs_python_which_raises():
    all_native(add_rows_into_a_row, np.arange(40.0).reshape(10, 4), np.array(10))
    with pytest.raises(ValueError, match="non-broadcastable output operand with shape \\(1,1\\)"):
        add_rows_into_a_row(np.arange(40.0).reshape(10, 4), np.array(11))
    compiled = ag.function(add_rows_into_a_row)
    for _ in range(loops.TIER_UP_AFTER + 2):
        with pytest.raises(ValueError, match="non-broadcastable output operand with shape \\(1,1\\)"):
            compiled(np.arange(40.0).reshape(10, 4), np.array(11))
    (region,) = compiled.get_concrete_function(np.ones((10, 4)), np.array(11)).plan.native
    assert region.native is not None and region.native.fn  # the C loop ran first, then Python raised


def prefix_reductions(x, a, n):
    out = np.zeros((x.shape[0], 6))
    for j in range(n):
        out[j, 0] = x[:j].sum()              # 0.0 at j = 0
        out[j, 1] = x[:j + 1].max()
        out[j, 2] = np.mean(x[j:])
        out[j, 3] = a[:j, 1].sum()           # a column: numpy's loop reads it with its stride
        out[j, 4] = x[j::-1].min()
        out[j, 5] = np.sum(a[j, :j] * 2.0)   # a computed vector of run-time length
    return out


def empty_max(x, n):
    total = 0.0
    for j in range(n):
        total += x[:n - 1 - j].max()         # numpy raises for the empty slice of the last step
    return total


def test_reductions_of_run_time_lengths_in_numpys_order():
    rng = np.random.default_rng(10)
    all_native(prefix_reductions, rng.standard_normal(300), rng.standard_normal((300, 300)), np.array(300))
    with pytest.raises(ValueError, match="zero-size array"):
        empty_max(np.arange(4.0), np.array(4))
    compiled = ag.function(empty_max)
    for _ in range(loops.TIER_UP_AFTER + 2):
        with pytest.raises(ValueError, match="zero-size array"):
            compiled(np.arange(4.0), np.array(4))
    (region,) = compiled.get_concrete_function(np.arange(4.0), np.array(4)).plan.native
    assert region.native is not None and region.native.fn


def products_of_blocks(a, b, n):
    out = np.zeros((3, 3))
    for j in range(n):
        out += a[:3, :j] @ b[:j, :3]            # an inner length of run time: 0 gives zeros
        out += a[j:j + 3, :3].T @ b[:3, 1:4]    # a run-time length that must be 3 (numpy raises past it)
    return out


def test_matrix_products_of_run_time_inner_lengths():
    rng = np.random.default_rng(11)
    all_native(products_of_blocks, rng.random((8, 8)), rng.random((8, 8)), np.array(6))
    with pytest.raises(ValueError):
        products_of_blocks(rng.random((8, 8)), rng.random((8, 8)), np.array(8))
    compiled = ag.function(products_of_blocks)
    for _ in range(loops.TIER_UP_AFTER + 2):
        with pytest.raises(ValueError):
            compiled(rng.random((8, 8)), rng.random((8, 8)), np.array(8))
