"""State a converted block carries must be the state Python would see (issue 11).

Closures see the live binding of the variables a loop or branch writes (cell
variables); items and attributes written inside a tensor `if`/`while`/`for` are carried
like variables, or refused with an error naming the target and the user's line.
"""
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import assert_same, check, f32


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


# --- item 1: closures and lambdas see Python's binding -------------------------------------

def closure_reads_for_variable(xs):
    k = 0

    def offset():
        return k * 10
    total = 0
    for k in xs:
        total = total + offset()
    return total, k


@pytest.mark.parametrize("xs", [[1, 2], np.array([1, 2]), np.array([3, 4, 5], np.int32)])
def test_closure_sees_the_loop_variable(xs):
    check(closure_reads_for_variable, (xs,))


def closure_reads_while_variable(x):
    k = 0.0

    def scaled():
        return x * k
    total = x * 0.0
    while k < ag.reduce_sum(x):
        k = k + 1.0
        total = total + scaled()
    return total, k, scaled()


def test_closure_sees_the_while_variable_inside_and_after_the_staged_loop():
    check(closure_reads_while_variable, (f32(1.0, 2.0),), (f32(0.5, 0.25),))


def closure_reads_if_variable(x):
    k = 1.0
    get = lambda: k * x  # noqa: E731
    if ag.reduce_sum(x) > 0:
        k = 2.0
    else:
        k = 3.0
    return get()


def test_closure_sees_the_variable_a_tensor_if_assigns():
    check(closure_reads_if_variable, (f32(1.0),), (f32(-1.0),))


def lambdas_in_unrolled_loop(x):
    fs = []
    for i in range(3):
        fs.append(lambda: i * x)
    return [f() for f in fs]


def test_lambdas_made_in_an_unrolled_loop_bind_late():
    check(lambdas_in_unrolled_loop, (np.float32(1.5),), (f32(1.0, 2.0),))


def closure_counter(x):
    count = 0

    def bump():
        nonlocal count
        count += 1
    for v in [1, 2, 3]:
        bump()
        x = x + v
    return x, count


def test_nested_function_rebinding_a_local_in_a_python_loop():
    check(closure_counter, (f32(1.0),))


# --- item 2: items and attributes written in staged blocks ---------------------------------

def dict_item_in_if(x):
    d = {"a": x, "b": 0}
    if x > 0:
        d["b"] = 1
    else:
        d["b"] = -1
    return d["b"], d


def test_dict_item_written_in_both_branches():
    check(dict_item_in_if, (np.float32(1.0),), (np.float32(-1.0),))


def dict_new_key_in_if(x):
    d = {}
    if x > 0:
        d["k"] = x
    else:
        d["k"] = -x
    return d


def test_dict_key_created_in_both_branches():
    check(dict_new_key_in_if, (np.float32(2.0),), (np.float32(-3.0),))


class Box:
    pass


def attribute_in_if(x):
    box = Box()
    box.value = x * 0.0
    if x > 0:
        box.value = x
    else:
        box.value = -x * 2.0
    return box.value


def test_attribute_written_in_both_branches():
    check(attribute_in_if, (np.float32(2.0),), (np.float32(-2.0),))


def list_item_in_while(x):
    acc = [0.0, x[0] * 0.0]
    i = 0
    while x[i] > 0:
        acc[1] = acc[1] + x[i]
        i += 1
    return acc


def test_list_item_carried_by_while():
    check(list_item_in_while, (f32(1.0, 2.0, -1.0),), (f32(-1.0, 2.0),))


def nested_place_in_for(x):
    state = {"sums": [0.0, 0.0]}
    for v in x:
        state["sums"][0] = state["sums"][0] + v
        state["sums"][1] = state["sums"][1] - v
    return state["sums"]


def test_nested_items_carried_by_tensor_for():
    check(nested_place_in_for, (f32(1.0, 2.0, 3.0),))


def attribute_in_loop(x):
    box = Box()
    box.total = 0.0
    for i in ag.range(ag.size(x)):
        box.total = box.total + x[i]
    return box.total


def test_attribute_carried_by_tensor_for():
    check(attribute_in_loop, (f32(1.0, 2.0, 3.0),), (f32(4.0),))


def dynamic_index_in_tensor_loop(x):
    out = [0.0, 0.0, 0.0]
    i = 0
    while i < ag.size(x):
        out[i] = x[i]
        i += 1
    return out


class Guarded:
    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)


def guarded_attribute_in_if(x):
    g = Guarded()
    g.v = 0.0
    if x > 0:
        g.v = x
    return g.v


def new_key_in_loop(x):
    d = {}
    for v in x:
        d["last"] = v
    return d


@pytest.mark.parametrize("fn, arg, target, message", [
    (dynamic_index_in_tensor_loop, f32(1.0, 2.0), "out[i] = x[i]", "its key or index is not the same"),
    (guarded_attribute_in_if, np.float32(1.0), "if x > 0:", "customises attribute access"),
    (new_key_in_loop, f32(1.0, 2.0), "for v in x:", "is first written inside a loop"),
])
def test_places_that_cannot_be_carried_are_refused(fn, arg, target, message):
    with pytest.raises(ConversionError) as err:
        ag.function(fn)(arg)
    text = str(err.value)
    assert message in text
    label = {"dynamic_index_in_tensor_loop": "`out[i]`", "guarded_attribute_in_if": "`g.v`",
             "new_key_in_loop": "`d['last']`"}[fn.__name__]
    assert label in text
    stmt = {"dynamic_index_in_tensor_loop": "while i < ag.size(x):"}.get(fn.__name__, target)
    assert f"{__file__}:{line_of(fn, stmt)}" in text
