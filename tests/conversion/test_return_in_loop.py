"""`return` from inside tensor loops and branches, nested, and from unrolled loops."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32


def return_in_if(x):
    if ag.reduce_sum(x) > 0:
        return x * 2.0
    return -x


def return_in_both_branches(x):
    if x[0] > 0:
        return x + 1.0
    else:
        return x - 1.0


def return_from_tensor_loop(x):
    for i in ag.range(ag.shape(x)[0]):
        if x[i] < 0:
            return i
    return -1


def return_from_while(x):
    n = 0
    while ag.reduce_sum(x) > 1:
        x = x * 0.5
        n += 1
        if n > 3:
            return x * 0.0
    return x


def return_from_nested_loops(x):
    for row in x:
        for v in row:
            if v > 4:
                return v
    return -1.0


def return_from_unrolled_loop_under_tensor_condition(x):
    for i in range(3):
        if x[i] > 1:
            return x[i] * 10.0
    return 0.0


def early_python_return(x, skip):
    if skip:
        return x
    y = x * 3.0
    return y


def return_tuple_in_branch(x):
    if x[0] > 0:
        return x, x[0]
    return -x, x[1]


def return_inside_while_true(x):
    while True:
        x = x - 1.0
        if ag.reduce_max(x) < 0:
            return x


@pytest.mark.parametrize("fn, inputs", [
    (return_in_if, [(f32(1, 2),), (f32(-1, -2),)]),
    (return_in_both_branches, [(f32(1, 2),), (f32(-1, 2),)]),
    (return_from_tensor_loop, [(f32(1, -2, -3),), (f32(-1, 2, -3),), (f32(1, 2, 3),)]),
    (return_from_while, [(f32(4, 4),), (f32(100, 100),), (f32(0.5, 0.1),)]),
    (return_from_nested_loops, [(np.array([[1, 2], [5, 1]], np.float32),), (np.array([[1, 6], [5, 1]], np.float32),), (np.ones((2, 2), np.float32),)]),
    (return_from_unrolled_loop_under_tensor_condition, [(f32(0, 2, 3),), (f32(0, 0, 0),), (f32(5, 0, 0),)]),
    (return_tuple_in_branch, [(f32(1, 2),), (f32(-1, 2),)]),
    (return_inside_while_true, [(f32(3, 1),), (f32(0.5, 0.2),)]),
])
def test_return(fn, inputs):
    check(fn, *inputs, traces=1)


def test_python_return():
    check(early_python_return, (f32(1), True))
    check(early_python_return, (f32(1), False))
