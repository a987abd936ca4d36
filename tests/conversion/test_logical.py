"""`and`/`or`/`not` on tensors short-circuit when the graph runs; on Python values they keep
Python's semantics and values."""
import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import check, f32


def bounded_positive(x, i, n):
    # x[i] must not be evaluated when i >= n: it would index past the end
    if i < n and x[i] > 0:
        return 1
    return 0


def either_side(x):
    if x[0] > 0 or x[1] > 0:
        y = x + 1.0
    else:
        y = x - 1.0
    return y


def negation(x):
    if not ag.reduce_any(x > 0):
        return x * 0.0
    return x


def python_values_keep_python_semantics(a, b):
    return (a and b), (a or b), (not a), (b or "default")


def mixed_python_and_tensor(x, flag):
    if flag and x[0] > 0:
        return x * 2.0
    return x


def chained_comparison(x):
    if 0 < x[0] < 10:
        return x
    return -x


def three_way_and(x):
    if x[0] > 0 and x[1] > 0 and x[2] > 0:
        return 1
    return 0


def in_while_condition(x):
    i = 0
    while i < 5 and x[i] > 0:
        i += 1
    return i


def or_with_side_effect_order(x):
    calls = []

    def right():
        calls.append("right")
        return x[1] > 0
    result = x[0] > 0 or right()
    return result, len(calls)


@pytest.mark.parametrize("fn, inputs", [
    (either_side, [(f32(1, -1),), (f32(-1, 1),), (f32(-1, -1),)]),
    (negation, [(f32(-1, -2),), (f32(1, -2),)]),
    (chained_comparison, [(f32(5, 0),), (f32(50, 0),), (f32(-1, 0),)]),
    (three_way_and, [(f32(1, 1, 1),), (f32(1, -1, 1),)]),
    (in_while_condition, [(f32(1, 1, -1, 1, 1),), (f32(1, 1, 1, 1, 1),)]),
])
def test_tensor_logic(fn, inputs):
    check(fn, *inputs, traces=1)


def test_and_short_circuits_at_run_time():
    x = f32(1, 2, 3)
    check(bounded_positive, (x, np.int64(1), np.int64(3)), (x, np.int64(3), np.int64(3)), traces=1)


@pytest.mark.parametrize("a, b", [(0, 5), (3, 5), ("", "x"), ([1], None)])
def test_python_values(a, b):
    assert ag.to_graph(python_values_keep_python_semantics)(a, b) == python_values_keep_python_semantics(a, b)


def test_python_flag_and_tensor():
    check(mixed_python_and_tensor, (f32(1), True), (f32(-1), True))
    check(mixed_python_and_tensor, (f32(1), False))


def test_python_side_effect_in_the_right_side_of_a_tensor_or_is_an_error():
    # traced once into the Cond's false branch, the append would run whatever x holds
    assert or_with_side_effect_order(f32(1, -1))[1] == 0
    with pytest.raises(ConversionError, match=r"list.append\(\) inside an `if`/`while`/`for` on a tensor") as info:
        ag.function(or_with_side_effect_order)(f32(1, -1))
    assert f"{__file__}:{or_with_side_effect_order.__code__.co_firstlineno + 4}" in str(info.value)
