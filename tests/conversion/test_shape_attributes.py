"""`x.shape` in converted code (converters/shape_attributes.py): a tensor's dims known only when the
graph runs (None while tracing: `x[x > lo]`, an input_signature's None) are weak ints of each run's
size, so comparing them with numbers is decided per call, as eagerly, not at trace time with None.
Each case runs four calls with AG_NATIVE=off and =always, on inputs taking each branch."""
import contextlib
import inspect
import io

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import SymbolicValueError
from helpers import assert_identical, same_every_call

X = np.array([1.0, 2.0, 3.0])
SIGNED = np.array([-1.0, 2.0, -3.0, 4.0])


def robust_mean(x, lo):
    sel = x[x > lo]
    if sel.shape[0] == 0:
        return 0.0
    return sel.mean()


def robust_mean_less(x, lo):
    sel = x[x > lo]
    if sel.shape[0] < 1:
        return 0.0
    return sel.mean()


@pytest.mark.parametrize("fn", [robust_mean, robust_mean_less])
@pytest.mark.parametrize("lo", [10.0, 1.0, -5.0])
def test_empty_selection_takes_the_branch(fn, lo):
    same_every_call(fn, X, np.float64(lo))


def kmeans_step(points, labels, centers):
    new = centers.copy()
    for k in range(centers.shape[0]):
        members = points[labels == k]
        if members.shape[0] > 0:
            new[k] = members.mean(axis=0)
    return new


@pytest.mark.parametrize("labels", [[0, 0, 2, 2], [0, 1, 2, 1], [1, 1, 1, 1]])
def test_kmeans_keeps_the_center_of_an_empty_cluster(labels):
    points = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    centers = np.array([[9.0, 9.0], [8.0, 8.0], [7.0, 7.0]])
    same_every_call(kmeans_step, points, np.array(labels), centers)


def unpacks(x):
    rows = x[x[:, 0] > 0]
    n, m = rows.shape
    return n * m, m


def zeros_of_the_shape(x):
    sel = x[x > 0]
    return np.zeros(sel.shape) + sel


def reshaped(x):
    sel = x[x > 0]
    return sel.reshape(sel.shape[0], -1)


def sums_over_a_range(x):
    sel = x[x > 0]
    total = 0.0
    for i in range(sel.shape[0]):
        total = total + sel[i] * i
    return total


@pytest.mark.parametrize("fn", [zeros_of_the_shape, reshaped, sums_over_a_range])
@pytest.mark.parametrize("x", [X, SIGNED, -X])
def test_dynamic_dims_as_arguments(fn, x):
    same_every_call(fn, x)


@pytest.mark.parametrize("first", [[1.0, -1.0, 2.0], [-1.0, -1.0, -1.0]])
def test_unpacking(first):
    same_every_call(unpacks, np.array([first, [2.0, 3.0, 4.0]]).T.copy())


def first_row_or_sum(x):
    if x.shape[0] == 1:
        return x[0] * 10.0
    return x.sum(axis=0)


def test_input_signature_none_dim():
    compiled = ag.function(first_row_or_sum, input_signature=[ag.TensorSpec([None, 3], np.float64)])
    for rows in (1, 2, 1, 4):
        x = np.arange(rows * 3, dtype=np.float64).reshape(rows, 3)
        assert_identical(first_row_or_sum(x), compiled(x))
    assert compiled.trace_count == 1


def compares_the_tuple(x):
    sel = x[x > 0]
    if sel.shape == (0,):
        return 1.0
    return 2.0


def test_comparing_the_tuple_is_refused_at_its_line():
    line = inspect.getsourcelines(compares_the_tuple)[1] + 2
    with pytest.raises(SymbolicValueError, match=rf"test_shape_attributes.py:{line}\b"):
        ag.function(compares_the_tuple)(X)


def prints_shapes(x):
    sel = x[x > 0]
    print(sel.shape, x.shape, sel[None].shape)
    print(f"selected {sel.shape}, {sel.shape!r} of {x.shape}")
    return sel.sum()


def test_print_shows_eagers_tuples():
    compiled = ag.function(prints_shapes)
    for x in (X, SIGNED, -X, SIGNED):
        eager, got = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(eager):
            want = prints_shapes(x)
        with contextlib.redirect_stdout(got):
            assert_identical(want, compiled(x))
        assert got.getvalue() == eager.getvalue()


class Grid:
    """An object with its own `shape`, which converted code reads and writes as Python does."""

    def __init__(self):
        self.shape = (4, 5)


def reads_and_writes_an_objects_shape(x):
    g = Grid()
    before = g.shape[1]
    g.shape = (2, 3)
    table = np.ones((3, 2))
    return x * before + g.shape[0] + table.shape[0]


def test_other_values_shape_and_stores_are_left_alone():
    same_every_call(reads_and_writes_an_objects_shape, X)
    code = ag.to_code(reads_and_writes_an_objects_shape)
    assert "g.shape = (2, 3)" in code and "ag__.shape_attr(g)" in code


def grows_and_selects(n, x):
    v = x
    count = 0
    for i in range(n):  # v changes rank: a loop run as Python, its `.shape` on each run's arrays
        v = np.expand_dims(v, 0)
        sel = x[x > i]
        if sel.shape[0] > 0:
            count = count + sel.shape[0]
    return v.shape, count, v


@pytest.mark.parametrize("n", [0, 2, 4])
def test_in_a_loop_run_as_python(n):
    same_every_call(grows_and_selects, np.int64(n), X)
