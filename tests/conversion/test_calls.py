"""Functions called from converted code are converted too; library code is called as it is."""
import math

import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32
from helpers_for_calls import clip_positive, count_down


def calls_module_function(x):
    return clip_positive(x) * 2.0


def calls_function_with_loop(n):
    return count_down(n) + 1


def recursive_python(x, depth):
    if depth == 0:
        return x
    return recursive_python(x * 2.0, depth - 1)


def calls_numpy_and_math(x):
    return np.tanh(x) + math.pi


def keyword_and_star_args(x):
    def combine(a, b=1.0, *rest, scale=1.0):
        total = a + b
        for r in rest:
            total = total + r
        return total * scale
    parts = (x, x)
    return combine(x, *parts, scale=2.0)


def builtin_len_and_range(x):
    total = 0.0
    for i in range(len(x)):
        total = total + x[i]
    return total


def tensor_len_in_loop(x):
    total = 0.0
    for i in range(len(x)):
        if x[i] > 0:
            total = total + x[i]
    return total


@ag.do_not_convert
def opaque(x):
    return [x, x]


def calls_do_not_convert(x):
    a, b = opaque(x)
    return a + b


def calls_compiled_function(x):
    return compiled_helper(x) + 1.0


@ag.function
def compiled_helper(x):
    if x[0] > 0:
        return x * 10.0
    return x


@pytest.mark.parametrize("fn, inputs", [
    (calls_module_function, [(f32(1, 2),), (f32(-5, 2),)]),
    (calls_function_with_loop, [(np.int64(3),), (np.int64(0),)]),
    (calls_numpy_and_math, [(f32(1, 2),)]),
    (keyword_and_star_args, [(f32(1, 2),)]),
    (builtin_len_and_range, [(f32(1, 2, 3),)]),
    (tensor_len_in_loop, [(f32(1, -2, 3),)]),
    (calls_do_not_convert, [(f32(1, 2),)]),
    (calls_compiled_function, [(f32(1, 2),), (f32(-1, 2),)]),
])
def test_calls(fn, inputs):
    check(fn, *inputs, traces=1)


def test_called_function_with_tensor_loop_is_converted():
    f = ag.function(calls_function_with_loop)
    assert "While(" in str(f.get_concrete_function(np.int64(3)).graph)


def test_python_recursion():
    check(recursive_python, (f32(1), 3))


def tensor_recursion(n):
    if n <= 1:
        return 1
    return n * tensor_recursion(n - 1)


def test_tensor_recursion_is_a_clear_error():
    with pytest.raises(ag.ConversionError, match=r"tensor_recursion calls itself more than \d+ levels deep.*rewrite it as a loop"):
        ag.function(tensor_recursion)(np.int64(4))


def test_library_functions_are_not_converted():
    from autograph_lite.operators import call
    assert call(np.tanh) is np.tanh and call(math.sqrt) is math.sqrt and call(opaque) is opaque
