"""Tensor loops whose variables change rank run as Python when the graph runs (issue 24).

A `while`/`for` on a tensor whose body cannot be traced with static ranks is one PythonLoop
node: each call runs the loop's code on the call's values, eagerly, so results, boxes, prints,
draws and errors are eager's. What the function does later with what the loop leaves (operators,
methods, numpy and ag calls, `if`/`while`/`for` on it, `return` inside the loop) runs when the
graph runs too; what needs the value while tracing is refused at its line. Each test compares
with the eager run of the same function.
"""
import contextlib
import inspect
import io
import threading

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import assert_identical, force_native


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _run(fn, args, seed):
    np.random.seed(seed)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            return "ok", fn(*args), out.getvalue()
    except Exception as e:  # noqa: BLE001 - the eager run's error is the oracle
        return "raised", e, out.getvalue()


def same_as_eager(fn, *argument_tuples, traces=1):
    """`fn` compiled once gives eager's results (types, boxes, dtypes, bits), prints and error types
    for each argument tuple (fresh copies for each run); returns the Function."""
    compiled = ag.function(fn)
    for args in argument_tuples:
        fresh = lambda: [a.copy() if isinstance(a, np.ndarray) else a for a in args]  # noqa: E731
        eager, got = _run(fn, fresh(), 0), _run(compiled, fresh(), 0)
        assert got[0] == eager[0], f"{args}: eager {eager[1]!r}, compiled {got[1]!r}"
        if eager[0] == "ok":
            assert_identical(eager[1], got[1])
        else:
            assert type(got[1]) is type(eager[1]), f"{args}: eager {eager[1]!r}, compiled {got[1]!r}"
        assert got[2] == eager[2]
    assert compiled.trace_count == traces
    return compiled


# --- variables first created inside the loop, of a rank the iteration decides ----------------

def creates_variable_of_dynamic_rank(n):
    i = 0
    while i < n:
        v = ag.zeros(ag.range(i))
        i += 1
    return v


def creates_dict_of_dynamic_rank(n):
    i = 0
    while i < n:
        v = {"a": ag.ones(ag.range(i)), "b": np.ones([1, 2, 3])}
        i += 1
    return v["a"], v["b"]


@pytest.mark.parametrize("fn", [creates_variable_of_dynamic_rank, creates_dict_of_dynamic_rank])
def test_variable_created_in_the_loop(fn):
    # n = 0: eager's UnboundLocalError at the read after the loop; 1: a 0-d array; 2, 3: ranks 1, 2
    same_as_eager(fn, *[(np.array(n),) for n in (0, 1, 2, 3)])


def test_the_loop_is_one_python_loop_node():
    compiled = ag.function(creates_dict_of_dynamic_rank)
    compiled(np.array(2))
    graph = compiled.get_concrete_function(np.array(2)).graph
    assert [n.op for n in graph.nodes].count("PythonLoop") == 1
    assert [n.op for n in graph.nodes].count("DeferredCall") == 2  # v["a"], v["b"], when the graph runs


# --- loop variables that change rank ------------------------------------------------------------

def grows_in_a_range_loop(n, x):
    for i in range(n):
        x = x[None] * 0.5
        print("step", i, x.shape)
    return x


def grows_in_an_ag_range_loop(n, x):
    for i in ag.range(n):
        x = np.expand_dims(x, 0) + i
    return x, i


def grows_under_a_tensor_if(n, x):
    i = 0
    while i < n:
        if x.sum() > 0:
            x = x[None]
        i += 1
    return x


def grows_until_break(n, x):
    for i in ag.range(n):
        if i > 2:
            break
        x = x[None]
    return x


def test_rank_grows_in_a_for_loop_with_prints():
    same_as_eager(grows_in_a_range_loop, (np.array(0), np.arange(3.0)), (np.array(3), np.arange(3.0)))


def test_rank_grows_in_an_ag_range_loop():
    # the counter's type is eager's too: numpy int64 items of ag.range; n = 0 leaves `i` unbound
    same_as_eager(grows_in_an_ag_range_loop, (np.array(0), np.arange(3.0)), (np.array(2), np.arange(3.0)))


def test_rank_differs_between_the_branches_of_an_if_in_the_loop():
    same_as_eager(grows_under_a_tensor_if, (np.array(2), np.arange(3.0)), (np.array(2), -np.arange(3.0)))


def test_rank_grows_until_a_break():
    same_as_eager(grows_until_break, (np.array(5), np.arange(3.0)), (np.array(1), np.arange(3.0)))


def keeps_a_numpy_scalar_box(n, s):
    i = 0
    v = s
    while i < n:
        v = v * 2 if i % 2 else np.reshape(v, (1,) * i)
        i += 1
    return v


