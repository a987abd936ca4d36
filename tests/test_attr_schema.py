"""Every op declares its attrs with types from the closed set in runtime/opdef.py, and a node
holding an undeclared attr or a value of another type is refused when it is built."""
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.runtime import opdef
from autograph_lite.runtime.graph import Graph, Node, Slot
from autograph_lite.runtime.opdef import REGISTRY, STRUCTURAL, AttrError, AttrType, check_attrs


def _kernel_attrs(kernel):
    params = list(inspect.signature(kernel).parameters.values())[1:]  # after xp
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_op_declares_the_attrs_its_kernel_takes(name):
    op = REGISTRY[name]
    assert isinstance(op.attrs, dict)
    assert all(isinstance(t, AttrType) for t in op.attrs.values()), op.attrs
    assert set(op.attrs) == _kernel_attrs(op.kernel), (
        f"{name}: declared {sorted(op.attrs)}, kernel takes {sorted(_kernel_attrs(op.kernel))}")


def test_structural_ops_declare_their_attrs_and_have_no_kernel():
    assert set(STRUCTURAL) == {"Placeholder", "Const", "Cond", "While"}
    assert not set(STRUCTURAL) & set(REGISTRY)
    for schema in STRUCTURAL.values():
        assert all(isinstance(t, AttrType) for t in schema.values())


def _graph_with_input():
    graph = Graph("g")
    x = graph.placeholder((3,), np.float64, name="x", argument="x")
    graph.inputs = [x]
    return graph, x


def test_an_undeclared_attr_is_refused_naming_op_and_attr():
    graph, x = _graph_with_input()
    with pytest.raises(AttrError, match=r"op Tanh has no attr 'axis' \(it declares none\) \(node 'Tanh' created at"):
        graph.add_node("Tanh", [x], {"axis": 0}, [((3,), np.float64)])
    with pytest.raises(AttrError, match=r"op Sum has no attr 'axes' \(it declares \['axis', 'keepdims'\]\)"):
        Node(graph, "Sum", "s", [x], {"axes": 0}, "f.py:1")


@pytest.mark.parametrize("op, attrs, expected", [
    ("Sum", {"axis": 1.5}, r"attr 'axis' of op Sum must be int \| tuple\[int, \.\.\.\] \| None, got float 1\.5"),
    ("Sum", {"axis": [0]}, r"attr 'axis' of op Sum must be .*, got list \[0\]"),
    ("Sum", {"keepdims": 1}, r"attr 'keepdims' of op Sum must be bool, got int 1"),
    ("Cast", {"dtype": np.float32}, r"attr 'dtype' of op Cast must be dtype, got type"),
    ("StridedSlice", {"index": (object(),)}, r"attr 'index' of op StridedSlice must be tuple\[int \| None"),
    ("StridedSlice", {"index": (slice(0, 1.5),)}, r"attr 'index' of op StridedSlice"),
    ("Const", {"value": np.array([None])}, r"attr 'value' of op Const must be scalar \| array, got ndarray"),
    ("Cond", {"then_branch": "g", "else_branch": None}, r"attr 'then_branch' of op Cond must be graph, got str"),
    ("Print", {"template": ["a"], "sep": " ", "end": "\n"}, r"attr 'template' of op Print must be tuple"),
])
def test_a_value_of_another_type_is_refused(op, attrs, expected):
    graph, x = _graph_with_input()
    with pytest.raises(AttrError, match=expected):
        Node(graph, op, "n", [x], attrs, "f.py:1")


def test_an_unknown_op_is_refused():
    graph, x = _graph_with_input()
    with pytest.raises(AttrError, match=r"a node of unknown op 'NoSuchOp' was built \(node 'n' created at f.py:7\)"):
        Node(graph, "NoSuchOp", "n", [x], {}, "f.py:7")


def test_attrs_of_traced_nodes_have_their_declared_types():
    # one trace holding each structured attr: index with tensor slots, print template, Cond, While
    @ag.function
    def f(x, n):
        y = x[1:n] * 2.0
        print("y", y, f"n={n}")
        while ag.reduce_sum(y) < 100.0:
            y = y * 2.0
        if ag.reduce_max(y, axis=0, keepdims=True)[0] > 0:
            y = ag.reshape(y, (-1,)) + 1.0
        return ag.cast(y, np.float32)

    graph = f.get_concrete_function(ag.TensorSpec([None], np.float64), ag.TensorSpec([], np.int64)).graph
    seen = set()
    for node in graph.walk():
        check_attrs(node.op, node.attrs)
        seen.add(node.op)
    assert {"StridedSlice", "Print", "While", "Cond", "Max", "Cast", "Const"} <= seen
    index = next(n for n in graph.walk() if n.op == "StridedSlice").attrs["index"]
    assert type(index[0]) is slice and isinstance(index[0].stop, Slot)


def test_schema_types_describe_themselves():
    assert repr(opdef.SHAPE) == "tuple[int | None, ...]"
    assert repr(opdef.REGISTRY["StackPop"].attrs["specs"]) == "tuple[tuple[tuple[int | None, ...], dtype], ...]"


def test_user_values_become_the_canonical_attr_types():
    # a list axis, numpy ints in a slice: traced as the tuple and ints the schema declares
    @ag.function
    def f(x):
        return ag.squeeze(x, axis=[0, 2]), x[0, np.int64(1):np.int32(3), 0], ag.reduce_sum(x, axis=[1, 2])

    x = np.arange(4.0).reshape(1, 4, 1)
    for got, want in zip(f(x), (np.squeeze(x, axis=(0, 2)), x[0, 1:3, 0], np.sum(x, axis=(1, 2)))):
        np.testing.assert_array_equal(got, want)
    nodes = {n.op: n.attrs for n in f.get_concrete_function(x).graph.walk()}
    assert nodes["Squeeze"]["axis"] == (0, 2)
    assert nodes["StridedSlice"]["index"][1] == slice(1, 3, None)
    assert type(nodes["StridedSlice"]["index"][1].stop) is int
