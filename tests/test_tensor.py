"""The symbolic Tensor: what it shows, and the errors for using it as a Python value."""
import numpy as np
import pytest

import autograph_lite as ag


def trace(fn, *args):
    f = ag.function(fn)
    return f.get_concrete_function(*args)


def test_tensor_repr_shape_dtype_name():
    seen = {}
    keep = ag.do_not_convert(lambda t: seen.setdefault("t", t))  # runs while tracing only

    def f(x, y):
        return keep(x * y)
    trace(f, np.ones((), np.float32), np.ones((), np.float32))
    t = seen["t"]
    assert repr(t) == 'Tensor("Mul:0", shape=(), dtype=float32)'
    assert t.shape == () and t.dtype == np.float32 and t.name == "Mul:0"


def test_none_dims_in_shape():
    seen = {}
    keep = ag.do_not_convert(lambda t: seen.setdefault("t", t))  # runs while tracing only

    @ag.function(input_signature=[ag.TensorSpec([None, 4])])
    def f(x):
        return keep(x)
    f.get_concrete_function()
    assert seen["t"].shape == (None, 4) and len(seen["t"].shape) == 2


@pytest.mark.parametrize("use, what", [
    (lambda t: bool(t > 0), "used as a Python bool"),
    (lambda t: len(t), "passed to len()"),
    (lambda t: [v for v in t], "iterated over"),
    (lambda t: float(t[0]), "converted to a Python float"),
    (lambda t: np.asarray(t), "converted to a numpy array"),
])
def test_python_value_misuse_names_argument_and_line(use, what):
    @ag.function(input_signature=[ag.TensorSpec([None])], autograph=False)
    def f(values):
        return use(ag.tanh(values))
    with pytest.raises(ag.SymbolicValueError) as info:
        f.get_concrete_function()
    message = str(info.value)
    assert what in message and "argument 'values'" in message and "test_tensor.py:" in message
    assert isinstance(info.value, TypeError)


def test_len_of_known_dim_is_allowed():
    assert ag.function(lambda x: x * len(x))(np.ones(3))[0] == 3.0


def test_graph_printer_shows_op_inputs_types_and_lines():
    def f(x):
        return ag.reduce_sum(ag.tanh(x) * 2.0, axis=0)
    text = str(trace(f, np.ones((2, 3), np.float32)).graph)
    assert "graph f(%x:0: float32[2,3])" in text
    assert "%Tanh:0 = Tanh(%x:0) : float32[2,3]  # test_tensor.py:" in text
    assert "Sum(%Mul:0) {axis=0, keepdims=False} : float32[3]" in text
    assert "return %Sum:0" in text


def test_to_dot_has_clusters_for_subgraphs():
    dot = trace(lambda x: ag.cond(x[0] > 0, lambda: x, lambda: -x), np.ones(2)).graph.to_dot()
    assert dot.startswith('digraph "<lambda>"') and "cluster_Cond" in dot and '"Neg' in dot


def test_plan_is_straight_line_python(monkeypatch):
    fn = lambda x, y: ag.tanh(x @ y) + 1.0  # noqa: E731
    monkeypatch.setenv("AG_NATIVE", "off")  # the Python plan alone (no call of a native graph first)
    monkeypatch.setenv("AG_DISABLE_PASSES", "all")
    source = trace(fn, np.ones((2, 2)), np.ones((2, 2))).plan.source
    assert "def plan(a0, a1):" in source and "while" not in source
    assert source.count(" = k") == 2 and " + 1.0)" in source  # MatMul, Tanh calls; Add as `+`
    monkeypatch.delenv("AG_DISABLE_PASSES")
    big = np.ones((300, 300))
    cf = trace(fn, big, big)
    assert cf.plan.source.count(" = k") == 2 and "+" not in cf.plan.source  # MatMul, fused Tanh+Add
    assert "FusedElementwise" in str(cf.optimized_graph) and "Tanh(" in str(cf.graph)


def test_leaked_tensor_is_a_clear_error():
    leaked = {}

    @ag.function
    def f(x):
        leaked["t"] = x * 2  # a write to a closure's dict: refused, naming it
        return x
    with pytest.raises(ag.ConversionError, match="leaked gained item 't'"):
        f(np.ones(2))
    assert leaked == {}
    keep = ag.do_not_convert(lambda t: leaked.setdefault("t", t))  # runs while tracing only

    @ag.function
    def f2(x):
        keep(x * 2)
        return x

    @ag.function
    def g(x):
        return x + leaked["t"]
    f2(np.ones(2))
    with pytest.raises(ValueError, match="belongs to a different trace"):
        g(np.ones(2))
