"""`for` over Python values runs as Python while tracing (unrolled)."""
import logging

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.operators import control_flow
from helpers import check, f32


def over_list(x):
    for scale in [1.0, 2.0, 3.0]:
        x = x * scale
    return x


def over_range_int(x):
    for i in range(4):
        x = x + i
    return x


def over_tuple_of_arrays(x, ws):
    for w in ws:
        x = ag.tanh(x @ w)
    return x


def over_dict(x, params):
    for name, value in params.items():
        if name.startswith("add"):
            x = x + value
        else:
            x = x * value
    return x


def over_zip_enumerate(x):
    out = []
    for i, (a, b) in enumerate(zip([1.0, 2.0], [3.0, 4.0])):
        out.append(x * a + b + i)
    return out


def with_else_clause(x):
    for i in range(2):
        x = x + 1.0
    else:
        x = x * 10.0
    return x


def python_loop_with_tensor_if(x):
    for i in range(3):
        if x[i] > 0:
            x = x * 2.0
    return x


def target_after_loop(x):
    for i in range(3):
        y = x * i
    return i, y


@pytest.mark.parametrize("fn, inputs", [
    (over_list, [(f32(1, 2),)]),
    (over_range_int, [(f32(1, 2),)]),
    (over_tuple_of_arrays, [(f32(1, 2), (np.eye(2, dtype=np.float32), np.ones((2, 2), np.float32)))]),
    (over_dict, [(f32(1, 2), {"add_one": 1.0, "scale": 3.0})]),
    (over_zip_enumerate, [(f32(1, 2),)]),
    (with_else_clause, [(f32(1, 2),)]),
    (python_loop_with_tensor_if, [(f32(1, -2, 3),), (f32(-1, 2, -3),)]),
    (target_after_loop, [(f32(1, 2),)]),
])
def test_python_loops_unroll(fn, inputs):
    f = check(fn, *inputs, traces=1)
    assert "While" not in str(f.get_concrete_function(*inputs[0]).graph)


def long_python_loop(x):
    for i in range(50):
        x = x + 1.0
    return x


def test_long_unrolled_loop_warns(monkeypatch, caplog):
    monkeypatch.setattr(control_flow, "UNROLL_WARNING_ITERATIONS", 10)
    with caplog.at_level(logging.WARNING, logger="autograph_lite"):
        check(long_python_loop, (f32(1),))
    assert "test_for_python.py:" in caplog.text and "ag.range" in caplog.text
