"""Graphs far past Python's own limits: no walker, pass or renderer recurses per node, and no
generated plan nests expressions past what Python's parser takes (200 levels)."""
import numpy as np

import autograph_lite as ag
from autograph_lite.runtime import devices
from autograph_lite.runtime.graph import Graph, building
from autograph_lite.runtime.interpreter import Interpreter
from autograph_lite.runtime.lowering import Plan
from autograph_lite.runtime.passes import optimize

from helpers import assert_same


def go_fast(a):  # NPBench's go_fast: a sum unrolled from a Python loop, one long chain of adds
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def test_a_long_unrolled_sum_is_not_one_nested_expression():
    a = np.random.default_rng(0).random((400, 400))
    assert_same(go_fast(a), ag.function(go_fast)(a))


def test_a_graph_of_100k_nodes_optimizes_lowers_runs_and_prints():
    graph = Graph("big")
    with building(graph):
        x = graph.placeholder((3,), np.dtype(np.float64), name="x", argument="x")
        graph.inputs = [x]
        y = x
        for i in range(33_400):
            y = ag.tanh(y) if i % 3 == 0 else y * 1.0001 + 0.5
        graph.outputs = [y]
    assert len(graph.nodes) >= 100_000
    expected = np.ones(3)
    for i in range(33_400):
        expected = np.tanh(expected) if i % 3 == 0 else expected * 1.0001 + 0.5
    (result,) = Plan(optimize(graph), devices.CPU).fn(np.ones(3))
    assert_same(expected, result)
    (interpreted,) = Interpreter(graph).run(np.ones(3))
    assert_same(expected, interpreted)
    assert str(graph).count("\n") >= 100_000


def _elif_chain(n):
    """`def f(x)` with an `if`/`elif` chain of n conditions on x, and its module."""
    import types
    source = "def f(x):\n    y = x\n" + "".join(
        f"    {'if' if i == 0 else 'elif'} x > {i}:\n        y = x * {i}\n" for i in range(n)) + \
        "    else:\n        y = x - 1\n    return y\n"
    module = types.ModuleType(f"elif_chain_{n}")
    module.__file__ = f"<elif chain {n}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    import linecache
    linecache.cache[module.__file__] = (len(source), None, source.splitlines(True), module.__file__)
    return module.f


def test_an_elif_chain_converts_to_flat_code():
    # each `elif` used to nest the converted code two levels deeper: Python's parser stops at 100
    f = _elif_chain(150)
    code = ag.to_code(f)
    deepest = max(len(line) - len(line.lstrip()) for line in code.splitlines() if line.strip()) // 4
    assert deepest < 6, deepest
    g = _elif_chain(40)
    for x in (np.float64(-3.0), np.float64(7.5), np.float64(100.0)):
        assert_same(g(x), ag.function(g)(x))
