"""The C entry (native/entry.c): a built native function is called from the plan through one
`Entry`, which takes the arguments in C, releases the GIL once and boxes the results. What it
gives must equal the ctypes path it replaces (`_python_call`) and eager numpy, for every form
an argument can come in: views of the C's dtype and shape are read through a copy it makes, the
forms it does not take itself (other dtypes, ints that do not fit) go to the ctypes path unchanged."""
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.runtime.native import compiler, entry, graphs, loops
from examples.models import collatz, lstm_cell, lstm_inputs
from helpers import assert_identical, force_native

pytestmark = pytest.mark.skipif(compiler.compiler() is None or entry._python_include() is None,
                                reason="no C compiler or no Python headers on this machine")
CALLS = loops.TIER_UP_AFTER + 1


@pytest.fixture(autouse=True)
def native_on(monkeypatch):
    force_native(monkeypatch)


def hot(fn, *args):
    """`fn` compiled and called until its native regions are built and entered through an Entry."""
    compiled = ag.function(fn)
    for _ in range(CALLS):
        compiled(*args)
    regions = [r.native for r in compiled.get_concrete_function(*args).plan.native if r.native is not None]
    assert regions and all(type(r.call).__name__ == "Entry" for r in regions)
    return compiled, regions


def mixed(x, y, n, scale):
    """A loop carrying an array, a numpy scalar, a Python int and a Python float, capturing a bool."""
    i = 0
    total = 0.0
    acc = y
    while i < n:
        x = x * scale + 1.0
        acc = acc + x.sum()
        total = total + 0.5
        i += 1
    return x, acc, i, total


@pytest.mark.parametrize("x", [np.arange(6.0).reshape(2, 3), np.arange(6.0, dtype=np.float32).reshape(2, 3)])
def test_a_loop_through_the_entry_equals_eager_and_the_ctypes_path(x):
    args = (x, np.float64(0.5), 5, 0.25)
    compiled, [loop] = hot(mixed, *args)
    for _ in range(3):
        assert_identical(mixed(*args), compiled(*args))
    # the entry and the ctypes path it stands in for give the same values, boxed the same
    through_entry = compiled(*args)
    loop.call = loop._python_call
    assert_identical(compiled(*args), through_entry)


