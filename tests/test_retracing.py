"""The trace cache under many signatures: cost per retrace, the LRU bound, memory, the
RetracingWarning, the retrace log, float keys (-0.0, NaN), ndarray subclasses."""
import gc
import inspect
import linecache
import logging
import math
import statistics
import sys
import threading
import time
import warnings
import weakref

import numpy as np
import pytest

import autograph_lite as ag
from helpers import assert_same, to_host

function_module = sys.modules["autograph_lite.function"]  # ag.function is the decorator
trace_cache = sys.modules["autograph_lite.trace_cache"]


def line_of(marker):
    """The line number in this file of the (unique) line containing `marker`."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    found = [i + 1 for i, text in enumerate(lines) if marker in text and "line_of(" not in text]
    assert len(found) == 1, found
    return found[0]


def add_one(x):
    return x + 1.0


# --- cost and bound ---------------------------------------------------------------------

def timed(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def test_retrace_cost_does_not_grow_with_the_number_of_traces():
    # 2,000 distinct shapes: O(1) per retrace, not O(traces) (it was 16x slower at the end).
    # The last 100 are also compared with first traces of fresh functions timed in between,
    # which cancels the drift of a loaded machine.
    f = ag.function(add_one)
    times, fresh = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ag.RetracingWarning)
        for n in range(1, 2001):
            times.append(timed(f, np.empty((0, n))))
            if n > 1900:
                fresh.append(timed(ag.function(add_one), np.empty((0, n))))
    assert f.trace_count == 2000
    first, last, start = (statistics.median(t) * 1e3 for t in (times[:100], times[-100:], fresh))
    assert last < 5 * first, f"per-retrace median {first:.2f} ms for the first 100, {last:.2f} ms for the last"
    assert last < 3 * start, f"per-retrace median {last:.2f} ms at 2,000 traces, {start:.2f} ms for a first trace"
    assert len(f._traces) == function_module.DEFAULT_MAX_TRACES


def test_a_new_signature_is_found_without_scanning_the_traces(monkeypatch):
    f = ag.function(add_one, max_traces=1000)
    g = ag.function(add_one, reduce_retracing=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ag.RetracingWarning)
        for n in range(1, 301):
            f(np.ones(n))
            g(np.ones((n, 2)))
    checks = []
    real = trace_cache._spec_mismatch
    def counting(spec, value, path):
        if path == "":  # a whole trace compared with the call (nested parts recurse)
            checks.append(1)
        return real(spec, value, path)
    monkeypatch.setattr(trace_cache, "_spec_mismatch", counting)
    f(np.ones(301))                      # a new static shape: no trace is compared with it
    assert f.trace_count == 301 and checks == []
    g(np.ones((301, 2)))                 # fits the relaxed (None, 2) trace: the only candidate
    assert g.trace_count == 2 and len(checks) == 1
    assert_same(np.ones((301, 2)) + 1.0, g(np.ones((301, 2))))


def test_the_cache_is_an_lru_of_at_most_max_traces():
    f = ag.function(add_one, max_traces=4)
    hot = np.arange(3.0)
    graphs = []
    for n in range(10, 20):
        assert_same(hot + 1.0, f(hot))             # used every time: never evicted
        assert_same(np.ones(n) + 1.0, f(np.ones(n)))
        graphs.append(weakref.ref(f.get_concrete_function(np.ones(n)).graph))
        assert len(f._traces) <= 4
    assert f.trace_count == 11                     # hot once, then one per shape
    gc.collect()
    assert [g() is None for g in graphs] == [True] * 7 + [False] * 3
    assert_same(np.ones(10) + 1.0, f(np.ones(10)))  # evicted: traces again, same answer
    assert f.trace_count == 12
    f(hot)
    assert f.trace_count == 12


def test_max_traces_from_the_environment(monkeypatch):
    monkeypatch.setenv("AG_MAX_TRACES", "2")
    f = ag.function(add_one)
    for n in range(1, 6):
        f(np.ones(n))
    assert f.trace_count == 5 and len(f._traces) == 2
    monkeypatch.setenv("AG_MAX_TRACES", "many")
    with pytest.raises(ValueError, match=r"AG_MAX_TRACES must be a positive integer, not 'many'"):
        ag.function(add_one)
    with pytest.raises(ValueError, match=r"max_traces must be a positive integer, not 0"):
        ag.function(add_one, max_traces=0)


def test_key_caches_stay_bounded_when_many_keys_share_one_trace():
    f = ag.function(add_one, max_traces=4, reduce_retracing=True)
    for n in range(1, 200):
        f(np.ones((n, 3)))
    assert f.trace_count == 2                      # (1, 3), then (None, 3)
    assert len(f._cache) <= 16 and len(f._fast_cache) <= 16
    assert_same(np.ones((5, 3)) + 1.0, f(np.ones((5, 3))))
    assert f.trace_count == 2


def test_threads_evicting_each_others_traces_get_right_answers():
    f = ag.function(lambda x: ag.tanh(x) * 2.0, max_traces=2)
    inputs = [np.full(n + 1, float(n), np.float32 if n % 2 else np.float64) for n in range(8)]
    barrier, errors = threading.Barrier(8), []

    def worker(i):
        barrier.wait()
        for j in range(40):
            x = inputs[(i + j) % 8]
            try:
                assert_same(np.tanh(x) * 2.0, f(x))
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ag.RetracingWarning)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert len(f._traces) <= 2 and set(f._fast_cache.values()) <= set(f._traces)


def test_an_input_signature_keeps_one_trace_and_bounded_keys():
    f = ag.function(add_one, input_signature=[ag.TensorSpec([None], np.float64)], max_traces=4)
    for n in range(1, 100):
        assert_same(np.ones(n) + 1.0, f(np.ones(n)))
    assert f.trace_count == 1 and len(f._cache) <= 16


def test_memory_is_released_when_the_function_is_collected():
    f = ag.function(add_one)
    refs, files = [], []
    for n in (2, 3, 4):
        f(np.ones(n))
        concrete = f.get_concrete_function(np.ones(n))
        refs += [weakref.ref(concrete.graph), weakref.ref(concrete.plan)]
        files.append(concrete.plan.filename)
        assert files[-1] in linecache.cache
    del f, concrete
    gc.collect()
    assert all(r() is None for r in refs)
    assert not any(name in linecache.cache for name in files)


def test_an_evicted_trace_frees_its_plan_source():
    f = ag.function(add_one, max_traces=1)
    f(np.ones(2))
    name = f.get_concrete_function(np.ones(2)).plan.filename
    f(np.ones(3))
    gc.collect()
    assert name not in linecache.cache


# --- the warning ------------------------------------------------------------------------

def test_many_traces_warn_once_naming_the_argument_and_the_callers_line():
    f = ag.function(lambda x, scale: x * scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 41):
            f(np.ones(n), 2.0)  # the retracing call
    retracing = [w for w in caught if issubclass(w.category, ag.RetracingWarning)]
    assert len(retracing) == 1
    message = str(retracing[0].message)
    assert "has traced 32 times" in message
    assert "argument 'x' keeps changing shape (32 different)" in message
    assert "scale" not in message
    assert "reduce_retracing=True" in message and "input_signature" in message
    assert retracing[0].filename == __file__
    assert retracing[0].lineno == line_of("# the retracing call")


def test_a_python_number_that_keeps_changing_is_named_with_its_remedy():
    @ag.function
    def step(w, lr):
        return w - lr * w
    w = np.ones(3)
    with pytest.warns(ag.RetracingWarning) as record:
        for i in range(40):
            step(w, 1.0 / (i + 1))
    assert len(record) == 1
    message = str(record[0].message)
    assert "argument 'lr' keeps changing value (32 different)" in message
    assert "np.asarray(lr)" in message and "'w'" not in message


def test_few_traces_do_not_warn():
    f = ag.function(add_one)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ag.RetracingWarning)
        for n in range(1, 32):
            f(np.ones(n))


# --- the retrace log --------------------------------------------------------------------

def test_retrace_log_compares_with_the_closest_trace(monkeypatch, caplog):
    monkeypatch.setenv("AG_LOG_RETRACES", "1")

    @ag.function
    def step(x, lr):
        return x * lr
    a, b = np.ones(2), np.ones(3)
    with caplog.at_level(logging.WARNING, logger="autograph_lite"):
        step(a, 0.5)
        step(b, 0.5)
        caplog.clear()
        step(a, 0.25)  # the lr call
    assert len(caplog.records) == 1
    text = caplog.records[0].getMessage()
    assert "argument 'lr' changed value: 0.5 -> 0.25" in text
    assert "argument 'x'" not in text
    assert f"{__file__}:{line_of('# the lr call')}" in text


def test_retrace_log_names_every_argument_that_differs(monkeypatch, caplog):
    monkeypatch.setenv("AG_LOG_RETRACES", "1")

    @ag.function
    def f(x, params, mode):
        return x * params["w"] if mode == "mul" else x + params["w"]
    with caplog.at_level(logging.WARNING, logger="autograph_lite"):
        f(np.ones(2), {"w": np.ones(2, np.float32)}, "mul")
        caplog.clear()
        f(np.ones(2), {"w": np.ones(2, np.float64)}, "add")
    text = caplog.records[0].getMessage()
    assert "argument 'params['w']' changed dtype: float32 -> float64" in text
    assert "argument 'mode' changed value: 'mul' -> 'add'" in text
    assert "argument 'x'" not in text
    with caplog.at_level(logging.WARNING, logger="autograph_lite"):
        caplog.clear()
        f(np.ones(2), {"w": np.ones(2), "b": 1}, "mul")
    assert "argument 'params' changed structure" in caplog.records[0].getMessage()


def test_retrace_log_after_evictions_says_so(monkeypatch, caplog):
    monkeypatch.setenv("AG_LOG_RETRACES", "1")
    f = ag.function(add_one, max_traces=1)
    with caplog.at_level(logging.WARNING, logger="autograph_lite"):
        f(np.ones(2)), f(np.ones(3))
        caplog.clear()
        f(np.ones(2))
    text = caplog.records[0].getMessage()
    assert "argument 'x' changed shape: (3,) -> (2,)" in text and "evicted" in text and "max_traces=1" in text


# --- float keys (issue 11 item 12) ------------------------------------------------------

def divide(x, k):
    return x / k


def multiply(x, k):
    return x * k


def test_negative_zero_is_not_zero():
    x = np.ones(2)
    f = ag.function(divide)
    with np.errstate(divide="ignore"):
        assert_same(divide(x, 0.0), f(x, 0.0))
        out = f(x, -0.0)
        assert_same(divide(x, -0.0), out)
        assert np.all(out == -np.inf)
        assert np.all(f(x, 0.0) == np.inf)
    assert f.trace_count == 2


def test_nan_is_keyed_as_itself():
    x = np.ones(2)
    f = ag.function(divide)
    for nan in (float("nan"), math.nan, np.nan, float("nan")):
        assert_same(divide(x, nan), f(x, nan))
    assert f.trace_count == 1


def test_nested_and_complex_floats_are_keyed_by_their_bits():
    @ag.function
    def f(x, ks):
        return x / ks[0] + x / ks[1]["k"]
    x = np.ones(2)
    with np.errstate(divide="ignore", invalid="ignore"):
        for ks in [(1.0, {"k": 0.0}), (1.0, {"k": -0.0}), (-0.0, {"k": -0.0}),
                   (float("nan"), {"k": 2.0}), (float("nan"), {"k": 2.0})]:
            assert_same(x / ks[0] + x / ks[1]["k"], f(x, ks))
    assert f.trace_count == 4

    g = ag.function(multiply)
    for k in (1 + 0j, 1 - 0j, complex(1, -0.0), complex(-0.0, 1)):
        eager, compiled = multiply(x, k), to_host(g(x, k))
        assert_same(eager, compiled)
        assert (np.signbit(compiled.real) == np.signbit(eager.real)).all()
        assert (np.signbit(compiled.imag) == np.signbit(eager.imag)).all()
    assert g.trace_count == 3       # 1 - 0j is 1 + 0j in Python; complex(1, -0.0) is not


def test_dict_keys_zero_and_negative_zero_differ():
    @ag.function
    def f(x, table):
        (k, v), = table.items()
        return x / k + v
    x = np.ones(2)
    with np.errstate(divide="ignore"):
        assert np.all(f(x, {0.0: 1.0}) == np.inf)
        assert np.all(f(x, {-0.0: 1.0}) == -np.inf)
    assert f.trace_count == 2


def test_true_and_one_do_not_share_a_trace():
    @ag.function
    def f(x, flag):
        return x + flag, flag
    x = np.arange(3, dtype=np.int8)
    for value in (True, 1, True, 1.0, 1):
        eager, compiled = (x + value, value), f(x, value)
        assert_same(eager, compiled)
        assert type(compiled[1]) is type(value)
    assert f.trace_count == 3


# --- ndarray subclasses (issue 11 item 10) ----------------------------------------------

def scaled_sum(x):
    return ag.reduce_sum(x * 2.0)


def test_a_memmap_is_read_at_each_call(tmp_path):
    mm = np.memmap(tmp_path / "data.bin", dtype=np.float64, mode="w+", shape=(4,))
    mm[:] = [1, 2, 3, 4]
    f = ag.function(scaled_sum)
    plain = ag.function(scaled_sum)
    assert_same(scaled_sum(np.asarray(mm)), f(mm))
    for fill in (5.0, -1.0, 0.5):
        mm[:] = fill
        assert_same(scaled_sum(mm), f(mm))            # the fast path reads the data too
        assert_same(scaled_sum(mm), plain(mm))
    assert f.trace_count == 1
    f(np.ones(4))                                      # an ndarray of the same shape: same trace
    assert f.trace_count == 1
    mm[:] = 3.0
    assert_same(scaled_sum(mm), f(mm))


def test_a_memmap_nested_in_a_structure(tmp_path):
    mm = np.memmap(tmp_path / "w.bin", dtype=np.float32, mode="w+", shape=(2, 2))
    mm[:] = 1.0

    @ag.function
    def f(params, x):
        return ag.matmul(params["w"], x)
    x = np.ones((2, 1), np.float32)
    assert_same(np.asarray(mm) @ x, f({"w": mm}, x))
    mm[0, 0] = 7.0
    assert_same(np.asarray(mm) @ x, f({"w": mm}, x))
    assert f.trace_count == 1


class Plain(np.ndarray):
    """A subclass that keeps ndarray's operators (only tracks an attribute)."""

    def __array_finalize__(self, obj):
        self.info = getattr(obj, "info", None)


