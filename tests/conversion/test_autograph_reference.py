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


# --- an item or attribute first written inside a tensor loop -------------------------------

def new_key_in_while(b):
    y = {"b": b}
    while y["b"] <= 10:
        y["a"] = y["b"] + 1
        y["b"] = y["b"] * 2
    return y


class Box:
    pass


def new_attribute_in_for(x):
    box = Box()
    for v in x:
        box.last = v * 2.0
    return box.last


def test_item_created_in_loop():
    check(new_key_in_while, (np.array(5),), (np.array(10),), traces=1)
    check(new_attribute_in_for, (np.array([1.0, 2.0]),), (np.array([3.0, -1.0]),), traces=1)


def test_item_created_in_loop_that_runs_zero_times():
    # eagerly y has no 'a' then: a compiled function cannot return a dict whose keys depend on data
    assert new_key_in_while(np.array(11)) == {"b": 11}
    with pytest.raises(ValueError, match=r"`y\['a'\]` is first written inside a `while` loop on a tensor that "
                                         r"ran zero times.*test_autograph_reference.py:\d+"):
        ag.function(new_key_in_while)(np.array(11))
    with pytest.raises(ValueError, match=r"`box.last` is first written inside a `for` loop"):
        ag.function(new_attribute_in_for)(np.zeros(0))
