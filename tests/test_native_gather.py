"""Integer array indexing in native C (runtime/native/render.py `Renderer.gather`): `x[cols]` by a 1-D
array of integers of run-time length, read where used or gathered into scratch memory where numpy's
dot reads it, and stores `x[cols] = v`, `x[cols] += v`. NPBench's spmv, as written there, stages the
rest of its row loop as a While: each case is checked against its eager run (results and arguments,
bit for bit) and its plan must say every region is native, so a region falling back to numpy fails."""

import numpy as np
import pytest

from autograph_lite.runtime.native import compiler, loops
from helpers import assert_identical, force_native, native_regions

pytestmark = pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")

ROWS = 400  # past the unrolled part of spmv's row loop (runtime/passes: STAGE_AFTER_NODES): a While


@pytest.fixture(autouse=True)
def native_on(monkeypatch):
    force_native(monkeypatch)


def spmv(A_row, A_col, A_val, x):  # NPBench's spmv_numpy.py
    y = np.empty(A_row.size - 1, A_val.dtype)

    for i in range(A_row.size - 1):
        cols = A_col[A_row[i]:A_row[i + 1]]
        vals = A_val[A_row[i]:A_row[i + 1]]
        y[i] = vals @ x[cols]

    return y


def csr(rows=ROWS, n=300, per_row=4, index=np.int32, value=np.float64, seed=0, empty_every=0):
    """A random sparse matrix in CSR form (A_row, A_col, A_val) and a vector x; every
    `empty_every`-th row has no entries."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 2 * per_row, rows)
    if empty_every:
        counts[::empty_every] = 0
    A_row = np.concatenate([[0], np.cumsum(counts)]).astype(index)
    A_col = rng.integers(0, n, A_row[-1]).astype(index)
    return A_row, A_col, rng.standard_normal(A_row[-1]).astype(value), rng.standard_normal(n).astype(value)


def run_both(fn, *args):
    """native_regions(fn, *args), asserting every region of the plan is native."""
    compiled, found = native_regions(fn, *args)
    assert found and all(r.native is not None and r.native.fn for r in found), found
    return compiled, found


def test_spmv_as_written_is_one_native_while():
    _, found = run_both(spmv, *csr())
    assert [getattr(r.region, "op", None) for r in found] == ["While"], found


@pytest.mark.parametrize("index", [np.int8, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_spmv_index_dtypes(index):
    A_row, A_col, A_val, x = csr(n=100, index=np.int64)
    run_both(spmv, A_row, A_col.astype(index), A_val, x)
    run_both(spmv, A_row.astype(np.int32), A_col.astype(index), A_val, x)


def test_spmv_pausing_every_few_rows(monkeypatch):
    monkeypatch.setattr(loops, "BUDGET", 40)  # PAUSED every few rows: the scratch memory freed and taken again
    run_both(spmv, *csr())


def test_spmv_unrolled_is_one_native_graph():
    _, found = run_both(spmv, *csr(rows=40))  # a short loop unrolls: the gathers in a straight-line graph
    assert [type(r.region).__name__ for r in found] == ["Graph"], found


def test_spmv_float32_values():
    A_row, A_col, A_val, x = csr(value=np.float32)
    assert spmv(A_row, A_col, A_val, x).dtype == np.float32
    run_both(spmv, A_row, A_col, A_val, x)


def test_spmv_negative_indices_wrap():
    A_row, A_col, A_val, x = csr()
    A_col[::2] -= x.size  # -n..-1: the same columns counted from the end, as numpy's
    run_both(spmv, A_row, A_col, A_val, x)


def test_spmv_empty_rows():
    A_row, A_col, A_val, x = csr(empty_every=3)
    assert (np.diff(A_row) == 0).any()
    y = run_both(spmv, A_row, A_col, A_val, x)[0](A_row, A_col, A_val, x)
    assert (y[::3] == 0.0).all()  # a dot of nothing


@pytest.mark.parametrize("bad", [300, -301, 10 ** 6])
def test_spmv_index_out_of_range_raises_numpy_error(bad):
    compiled, _ = run_both(spmv, *csr())
    A_row, A_col, A_val, x = csr()
    A_col[-3] = bad  # in a row of the staged While
    with pytest.raises(IndexError) as eager:
        spmv(A_row, A_col, A_val, x)
    with pytest.raises(IndexError) as got:
        compiled(A_row, A_col, A_val, x)
    assert str(got.value) == str(eager.value)
    assert compiled.trace_count == 1
    good = csr()
    assert_identical(compiled(*good), spmv(*good))  # and the loop runs native again


def test_gather_rows_and_elementwise_use():
    def rows_sum(X, idx, n):
        out = np.zeros(X.shape[1])
        for i in range(n):
            sel = X[idx[i:]] * 2.0 + 1.0  # a gather of rows read where used
            out += sel[0] - sel[-1]
        return out

    rng = np.random.default_rng(1)
    run_both(rows_sum, rng.standard_normal((20, 3)), rng.integers(-20, 20, 30), np.array(25))


def test_scatter_store_last_write_wins():
    def scatter(x, idx, v, n):
        for i in range(n):
            x[idx[i:]] = v[i:] * i
        return x

    rng = np.random.default_rng(2)
    idx = rng.integers(-30, 30, 60)  # repeats: numpy's last store stays
    run_both(scatter, rng.standard_normal(30), idx, rng.standard_normal(60), np.array(7))


def test_scatter_add_reads_before_it_stores():
    def scatter_add(x, idx, v, n):
        for i in range(n):
            x[idx[:i]] += v[:i]  # numpy: x[idx] = x[idx] + v, repeats counted once
        return x

    rng = np.random.default_rng(3)
    run_both(scatter_add, rng.standard_normal(30), rng.integers(0, 30, 60).astype(np.int32),
             rng.standard_normal(60), np.array(40))


def test_scatter_out_of_range_raises_numpy_error():
    def scatter(x, idx, n):
        for i in range(n):
            x[idx[i:]] = 1.0
        return x

    compiled, _ = run_both(scatter, np.zeros(10), np.arange(10), np.array(3))
    with pytest.raises(IndexError) as eager:
        scatter(np.zeros(10), np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 10]), np.array(3))
    with pytest.raises(IndexError) as got:
        compiled(np.zeros(10), np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 10]), np.array(3))
    assert str(got.value) == str(eager.value)
