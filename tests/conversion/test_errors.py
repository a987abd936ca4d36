"""Errors name the variable or construct and the user's file:line."""

import numpy as np
import pytest

import autograph_lite as ag
from helpers import cpu_only, f32


def line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, l in enumerate(lines) if text in l)


def set_in_one_branch(x):
    if x[0] > 0:
        y = x * 2.0
    return y


def dtype_differs_between_branches(x):
    if x[0] > 0:
        y = x
    else:
        y = ag.cast(x, np.int32)
    return y


def dtype_changes_in_loop(x):
    while ag.reduce_sum(x) < 10:
        x = ag.cast(x, np.int64) + 1
    return x


def generator(x):
    yield x


def try_around_tensor_if(x):
    try:
        if x[0] > 0:
            x = x * 2.0
    except ValueError:
        pass
    return x


counter = 0


def global_in_tensor_loop(x):
    global counter
    while ag.reduce_sum(x) > 1:
        x = x * 0.5
        counter = counter + 1
    return x


def undefined_variable_used(x):
    if x[0] > 0:
        z = 1.0
    return x * missing_name  # noqa: F821


def bool_of_tensor_outside_conversion(x):
    return bool(x[0] > 0)


def test_variable_set_in_one_branch():
    with pytest.raises(ag.ConversionError) as info:
        ag.function(set_in_one_branch)(f32(1))
    message = str(info.value)
    assert "'y' is assigned in only the true branch" in message
    assert f"test_errors.py:{line_of(set_in_one_branch, 'if x[0]')}" in message


def test_branch_dtype_mismatch_names_variable_dtypes_and_line():
    with pytest.raises(ag.ConversionError) as info:
        ag.function(dtype_differs_between_branches)(f32(1))
    message = str(info.value)
    assert "'y' has dtype float32 in the true branch and int32 in the false branch" in message
    assert f"test_errors.py:{line_of(dtype_differs_between_branches, 'if x[0]')}" in message


def test_loop_dtype_change_names_variable():
    with pytest.raises(ag.ConversionError) as info:
        ag.function(dtype_changes_in_loop)(f32(1))
    message = str(info.value)
    assert "loop variable 'x' changes dtype from float32 to int64" in message
    assert f"test_errors.py:{line_of(dtype_changes_in_loop, 'while')}" in message


def test_generator_is_rejected_with_line():
    with pytest.raises(ag.ConversionError, match=rf"generator \(`yield`\).*test_errors.py:{line_of(generator, 'yield')}"):
        ag.function(generator)(f32(1))


def test_try_around_tensor_control_flow():
    with pytest.raises(ag.ConversionError, match=rf"inside a `try` block.*test_errors.py:{line_of(try_around_tensor_if, 'if x')}"):
        ag.function(try_around_tensor_if)(f32(1))


def test_global_rebinding_in_tensor_loop():
    with pytest.raises(ag.ConversionError, match=rf"rebinds global/nonlocal counter.*test_errors.py:{line_of(global_in_tensor_loop, 'while')}"):
        ag.function(global_in_tensor_loop)(f32(4))


def test_name_error_points_at_user_line():
    with pytest.raises(NameError) as info:
        ag.function(undefined_variable_used)(f32(1))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"test_errors.py:{line_of(undefined_variable_used, 'missing_name')}" in notes


def test_source_unavailable_is_named():
    namespace = {}
    exec("def made_in_exec(x):\n    return x\n", {"ag": ag}, namespace)
    with pytest.raises(ag.ConversionError, match=r"cannot convert made_in_exec.*source is not available"):
        ag.function(namespace["made_in_exec"])(f32(1))


@cpu_only("numpy raises for an index out of range; cupy's indexing does not check")
def test_runtime_error_names_user_line():
    def index_out(x, i):
        return x[i] * 2.0
    f = ag.function(index_out)
    with pytest.raises(IndexError) as info:
        f(f32(1, 2), np.int64(5))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"test_errors.py:{line_of(index_out, 'return')}" in notes
