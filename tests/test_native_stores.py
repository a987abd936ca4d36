"""Loops that fill arrays (issue 26): a tensor loop holding `x[i] = v` runs as C once hot, the
store written into the loop variable's buffer in place; the eager run is the oracle, before and
after the tier-up, and for arguments written through."""
import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.runtime.native import compiler, loops
from examples.models import edit_distance, jacobi_2d
from helpers import assert_same, force_native, on_fresh_arguments

pytestmark = pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")


@pytest.fixture(autouse=True)
def native_on(monkeypatch):
    force_native(monkeypatch)


def fill_squares(x):
    out = np.zeros(ag.shape(x)[0] + 2)
    for i in range(ag.shape(x)[0]):
        out[i + 1] = x[i] * x[i] - out[i]
    return out


def fill_int32(x):
    out = np.zeros(ag.shape(x)[0], np.int32)
    for i in range(ag.shape(x)[0]):
        out[-i - 1] = x[i] + i  # a negative index, an int64 value cast to int32 as numpy casts
    return out


def prefix_rows(x):
    rows = np.ones((ag.shape(x)[0], 3))
    for i in range(1, ag.shape(x)[0]):
        rows[i, :] = rows[i - 1] + x[i]  # a row stored from the row before
    return rows


def stencil(x, steps):
    a = x.copy()
    b = np.zeros_like(x)
    for _ in ag.range(steps):  # two buffers, each written from the other
        b[1:-1] = 0.5 * (a[2:] + a[:-2])
        a[1:-1] = 0.5 * (b[2:] + b[:-2])
    return a, b


def stencil_2d(A, B, steps):
    for _ in ag.range(steps):  # jacobi_2d on arguments: both written back
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def positives(x):
    out = np.full(ag.shape(x)[0], -1.0)
    for i in range(ag.shape(x)[0]):
        if x[i] > 0:  # a store in a branch: into a copy (the branch does not own the array)
            out[i] = x[i]
    return out


def fill_small_ints(x, k):
    a = np.zeros(ag.shape(x)[0], np.uint8)
    b = np.zeros(ag.shape(x)[0], np.uint64)
    for i in range(ag.shape(x)[0]):
        a[i] = i * k  # a Python int: numpy refuses one out of uint8's range
        b[i] = i * 3
    return a, b


