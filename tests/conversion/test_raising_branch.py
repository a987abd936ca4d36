"""A branch of a tensor `if` that raises a Python error while it is traced (issue 24): eagerly it
raises only on the runs that take it. The graph raises the same type, with the message and the
user's line, on those runs; the `if`'s values come from the other branch. Errors the compiler
raises (its own limits) and errors of both branches stay refusals at the trace."""
import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import assert_same

HERE = r"test_raising_branch.py:\d+"


def missing_key(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["b"]["a"] = 1
    return x


def index_out_of_range(a):
    items = [1.0, 2.0]
    if a > 0:
        y = a * 2.0
    else:
        y = items[5] + a
    return y


def static_division_by_zero(a, n):
    if a > 1:
        y = a + 1 // n
    else:
        y = a - 1
    return y


def wrong_type(a):
    label = "a"
    if a > 0:
        label = label + 1
        a = a * 2
    return a, label


def numpy_on_static_values(a):
    if a > 0:
        b = np.arange(3).reshape(2, 2)
        y = a + b[0, 0]
    else:
        y = a
    return y


def missing_attribute(a):
    nothing = None
    if a < 0:
        y = nothing.value
    else:
        y = np.float32(1) * a
    return y


def in_a_loop(n):
    weights = {"w": 2}
    total = 0
    for i in ag.range(n):
        if i < 3:
            total = total + i * weights["w"]
        else:
            total = total + weights["v"]
    return total


CASES = [(missing_key, KeyError, [(np.array(0),), (np.array(-3),), (np.array(1),)]),
         (index_out_of_range, IndexError, [(np.array(2.0),), (np.array(-1.0),)]),
         (static_division_by_zero, ZeroDivisionError, [(np.array(0), 0), (np.array(5), 0)]),
         (wrong_type, TypeError, [(np.array(-1),), (np.array(1),)]),
         (numpy_on_static_values, ValueError, [(np.array(-1),), (np.array(1),)]),
         (missing_attribute, AttributeError, [(np.float32(2),), (np.float32(-1),)]),
         (in_a_loop, KeyError, [(np.array(0),), (np.array(3),), (np.array(4),)])]


@pytest.mark.parametrize("fn, error, inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_raises_on_the_runs_that_take_the_branch(fn, error, inputs):
    compiled = ag.function(fn)
    for args in inputs:
        try:
            eager = fn(*args)
        except error as e:
            with pytest.raises(error, match=rf"{HERE}") as raised:
                compiled(*args)
            assert str(e).strip("'\"") in str(raised.value)
        else:
            assert_same(eager, compiled(*args))
    assert compiled.trace_count == 1


def both_raise(a):
    x = {}
    if a > 0:
        y = x["b"]
    else:
        y = x["c"]
    return y


def both_raise_the_same(a):
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["b"]["a"] = 1
    else:
        x["b"]["a"] = -1
    return x


def test_branches_raising_the_same_error_raise_it_as_on_every_eager_call():
    for a in (np.array(1), np.array(0)):
        with pytest.raises(KeyError) as eager:
            both_raise_the_same(a)
        with pytest.raises(KeyError) as compiled:
            ag.function(both_raise_the_same)(a)
        assert str(compiled.value) == str(eager.value)


def compiler_limit(a):
    if a > 0:
        y = np.zeros(ag.range(a))
    else:
        y = np.zeros(2)
    return y


def numpy_subclass_error(a):
    if a > 0:
        y = np.sum(np.ones(3), axis=4) + a
    else:
        y = a
    return y


@pytest.mark.parametrize("fn, error", [(both_raise, "KeyError"), (compiler_limit, "UnknownRank"),
                                       (numpy_subclass_error, "AxisError")])
def test_what_stays_refused_at_the_trace(fn, error):
    with pytest.raises(ConversionError, match=rf"branch of an `if` on a tensor \(at .*{HERE}\) raised {error} "
                                              rf"while it was traced"):
        ag.function(fn)(np.array(1))


def inside_try_finally(a):
    try:
        if a > 0:
            y = [1.0][3]
        else:
            y = a
    finally:
        return a  # eagerly cancels the IndexError: a graph's error would not run this


def test_inside_a_try_with_finally_it_stays_refused():
    with pytest.raises(ConversionError, match=rf"true branch of an `if` on a tensor \(at .*{HERE}\) raised IndexError"):
        ag.function(inside_try_finally)(np.array(1))


def loop_initializing_variant_variable(n):
    for i in range(n):
        if i == 0:
            a = 1
        else:
            a = a + 1   # unbound on the first iteration's trace, bound on every run that takes it
    return a


def branch_reading_a_missing_global(c):
    if c > 0:
        y = 1
    else:
        y = not_defined_anywhere + 1  # noqa: F821
    return y


@pytest.mark.parametrize("fn", [loop_initializing_variant_variable, branch_reading_a_missing_global])
def test_a_name_read_before_assignment_raises_only_where_the_branch_runs(fn):
    compiled = ag.function(fn)
    for n in (0, 1, 2, 3):
        a = np.array(n, np.int32)
        try:
            expected = fn(a)
        except NameError as e:  # UnboundLocalError too
            with pytest.raises(type(e)):
                compiled(a)
        else:
            assert_same(expected, compiled(a))
