"""Nothing a user passes in is written into generated source as text.

Hostile values: types whose `__repr__` runs code, numpy scalars whose repr is not valid
source in the plan's namespace, and names, strings, dict keys and file names holding
newlines and quotes. Each compiled run must equal the eager run, run no user `__repr__`,
and leave every comment of the generated plan on one line.
"""
import builtins
import importlib.util

import numpy as np
import pytest

import autograph_lite as ag
from helpers import assert_same, run_both

X = np.arange(6, dtype=np.float32).reshape(2, 3)
NASTY = "k'\"\n)#\\ \r\x00 \u2028 end"


class HostileInt(int):
    """An int whose repr and str would run code, and whose text is not even its value."""

    def __repr__(self):
        builtins._ag_injection_marker = True
        return "__import__('builtins').__setattr__('_ag_injection_marker', True) or 0"

    __str__ = __repr__


class HostileFloat(float):
    def __repr__(self):
        builtins._ag_injection_marker = True
        return "0.0"

    __str__ = __repr__


@pytest.fixture(autouse=True)
def no_marker():
    builtins.__dict__.pop("_ag_injection_marker", None)
    yield
    assert not hasattr(builtins, "_ag_injection_marker"), "a user __repr__ ran"


def plan_source(function, *args):
    return function.get_concrete_function(*args).plan.source


def assert_one_line_comments(source):
    compile(source, "<check>", "exec")
    for line in source.splitlines():
        assert line.isprintable(), repr(line)


@pytest.mark.parametrize("axis", [np.int64(0), np.int32(1), np.intp(-1), np.uint8(1), HostileInt(1)])
def test_reduction_axis_of_any_integer_type(axis):
    run_both(lambda x: ag.reduce_sum(x, axis=axis), X)
    run_both(lambda x: ag.reduce_max(x, axis=axis, keepdims=np.True_), X)


def test_axis_tuple_and_perm_of_numpy_and_subclassed_ints():
    run_both(lambda x: ag.reduce_sum(x, axis=(np.int64(0), HostileInt(1))), X)
    run_both(lambda x: ag.transpose(x, (HostileInt(1), np.int64(0))) * 2.0, X)
    run_both(lambda x: ag.concat([x, x], np.int64(1)), X)
    run_both(lambda x: ag.stack([x, x], axis=HostileInt(0)), X)
    run_both(lambda x: ag.expand_dims(x, np.int16(0)), X)


def test_scalar_constants_of_subclassed_python_types():
    run_both(lambda x: x * HostileInt(3) + HostileFloat(0.5), X)
    run_both(lambda x: (x - HostileInt(2)) ** HostileInt(2), X)


@pytest.mark.parametrize("value", [np.float32(0.5), np.float64(-0.0), np.int64(-3), np.uint8(200),
                                   np.float32("nan"), float("inf"), float("-inf"), -0.0, 2 ** 70])
def test_scalar_constants_of_numpy_and_special_values(value):
    a = X.astype(np.float64) - 2.5
    run_both(lambda x: x * value, a)
    run_both(lambda x: x + value, X)


def test_negative_literal_keeps_its_sign_under_power():
    run_both(lambda x: (-2) ** x, np.array([2.0, 3.0]))
    run_both(lambda x: (-2.5) ** x, np.array([2.0, 4.0]))


def test_strings_and_dict_keys_with_newlines_and_quotes():
    def f(d, s):
        ag.print(s, d[NASTY])
        return {s: d[NASTY] * 2, "n": len(s)}

    run_both(f, {NASTY: X}, NASTY)
    compiled = ag.function(f)
    assert_one_line_comments(plan_source(compiled, {NASTY: X}, NASTY))
    graph = compiled.get_concrete_function({NASTY: X}, NASTY).graph
    assert all(line.isprintable() for line in str(graph).splitlines())


def test_function_name_with_newline_and_quotes():
    def f(x):
        if ag.reduce_sum(x) > 0:
            y = x * 2.0
        else:
            y = -x
        return y

    f.__name__ = f.__qualname__ = 'f"\n)\'#'
    compiled = ag.function(f)
    assert_same(f(X), compiled(X))
    assert_same(f(-X), compiled(-X))
    concrete = compiled.get_concrete_function(X)
    assert all(line.isprintable() for line in str(concrete.graph).splitlines())
    dot = concrete.graph.to_dot()
    assert '"f\\"\\n)\'#"' in dot.splitlines()[0]


def _load_module(tmp_path, filename, source):
    path = tmp_path / filename
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("hostile_module", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOSTILE_SOURCE = '''
import autograph_lite as ag

def g(x, n):
    if ag.reduce_sum(x) > 0:
        y = x * 2
    else:
        y = x - 1
    i = 0
    while i < n:
        y = y + 1
        i += 1
    return y
'''


def test_file_name_with_newline_and_quotes(tmp_path):
    module = _load_module(tmp_path, 'evil"\nname\'\r).py', HOSTILE_SOURCE)
    compiled = ag.function(module.g)
    n = np.int64(3)
    assert_same(module.g(X, n), compiled(X, n))
    assert_same(module.g(-X, n), compiled(-X, n))
    source = plan_source(compiled, X, n)
    assert "# Cond at evil\"\\nname'\\r).py:5" in source
    assert_one_line_comments(source)
    graph = compiled.get_concrete_function(X, n).graph
    assert all(line.isprintable() for line in str(graph).splitlines())


def test_dot_labels_are_quoted():
    def f(x):
        return x * 2.0

    f.__name__ = f.__qualname__ = 'a"b<c>\\'
    dot = ag.function(f).get_concrete_function(X).graph.to_dot()
    assert dot.splitlines()[0] == 'digraph "a\\"b<c>\\\\" {'
