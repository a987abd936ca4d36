"""`a if c else b` on a tensor `c` becomes a Cond; on a Python value it stays Python."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, cpu_only, f32


def abs_by_ternary(x):
    return x if x[0] > 0 else -x


def nested_ternary(x):
    s = ag.reduce_sum(x)
    return x * 2.0 if s > 10 else (x if s > 0 else x * 0.0)


def ternary_in_loop(n):
    n = n
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def ternary_python(x, double):
    return x * 2.0 if double else x


def ternary_guards_index(x, i):
    return x[i] if i < 3 else 0.0


def ternary_with_scalars(x):
    scale = 2.0 if ag.reduce_max(x) > 1 else 0.5
    return x * scale


def ternary_in_expression(x):
    return (x[0] if x[0] > x[1] else x[1]) + 1.0


def ternary_of_tuples(x):
    a, b = (x, x * 2.0) if x[0] > 0 else (x * 3.0, x)
    return a + b


@pytest.mark.parametrize("fn, inputs", [
    (abs_by_ternary, [(f32(1, 2),), (f32(-1, 2),)]),
    (nested_ternary, [(f32(6, 6),), (f32(1, 1),), (f32(-1, -1),)]),
    (ternary_in_loop, [(np.int32(27),), (np.int32(6),)]),
    (ternary_guards_index, [(f32(1, 2, 3), np.int64(1)), (f32(1, 2, 3), np.int64(5))]),
    (ternary_with_scalars, [(f32(2, 3),), (f32(0.1, 0.2),)]),
    (ternary_in_expression, [(f32(2, 1),), (f32(1, 2),)]),
    (ternary_of_tuples, [(f32(1, 2),), (f32(-1, 2),)]),
])
def test_tensor_ternary(fn, inputs):
    f = check(fn, *inputs, traces=1)
    assert "Cond(" in str(f.get_concrete_function(*inputs[0]).graph) or "While(" in str(
        f.get_concrete_function(*inputs[0]).graph)


def test_python_ternary():
    f = check(ternary_python, (f32(1), True), (f32(1), False), traces=2)
    assert "Cond" not in str(f.get_concrete_function(f32(1), True).graph)


def _zero_or_a_float_sum(x):
    v = 0 if x.sum() > 0 else x.sum()   # eagerly the Python int 0, or a float64
    return v, v + 1.5


def _length_or_a_mean(x, lst):
    return len(lst) if x.sum() > 0 else x.mean()


@cpu_only("numpy scalars and Python numbers are the CPU's boxes")
@pytest.mark.parametrize("fn, extra", [(_zero_or_a_float_sum, ()), (_length_or_a_mean, ([1, 2],))])
def test_a_python_number_beside_a_numpy_scalar_of_another_kind_is_the_one_its_side_gives(fn, extra):
    compiled = ag.function(fn)
    for x in (np.ones(3), -np.ones(3)):
        eager, got = fn(x, *extra), compiled(x, *extra)
        assert repr(got) == repr(eager) and type(got) is type(eager)
