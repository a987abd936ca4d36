"""@ag.function: the retracing cache, input_signature, reduce_retracing, outputs, threads."""
import collections
import logging
import threading

import numpy as np
import pytest

import autograph_lite as ag
from helpers import assert_same


def counting(fn=None, **kwargs):
    """A compiled function plus a list that records each trace."""
    traces = []
    note = ag.do_not_convert(lambda: traces.append(1))  # runs while tracing only, as the trace counter

    def wrap(f):
        def body(*args, **kw):
            note()
            return f(*args, **kw)
        body.__name__ = f.__name__
        body.__signature__ = __import__("inspect").signature(f)
        return ag.function(body, **kwargs), traces
    return wrap(fn) if fn else wrap


def test_one_trace_per_shape_and_dtype():
    f, traces = counting(lambda x: x * 2)
    a = np.ones(3, np.float32)
    f(a); f(a + 1); f(np.zeros(3, np.float32))
    assert f.trace_count == 1 == len(traces)
    f(np.ones(4, np.float32))                     # new shape
    f(np.ones(3, np.float64))                     # new dtype
    f(np.ones((3, 1), np.float32))                # new rank
    assert f.trace_count == 4
    f(np.ones(4, np.float32))
    assert f.trace_count == 4


def test_python_scalars_key_by_value():
    @ag.function
    def f(x, n):
        return x * n
    x = np.ones(2, np.float32)
    assert_same(x * 3, f(x, 3))
    f(x, 3)
    assert f.trace_count == 1
    assert_same(x * 4, f(x, 4))
    assert_same(x * 3.0, f(x, 3.0))   # float 3.0 is not int 3
    assert_same(x * True, f(x, True))
    assert f.trace_count == 4


def test_strings_and_none_key_by_value():
    @ag.function
    def f(x, mode, bias=None):
        y = ag.tanh(x) if mode == "tanh" else ag.exp(x)
        return y if bias is None else y + bias
    x = np.linspace(-1, 1, 5)
    assert_same(np.tanh(x), f(x, "tanh"))
    assert_same(np.exp(x), f(x, "exp"))
    assert_same(np.exp(x) + 1, f(x, "exp", bias=1))
    f(x, mode="tanh")  # same key as f(x, "tanh") once canonicalized
    assert f.trace_count == 3


def test_containers_key_by_structure_and_contents():
    @ag.function
    def f(xs):
        return xs[0] + xs[1]
    a, b = np.ones(2), np.ones(2)
    f([a, b]); f([a + 1, b])
    assert f.trace_count == 1
    f((a, b))                       # tuple vs list
    assert f.trace_count == 2
    f([a, np.ones(3)[:2].astype(np.float32)])  # contents: dtype
    assert f.trace_count == 3

    @ag.function
    def g(d):
        return d["w"] * d["scale"]
    g({"w": a, "scale": 2}); g({"w": b, "scale": 2})
    assert g.trace_count == 1
    g({"w": a, "scale": 3})
    assert g.trace_count == 2


def test_objects_key_by_identity():
    class Config:
        def __init__(self, k):
            self.k = k

    @ag.function
    def f(x, cfg):
        return x * cfg.k
    c1, c2 = Config(2.0), Config(2.0)
    x = np.ones(2)
    f(x, c1); f(x, c1)
    assert f.trace_count == 1
    assert_same(x * 2, f(x, c2))
    assert f.trace_count == 2


def test_methods_trace_per_instance():
    class Model:
        def __init__(self, w):
            self.w = w

        @ag.function
        def __call__(self, x):
            return ag.matmul(x, self.w)
    m1, m2 = Model(np.eye(2)), Model(2 * np.eye(2))
    x = np.ones((1, 2))
    assert_same(x, m1(x))
    assert_same(2 * x, m2(x))
    assert Model.__call__.trace_count == 2


def test_input_signature_with_none_dims_traces_once():
    @ag.function(input_signature=[ag.TensorSpec([None, 3], np.float32)])
    def f(x):
        return ag.reduce_sum(x, axis=0)
    for n in (1, 2, 7):
        x = np.ones((n, 3), np.float32)
        assert_same(x.sum(0), f(x))
    assert f.trace_count == 1
    assert f.get_concrete_function().graph.inputs[0].shape == (None, 3)


def test_input_signature_converts_python_numbers():
    @ag.function(input_signature=[ag.TensorSpec([], np.float32)])
    def f(x):
        return x * 2
    out = f(1.5)
    assert out.dtype == np.float32 and out == 3.0


@pytest.mark.parametrize("bad, why", [
    (np.ones((2, 4), np.float32), r"dim 1 is 4, expected 3"),
    (np.ones((2, 3), np.float64), r"dtype float64 is not float32"),
    (np.ones(3, np.float32), r"rank 1 is not 2"),
    ("text", r"got str 'text', not an array"),
])
def test_signature_mismatch_is_a_type_error_naming_argument_and_caller(bad, why):
    @ag.function(input_signature=[ag.TensorSpec([None, 3], np.float32), ag.TensorSpec([], np.int32)])
    def f(x, n):
        return x * n
    with pytest.raises(TypeError) as info:
        f(bad, np.int32(2))
    message = str(info.value)
    assert "argument 'x'" in message and "TensorSpec(shape=(None, 3), dtype=float32)" in message
    assert __import__("re").search(why, message), message
    assert "(called at " in message and "test_function.py:" in message