class Overriding(np.ndarray):
    def __mul__(self, other):
        return np.add(self, other)


def test_a_plain_subclass_is_an_array_input():
    x = np.arange(4.0).view(Plain)
    f = ag.function(scaled_sum)
    assert_same(scaled_sum(x), f(x))
    x[:] = 9.0
    assert_same(scaled_sum(x), f(x))
    assert f.trace_count == 1


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix's own
def test_matrix_masked_and_overriding_subclasses_are_refused_by_name():
    f = ag.function(lambda a, b: a * b)
    m, x = np.matrix([[1.0, 2.0], [3.0, 4.0]]), np.ones((2, 2))
    f(x, x)                                                  # ndarray (2, 2) in the fast cache
    with pytest.raises(TypeError) as info:
        f(x, m)  # the matrix call
    message = str(info.value)
    assert "argument 'b' is a numpy.matrix" in message and "`*` is a matrix product" in message
    assert "np.asarray(b)" in message
    assert f"{__file__}:{line_of('# the matrix call')}" in message

    with pytest.raises(TypeError, match=r"argument 'a' is a masked array \(numpy.ma\)"):
        f(np.ma.masked_array(x, mask=[[0, 1], [0, 0]]), x)
    with pytest.raises(TypeError, match=r"argument 'a' is a Overriding, an ndarray subclass overriding __mul__"):
        f(x.view(Overriding), x)

    g = ag.function(lambda xs: xs[0] + xs[1])
    with pytest.raises(TypeError, match=r"argument 'xs\[1\]' is a numpy.matrix"):
        g([x, m])
    concrete = f.get_concrete_function(x, x)
    with pytest.raises(TypeError, match=r"argument 'b' does not match .*numpy.matrix"):
        concrete(x, m)
    assert f.trace_count == 1


def _is_an_array(x):
    if isinstance(x, np.ndarray):
        x += 1.0  # in place: the caller's 0-d array changes
        return x * 2
    return np.asarray(x) * 3


@pytest.mark.parametrize("first", [np.array(1.0), np.float64(1.0)])
def test_a_numpy_scalar_and_a_0d_array_each_get_their_own_trace(first):
    """Eagerly the two differ (isinstance, `x += 1` in place or rebinding, np.asarray): a trace
    made for one never serves the other, whichever comes first."""
    for fn in (ag.function(_is_an_array), ag.function(_is_an_array, input_signature=[ag.TensorSpec([], np.float64)])):
        for value in [first, np.float64(2.0), np.array(3.0), np.float64(2.0), np.array(3.0)]:
            eager_arg = value.copy() if isinstance(value, np.ndarray) else value
            compiled_arg = value.copy() if isinstance(value, np.ndarray) else value
            eager, compiled = _is_an_array(eager_arg), fn(compiled_arg)
            assert type(compiled) is type(eager) and compiled == eager
            assert type(compiled_arg) is type(eager_arg) and compiled_arg == eager_arg