RNG = np.random.default_rng(0)
CASES = [
    (fill_squares, lambda: RNG.standard_normal(40)),
    (fill_int32, lambda: np.arange(30, dtype=np.int64)),
    (prefix_rows, lambda: RNG.standard_normal(20)),
    (edit_distance, lambda: RNG.integers(0, 3, 25), lambda: RNG.integers(0, 3, 31)),
    (stencil, lambda: RNG.standard_normal(16), lambda: np.int64(7)),
    (stencil_2d, lambda: RNG.standard_normal((8, 9)), lambda: RNG.standard_normal((8, 9)), lambda: np.int64(5)),
    (positives, lambda: RNG.standard_normal(12)),
    (fill_small_ints, lambda: np.zeros(40), lambda: 5),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
def test_fill_loops_run_as_c_and_equal_eager(case):
    fn, *make = case
    args = [m() for m in make]
    compiled = ag.function(fn)
    for _ in range(loops.TIER_UP_AFTER + 1):  # the Python loop, then C: arguments written back alike
        fresh = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        eager_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        assert_same(fn(*eager_args), compiled(*fresh))
        for e, c in zip(eager_args, fresh):
            assert_same(e, c)
    native = compiled.get_concrete_function(*args).plan.native_loops
    assert native and all(loop.fn for loop in native), compiled.get_concrete_function(*args).plan.native


def test_a_fill_loop_over_a_large_table_stores_in_place():
    """The DP table (1001 x 1001 here 201 x 201) is the loop's own buffer: no copy per cell."""
    a, b = RNG.integers(0, 4, 200), RNG.integers(0, 4, 200)
    on_fresh_arguments(edit_distance, lambda: a, lambda: b)
    compiled = ag.function(edit_distance)
    for _ in range(loops.TIER_UP_AFTER + 1):
        assert_same(edit_distance(a, b), compiled(a, b))
    concrete = compiled.get_concrete_function(a, b)
    assert all(loop.fn for loop in concrete.plan.native_loops)
    outer = [n for n in concrete.optimized_graph.nodes if n.op == "While"][-1]
    text = loops.source(outer)[0]
    assert "201 * 201" not in text and "[40401]" not in text  # no local copy of the table


def test_an_index_out_of_range_raises_as_eager():
    def fill(x, k):
        out = np.zeros(ag.shape(x)[0])
        for i in range(ag.shape(x)[0]):
            out[i + k] = x[i]
        return out
    compiled = ag.function(fill)
    x = np.ones(5)
    for _ in range(loops.TIER_UP_AFTER + 1):
        assert_same(fill(x, np.int64(0)), compiled(x, np.int64(0)))
    with pytest.raises(IndexError):
        fill(x, np.int64(1))
    with pytest.raises(IndexError):
        compiled(x, np.int64(1))


def test_a_python_int_out_of_an_arrays_range_raises_as_eager():
    compiled = ag.function(fill_small_ints)
    x = np.zeros(40)
    for _ in range(loops.TIER_UP_AFTER + 1):
        assert_same(fill_small_ints(x, 5), compiled(x, 5))
    with pytest.raises(OverflowError):
        fill_small_ints(x, 300)
    with pytest.raises(OverflowError):
        compiled(x, 300)


def test_duplicate_loop_variables_are_carried_once():
    """An array written in a loop is carried as the user's name and as its memory: one loop variable."""
    x = np.arange(6.0)
    concrete = ag.function(fill_squares).get_concrete_function(x)
    [traced] = [n for n in concrete.graph.nodes if n.op == "While"]
    [optimized] = [n for n in concrete.optimized_graph.nodes if n.op == "While"]
    assert len(optimized.outputs) < len(traced.outputs)


# --- large arrays: slices and elementwise ops computed where they are stored ---------------------

def shift_big(x):
    y = x.copy()
    y[1:] = y[:-1] * 2.0  # the value reads the array it is stored into: numpy reads it first
    return y, np.tanh(y) + x  # numpy's own tanh loop over a large value


def strided_big(x):
    y = x * 2 + 1  # read twice: written once
    return (y[::2] - y[1::2]).sum(), y


BIG_CASES = [
    (jacobi_2d, lambda: 6, lambda: np.random.default_rng(0).standard_normal((150, 150)),
     lambda: np.random.default_rng(1).standard_normal((150, 150))),
    (stencil_2d, lambda: np.random.default_rng(2).standard_normal((150, 150)),
     lambda: np.random.default_rng(3).standard_normal((150, 150)), lambda: np.int64(3)),
    (shift_big, lambda: np.random.default_rng(4).standard_normal(50000)),
    (strided_big, lambda: np.random.default_rng(5).standard_normal(50000)),
]


@pytest.mark.parametrize("case", BIG_CASES, ids=lambda c: c[0].__name__)
def test_large_stencils_run_as_c_and_equal_eager(case):
    """Arrays beyond a local's size: a slice or an elementwise op is computed in the loop that
    stores it; a straight-line graph keeps the arrays it must make (copies) on the heap."""
    fn, *make = case
    compiled = ag.function(fn)
    for _ in range(loops.TIER_UP_AFTER + 1):
        eager_args, args = [m() for m in make], [m() for m in make]
        assert_same(fn(*eager_args), compiled(*args))
        for e, c in zip(eager_args, args):
            assert_same(e, c)
    plan = compiled.get_concrete_function(*[m() for m in make]).plan
    assert all(region.native is not None and region.native.fn for region in plan.native), plan.native


# --- a start array given to the loop: no copy; when C cannot finish, the plan runs again ---------

def fill_and_grow(x):
    out = np.zeros(ag.shape(x)[0])  # made here, read by nothing but the loop: the loop's own buffer
    big = 1
    for i in range(ag.shape(x)[0]):
        out[i] = x[i] * 2
        big = big * 3 % 9_000_000_000_000_000_000  # a Python int: 3 * big outgrows int64, C stops (INEXACT)
    return out, big


def fill_shifted(x, k):
    out = np.zeros(ag.shape(x)[0])
    for i in range(ag.shape(x)[0]):
        out[i + k] = x[i]  # out of range at the end for k > 0: C stops after its stores
    return out


def test_a_loop_updates_a_start_array_the_plan_gives_up_in_place():
    a, b = RNG.integers(0, 4, 300), RNG.integers(0, 4, 300)
    compiled = ag.function(edit_distance)
    for _ in range(loops.TIER_UP_AFTER + 1):
        assert_same(edit_distance(a, b), compiled(a, b))
    given = [loop.donated for loop in compiled.get_concrete_function(a, b).plan.native_loops]
    assert given[:3] == [{1}, {1}, {1}], given  # the table, from np.zeros through the three loops


def test_a_loop_given_its_start_array_runs_the_plan_again_when_c_cannot_finish():
    x = RNG.standard_normal(70000)  # np.zeros of it is not folded into a constant (passes/constant_folding.py)
    compiled = ag.function(fill_and_grow)
    for _ in range(loops.TIER_UP_AFTER + 2):
        eager, result = fill_and_grow(x), compiled(x)
        assert_same(eager[0], result[0])
        assert type(result[1]) is int and result[1] == eager[1] == pow(3, len(x), 9_000_000_000_000_000_000)
    [loop] = compiled.get_concrete_function(x).plan.native_loops
    assert loop.fn and len(loop.donated) == 1  # the buffer of `out`
    shifted = ag.function(fill_shifted)
    for _ in range(loops.TIER_UP_AFTER + 1):
        assert_same(fill_shifted(x, np.int64(0)), shifted(x, np.int64(0)))
    with pytest.raises(IndexError):
        shifted(x, np.int64(1))
    assert_same(fill_shifted(x, np.int64(-3)), shifted(x, np.int64(-3)))


def test_a_graph_too_large_for_one_c_function_stays_numpy(monkeypatch):
    """A Python loop unrolled into thousands of stores is not written as one C function."""
    from autograph_lite.runtime.native import graphs
    monkeypatch.setattr(graphs, "MAX_NODES", 50)

    def unrolled(x):
        y = x.copy()
        for i in range(1, 40):
            y[i] = y[i - 1] * 0.5 + x[i]
        return y
    x = RNG.standard_normal(40)
    compiled = ag.function(unrolled)
    for _ in range(loops.TIER_UP_AFTER + 1):
        assert_same(unrolled(x), compiled(x))
    [region] = compiled.get_concrete_function(x).plan.native
    assert region.native is None and "nodes" in region.why


def _outcome(fn, *args):
    """What a call gives: its result, or the type and message of what it raised."""
    try:
        return fn(*args)
    except OverflowError as e:
        return f"OverflowError: {e}"


def _store_item(x, i, target):
    y = np.zeros(3, target)
    y[0] = x[i]  # a numpy integer scalar: numpy stores it through a Python int
    return y


def _store_slice(x, i, target):
    y = np.zeros(3, target)
    y[1:] = x[i] * 1
    return y


def _store_sum(x, i, target):
    y = np.zeros(3, target)
    y[0] = x[i:].sum()
    return y


def _store_at_positions(x, i, target):
    y = np.zeros(3, target)
    y[np.array([0, 2])] = x[i]  # at positions numpy casts it as an array: it wraps
    return y


def _store_0d_array(x, i, target):
    y = np.zeros(3, target)
    y[0] = np.array(x[i])  # a 0-d array: cast, it wraps
    return y


def _store_in_loop(x, i, target):
    y = np.zeros(ag.shape(x)[0], target)
    for k in range(ag.shape(x)[0]):
        if k >= i:
            y[k] = x[k]
    return y


@pytest.mark.parametrize("store", [_store_item, _store_slice, _store_sum, _store_at_positions, _store_0d_array,
                                   _store_in_loop], ids=lambda f: f.__name__[1:])
@pytest.mark.parametrize("value_dtype, target", [(np.int64, np.int8), (np.uint8, np.int8), (np.int16, np.uint8),
                                                 (np.uint64, np.int64), (np.int64, np.uint64), (np.uint64, np.int32)])
def test_a_numpy_integer_scalar_out_of_an_arrays_range_stores_as_eager(store, value_dtype, target):
    """numpy stores a numpy integer scalar at a basic index through a Python int: out of the array's
    range it raises OverflowError (or wraps, storing into unsigned dtypes); the C runs the Python
    path there. A 0-d array, or a store at positions, is cast as C casts: it wraps."""
    info = np.iinfo(value_dtype)
    x = np.array([5, info.max, 0, info.min, 200 % (int(info.max) + 1)], value_dtype)
    def fn(x, i):
        return store(x, i, target)
    compiled = ag.function(fn)
    for i in [0, 0, 0, 0, 1, 3, 4, 0]:  # in range while it tiers up, then out of it, then in again
        assert_same(_outcome(fn, x, np.int64(i)), _outcome(compiled, x, np.int64(i)))
    assert all(region.native for region in compiled.get_concrete_function(x, np.int64(0)).plan.native)
