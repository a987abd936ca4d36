"""`while` on a tensor condition becomes one While node, whatever the trip count."""
import numpy as np
import pytest

import autograph_lite as ag
from examples.models import collatz, tanh_loop  # W1 and W6 as the benchmark runs them
from helpers import check, f32


def collatz_if_statement(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def count_up(x, limit):
    i = 0
    total = 0.0
    while i < limit:
        total = total + x[i]
        i += 1
    return i, total


def halve_until_small(x):
    steps = 0
    while ag.reduce_max(ag.abs(x)) > 1.0:
        x = x / 2.0
        steps = steps + 1
    return x, steps


def nested_while(n):
    i = 0
    acc = 0
    while i < n:
        j = 0
        while j < i:
            acc = acc + j
            j += 1
        i += 1
    return acc


def while_with_python_loop_inside(x):
    while ag.reduce_sum(x) > 0.5:
        for _ in range(2):
            x = x * 0.5
    return x


def while_reads_outer_value(x, scale):
    y = x
    while ag.reduce_sum(y) < 100:
        y = y * scale + x
    return y


def zero_trip_loop(x):
    while ag.reduce_sum(x) > 1000:
        x = x - 1.0
    return x


def python_while_stays_python(x):
    i = 0
    while i < 3:
        x = x * 2.0
        i += 1
    return x


def test_tanh_loop_w1():
    ag.random.set_seed(0)
    x = ag.random.uniform([10], dtype=np.float32)
    f = check(tanh_loop, (x,), (x * 0.1,), (x * 3,), traces=1)
    assert "While(" in str(f.get_concrete_function(x).graph)


@pytest.mark.parametrize("fn", [collatz, collatz_if_statement])
def test_collatz_w6(fn):
    f = check(fn, (np.int32(27),), (np.int32(7),), (np.int32(1),), traces=1)
    assert int(f(np.int32(27))) == 111


@pytest.mark.parametrize("fn, inputs", [
    (count_up, [(f32(1, 2, 3, 4), np.int64(0)), (f32(1, 2, 3, 4), np.int64(3))]),
    (halve_until_small, [(f32(10, -3),), (f32(0.5, 0.1),)]),
    (nested_while, [(np.int64(0),), (np.int64(6),)]),
    (while_with_python_loop_inside, [(f32(4, 4),), (f32(0.1, 0.1),)]),
    (while_reads_outer_value, [(f32(1, 2), np.float32(1.5)), (f32(50, 60), np.float32(2))]),
    (zero_trip_loop, [(f32(1, 2),), (f32(600, 600),)]),
])
def test_one_trace_many_trip_counts(fn, inputs):
    check(fn, *inputs, traces=1)


def test_python_condition_unrolls():
    f = check(python_while_stays_python, (f32(1),), traces=1)
    assert "While" not in str(f.get_concrete_function(f32(1)).graph)
