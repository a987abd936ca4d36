"""Builtins and operators on a value a tensor `if` merged from a Python number and a numpy value
(`Tensor.python_box`): each call gives eager's value in eager's box on both paths, or a
ConversionError naming the user's line. Each case runs four calls with AG_NATIVE=off and =always."""
import math
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import same_every_call


def merged(x):
    """2.5 (a Python float) where x > 0, else np.float64(-1.5): as a tensor `if` merges them."""
    if x > 0:
        y = 2.5
    else:
        y = np.float64(-1.5)
    return y


def merged_int(x):
    """2 (a Python int) where x > 0, else np.int64(-1)."""
    if x > 0:
        y = 2
    else:
        y = np.int64(-1)
    return y


def merged_later(x):
    """np.float64(2.0) where x > 0, else 1.0 (a Python float), then 1.0 added where x > 1."""
    y = 1.0
    if x > 0:
        y = np.float64(2.0)
    if x > 1:
        y = y + 1.0
    return y


CASES = {
    "round_digits": lambda y: (round(y, 1), np.float64(y)),
    "round": lambda y: round(y),
    "float64_of": lambda y: np.float64(y),
    "float32_of": lambda y: np.float32(y),
    "max": lambda y: max(y, 0.0),
    "min": lambda y: min(y, 0.0),
    "max_first_zero": lambda y: max(0.0, y),
    "max_of_list": lambda y: max([y, 1.0]),
    "min_numpy": lambda y: min(y, np.float64(0.0)),
    "sum_of_list": lambda y: sum([y, 1.0]),
    "abs": lambda y: abs(y),
    "float": lambda y: float(y),
    "int": lambda y: int(y),
    "math_floor": lambda y: math.floor(y),
    "math_sqrt_abs": lambda y: math.sqrt(abs(y)),
    "times_int": lambda y: y * 3,
    "plus_python": lambda y: 1.0 + y,
    "negative": lambda y: -y,
    "compare": lambda y: y > 0.0,
    "compare_equal": lambda y: y == 2.5,
    "power": lambda y: y ** 2,
}


@pytest.mark.parametrize("merge", [merged, merged_int, merged_later])
@pytest.mark.parametrize("name", sorted(CASES))
def test_builtin_on_a_merged_value_is_eagers(name, merge):
    op = CASES[name]

    def fn(x):
        return op(merge(x))
    for x in (np.float64(2.0), np.float64(0.5), np.float64(-1.0)):
        same_every_call(fn, x)


def test_arithmetic_on_max_of_two_boxes_is_refused_at_the_users_line():
    def fn(x):
        return max(merged(x), 0.0) * 2  # eagerly a Python float or a numpy float64 by the values
    with pytest.raises(ConversionError, match=r"test_python_box_builtins\.py:\d+"):
        ag.function(fn)(np.float64(1.0))


def round_of_python_or_array(x):
    if x > 0:
        y = 2.5
    else:
        y = np.array(-1.5)
    return round(y, 1)  # eagerly 2.5, or a TypeError: a 0-d array has no __round__


def test_round_of_a_number_or_a_0d_array_is_refused_at_the_users_line():
    with pytest.raises(ConversionError, match=r"round\(\) of a value that is a Python number .*"
                                              r"test_python_box_builtins\.py:\d+"):
        ag.function(round_of_python_or_array)(np.float64(1.0))


def complex_item(x):
    return float(x[0]), int(x[1]), math.sqrt(x[0])


def complex_0d(x):
    return float(x[0, ...])


@pytest.mark.parametrize("fn", [complex_item, complex_0d])
def test_float_of_complex_is_numpys_by_box(fn):
    same_every_call(fn, np.array([4 + 2j, 3 - 1j]))


def test_complex_warning_names_the_users_line():
    compiled = ag.function(complex_item)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(np.array([4 + 2j, 3 - 1j]))
    assert [w.category for w in caught] == [np.exceptions.ComplexWarning] * 3
    assert {(w.filename, w.lineno) for w in caught} == {(__file__, complex_item.__code__.co_firstlineno + 1)}


def test_round_of_a_complex_scalar_raises_as_numpy():
    same_every_call(lambda x: round(x[0], 1), np.array([4 + 2j]))
