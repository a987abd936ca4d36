"""Loop variables and branch outputs whose shapes change relax to None dims."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32


def grow_by_concat(x, n):
    i = 0
    while i < n:
        x = ag.concat([x, x[:1]], 0)
        i += 1
    return x


def shrink_by_slice(x):
    while ag.shape(x)[0] > 1:
        x = x[1:]
    return x


def branches_with_different_lengths(x):
    if x[0] > 0:
        y = x[1:]
    else:
        y = x
    return y


def double_each_step(x, n):
    for _ in ag.range(n):
        x = ag.concat([x, x], 0)
    return x


def grow_2d_rows(x, n):
    i = 0
    while i < n:
        x = ag.concat([x, x[-1:] + 1.0], 0)
        i += 1
    return x


def grow_then_reduce(x, n):
    i = 0
    while i < n:
        x = ag.concat([x, x * 0.5], 0)
        i += 1
    return ag.reduce_sum(x)


def relax_in_for_over_tensor(x):
    acc = x[:1]
    for v in x:
        acc = ag.concat([acc, v[None]], 0)
    return acc


def relax_inside_branch_inside_loop(x, n):
    i = 0
    while i < n:
        if x[0] > 0:
            x = ag.concat([x, x[:1]], 0)
        i += 1
    return x


@pytest.mark.parametrize("fn, inputs", [
    (grow_by_concat, [(f32(1, 2), np.int64(0)), (f32(1, 2), np.int64(3))]),
    (shrink_by_slice, [(f32(1, 2, 3),)]),
    (branches_with_different_lengths, [(f32(1, 2, 3),), (f32(-1, 2, 3),)]),
    (double_each_step, [(f32(1), np.int64(3)), (f32(1), np.int64(0))]),
    (grow_2d_rows, [(np.ones((1, 2), np.float32), np.int64(3))]),
    (grow_then_reduce, [(f32(1, 2), np.int64(4))]),
    (relax_in_for_over_tensor, [(f32(1, 2, 3),)]),
    (relax_inside_branch_inside_loop, [(f32(1, 2), np.int64(2)), (f32(-1, 2), np.int64(2))]),
])
def test_relaxes(fn, inputs):
    check(fn, *inputs, traces=1)


def test_relaxed_shape_is_none_in_the_graph():
    f = ag.function(grow_by_concat)
    cf = f.get_concrete_function(f32(1, 2), np.int64(1))
    assert cf.graph.outputs[0].shape == (None,)
    assert ag.function(grow_2d_rows).get_concrete_function(np.ones((1, 2), np.float32), np.int64(1)).graph.outputs[0].shape == (None, 2)
