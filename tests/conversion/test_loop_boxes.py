"""A tensor loop's variable that starts as a numpy scalar and that the body makes a 0-d array (or
the other way round) is, after the loop, the start's box where the loop ran zero times and the
body's elsewhere; `v += ...` after the loop updates the array in place (still an array) or rebinds
the scalar, picked when the graph runs (fuzzer seed 1126010913, issue 24). On the array runs that
update is one of the array's memory: where the array may be an argument's or another name's (the
loop or `if` gave it one), the compiled function refuses it (fuzzer seed 1153013502)."""
import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import assert_identical


def scalar_start_array_body_for(n, y):
    v = np.float64(2.5)
    for i in ag.range(n):
        v = ag.where(i > 0, y[0], v)
    v += 1
    return v


def scalar_start_array_body_while(n, y):
    v = np.float64(2.5)
    i = 0
    while i < n:
        v = ag.where(i > 0, y[1], v)
        i += 1
    v *= 2
    v -= 1
    return v, i


def array_start_scalar_body(n, y):
    v = np.asarray(y[0])
    for r in y[:n]:
        v = v + r
    v += 1
    return v


def nested_loops(n, y):
    v = np.float64(0.5)
    for i in ag.range(n):
        for r in y:
            v = ag.where(r > 1, r, n * r)
    v += np.float64(1)
    return v


def changes_dtype(n, y):
    v = np.float32(2.5)
    for i in ag.range(n):
        v = ag.where(i > 0, y.astype(np.float32)[0], v)
    v += y[0]
    return v


@pytest.mark.parametrize("fn", [scalar_start_array_body_for, scalar_start_array_body_while, array_start_scalar_body,
                                nested_loops])
def test_the_box_after_the_loop_is_picked_when_the_graph_runs(fn):
    compiled = ag.function(fn)
    for n in (0, 1, 3, 0, 2):  # past the native tier-up
        args = (np.array(n), np.array([1.5, 2.0, -1.0]))
        assert_identical(fn(*args), compiled(*args))
    assert compiled.trace_count == 1


def test_an_update_whose_dtype_would_differ_by_the_box_is_refused():
    with pytest.raises(ConversionError, match=r"'v' \+= \.\.\.: 'v' is a numpy scalar on some runs and a 0-d array "
                                              r"on others.*float64.*not float32.*test_loop_boxes.py:\d+"):
        ag.function(changes_dtype)(np.array(1), np.array([1.5, 2.0]))


def fresh_array_updated_in_the_loop(n, y):
    v = y[0]
    for i in ag.range(n):
        v += 1  # a numpy scalar rebound, then (from i = 3) a 0-d array updated in place
        if i > 1:
            v = np.zeros((), np.float64)
    return v, y


def test_an_update_in_the_loop_of_an_array_made_in_it_matches_eager():
    compiled = ag.function(fresh_array_updated_in_the_loop)
    for n in (0, 2, 3, 5, 4):
        args = (np.array(n), np.array([1.5, 2.0, -1.0]))
        eager_args = (args[0].copy(), args[1].copy())
        assert_identical(fresh_array_updated_in_the_loop(*eager_args), compiled(*args))
        assert_identical(eager_args, args)


def argument_given_in_the_loop(n, k):
    v = n + 0  # a numpy scalar
    for i in ag.range(k):
        v += 1  # from the second iteration on, `n` updated in place
        v = n
    return v


def view_of_the_argument_given_in_the_loop(n, k):
    v = n + 0  # a numpy scalar
    for i in ag.range(k):
        v += 1  # once v is the reshape, `n` updated in place (fuzzer helper fzC, case g7)
        if i == 1:
            v = n.reshape(())  # a 0-d view of n: a 0-d array, not a scalar
    return v


def argument_given_in_an_if(n, k):
    v = n + 0
    if k > 1:
        v = n
    v += 1  # `n` updated in place where k > 1
    return v


@pytest.mark.parametrize("fn, why", [
    (argument_given_in_the_loop, r"the loop then gives it an array from outside the iteration"),
    (view_of_the_argument_given_in_the_loop, r"the loop then gives it an array from outside the iteration"),
    (argument_given_in_an_if, r"on some runs it is the array of argument 'n'")])
def test_an_update_of_a_value_that_is_on_some_runs_an_arguments_array_is_refused(fn, why):
    n = np.array(5, np.int32)
    fn(n, np.array(3))
    assert n != 5  # eagerly the caller's array changes, on some runs only
    with pytest.raises(ConversionError, match=r"'v'.*\+=.*test_loop_boxes.py:\d+.*" + why):
        ag.function(fn)(np.array(5, np.int32), np.array(3))
