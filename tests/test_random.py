"""ag.random: fresh numbers on every call; reproducible after set_seed, eager and compiled alike."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import cpu_only


def noisy(x):
    return x + ag.random.uniform([3], -1.0, 1.0, np.float32) + ag.random.normal([3], 0.0, 0.1, np.float32)


def test_each_compiled_call_draws_fresh_numbers():
    f = ag.function(noisy)
    x = np.zeros(3, np.float32)
    a, b = f(x), f(x)
    assert not np.array_equal(a, b)
    assert f.trace_count == 1 and a.dtype == np.float32


@cpu_only("the eager oracle is numpy's generator; a device's draws come from its own")
def test_set_seed_makes_eager_and_compiled_reproducible():
    f = ag.function(noisy)
    x = np.zeros(3, np.float32)
    ag.random.set_seed(7)
    with ag.device("cpu"):  # the eager oracle: numpy
        eager = [noisy(x), noisy(x)]
    ag.random.set_seed(7)
    compiled = [f(x), f(x)]
    ag.random.set_seed(7)
    again = [f(x), f(x)]
    for e, c, g in zip(eager, compiled, again):
        np.testing.assert_array_equal(e, c)
        np.testing.assert_array_equal(c, g)
    assert not np.array_equal(compiled[0], compiled[1])


def test_uniform_range_and_normal_moments():
    ag.random.set_seed(0)
    u = ag.function(lambda: ag.random.uniform([20000], 2.0, 5.0))()
    n = ag.function(lambda: ag.random.normal([20000], 1.0, 2.0))()
    assert u.dtype == np.float64 and 2.0 <= u.min() and u.max() < 5.0
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1


def test_random_node_survives_even_if_unused_value_is_dropped():
    @ag.function
    def f(x):
        ag.random.uniform([2])   # result unused, but it advances the generator as eagerly
        return x
    ag.random.set_seed(3)
    f(np.ones(1))
    after_compiled = ag.random.uniform([2])
    ag.random.set_seed(3)
    f.python_function(np.ones(1))
    np.testing.assert_array_equal(after_compiled, ag.random.uniform([2]))


def test_bad_random_arguments():
    with pytest.raises(TypeError, match="float32 or float64"):
        ag.random.normal([2], dtype=np.int32)