@pytest.mark.parametrize("form", ["other dtype", "0-d array", "python int too big"])
def test_an_argument_the_entry_does_not_take_goes_to_the_ctypes_path(form):
    x = np.arange(6.0).reshape(2, 3)
    args = {"other dtype": (x, np.float32(0.5), 5, 0.25),
            "0-d array": (x, np.array(0.5), 5, 0.25)}.get(form)
    if form == "python int too big":  # a Python int carried as int64 that does not fit: Python's loop
        compiled, _ = hot(count, np.int64(40), 0)
        for _ in range(CALLS):  # a new trace (the int is its constant): past its own tier-up
            assert_identical(count(np.int64(40), 2 ** 70), compiled(np.int64(40), 2 ** 70))
        return
    compiled, _ = hot(mixed, x, np.float64(0.5), 5, 0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert_identical(mixed(*args), compiled(*args))


def count(n, start):
    steps = start
    while n > 1:
        n = n // 2
        steps = steps + 1
    return n, steps


def test_a_zero_trip_loop_gives_its_inputs_back_as_they_came():
    compiled, _ = hot(count, np.int64(40), 0)
    for args in [(np.int64(1), 7), (np.int64(0), 0), (np.int64(64), 3)]:
        assert_identical(count(*args), compiled(*args))


def test_w6_through_the_entry():
    n = np.int32(27)
    compiled, _ = hot(collatz, n)
    assert_identical(collatz(n), compiled(n))
    assert_identical(collatz(np.int32(97)), compiled(np.int32(97)))


def test_a_whole_graph_through_the_entry_equals_eager():
    args = lstm_inputs()
    compiled, [graph] = hot(lstm_cell, *args)
    assert_identical(lstm_cell(*args), compiled(*args))
    outs = graph.call(*args)
    assert all(o.flags.c_contiguous and o.flags.writeable and o.base is None for o in outs)
    assert outs[0] is not graph.call(*args)[0]  # fresh outputs on every call


def blowup(x, n):
    i = 0
    while i < n:
        x = x * 1e200     # past float64 by the second iteration: numpy warns at this line
        i += 1
    return x


def test_floating_point_errors_through_the_entry_warn_at_the_users_line():
    x = np.ones(3)
    compiled, _ = hot(blowup, x, 1)
    with pytest.warns(RuntimeWarning, match="overflow") as caught:
        out = compiled(x, 3)
    assert np.all(np.isinf(out))
    assert caught[0].filename == __file__
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            compiled(x, 3)


def test_a_graph_with_a_warning_reruns_on_its_python_plan():
    def divide(x, y):
        return x / y + 1.0
    x, y = np.ones((2, 2)), np.array([[1.0, 0.0], [2.0, 4.0]])
    compiled, _ = hot(divide, x, np.ones((2, 2)))
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        eager = divide(x, y)
    with pytest.warns(RuntimeWarning, match="divide by zero") as caught:
        assert_identical(eager, compiled(x, y))
    assert caught[0].filename == __file__


class Float64Subclass(np.float64):
    pass


class KeyErrorOnMissing(dict):
    __getattr__ = dict.__getitem__  # `.shape` raises KeyError, not AttributeError


@pytest.mark.parametrize("fast", ["C", "Python"])
def test_an_argument_whose_getattr_raises_another_error_takes_the_full_path(fast, monkeypatch):
    from autograph_lite.function import Function
    entry.module()
    if fast == "Python":
        from autograph_lite.function import PYTHON_CALL
        monkeypatch.setattr(Function, "__call__", PYTHON_CALL)
        monkeypatch.setattr(entry, "fast_key", entry.python_fast_key)

    def f(x, cfg):
        return x * cfg.lr

    g, cfg = ag.function(f), KeyErrorOnMissing(lr=0.1)
    with pytest.raises(AttributeError):
        entry.fast_key("device", (np.ones(2), cfg))
    for _ in range(4):
        assert_identical(f(np.ones(2), cfg), g(np.ones(2), cfg))
        cfg["lr"] *= 2


@pytest.mark.parametrize("value", [np.int32(3), np.float32(1), np.bool_(True), np.uint8(3), np.complex64(1),
                                   np.str_("ab"), Float64Subclass(2.0), np.ones((2, 3)), np.ones(3)[::2],
                                   np.ones((2, 2)).view(np.matrix), np.datetime64("2020"), np.void(b"ab"), 1.5,
                                   -0.0, float("nan"), 0, 2 ** 70, True, "ab", None])
def test_the_c_fast_key_is_the_python_one(value):
    """Function.__call__'s fast-path key, built in C once the module is loaded, is the very
    tuple the Python spelling builds (else a call could reach another signature's trace)."""
    c_key = entry.module().fast_key
    python_key = entry.python_fast_key
    for args in [(value,), (value, np.zeros(2, np.float32))]:
        try:
            expected = python_key("device", args)
        except AttributeError:
            with pytest.raises(AttributeError):
                c_key("device", args)
            continue
        assert c_key("device", args) == expected


def shrink(x):
    """W1's loop: an array loop variable updated until its sum is small (a stack copy in C)."""
    while x.sum() > 1:
        x = np.tanh(x)
    return x


def test_threads_calling_native_loops_at_once_each_get_their_own_results():
    """Four threads call the same native loops with different inputs, handing the GIL to each
    other between C parts (entry.c's hand-off); each result equals its eager value."""
    import threading
    rng = np.random.default_rng(0)
    inputs = [rng.random(10).astype(np.float32) * (i + 1) for i in range(4)]
    compiled_shrink, _ = hot(shrink, inputs[0])
    compiled_collatz, _ = hot(collatz, np.int32(27))
    expected = [(shrink(x), collatz(np.int32(27 + i))) for i, x in enumerate(inputs)]
    got, barrier = [None] * 4, threading.Barrier(4)

    def work(i):
        barrier.wait()
        results = [(compiled_shrink(inputs[i]), compiled_collatz(np.int32(27 + i))) for _ in range(2000)]
        got[i] = results
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        for a, b in got[i]:
            assert_identical((a, b), expected[i])


def test_function_call_is_entry_cs_fast_call_and_keeps_every_python_path():
    """Once the entry module is loaded, `Function.__call__` is its FastCall: calls that hit the
    fast cache run from C (stamping the LRU order), everything else takes the Python method."""
    from autograph_lite.function import Function
    entry.module()
    assert type(Function.__call__).__name__ == "FastCall"

    def f(x, y):
        return x * 2 + y
    g = ag.function(f)
    x = np.arange(3.0)
    for _ in range(3):
        assert_identical(f(x, x), g(x, x))
    concrete = g.get_concrete_function(x, x)
    stamp = concrete._last_use
    g(x, x)
    assert concrete._last_use == stamp  # the most recent trace already: its stamp is the newest
    g(x[:2], x[:2])
    g(x, x)
    assert concrete._last_use > g.get_concrete_function(x[:2], x[:2])._last_use > stamp
    assert_identical(f(x, y=x), g(x, y=x))          # keywords
    assert_identical(f(x, 1.5), g(x, 1.5))          # a Python number (keyed by value)
    assert_identical(f(x[:2], x[:2]), g(x[:2], x[:2]))  # another signature
    assert g.trace_count == 3  # (x, y=x) is the (x, x) trace, x[:2] traced above

    class Model:
        @ag.function
        def step(self, v):
            return v + 1
    assert_identical(Model().step(x), x + 1)
    assert Function.__call__.__wrapped__(g, x, x) is not None


def test_a_failure_on_the_c_fast_path_names_the_node_and_the_users_line():
    def pick(x, i):
        return x[i]
    g = ag.function(pick)
    x = np.arange(3.0)
    for _ in range(3):
        g(x, np.int64(1))
    with pytest.raises(IndexError) as info:
        g(x, np.int64(7))
    with pytest.raises(IndexError):
        pick(x, np.int64(7))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "of pick, created at" in notes and "test_native_entry.py:" in notes


def test_the_fast_call_memo_never_serves_another_signature():
    """FastCall remembers its last hit by pointers and sizes: alternating shapes, dtypes, array
    subclasses and numpy scalars each get their own trace, and an evicted trace is not served."""
    class Sub(np.ndarray):
        pass

    def f(x, k):
        return x * k
    g = ag.function(f, max_traces=2)
    entry.module()
    a32, a64 = np.arange(4.0, dtype=np.float32), np.arange(4.0)
    calls = [(a32, np.float32(2)), (a64, np.float32(2)), (a32[:3], np.float32(2)), (a32, np.float64(2)),
             (a64.view(Sub), np.float32(2)), (a32, np.float32(2))]
    for _ in range(3):
        for args in calls:
            assert_identical(f(*args), g(*args))
    assert type(g(a64.view(Sub), np.float32(2))) is type(f(a64.view(Sub), np.float32(2)))


class Tagged(np.ndarray):
    """An ndarray subclass: numpy's ops give Tagged results."""


def scale(x, k):
    return x * k


def halve(x, n):
    i = 0
    while i < n:
        x = x * 0.5
        i += 1
    return x


@pytest.mark.parametrize("fn, other", [(scale, np.float32(2)), (halve, np.int64(3))])
def test_an_ndarray_subclass_argument_keeps_its_type_after_the_tier_up(fn, other):
    """Native code would return plain arrays: a subclass argument runs the Python plan, so its
    results are of its type (as eager) on every call, before and after native code is built."""
    x = np.arange(4.0)
    compiled, _ = hot(fn, x, other)
    tagged = x.view(Tagged)
    for _ in range(CALLS):
        assert_identical(fn(tagged, other), compiled(tagged, other))
    assert_identical(fn(x, other), compiled(x, other))


@pytest.mark.parametrize("fn, hot_args, calls", [
    (collatz, (np.int32(27),), [(np.array(27, np.int32),), (np.array(1, np.int32),), (np.array(97, np.int32),)]),
    (count, (np.int64(40), 0), [(np.array(40), 0), (np.array(1), 3), (np.array(0), 1)]),
])
def test_a_zero_d_array_argument_runs_the_c_as_a_numpy_scalar_would_and_keeps_eagers_boxes(fn, hot_args, calls):
    """A plain 0-d array is taken by the C entry for a scalar cell (W6 with `np.array(27, np.int32)`
    pays no per-call tax), and what the loop gives back is boxed as eagerly: a 0-d array a zero-trip
    loop passes through stays that array."""
    compiled, _ = hot(fn, *hot_args)
    for args in calls:
        for _ in range(CALLS):
            assert_identical(fn(*args), compiled(*args))


def _layouts():
    """The same [2, 3] float64 values in layouts the C does not read in place."""
    misaligned = np.frombuffer(bytearray(6 * 8 + 1), np.float64, count=6, offset=1).reshape(2, 3)
    misaligned[...] = np.arange(6.0).reshape(2, 3)
    return {"strided view": np.arange(12.0).reshape(2, 6)[:, ::2], "transposed": np.arange(6.0).reshape(3, 2).T,
            "fortran order": np.asfortranarray(np.arange(6.0).reshape(2, 3)), "misaligned": misaligned,
            "read-only view": np.lib.stride_tricks.as_strided(np.arange(12.0), (2, 3), (48, 16), writeable=False)}


def reads(w, n):
    """A loop reading array `w` (a capture: the C reads it where it is)."""
    i = 0
    total = 0.0
    while i < n:
        total = total + (w * i).sum()
        i += 1
    return total


@pytest.mark.parametrize("form", sorted(_layouts()))
@pytest.mark.parametrize("fn, rest", [(mixed, (np.float64(0.5), 5, 0.25)), (reads, (np.int64(4),))])
def test_a_view_argument_is_read_through_a_copy_the_entry_makes(fn, rest, form, monkeypatch):
    """An array of the C's dtype and shape in another layout takes the entry's own path (a
    C-contiguous copy made in C, as the ctypes path makes one), not the ctypes path, where its axes
    lie in C order; the caller's array is left as it was, and the results equal eager's. Both
    functions sum, in floats, what they compute from it: eager's result of a transposed array lies
    in F order and sums in that order, so such an array runs the Python code."""
    fallbacks = []
    for kind in (loops.NativeLoop, graphs.NativeGraph):  # counted: the Entries built below call these
        monkeypatch.setattr(kind, "_python_call", (lambda python_call: lambda self, *args: fallbacks.append(
            args) or python_call(self, *args))(kind._python_call))
    compiled, _ = hot(fn, np.arange(6.0).reshape(2, 3), *rest)
    fallbacks.clear()
    view = _layouts()[form]
    before = view.copy()
    for _ in range(CALLS):
        assert_identical(fn(view, *rest), compiled(view, *rest))
    assert bool(fallbacks) == (form in ("transposed", "fortran order"))
    assert_identical(view, before)


def products_and_sums(x, y):
    return np.dot(x[0], y[0]), x[0] @ y[1], np.dot(x, y.T), x.sum(axis=0), np.mean(x, axis=1)


def dots_in_a_loop(x, y, n):
    total = 0.0
    for k in range(n):
        total += np.dot(x[0, :k + 1], y[1, :k + 1]) + x[1, :k + 1].sum()
    return total


@pytest.mark.parametrize("form", ["strided view", "flipped", "transposed"])
@pytest.mark.parametrize("fn, rest", [(products_and_sums, ()), (dots_in_a_loop, (np.int64(150),))])
def test_an_argument_a_product_or_float_sum_reads_in_another_layout_runs_python(fn, rest, form, monkeypatch):
    """np.dot, @ and float reductions compute by the memory layout of their operands (BLAS's strides,
    numpy's order of summing): an argument they read that comes in another layout than C's is not
    read through a C-contiguous copy (its results would round otherwise) but by the Python code;
    a C-contiguous one takes the C."""
    fallbacks = []
    for kind in (loops.NativeLoop, graphs.NativeGraph):  # counted: the Entries built below call these
        monkeypatch.setattr(kind, "_python_call", (lambda python_call: lambda self, *args: fallbacks.append(
            args) or python_call(self, *args))(kind._python_call))
    rng = np.random.default_rng(13)
    big = rng.standard_normal((300, 320)) * 100
    x, y = (np.ascontiguousarray(big[:2, :150]), np.ascontiguousarray(big[2:4, :150]))
    compiled, _ = hot(fn, x, y, *rest)
    fallbacks.clear()
    x, y = {"strided view": (big[:4:2, :300:2], big[1:4:2, 1:300:2]), "flipped": (big[1::-1, 149::-1],
            big[3:1:-1, 149::-1]), "transposed": (np.ascontiguousarray(big[:150, :2]).T,
                                                   np.ascontiguousarray(big[150:300, 2:4]).T)}[form]
    for _ in range(CALLS):
        eager, result = fn(x, y, *rest), compiled(x, y, *rest)
        for e, c in zip(eager if isinstance(eager, tuple) else (eager,), result if isinstance(result, tuple) else (result,)):
            assert np.asarray(c).tobytes() == np.asarray(e).tobytes()
    assert fallbacks
    fallbacks.clear()
    assert_identical(fn(np.ascontiguousarray(x), np.ascontiguousarray(y), *rest),
                     compiled(np.ascontiguousarray(x), np.ascontiguousarray(y), *rest))
    assert fallbacks == []


def sums_of_results(x):
    return (x * 2.0).sum(axis=0), np.tanh(x).sum(axis=1), (x + 1.0).sum()


@pytest.mark.parametrize("form, runs_python", [("strided view", False), ("flipped", False), ("transposed", True)])
def test_a_float_sum_of_what_is_computed_from_an_argument_in_f_order_runs_python(form, runs_python, monkeypatch):
    """numpy lays an elementwise result out in its operand's order and sums it in that order: of a
    transposed argument, in F order, so the C (on a C-contiguous copy) would round otherwise; that
    call runs the Python code. Axes in C order (a strided or flipped view) give a C-ordered result:
    the C runs on the copy."""
    fallbacks = []
    monkeypatch.setattr(graphs.NativeGraph, "_python_call", (lambda python_call: lambda self, *args: fallbacks.append(
        args) or python_call(self, *args))(graphs.NativeGraph._python_call))
    big = np.random.default_rng(14).standard_normal((200, 200)) * 100
    compiled, _ = hot(sums_of_results, np.ascontiguousarray(big[:40, :60]))
    fallbacks.clear()
    x = {"strided view": big[:80:2, :120:2], "flipped": big[39::-1, :60], "transposed": big[:60, :40].T}[form]
    for _ in range(CALLS):
        for e, c in zip(sums_of_results(x), compiled(x)):
            assert c.tobytes() == e.tobytes()
    assert bool(fallbacks) == runs_python


def offset(x, s, t):
    return x * s + t, 1.0 / s


def reciprocal(x, s):
    return 1.0 / (x + s)  # inf or -inf at x + s == 0.0 or -0.0


@pytest.mark.parametrize("fast", ["C", "Python"])
def test_python_numbers_take_the_fast_path_keyed_by_value(fast, monkeypatch):
    """A call with Python numbers (a trace's constants) takes the fast path: keyed by each
    number's type and value (a float by its bits), the plan given the other arguments. No call
    reaches another value's trace: 0.0 and -0.0, 1 and 1.0 and True, NaN, a big int."""
    from autograph_lite.function import Function
    entry.module()
    if fast == "Python":  # the Python spelling of the fast path (before the entry module loads)
        from autograph_lite.function import PYTHON_CALL
        monkeypatch.setattr(Function, "__call__", PYTHON_CALL)
        monkeypatch.setattr(entry, "fast_key", entry.python_fast_key)
    g = ag.function(offset)
    x = np.arange(3, dtype=np.int32)
    values = [0.5, 0.25, 0.0, -0.0, 1, 1.0, True, False, 2 ** 70, float("nan"), float("inf")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(3):
            for s in values:
                for args in [(x, s, 2), (x, s, np.int32(2)), (x, np.float32(0.5), s)]:
                    try:
                        eager = offset(*args)
                    except (ZeroDivisionError, OverflowError) as e:  # 1.0 / 0, int32 * 2 ** 70
                        with pytest.raises(type(e)):
                            g(*args)
                        continue
                    assert_identical(eager, g(*args))
        h = ag.function(reciprocal)
        for a, b in [(0.0, -0.0), (1.0, 1.0000000000000002), (5, 6), (True, False)]:  # the memo of the last hit
            for s in (a, a, a, b, a, b):
                assert_identical(reciprocal(x, s), h(x, s))
    hits = g._fast_cache.values()
    assert any(c._positions == (0,) for c in hits) and any(c._positions == (0, 1) for c in hits)


# --- a plan that is one native loop, called through its C Direct (no plan frame) ------------------

def keep(x, n):
    """An output that is an argument, one that is a loop variable."""
    steps = 0
    while n > 1:
        n = n // 2
        steps += 1
    return x, steps


def grow(n):
    acc = 1
    i = np.int64(0)
    while i < n:
        acc = acc * 3  # a Python int: past int64 the C stops INEXACT and the Python loop runs
        i += 1
    return acc


def direct_of(compiled, args):
    """The plan's Direct, bound, and a list of the plan's own calls of its loop (made only where
    the Direct did not finish the call in C)."""
    concrete = compiled.get_concrete_function(*args)
    (loop,) = [r.native for r in concrete.plan.native]
    direct, ran, call = concrete.plan.direct, [], loop.call
    assert type(direct).__name__ == "Direct" and direct.bound
    assert concrete._single_plain in (None, direct)
    loop.call = lambda *a: ran.append(a) or call(*a)
    return ran


@pytest.mark.parametrize("fn, hot_args, calls", [
    (collatz, (np.array(27, np.int32),), [(np.array(27, np.int32),), (np.array(1, np.int32),),
                                           (np.array(97, np.int32),)]),
    (collatz, (np.int32(27),), [(np.int32(27),), (np.int32(1),)]),
    (count, (np.int64(40), 0), [(np.int64(40), 0), (np.int64(1), 3), (np.int64(0), 1)]),
    (keep, (np.ones(3), np.int64(40)), [(np.ones(3), np.int64(40)), (np.zeros(3), np.int64(1))]),
    (grow, (np.int64(5),), [(np.int64(5),), (np.int64(0),), (np.int64(39),)]),
])
def test_a_plan_that_is_one_native_loop_runs_through_its_direct(fn, hot_args, calls):
    """Called without the plan's Python frame, and so without the cost of its error state, boxing
    only the loop variables returned; equal to eager, the arguments given back the same objects."""
    compiled, _ = hot(fn, *hot_args)
    ran = direct_of(compiled, hot_args)
    for args in calls:
        del ran[:]
        eager, out = fn(*args), compiled(*args)
        assert_identical(eager, out)
        for e, c in zip(eager if isinstance(eager, tuple) else (eager,), out if isinstance(out, tuple) else (out,)):
            assert [e is a for a in args] == [c is a for a in args]
        assert ran == []


def test_a_direct_call_that_does_not_finish_cleanly_runs_the_plan():
    """INEXACT (a Python int past int64) and a floating-point flag run the plan from the start: the
    Python loop, or the loop again with its warning at the user's line, once."""
    compiled, _ = hot(grow, np.int64(5))
    ran = direct_of(compiled, (np.int64(5),))
    assert compiled(np.int64(60)) == grow(np.int64(60)) == 3 ** 60
    assert len(ran) == 1
    compiled, _ = hot(blowup, np.float64(1.0), np.int64(1))
    ran = direct_of(compiled, (np.float64(1.0), np.int64(1)))
    for fn in (blowup, compiled):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(np.float64(1.0), np.int64(3))
        assert [(w.category, w.filename) for w in caught] == [(RuntimeWarning, __file__)]
        assert out == np.inf and type(out) is np.float64
    assert len(ran) == 1
