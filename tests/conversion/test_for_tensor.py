"""`for` over ag.range(tensor) or over a tensor's first axis becomes a While."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32


def sum_rows(x):
    total = ag.zeros_like(x[0])
    for row in x:
        total = total + row
    return total


def range_tensor(n):
    acc = 0
    for i in ag.range(n):
        acc = acc + i * i
    return acc


def builtin_range_of_tensor(x, n):
    y = x
    for i in range(n):
        y = y + ag.cast(i, np.float32)
    return y


def target_defined_after(x):
    last = 0.0
    for row in x:
        last = ag.reduce_sum(row)
    return last, row


def index_loop(x):
    out = 0.0
    for i in ag.range(ag.shape(x)[0]):
        out = out + x[i] * ag.cast(i, np.float32)
    return out


def range_with_start_and_step(n):
    acc = 0
    for i in ag.range(2, n, 3):
        acc = acc + i
    return acc


def nested_tensor_fors(x):
    total = 0.0
    for row in x:
        for v in row:
            total = total + v * v
    return total


def for_with_if_inside(x):
    pos = 0.0
    neg = 0.0
    for v in x:
        if v > 0:
            pos = pos + v
        else:
            neg = neg + v
    return pos, neg


def variable_first_set_in_body(x):
    for v in x:
        doubled = v * 2.0
    return doubled


X = np.arange(12, dtype=np.float32).reshape(4, 3) - 5


@pytest.mark.parametrize("fn, inputs", [
    (sum_rows, [(X,), (X * 2,)]),
    (range_tensor, [(np.int64(0),), (np.int64(5),)]),
    (builtin_range_of_tensor, [(f32(1, 2), np.int64(0)), (f32(1, 2), np.int64(4))]),
    (target_defined_after, [(X,), (X[::-1].copy(),)]),
    (index_loop, [(f32(1, 2, 3),), (f32(-4, 0, 4),)]),
    (range_with_start_and_step, [(np.int64(2),), (np.int64(11),)]),
    (nested_tensor_fors, [(X,), (X * 0.5,)]),
    (for_with_if_inside, [(f32(1, -2, 3),), (f32(-1, -1, -1),)]),
    (variable_first_set_in_body, [(f32(1, 2, 3),), (f32(4, 5, 6),)]),
])
def test_tensor_for_traces_once(fn, inputs):
    f = check(fn, *inputs, traces=1)
    assert "While(" in str(f.get_concrete_function(*inputs[0]).graph)
