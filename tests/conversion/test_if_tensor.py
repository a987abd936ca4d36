"""`if` on a tensor condition becomes a Cond decided when the graph runs."""
import pytest

import autograph_lite as ag
from helpers import check, f32

POS, NEG = f32(1, 2, 3), f32(-1, -2, -3)


def if_else(x):
    if ag.reduce_sum(x) > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def if_without_else(x):
    y = x
    if ag.reduce_sum(x) > 0:
        y = y + 1.0
    return y


def elif_chain(x):
    s = ag.reduce_sum(x)
    if s > 5:
        r = x * 3.0
    elif s > 0:
        r = x * 2.0
    elif s > -5:
        r = x - 1.0
    else:
        r = x * 0.0
    return r


def nested_ifs(x):
    a = x[0]
    b = x[1]
    if a > 0:
        if b > 0:
            out = a + b
        else:
            out = a - b
    else:
        out = a * b
    return out


def several_variables(x):
    lo, hi, n = x[0], x[1], 0
    if lo > hi:
        lo, hi = hi, lo
        n = 1
    return lo, hi, n


def python_if_inside_tensor_if(x, flag):
    if x[0] > 0:
        if flag:
            y = x + 10.0
        else:
            y = x + 20.0
    else:
        y = x
    return y


def if_on_python_value_stays_python(x, mode):
    if mode == "double":
        return x * 2.0
    return x


def temporaries_in_branches(x):
    if ag.reduce_max(x) > 2:
        t = x * 2.0
        y = t + 1.0
    else:
        t = x - 1.0
        y = t * t
    return y


def if_with_tensor_and_python_values(x):
    count = 0
    if x[0] > 0:
        count = count + 1
    if x[1] > 0:
        count = count + 1
    return count


@pytest.mark.parametrize("fn", [if_else, if_without_else, elif_chain, nested_ifs, several_variables,
                                temporaries_in_branches, if_with_tensor_and_python_values])
def test_one_trace_both_ways(fn):
    check(fn, (POS,), (NEG,), (f32(-1, 2, 3),), (f32(4, -9, 1),), traces=1)


def test_elif_chain_every_arm():
    check(elif_chain, (f32(3, 3),), (f32(1, 1),), (f32(-1, -1),), (f32(-9, -9),), traces=1)


def test_python_if_inside_tensor_if():
    check(python_if_inside_tensor_if, (POS, True), (NEG, True), traces=1)
    check(python_if_inside_tensor_if, (POS, False), (NEG, False))


def test_python_condition_is_not_staged():
    f = check(if_on_python_value_stays_python, (POS, "double"), (POS, "keep"), traces=2)
    assert "Cond" not in str(f.get_concrete_function(POS, "double").graph)


def test_tensor_if_is_a_cond_node():
    f = ag.function(if_else)
    assert "Cond(" in str(f.get_concrete_function(POS).graph)
