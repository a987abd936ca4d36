"""ag.cond / ag.while_loop: decided when the graph runs on tensor predicates, Python otherwise."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import assert_same, run_both


def test_cond_on_tensor_is_decided_at_run_time():
    def f(x):
        return ag.cond(ag.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)
    cf = ag.function(f)
    for x in (np.array([1.0, 2.0], np.float32), np.array([-1.0, -3.0], np.float32)):
        assert_same(f(x), cf(x))
    assert cf.trace_count == 1
    text = str(cf.get_concrete_function(np.ones(2, np.float32)).graph)
    assert "Cond(" in text and "then_branch:" in text and "else_branch:" in text and "Neg(" in text


def test_cond_on_python_value_runs_python():
    calls = []
    note = ag.do_not_convert(lambda what: calls.append(what))  # runs while tracing only

    def f(x, flag):
        return ag.cond(flag, lambda: note("t") or x + 1, lambda: note("f") or x - 1)
    cf = ag.function(f)
    assert_same(np.ones(2) + 1, cf(np.ones(2), True))
    assert calls == ["t"]  # only the taken branch was traced
    assert "Cond" not in str(cf.get_concrete_function(np.ones(2), True).graph)


def test_cond_branches_capture_outer_values_and_nest():
    def f(x, y):
        return ag.cond(x[0] > 0,
                       lambda: ag.cond(y[0] > 0, lambda: x + y, lambda: x - y),
                       lambda: (x * y))
    cf = ag.function(f)
    for sx in (1, -1):
        for sy in (1, -1):
            x, y = np.full(3, sx * 2.0), np.full(3, sy * 3.0)
            assert_same(f(x, y), cf(x, y))
    assert cf.trace_count == 1


def test_cond_structured_outputs_and_weak_scalars():
    def f(x):
        return ag.cond(x[0] > 0, lambda: (x, 0.0), lambda: (-x, ag.reduce_sum(x)))
    cf = ag.function(f)
    x = np.ones(2, np.float32)
    out = cf(x)
    assert type(out[1]) is float and out[1] == 0.0  # the Python 0.0 of the branch that ran, as eagerly
    assert_same(f(-x), cf(-x))


def test_cond_shapes_relax_to_none():
    def f(x):
        return ag.cond(x[0] > 0, lambda: x[1:], lambda: x)
    cf = ag.function(f)
    out_shape = cf.get_concrete_function(np.ones(4)).graph.outputs[0].shape
    assert out_shape == (None,)
    assert_same(f(np.ones(4)), cf(np.ones(4)))
    assert_same(f(-np.ones(4)), cf(-np.ones(4)))


def test_cond_dtype_mismatch_is_a_clear_error():
    @ag.function
    def f(x):
        return ag.cond(x[0] > 0, lambda: x, lambda: ag.cast(x, np.int32))
    with pytest.raises(ag.ConversionError, match=r"'output' has dtype float64 in the true branch and int32.*test_control_flow.py:\d+"):
        f(np.ones(2))


def test_cond_structure_mismatch_is_a_clear_error():
    @ag.function
    def f(x):
        return ag.cond(x[0] > 0, lambda: (x, x), lambda: x)
    with pytest.raises(ag.ConversionError, match=r"different structures: tuple of 2 vs ndarray|different structures"):
        f(np.ones(2))


def tanh_loop(x):
    return ag.while_loop(lambda x: ag.reduce_sum(x) > 1, lambda x: ag.tanh(x), x)


def test_while_trip_count_depends_on_data_one_trace():
    cf = ag.function(tanh_loop)
    for scale in (1.0, 3.0, 0.05):
        x = np.full(10, scale, np.float32)
        assert_same(tanh_loop(x), cf(x))
    assert cf.trace_count == 1
    text = str(cf.get_concrete_function(np.ones(10, np.float32)).graph)
    assert "While(" in text and "cond:" in text and "body:" in text and "Tanh(" in text


def test_while_counter_and_captures():
    def f(x, limit):
        def body(i, acc):
            return i + 1, acc + x[i]
        return ag.while_loop(lambda i, acc: i < limit, body, (0, 0.0))
    cf = ag.function(f)
    x = np.arange(6, dtype=np.float32)
    for limit in (np.int64(0), np.int64(3), np.int64(6)):
        e, c = f(x, limit), cf(x, limit)
        assert int(c[0]) == e[0] and float(c[1]) == pytest.approx(float(e[1]))
        assert c[1].dtype == np.float32  # the weak 0.0 start adopted float32, as numpy would
    assert cf.trace_count == 1


def test_while_shape_relaxes_to_none():
    def f(x, n):
        return ag.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, ag.concat([v, v[:1]], 0)), (0, x))
    cf = ag.function(f)
    x = np.arange(2.0)
    for n in (np.int64(0), np.int64(3)):
        e, c = f(x, n), cf(x, n)
        assert_same(e[1], c[1])
    assert cf.get_concrete_function(x, np.int64(1)).graph.outputs[1].shape == (None,)


def test_while_dtype_change_is_a_clear_error():
    @ag.function
    def f(x):
        return ag.while_loop(lambda v: ag.reduce_sum(v) < 10, lambda v: ag.cast(v, np.int32) + 1, x)
    with pytest.raises(ag.ConversionError, match=r"loop variable 'loop_vars\[0\]' changes dtype from float64 to int32.*test_control_flow.py"):
        f(np.ones(2))


def test_while_with_python_condition_runs_python():
    def f(x):
        return ag.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2), (0, x))
    e, c, cf = run_both(f, np.ones(2))
    assert "While" not in str(cf.get_concrete_function(np.ones(2)).graph)


def test_nested_while_loops():
    def f(n):
        def outer_body(i, total):
            j, inner = ag.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + j), (0, 0))
            return i + 1, total + inner
        return ag.while_loop(lambda i, t: i < n, outer_body, (0, 0))
    cf = ag.function(f)
    for n in (np.int64(0), np.int64(5)):
        e, c = f(n), cf(n)
        assert [int(v) for v in c] == list(e)
    assert cf.trace_count == 1


def test_cond_inside_while():
    def collatz(n):
        def body(n, steps):
            n = ag.cond(n % 2 == 0, lambda: n // 2, lambda: 3 * n + 1)
            return n, steps + 1
        return ag.while_loop(lambda n, s: n != 1, body, (n, 0))
    cf = ag.function(collatz)
    for start in (27, 7):
        n = np.int32(start)
        e, c = collatz(n), cf(n)
        assert int(c[1]) == e[1] and c[0].dtype == np.int32
    assert cf.trace_count == 1