def test_signature_error_points_at_the_calling_line():
    @ag.function(input_signature=[ag.TensorSpec([2], np.float32)])
    def f(x):
        return x
    import inspect
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(TypeError, match=rf"test_function.py:{line}\)"):
        f(np.ones(3, np.float32))


def test_signature_argument_count():
    @ag.function(input_signature=[ag.TensorSpec([2])])
    def f(x, y=1):
        return x
    with pytest.raises(TypeError, match=r"argument 'y' is not covered by its input_signature \(1 arguments\)"):
        f(np.ones(2, np.float32), 3)
    assert f(np.ones(2, np.float32)).shape == (2,)  # y takes its default


def test_reduce_retracing_generalizes_shapes():
    f, traces = counting(lambda x: ag.reduce_sum(x * 2, axis=-1), reduce_retracing=True)
    f(np.ones((2, 3)))
    f(np.ones((4, 3)))             # retrace once with (None, 3)
    for n in (5, 6, 7):
        assert_same(np.full(n, 6.0), f(np.ones((n, 3))))
    assert f.trace_count == 2
    assert f.get_concrete_function(np.ones((9, 3))).graph.inputs[0].shape == (None, 3)
    f(np.ones((4, 5)))             # (None, None) now
    f(np.ones((8, 1)))
    assert f.trace_count == 3
    f(np.ones((2, 3), np.float32))  # dtype never generalizes
    assert f.trace_count == 4


def test_get_concrete_function_with_specs_is_reused():
    @ag.function
    def f(x):
        return x + 1
    cf = f.get_concrete_function(ag.TensorSpec([None], np.float64))
    assert_same(np.arange(3.0) + 1, cf(np.arange(3.0)))
    f(np.arange(5.0))                         # fits the traced spec: no new trace
    assert f.trace_count == 1
    with pytest.raises(TypeError, match="argument 'x'"):
        cf(np.arange(3, dtype=np.int32))
    assert "x:0" in str(cf.graph) and "float64[?]" in str(cf.graph)


def test_output_structure_is_kept():
    Pair = collections.namedtuple("Pair", "a b")

    def fn(x):
        return {"sum": x.sum(), "parts": [x * 2, (x, None)], "pair": Pair(x[0], 3), "name": "ok", "n": 7}
    x = np.arange(3.0)
    eager, compiled = fn(x), ag.function(fn)(x)
    assert_same({k: v for k, v in eager.items() if k != "pair"}, {k: v for k, v in compiled.items() if k != "pair"})
    assert type(compiled["pair"]) is Pair and compiled["pair"].b == 3 and type(compiled["pair"].b) is int
    assert compiled["n"] == 7 and type(compiled["n"]) is int


def test_outputs_are_not_aliased_constants():
    @ag.function
    def f(x):
        return x, np.zeros(2)
    out1 = f(np.ones(1))[1]
    out1 += 5
    assert_same(np.zeros(2), f(np.ones(1))[1])


def test_nested_compiled_function_is_inlined():
    @ag.function
    def inner(x):
        return x * 2

    @ag.function
    def outer(x):
        return inner(x) + 1
    assert_same(np.arange(3.0) * 2 + 1, outer(np.arange(3.0)))
    assert inner.trace_count == 0 and outer.trace_count == 1


def test_python_function_and_wrapping():
    def square(x):
        """Squares."""
        return x * x
    f = ag.function(square)
    assert f.python_function is square and f.__name__ == "square" and f.__doc__ == "Squares."


def test_runtime_failure_names_node_and_user_line():
    @ag.function(input_signature=[ag.TensorSpec([None]), ag.TensorSpec([None])])
    def f(a, b):
        return a + b   # shapes only meet when the graph runs
    with pytest.raises(ValueError) as info:
        f(np.ones(2, np.float32), np.ones(3, np.float32))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "Add" in notes and "test_function.py:" in notes


def test_retrace_logging(monkeypatch, caplog):
    monkeypatch.setenv("AG_LOG_RETRACES", "1")

    @ag.function
    def f(x):
        return x
    with caplog.at_level(logging.WARNING, logger="autograph_lite"):
        f(np.ones(2)); f(np.ones(3))
    assert "argument 'x' changed shape: (2,) -> (3,)" in caplog.text


def test_threads_with_mixed_signatures_trace_each_once():
    barrier = threading.Barrier(8)
    f, traces = counting(lambda x: ag.tanh(x) * 2)
    inputs = [np.full(n % 3 + 1, float(n), np.float32 if n % 2 else np.float64) for n in range(8)]
    errors = []

    def worker(i):
        barrier.wait()
        for j in range(50):
            x = inputs[(i + j) % 8]
            try:
                assert_same(np.tanh(x) * 2, f(x))
            except Exception as e:  # pragma: no cover - reported below
                errors.append(e)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    signatures = {(x.shape, x.dtype) for x in inputs}
    assert f.trace_count == len(signatures) == len(traces)