def test_boxes_are_eagers():
    # a numpy scalar in, a numpy scalar, a 0-d array or a 2-d array out by the number of iterations
    same_as_eager(keeps_a_numpy_scalar_box, (np.array(0), np.float64(2.0)), (np.array(2), np.float64(2.0)),
                  (np.array(3), np.float64(2.0)))


# --- what the loop reads: closures, tensors computed before it, other loops -------------------

def reads_a_closure_over_a_tensor(n, x):
    s = x.sum() * 2

    def scale(a):
        return a * s
    i = 0
    y = x
    while i < n:
        y = scale(y)[None]
        i += 1
    return y


def test_closures_see_each_calls_values():
    # one trace; each run rebuilds the loop's functions with that run's value of `s`
    same_as_eager(reads_a_closure_over_a_tensor, (np.array(2), np.arange(3.0)), (np.array(1), np.ones(3)),
                  (np.array(0), np.ones(3)))


OFFSET = np.arange(3.0)


class Model:
    def __init__(self):
        self.W = np.ones(3)

    def grow(self, n, x):
        i = 0
        while i < n:
            x = (x * self.W + OFFSET)[None]
            i += 1
        return x


def test_globals_and_attributes_are_read_on_every_call(monkeypatch):
    model = Model()
    compiled = ag.function(model.grow)
    for k in range(3):
        monkeypatch.setattr(f"{__name__}.OFFSET", np.arange(3.0) * (k + 1))
        model.W = np.full(3, float(k))
        assert_identical(model.grow(np.array(2), np.ones(3)), compiled(np.array(2), np.ones(3)))
    assert compiled.trace_count == 1


def nested_in_a_tensor_loop(n, m):
    j = 0
    out = []
    while j < m:
        i = 0
        while i < n:
            v = ag.zeros(ag.range(i))
            i += 1
        out.append(v)
        j += 1
    return out


def test_a_loop_around_it_runs_as_python_too():
    # the outer loop appends what the inner one gives: it runs as Python as well; inner n = 0 raises
    same_as_eager(nested_in_a_tensor_loop, (np.array(2), np.array(3)), (np.array(3), np.array(0)),
                  (np.array(0), np.array(2)))


def draws_of_growing_rank(n):
    i = 0
    v = np.zeros(())
    while i < n:
        v = np.random.standard_normal(ag.range(i) + 1)
        i += 1
    return v


def test_draws_advance_the_global_generator_as_eagerly():
    same_as_eager(draws_of_growing_rank, (np.array(3),), (np.array(1),))
    compiled = ag.function(draws_of_growing_rank)
    np.random.seed(5)
    first, second = compiled(np.array(2)), compiled(np.array(2))
    np.random.seed(5)
    assert_identical(draws_of_growing_rank(np.array(2)), first)
    assert_identical(draws_of_growing_rank(np.array(2)), second)


def prints_what_the_loop_left(n):
    i = 0
    v = np.zeros(())
    while i < n:
        v = ag.zeros(ag.range(i))
        i += 1
    print("v is", v, f"{v!r} of {n}")
    return v


def test_print_after_the_loop():
    same_as_eager(prints_what_the_loop_left, (np.array(0),), (np.array(2),))


def test_concurrent_calls_do_not_share_the_loops_state():
    compiled = ag.function(reads_a_closure_over_a_tensor)
    compiled(np.array(1), np.ones(2))
    failures = []

    def worker(k):
        for _ in range(50):
            x = np.full(2, float(k))
            got, want = compiled(np.array(k % 3), x), reads_a_closure_over_a_tensor(np.array(k % 3), x)
            if got.shape != want.shape or not np.array_equal(got, want):
                failures.append((k, got, want))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_native_code_leaves_the_loop_python(monkeypatch):
    force_native(monkeypatch)
    monkeypatch.setenv("AG_NATIVE", "always")
    same_as_eager(reads_a_closure_over_a_tensor, *[(np.array(n), np.arange(3.0)) for n in (0, 1, 2, 2, 1)])


# --- what the function does later with what the loop left -------------------------------------

def grown(n, x):
    i = 0
    while i < n:
        x = x[None]
        i += 1
    return x


def computes_on_what_the_loop_left(n, x):
    v = grown(n, x)
    shape = v.shape
    plus = v + 1
    mixed = x * 2 + v
    sums = np.sum(v) + ag.reduce_sum(v)
    types = isinstance(v, np.ndarray), type(v) is np.float64, len(v) if v.ndim else -1
    first = v[0] if v.ndim else v
    nones = v is None, v is not None
    v = v * 3
    v += 1
    return shape, plus, mixed, sums, types, first, nones, v


