"""A tensor loop's variable that starts as a numpy scalar and that the body makes a 0-d array (or
the other way round) is, after the loop, the start's box where the loop ran zero times and the
body's elsewhere; `v += ...` after the loop updates the array in place (still an array) or rebinds
the scalar, picked when the graph runs (fuzzer seed 1126010913, issue 24)."""
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
