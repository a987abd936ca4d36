"""While loops over small arrays of static shape run as one C function once hot (native/loops.py,
native/render.py): before and after the tier-up, results equal eager numpy bit for bit (types,
dtypes, values, NaNs), warnings and errors included. Transcendental ops call numpy's own inner
loops (native/numpy_loops.py), sums add in numpy's pairwise order."""
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.runtime.native import compiler, loops
from examples.models import tanh_loop, tanh_loop_inputs
from helpers import assert_identical, force_native, plan_after_tier_up

pytestmark = pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")
CALLS = loops.TIER_UP_AFTER + 2


@pytest.fixture(autouse=True)
def native_on(monkeypatch):
    force_native(monkeypatch)


def native_calls(fn, *args):
    """Call the compiled fn CALLS times, checking each against eager; returns its native loops."""
    return plan_after_tier_up(fn, *args).native_loops


def test_w1_tanh_loop_runs_native_and_equals_numpy_bit_for_bit():
    (loop,) = native_calls(tanh_loop, *tanh_loop_inputs())
    assert loop.fn and "ag_numpy_loop" in loop.text  # tanh: numpy's own float32 loop


def damped(x, w, b, n):
    i = 0
    while i < n:
        x = ag.tanh(x * w + b) * 0.5 + ag.nn.sigmoid(x) - ag.exp(x * -1.0) * 0.01   # broadcasts [3,4] * [4]
        i += 1
    return x


def norms(x, n):
    total = ag.zeros_like(x[0])
    i = 0
    while i < n:
        total = total + ag.reduce_sum(x, axis=0) + ag.reduce_mean(x, axis=1, keepdims=True)[0]
        x = x * 0.5 + ag.reduce_max(x) - ag.reduce_min(x, axis=-1, keepdims=True)
        i += 1
    return total, x


def rows(table, n):
    acc = ag.zeros_like(table[0])
    i = 0
    while i < n:
        row = table[i - 2]       # negative indices wrap, as numpy's
        if ag.reduce_any(row > 0.5):
            acc = acc + row
        else:
            acc = acc - ag.log(row + 1.0)
        i += 1
    return acc


def wrapping(x, n):
    i = 0
    while ag.reduce_all(x != 0) and i < n:
        x = x * 3 + 7              # int8 wraps, as numpy's
        i += 1
    return x, i, ag.reduce_sum(x), ag.reduce_sum(x > 0)


CASES = [
    (damped, (np.linspace(-1, 1, 12).reshape(3, 4), np.array([0.5, -1.0, 2.0, 0.25]), np.float64(0.1),
              np.int64(7))),
    (damped, (np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), np.array([0.5, -1, 2, 0.25], np.float32),
              np.float32(0.1), np.int64(7))),
    (norms, (np.random.default_rng(0).standard_normal((5, 7)), np.int64(6))),
    (norms, (np.random.default_rng(1).standard_normal((3, 37)).astype(np.float32), np.int64(4))),
    (rows, (np.random.default_rng(2).uniform(0, 1, (6, 5)), np.int64(6))),
    (wrapping, (np.array([1, 2, 3, 5], np.int8), np.int64(20))),
]


