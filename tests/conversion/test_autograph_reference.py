"""Constructs from TensorFlow AutoGraph's reference tests (early returns, loop-created
variables, composite names, lists) that compile to eager's results: our own cases, eager
numpy as the oracle, tensor-valued conditions (0-d arrays)."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import assert_same, check


# --- a variable first assigned inside a tensor loop ----------------------------------------

def loop_creates_array(n):
    i = 0
    while i < n:
        v = np.zeros([1, 2, 3])
        i += 1
    return v


def loop_creates_dict(n):
    i = 0
    while i < n:
        v = {"a": np.zeros([2]), "b": np.ones([1, 2]) * i}
        i += 1
    return v["a"], v["b"]


def for_creates_scalar(n):
    for i in range(n):
        last = np.sqrt(i * 2.0)
    return last


@pytest.mark.parametrize("fn", [loop_creates_array, loop_creates_dict, for_creates_scalar])
def test_variable_created_in_loop(fn):
    check(fn, (np.array(1),), (np.array(3),), traces=1)


@pytest.mark.parametrize("fn", [loop_creates_array, loop_creates_dict, for_creates_scalar])
def test_variable_created_in_loop_that_runs_zero_times(fn):
    with pytest.raises(UnboundLocalError):
        fn(np.array(0))
    with pytest.raises(UnboundLocalError, match="ran zero times"):
        ag.function(fn)(np.array(0))
