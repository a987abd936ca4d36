"""Nested functions and closures: they see the enclosing variables, live."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32


def make_scaler(factor):
    def scale(x):
        if ag.reduce_sum(x) > 0:
            return x * factor
        return x
    return scale


def make_counter_loop(limit):
    def run(x):
        i = 0
        while i < limit:
            x = x + 1.0
            i += 1
        return x
    return run


def nested_function_inside(x):
    def inner(v):
        if v[0] > 0:
            return v * 2.0
        return v
    return inner(x) + inner(-x)


def closure_over_array(x):
    weights = np.array([1.0, 2.0], np.float32)

    def dot(v):
        return ag.reduce_sum(v * weights)
    return dot(x)


def nested_closure_chain(x):
    a = 2.0

    def outer(v):
        b = 3.0

        def inner(w):
            return w * a + b
        return inner(v)
    return outer(x)


def closure_reads_loop_variable(x):
    total = 0.0
    for i in ag.range(3):
        add = lambda v: v + ag.cast(i, np.float32)  # noqa: E731
        total = add(total)
    return total + x[0]


def nonlocal_in_python_code(x):
    count = 0

    def bump():
        nonlocal count
        count += 1
    for _ in range(3):
        bump()
    return x * count


@pytest.mark.parametrize("fn, inputs", [
    (make_scaler(3.0), [(f32(1, 2),), (f32(-1, -2),)]),
    (make_counter_loop(np.int64(4)), [(f32(1, 2),)]),
    (nested_function_inside, [(f32(1, 2),), (f32(-1, 2),)]),
    (closure_over_array, [(f32(1, 2),)]),
    (nested_closure_chain, [(f32(1, 2),)]),
    (closure_reads_loop_variable, [(f32(1, 2),)]),
    (nonlocal_in_python_code, [(f32(1, 2),)]),
])
def test_closures(fn, inputs):
    check(fn, *inputs, traces=1)


def test_closure_sees_rebound_variable():
    factor = 2.0

    def scaled(x):
        return x * factor
    f = ag.function(scaled)
    np.testing.assert_allclose(f(f32(1)), [2.0])
    factor = 5.0  # noqa: F841 - read by the closure through its cell
    assert ag.to_graph(scaled)(f32(1))[0] == 5.0