def branches_and_loops_on_what_the_loop_left(n, x):
    v = grown(n, x)
    if v.ndim > 2:
        y = v.sum()
    else:
        y = -x
    while v.ndim < 4:
        v = v[None]
    total = 0.0
    for row in v:
        total = total + row.sum()
    k = 0
    for j in range(len(v)):
        k += j
    flag = v.ndim > 1 and x.sum() > 0
    other = v.ndim > 5 or 7
    return y, v.shape, total, k, flag, other, (1 if v.ndim > 3 else 2), not v.ndim > 1


def stores_into_what_the_loop_left(n, x):
    v = grown(n, x).copy()
    v[..., 0] = 5
    v[..., 1] += 2
    return v


def returns_inside_the_loop(n, x):
    i = 0
    while i < n:
        x = x[None]
        if x.ndim > 2:
            return x
        i += 1
    return -x


def mixes_it_with_tensors(n, x):
    v = grown(n, x)
    s = x.sum()
    s += v.sum()  # a numpy scalar: `+=` rebinds, as eagerly
    return x[:len(v)], x.reshape(v.shape), x[v.ndim - 1], np.where(x > 0, v.sum(), x), np.maximum(x, v), s


@pytest.mark.parametrize("fn", [computes_on_what_the_loop_left, branches_and_loops_on_what_the_loop_left,
                                stores_into_what_the_loop_left, returns_inside_the_loop, mixes_it_with_tensors])
def test_what_the_loop_left_is_computed_on_when_the_graph_runs(fn):
    same_as_eager(fn, *[(np.array(n), np.arange(3.0) - 1) for n in (0, 1, 2, 3)])


# --- what is refused, clearly -----------------------------------------------------------------

def writes_an_argument_in_place(n, x):
    i = 0
    v = np.zeros(())
    while i < n:
        x[0] += 1
        v = ag.zeros(ag.range(i))
        i += 1
    return v


def test_an_in_place_write_to_an_array_it_was_given_raises_when_it_runs():
    x = np.arange(3.0)
    with pytest.raises(ConversionError, match=rf"while loop at .*test_dynamic_rank_loops.py:"
                                              rf"{line_of(writes_an_argument_in_place, 'while')} .*writes in place"):
        ag.function(writes_an_argument_in_place)(np.array(2), x)
    assert np.array_equal(x, np.arange(3.0))  # nothing was written


def unpacks_what_the_loop_left(n):
    i = 0
    v = np.zeros((2,))
    while i < n:
        v = ag.zeros(ag.range(i) + 2)
        i += 1
    a, *rest = v
    return a


def test_uses_needing_the_value_while_tracing_are_refused_at_their_line():
    fn = unpacks_what_the_loop_left
    with pytest.raises(ConversionError, match=rf"'v' comes from the loop on a tensor at .*:{line_of(fn, 'while')}"
                                              rf".*at .*test_dynamic_rank_loops.py:{line_of(fn, 'a, *rest')}"):
        ag.function(fn)(np.array(2))


def grows(x, n):
    i = 0
    v = x
    while i < n:
        v = v[None] * 2.0
        i += 1
    return v


def writes_it_into_an_array_of_the_graph(n, x):
    v = grown(n, x)
    y = x * 2.0
    y[0] = v.sum()
    return y


def test_writing_it_into_an_array_of_the_graph_is_refused():
    fn = writes_it_into_an_array_of_the_graph
    with pytest.raises(ConversionError, match=rf"x.sum\(\) comes from the loop on a tensor at .*:"
                                              rf"{line_of(grown, 'while')}.*written in place with it \(at "
                                              rf".*test_dynamic_rank_loops.py:{line_of(fn, 'y[0] =')}\)"):
        ag.function(fn)(np.array(1), np.arange(3.0))


def test_gradient_save_and_export_are_refused(tmp_path):
    with pytest.raises(ConversionError, match=r"ag.grad cannot differentiate grows: .*runs as Python"):
        ag.grad(grows)(np.ones(3), np.array(2))
    compiled = ag.function(grows)
    compiled(np.ones(3), np.array(2))
    with pytest.raises(ValueError, match=r"ag.save: grows runs the loop on a tensor at .* as Python"):
        ag.save(compiled, str(tmp_path / "grows.agz"))
    pytest.importorskip("onnx")
    with pytest.raises(ConversionError, match=r"cannot export PythonLoop node .* ONNX cannot hold"):
        ag.export_onnx(compiled.get_concrete_function(np.ones(3), np.array(2)), str(tmp_path / "grows.onnx"))
