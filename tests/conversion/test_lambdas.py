"""Lambdas: compiled directly, passed to and called from converted code."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32

square_if_positive = lambda x: x * x if x[0] > 0 else -x  # noqa: E731


def apply_lambda(x):
    f = lambda v: v * 2.0 + 1.0  # noqa: E731
    return f(x)


def lambda_with_ternary_inside(x):
    g = lambda v: v if v[0] > 0 else v * 0.0  # noqa: E731
    return g(x) + g(-x)


def lambda_passed_to_helper(x):
    return apply_twice(lambda v: ag.tanh(v) * 3.0, x)


def apply_twice(fn, x):
    return fn(fn(x))


def lambda_in_loop(x):
    step = lambda v: v * 0.5  # noqa: E731
    while ag.reduce_sum(x) > 1:
        x = step(x)
    return x


def lambda_with_default(x):
    f = lambda v, k=3.0: v * k  # noqa: E731
    return f(x), f(x, 2.0)


def lambdas_in_a_list(x):
    fns = [lambda v: v + 1.0, lambda v: v * 2.0]
    for fn in fns:
        x = fn(x)
    return x


def lambda_with_logic(x):
    both = lambda a, b: a > 0 and b > 0  # noqa: E731
    return ag.cast(both(x[0], x[1]), np.int32)


@pytest.mark.parametrize("fn, inputs", [
    (square_if_positive, [(f32(2, 3),), (f32(-2, 3),)]),
    (apply_lambda, [(f32(1, 2),)]),
    (lambda_with_ternary_inside, [(f32(1, 2),), (f32(-1, 2),)]),
    (lambda_passed_to_helper, [(f32(0.1, 2),)]),
    (lambda_in_loop, [(f32(4, 4),), (f32(0.1, 0.2),)]),
    (lambda_with_default, [(f32(1, 2),)]),
    (lambdas_in_a_list, [(f32(1, 2),)]),
    (lambda_with_logic, [(f32(1, 2),), (f32(1, -2),)]),
])
def test_lambdas(fn, inputs):
    check(fn, *inputs, traces=1)


def test_inline_lambda_next_to_another():
    a, b = (lambda x: x + 1.0), (lambda x: -x if x[0] > 0 else x)
    check(b, (f32(1),), (f32(-1),))
    check(a, (f32(1),))
    assert "Cond" in str(ag.function(b).get_concrete_function(f32(1)).graph)