@pytest.mark.parametrize("fn, args", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_array_loops_tier_up_and_equal_eager(fn, args):
    native = native_calls(fn, *args)
    assert native and all(loop.fn for loop in native), "the loop should run as C"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_add_in_numpys_pairwise_order(dtype):
    def summed(x, n):
        i = 0
        s = ag.reduce_sum(x[0:1])
        while i < n:
            s = ag.reduce_sum(x) + ag.reduce_mean(x)
            i += 1
        return s

    rng = np.random.default_rng(3)
    for size in (1, 7, 8, 9, 16, 127, 128, 129, 300, 1000):
        x = (rng.standard_normal(size) * 10.0 ** rng.uniform(-3, 3, size)).astype(dtype)
        assert all(loop.fn for loop in native_calls(summed, x, np.int64(1)))


def test_an_index_out_of_range_raises_as_eager_after_the_tier_up():
    table = np.arange(12.0).reshape(4, 3)
    f = ag.function(rows)
    for _ in range(CALLS):
        np.testing.assert_array_equal(f(table, np.int64(3)), rows(table, np.int64(3)))
    with pytest.raises(IndexError):
        rows(table, np.int64(7))   # i - 2 reaches 4
    with pytest.raises(IndexError):
        f(table, np.int64(7))


def test_nan_and_warnings_match_eager_after_the_tier_up():
    def shrink(x, n):
        i = 0
        while i < n:
            x = ag.log(x) * 0.5 + ag.reduce_max(x)
            i += 1
        return x

    x = np.array([1.0, 0.0, 2.0])
    f = ag.function(shrink)
    for _ in range(CALLS):
        with warnings.catch_warnings(record=True) as eager_caught:
            warnings.simplefilter("always")
            eager = shrink(x, np.int64(3))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = f(x, np.int64(3))
        assert_identical(eager, compiled)
        assert sorted({str(w.message) for w in caught}) == sorted({str(w.message) for w in eager_caught})
    assert f.get_concrete_function(x, np.int64(3)).plan.native_loops[0].fn


def test_callers_arrays_are_not_changed():
    x = np.linspace(0, 1, 4)
    before = x.copy()
    native_calls(lambda x, n: damped(x, x, 0.5, n), x, np.int64(3))
    np.testing.assert_array_equal(x, before)


def recurrent(x, w, n):
    h = ag.zeros_like(x)
    i = 0
    while i < n:
        h = ag.tanh(ag.matmul(h, w) + x)   # numpy's own matmul loop: its BLAS call, its result
        i += 1
    return h


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_matmul_in_a_loop_equals_numpy(dtype):
    rng = np.random.default_rng(4)
    if dtype == np.int64:
        def fn(x, w, n):
            i = 0
            while i < n:
                x = ag.matmul(x, w) % 1000
                i += 1
            return x
        args = (rng.integers(-9, 9, (4, 6)), rng.integers(-9, 9, (6, 6)), np.int64(5))
    else:
        fn, args = recurrent, (rng.standard_normal((8, 16)).astype(dtype),
                               (rng.standard_normal((16, 16)) * 0.3).astype(dtype), np.int64(10))
    assert all(loop.fn for loop in native_calls(fn, *args))


def test_plan_native_says_what_runs_as_c_and_why_not():
    f = ag.function(recurrent)
    x, w = np.ones((2, 3)), np.ones((3, 3))
    (region,) = f.get_concrete_function(x, w, np.int64(2)).plan.native
    assert region.loop is not None and "native C" in repr(region)
    x3 = np.ones((2, 2, 3))  # a batched matmul: not written as C yet
    (region,) = f.get_concrete_function(x3, w, np.int64(2)).plan.native
    assert region.loop is None and "matmul of (2, 2, 3)" in repr(region) and "numpy (" in repr(region)


@pytest.mark.parametrize("x", [[60.0, 50.0], [1.0, 60.0], [1.0, 2.0]])
def test_a_python_float_passed_through_stays_a_python_float_after_the_tier_up(x):
    """A loop variable that starts as a Python float and becomes float64 only on some paths is
    returned as the path left it (it was np.float64 once in C): the C carries a flag per such
    variable saying which box eager holds (loops.tracked_boxes), so the loop runs as C."""
    def first_small(x):
        acc = 0.0
        for v in x:
            if v > 5:
                break
            acc = acc + v
        return acc

    (loop,) = native_calls(first_small, np.array(x))
    assert loop.fn and loop.tracked


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("n", [0, 1, 5])
def test_a_python_int_made_int64_by_the_body_keeps_eagers_type(n, native, monkeypatch):
    """Both were silent differences: from its third call the C loop returned np.int64(0) for a
    zero-trip loop's Python 0, and the Python loop returned np.int64(0) as a 0-d array."""
    monkeypatch.setenv("AG_NATIVE_KERNELS", native)
    def accumulate(n):
        acc = 0                       # a Python int; int64 once the body ran
        i = np.int64(0)
        while i < n:
            acc = (acc + i) % 1000003
            i += 1
        return acc, i

    loops = native_calls(accumulate, np.int64(n))
    assert len(loops) == (native == "1") and all(loop.fn for loop in loops)


# --- whole straight-line graphs (native/graphs.py) ----------------------------------------

def test_w3_lstm_cell_runs_as_one_c_function_equal_to_numpy():
    from examples.models import lstm_cell, lstm_inputs
    args = lstm_inputs()
    native_calls(lstm_cell, *args)
    (region,) = ag.function(lstm_cell).get_concrete_function(*args).plan.native
    assert region.native is not None and "graph 'lstm_cell': native C" in repr(region)


def slices(x, k):
    a = x[1:, ::2] * 2.0 + x[0, 1]            # constant slices and a constant element
    b = ag.reduce_sum(x[:, 1:3], axis=1)[2] - x[k]  # a row by a scalar argument
    return a, b, ag.reduce_max(x) > 0.5, ag.reduce_mean(x[::-1, 0])


def test_graphs_with_slices_and_scalar_outputs_equal_eager():
    x = np.random.default_rng(5).standard_normal((4, 5)).astype(np.float32)
    f = ag.function(slices)
    native_calls(slices, x, np.int64(-1))
    assert f.get_concrete_function(x, np.int64(-1)).plan.native[0].native is not None
    with pytest.raises(IndexError):
        slices(x, np.int64(4))
    with pytest.raises(IndexError):  # out of range: that call runs the Python plan, which raises
        f(x, np.int64(4))


def test_a_graph_returning_an_input_or_a_view_stays_python():
    def passes(x):
        return x, ag.tanh(x)

    def view(x):
        return ag.tanh(x)[1:]

    for fn in (passes, view):
        native_calls(fn, np.ones(3))
        (region,) = ag.function(fn).get_concrete_function(np.ones(3)).plan.native
        assert region.native is None and "is not a value the graph computes" in region.why


def test_a_graph_that_raises_a_flag_warns_at_each_ops_line_as_eager():
    def two_warnings(x):
        y = ag.log(x)
        return y / (x - x) + 1.0

    x = np.array([0.0, 4.0])
    f = ag.function(two_warnings)
    for _ in range(CALLS):
        with warnings.catch_warnings(record=True) as eager_caught:
            warnings.simplefilter("always")
            eager = two_warnings(x)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = f(x)
        assert_identical(eager, compiled)
        assert [(str(w.message), w.lineno) for w in caught] == [(str(w.message), w.lineno) for w in eager_caught]
        assert len(caught) == 2
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_identical(two_warnings(x), f(x))
    assert f.get_concrete_function(x).plan.native[0].native.fn


def test_a_loop_that_pauses_resumes_where_it_stopped(monkeypatch):
    """Seed-21 era bug (W2 under AG_NATIVE=always): the call after the last pause ran no
    iteration and said UNCHANGED, so the loop gave back its initial values."""
    monkeypatch.setattr(loops, "BUDGET", 5)  # a pause at every iteration
    x = np.linspace(0.0, 1.0, 8)
    (loop,) = native_calls(damped, x.reshape(2, 4), np.ones(4), np.float64(0.5), np.int64(6))
    assert "int64_t ag_budget = 5;" in loop.text


def rnn_by_columns(inputs, seq_len, w_in, w_state, last):
    """W2 as a user writes it: a column per step (`inputs[:, i]`, a strided view) and a mask made
    with a new axis (`[:, None]`)."""
    state = np.zeros((inputs.shape[0], w_state.shape[0]))
    for i in ag.range(last):
        x = inputs[:, i]
        new = np.tanh(x @ w_in + state @ w_state)
        state = np.where((i < seq_len)[:, None], new, state)
    return state


def test_a_column_by_a_computed_index_and_a_new_axis_run_as_c():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((4, 6, 3)), np.array([2, 6, 1, 4]), rng.standard_normal((3, 5)) * 0.3,
            rng.standard_normal((5, 5)) * 0.3)
    compiled = ag.function(rnn_by_columns)
    for _ in range(CALLS):
        assert_identical(rnn_by_columns(*args, np.int64(6)), compiled(*args, np.int64(6)))
    assert [r.native is not None for r in compiled.get_concrete_function(*args, np.int64(6)).plan.native] == [True]
    # a column out of range raises as eagerly, once the trace runs as C
    with pytest.raises(IndexError):
        rnn_by_columns(*args, np.int64(7))
    with pytest.raises(IndexError):
        compiled(*args, np.int64(7))
