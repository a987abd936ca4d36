"""Compiled results have the dtypes eager numpy gives (NEP 50: Python scalars are weak)."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32


def accumulate_float32(x):
    s = 0.0
    for v in x:
        s = s + v
    return s


def int_counter_with_float_data(x):
    n = 0
    total = 0.0
    while total < 10:
        total = total + x[0]
        n += 1
    return n, total


def int32_arithmetic(n):
    return n * 3 + 1, n // 2, n / 2


def float16_stays_float16(x):
    y = x * 2.5 + 1
    if ag.reduce_sum(y) > 0:
        y = y * 0.5
    return y


def mixed_array_dtypes(a, b):
    return a + b, a * 2


def comparisons_are_bool(x):
    return x > 0, ag.logical_and(x > 0, x < 5)


def python_int_weak_with_int8(x):
    return x + 1, x * 2


def bool_weak_flags(x):
    found = False
    for v in x:
        if v > 2:
            found = True
    return found


@pytest.mark.parametrize("fn, inputs", [
    (accumulate_float32, [(f32(1, 2, 3),)]),
    (int_counter_with_float_data, [(f32(3),)]),
    (int32_arithmetic, [(np.int32(7),)]),
    (float16_stays_float16, [(np.array([1, 2], np.float16),), (np.array([-5, 2], np.float16),)]),
    (mixed_array_dtypes, [(np.arange(3, dtype=np.int32), np.ones(3, np.float32))]),
    (comparisons_are_bool, [(f32(1, -2, 6),)]),
    (python_int_weak_with_int8, [(np.arange(3, dtype=np.int8),)]),
    (bool_weak_flags, [(f32(1, 3),), (f32(1, 1),)]),
])
def test_dtypes_match_eager(fn, inputs):
    check(fn, *inputs, traces=1)


def test_weak_accumulator_becomes_float32_not_float64():
    out = ag.function(accumulate_float32)(f32(1, 2, 3))
    assert out.dtype == np.float32
    assert np.asarray(accumulate_float32(f32(1, 2, 3))).dtype == np.float32  # what eager numpy gives
