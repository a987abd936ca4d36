"""numpy's floating-point warnings name the user's line, eager and compiled, once per call
site under the default filter; the user's np.errstate is obeyed; the gradient machinery's
own masking warns of nothing."""
import sys
import traceback
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from helpers import cpu_only

pytestmark = cpu_only("numpy's floating-point warnings: a GPU raises no floating-point flags, cupy never warns")
ZERO = np.array([0.0, 4.0])


def line_of(fn, offset):
    """The line `offset` lines below the `def` of `fn`."""
    return fn.__code__.co_firstlineno + offset


def log_then_divide(x):
    y = ag.log(x)                 # +1: divide by zero encountered in log
    return y / (x - x) + 1.0      # +2: divide by zero (-inf / 0 is -inf, no warning)


def recorded(fn, *args, action="always"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        result = fn(*args)
    return result, [(str(w.message), w.filename, w.lineno) for w in caught if w.category is RuntimeWarning]


def test_eager_op_warns_at_the_users_line():
    _, caught = recorded(lambda: ag.log(np.zeros(2)))
    assert caught == [("divide by zero encountered in log", __file__, sys._getframe().f_lineno - 1)]
    _, caught = recorded(lambda: ag.divide(ZERO + 1.0, 0.0))
    assert caught == [("divide by zero encountered in divide", __file__, sys._getframe().f_lineno - 1)]


@pytest.mark.parametrize("compiled", [False, True])
def test_each_op_warns_at_its_own_line(compiled):
    fn = ag.function(log_then_divide) if compiled else log_then_divide
    _, caught = recorded(fn, ZERO)
    assert caught == [("divide by zero encountered in log", __file__, line_of(log_then_divide, 1)),
                      ("divide by zero encountered in divide", __file__, line_of(log_then_divide, 2))]


def overflow_and_sqrt(x):
    big = ag.exp(x)                      # +1: overflow
    return ag.sqrt(big - 1e308 * 3.0)    # +2: inf - inf and sqrt(-inf) are invalid


@pytest.mark.parametrize("compiled", [False, True])
def test_once_per_call_site_under_the_default_filter(compiled):
    fn = ag.function(overflow_and_sqrt) if compiled else overflow_and_sqrt
    x = np.array([1000.0, 0.0])

    def twice(x):
        fn(x)
        return fn(x)
    eager_numpy = recorded(lambda: [np.log(np.zeros(1)) for _ in range(2)], action="default")[1]
    assert len(eager_numpy) == 1  # numpy's own behaviour: one warning per line
    _, caught = recorded(twice, x, action="default")
    assert [(m, line) for m, _, line in caught] == [
        ("overflow encountered in exp", line_of(overflow_and_sqrt, 1)),
        ("invalid value encountered in subtract", line_of(overflow_and_sqrt, 2)),
        ("invalid value encountered in sqrt", line_of(overflow_and_sqrt, 2))]


def test_compiled_and_eager_share_the_warning_text():
    _, eager = recorded(log_then_divide, ZERO)
    _, compiled = recorded(ag.function(log_then_divide), ZERO)
    assert eager == compiled


def numpy_functions_on_one_line(x, m):
    return np.inner(x, x) + 1, np.tensordot(x, x, 1) + 1, np.kron(x, x) + 1, np.linalg.norm(x) + 1, \
        np.linalg.matrix_power(m, 2) + 1, np.vdot(x, x)


def test_numpy_functions_warn_with_the_name_numpys_own_warning_gives():
    # np.inner warns "overflow encountered in dot", not in Inner (the op's name in the graph)
    args = np.full(3, 1e200), np.full((2, 2), 1e200)
    _, eager = recorded(numpy_functions_on_one_line, *args)
    _, compiled = recorded(ag.function(numpy_functions_on_one_line), *args)
    assert [m for m, _, _ in eager] == [m for m, _, _ in compiled] and len(eager) == 5, (eager, compiled)


def test_eager_and_compiled_runs_of_a_line_share_once_per_line():
    def both(x):
        log_then_divide(x)
        return ag.function(log_then_divide)(x)
    _, caught = recorded(both, ZERO, action="default")
    assert [line for _, _, line in caught] == [line_of(log_then_divide, 1), line_of(log_then_divide, 2)]


@pytest.mark.parametrize("compiled", [False, True])
def test_users_errstate_ignore_and_raise_are_obeyed(compiled):
    fn = ag.function(log_then_divide) if compiled else log_then_divide
    with np.errstate(all="ignore"):
        _, caught = recorded(fn, ZERO)
    assert caught == []
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero encountered in log") as info:
            fn(ZERO)
    assert (__file__, line_of(log_then_divide, 1)) in [
        (f.f_code.co_filename, line) for f, line in traceback.walk_tb(info.value.__traceback__)] or \
        f"{__file__}:{line_of(log_then_divide, 1)}" in " ".join(getattr(info.value, "__notes__", []))
    fn = ag.function(overflow_and_sqrt) if compiled else overflow_and_sqrt
    with np.errstate(over="ignore"):  # invalid still warns
        _, caught = recorded(fn, np.array([1000.0, 0.0]))
    assert [m for m, _, _ in caught] == ["invalid value encountered in subtract",
                                         "invalid value encountered in sqrt"]


def test_users_own_call_handler_is_left_alone():
    seen = []
    with np.errstate(all="call", call=lambda kind, flag: seen.append(kind)):
        log_then_divide(ZERO)
        eager, seen[:] = seen[:], []
        ag.function(log_then_divide)(ZERO)
    assert seen == eager == ["divide by zero", "divide by zero"]


def masked_sqrt(x):
    return ag.reduce_sum(ag.where(x > 0, ag.sqrt(x), 0.0))


def masked_ops(x, y):
    safe = ag.where(x > 0, x, 1.0)
    return ag.reduce_sum(ag.where(x > 0, ag.log(safe) + safe ** 0.5 + y / safe, 0.0))


@pytest.mark.parametrize("native", ["1", "0"])
def test_gradient_masking_warns_of_nothing(monkeypatch, native):
    monkeypatch.setenv("AG_NATIVE_KERNELS", native)
    x, y = np.array([0.0, 4.0, 0.25]), np.array([1.0, 2.0, 3.0])
    for grad in (ag.grad(masked_sqrt), ag.function(ag.grad(masked_sqrt))):
        g, caught = recorded(grad, x)
        assert caught == []
        np.testing.assert_array_equal(g, [0.0, 0.25, 1.0])
    g, caught = recorded(ag.grad(masked_ops, argnums=(0, 1)), x, y)
    assert caught == []
    assert np.isfinite(g[0]).all() and np.isfinite(g[1]).all()


def exp_forward(x):
    return ag.reduce_sum(ag.exp(x))  # +1


def test_forward_op_in_a_gradient_still_warns_at_its_line():
    g, caught = recorded(ag.grad(exp_forward), np.array([1000.0, 0.0]))
    assert caught == [("overflow encountered in exp", __file__, line_of(exp_forward, 1))]
    assert g[1] == 1.0


def in_a_loop(x, n):
    i = 0
    total = x
    while i < n:
        total = total / (x - x)  # +4
        i += 1
    return total


@pytest.mark.parametrize("native", ["1", "0"])
def test_warnings_inside_a_tensor_loop(monkeypatch, native):
    monkeypatch.setenv("AG_NATIVE_KERNELS", native)
    fn = ag.function(in_a_loop)
    x = np.array([1.0, 0.0])
    for _ in range(3):
        _, caught = recorded(fn, x, np.int64(2))
        _, eager = recorded(in_a_loop, x, np.int64(2))
        assert caught == eager
        assert {line for _, _, line in caught} == {line_of(in_a_loop, 4)}


def test_plans_without_such_ops_run_unwrapped():
    concrete = ag.function(lambda x: ag.transpose(x)[0] > 1).get_concrete_function(np.ones((2, 2)))
    assert concrete.plan.fn.__name__ == "plan"
    concrete = ag.function(log_then_divide).get_concrete_function(ZERO)
    assert getattr(concrete.plan.fn, "__name__", None) != "plan"


def scalar_loop(x, n):
    i = 0
    while i < n and x < 5.0:
        x = x / (n - n)  # +3
        i += 1
    return x


@pytest.mark.parametrize("native", ["1", "0"])
def test_warnings_of_a_scalar_loop_do_not_depend_on_how_often_it_ran(monkeypatch, native):
    """From the third call the loop may run as C: its division by zero still warns, at its line,
    and a NaN compared in its condition still warns of nothing."""
    monkeypatch.setenv("AG_NATIVE_KERNELS", native)
    fn = ag.function(scalar_loop)
    for _ in range(4):
        result, caught = recorded(fn, np.float64(1.0), np.int64(3))
        assert result == np.inf
        # numpy scalars divide with numpy's scalar math, whose warning says "scalar divide", as eagerly
        assert caught == [("divide by zero encountered in scalar divide", __file__, line_of(scalar_loop, 3))]
        result, caught = recorded(fn, np.float64(np.nan), np.int64(3))
        assert np.isnan(result) and caught == []


def log_of_a_folded_zero(x):
    z = ag.cast(ag.shape(x)[0] - 3, np.float64)
    return x + ag.log(z)  # +2: constant folding must not swallow this warning


def test_constant_folding_leaves_warning_ops_to_run_and_warn():
    fn = ag.function(log_of_a_folded_zero)
    for _ in range(2):
        result, caught = recorded(fn, np.ones(3))
        assert caught == [("divide by zero encountered in log", __file__, line_of(log_of_a_folded_zero, 2))]
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(result, log_of_a_folded_zero(np.ones(3)))


def large_chain(x, y):
    return np.exp(x * 800.0) - np.log(y) + np.sqrt(x - 2.0) / y  # each of the four warns


def large_strided_chain(a, y):
    return (a[1:, :] - a[:-1, :]) / y[1:, :] * 2.0  # views: the strided C kernel


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("fn, make", [
    (large_chain, lambda: (np.linspace(-1.0, 1.0, 300_000), np.zeros(300_000))),
    (large_strided_chain, lambda: (np.linspace(-1.0, 1.0, 600 * 501).reshape(600, 501), np.zeros((600, 501))))])
def test_a_large_fused_chain_warns_as_eager_once_per_op(monkeypatch, native, fn, make):
    # its C kernel (or the numpy path in blocks on threads) raised flags that numpy then blamed on
    # the next ufunc, or none: now the chain is computed again with numpy's ufuncs on the caller's
    # thread, which warn (or raise) as eager's, named by the step that did
    monkeypatch.setenv("AG_NATIVE_KERNELS", native)
    args = make()
    expected, eager = recorded(fn, *args)
    compiled = ag.function(fn)
    for _ in range(5):  # the plan, then the native tiers
        result, caught = recorded(compiled, *args)
        np.testing.assert_array_equal(result, expected)
        assert [m for m, _, _ in caught] == [m for m, _, _ in eager]
        assert {(f, line) for _, f, line in caught} == {(__file__, line_of(fn, 1))}
    with np.errstate(all="ignore"):
        assert recorded(compiled, *args)[1] == []
    with warnings.catch_warnings(), np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide by zero"):
        warnings.simplefilter("ignore")  # exp's overflow warns first, as eagerly
        compiled(*args)
