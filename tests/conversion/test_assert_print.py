"""`assert` on a tensor fails when the graph runs; `print` with tensors prints every run."""
import pytest

import autograph_lite as ag
from helpers import check, f32


def checked_sqrt(x):
    assert ag.reduce_min(x) >= 0, "x must be non-negative"
    return ag.sqrt(x)


def print_each_iteration(x):
    i = 0
    while i < 3:
        print("step", i, x)
        x = x * 2.0
        i += 1
    return x


def print_in_branch(x):
    if x[0] > 0:
        print("positive", x[0])
    else:
        print("not positive")
    return x


def print_python_values(x):
    print("shape is", x.shape, "and that's static")
    return x


def assert_python_value(x, n):
    assert n > 0, "n must be positive"
    return x * n


def assert_inside_loop(x):
    i = 0
    while i < 3:
        assert x[i] < 100, "too big"
        i += 1
    return x


def print_with_sep_end(x):
    print(x[0], x[1], sep=" | ", end=" !\n")
    return x


def assert_without_message(x):
    assert ag.reduce_all(x > 0)
    return x


def test_tensor_assert_passes_and_fails_at_run_time():
    f = check(checked_sqrt, (f32(1, 4),), traces=1)
    line = __import__("inspect").getsourcelines(checked_sqrt)[1] + 1
    with pytest.raises(AssertionError, match=rf"x must be non-negative \(assert at .*test_assert_print.py:{line}\)"):
        f(f32(-1, 4))
    assert f.trace_count == 1


def test_assert_in_loop_and_without_message():
    f = check(assert_inside_loop, (f32(1, 2, 3),), traces=1)
    with pytest.raises(AssertionError, match="too big"):
        f(f32(1, 200, 3))
    g = check(assert_without_message, (f32(1, 2),))
    line = __import__("inspect").getsourcelines(assert_without_message)[1] + 1
    with pytest.raises(AssertionError, match=rf"assertion failed at .*test_assert_print.py:{line}"):
        g(f32(1, -2))


def test_python_assert_fails_while_tracing():
    with pytest.raises(AssertionError, match="n must be positive"):
        ag.function(assert_python_value)(f32(1), 0)


def test_print_every_iteration_when_graph_runs(capsys):
    x = f32(1, 2)
    print_each_iteration(x)
    eager = capsys.readouterr().out
    f = ag.function(print_each_iteration)
    f(x)
    first = capsys.readouterr().out
    f(x)
    second = capsys.readouterr().out
    assert eager == first == second and eager.count("step") == 3


@pytest.mark.parametrize("fn, x", [(print_in_branch, f32(1, 2)), (print_in_branch, f32(-1, 2)),
                                   (print_with_sep_end, f32(3, 4))])
def test_print_matches_eager(fn, x, capsys):
    fn(x)
    eager = capsys.readouterr().out
    f = ag.function(fn)
    f(x)
    assert capsys.readouterr().out == eager


def test_print_of_python_values_prints_on_every_call_as_eager_does(capsys):
    f = ag.function(print_python_values)
    f(f32(1, 2))
    f(f32(1, 2))
    assert capsys.readouterr().out.count("shape is (2,)") == 2
