"""The reference interpreter (runtime/interpreter.py) as an oracle for lowered plans.

Every compiled call of the benchmark workloads and of a selection of the compiled-vs-eager
conversion tests also runs through the interpreter, over the traced graph and over the
optimized one; each must give the plan's outputs bit for bit (values, dtypes, shapes; the traced graph within the suite's tolerance, since the
plan runs fused chains as C).
"""
import functools
import importlib
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.function import ConcreteFunction
from autograph_lite.runtime.interpreter import Interpreter
from benchmarks.workloads import WORKLOADS
from helpers import to_host

CONVERSION_MODULES = ["test_while_tensor", "test_if_tensor", "test_for_tensor", "test_break_continue",
                      "test_return_in_loop", "test_logical", "test_ternary", "test_dtypes", "test_lists",
                      "test_inplace", "test_shape_relax", "test_caller_effects", "test_fuzz_regressions",
                      "test_trust_loops", "test_trust_operators", "test_trust_state"]
OTHER_MODULES = ["tests.test_gradients", "tests.test_gradients_control_flow", "tests.test_control_flow",
                 "tests.test_passes", "tests.test_ops", "tests.test_function", "tests.test_retracing",
                 "tests.conversion.test_methods", "tests.conversion.test_lambdas", "tests.conversion.test_closures",
                 "tests.conversion.test_for_python"]


def _same(plan_out, interp_out, what, exact=True):
    assert len(plan_out) == len(interp_out), what
    for k, (p, i) in enumerate(zip(plan_out, interp_out)):
        if isinstance(p, list):  # a stack handle or list value: compare item by item
            assert isinstance(i, list) and len(i) == len(p), f"{what}: output {k}"
            continue
        p, i = np.asarray(to_host(p)), np.asarray(to_host(i))
        assert p.dtype == i.dtype, f"{what}: output {k} dtype {i.dtype} != plan's {p.dtype}"
        assert p.shape == i.shape, f"{what}: output {k} shape {i.shape} != plan's {p.shape}"
        if exact or p.dtype.kind not in "fc":
            assert np.array_equal(p, i, equal_nan=p.dtype.kind in "fc"), f"{what}: output {k} differs"
        else:  # a fused chain runs as C in the plan: ulps differ from numpy's op-by-op results
            np.testing.assert_allclose(i, p, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=what)


def _has_effects(graph):
    """Graphs that print, assert or draw random numbers are left out: running them three
    times would print three times or draw other numbers."""
    return any(n.opdef is not None and n.opdef.stateful and not n.op.startswith("Stack") for n in graph.walk())


def _copies(arrays):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in arrays]


class Oracle:
    """Patches ConcreteFunction._run: each call first runs plan and interpreters on copies."""

    def __init__(self, monkeypatch):
        self.checked = 0
        original = ConcreteFunction._run
        oracle = self

        def _run(concrete, arrays, values=None):
            if not _has_effects(concrete.graph):
                oracle.compare(concrete, arrays)
            return original(concrete, arrays, values)
        monkeypatch.setattr(ConcreteFunction, "_run", _run)

    def compare(self, concrete, arrays):
        arrays = list(arrays)
        try:  # the plan takes its arguments on its device, as ConcreteFunction._run gives them
            expected = concrete.plan.fn(*[concrete.device.put(a) for a in _copies(arrays)])
        except Exception as e:
            for graph in (concrete.graph, concrete.optimized_graph):
                with pytest.raises(type(e)):
                    Interpreter(graph, concrete.device).run(*_copies(arrays))
            self.checked += 1
            return
        for graph, what in ((concrete.graph, "traced"), (concrete.optimized_graph, "optimized")):
            _same(expected, Interpreter(graph, concrete.device).run(*_copies(arrays)),
                  f"{concrete!r}, {what} graph", exact=what == "optimized")
        self.checked += 1


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_interpreter_equals_plan_on_workloads(name, monkeypatch):
    _, fn, make_inputs = WORKLOADS[name]
    oracle = Oracle(monkeypatch)
    args = make_inputs(n=30) if name.startswith("W7") else make_inputs()  # the interpreter: a node at a time
    ag.function(fn.python_function if isinstance(fn, ag.Function) else fn)(*args)
    assert oracle.checked == 1


def _calls(module):
    """Each test of `module` that needs no fixture, once per parameter set: [(name, thunk)]."""
    found = []
    for name, fn in vars(module).items():
        if not (name.startswith("test_") and inspect.isfunction(fn)):
            continue
        cases = [{}]
        for mark in getattr(fn, "pytestmark", []):
            if mark.name != "parametrize":
                cases = []
                break
            names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
            values = [v.values if hasattr(v, "values") and not isinstance(v, dict) else
                      (v if len(names) > 1 else (v,)) for v in mark.args[1]]
            cases = [dict(case, **dict(zip(names, v))) for case in cases for v in values]
        if cases and set(inspect.signature(fn).parameters) == set(cases[0]):
            found += [(name, functools.partial(fn, **case)) for case in cases]
    return found


@pytest.mark.parametrize("module_name", [f"tests.conversion.{m}" for m in CONVERSION_MODULES] + OTHER_MODULES)
def test_interpreter_equals_plan_over_compiled_vs_eager_tests(module_name, monkeypatch):
    module = importlib.import_module(module_name)
    tests = _calls(module)
    assert tests
    oracle = Oracle(monkeypatch)
    for _, test in tests:
        test()
    assert oracle.checked >= len(tests) // 2, f"only {oracle.checked} compiled calls checked"


def test_interpreter_runs_cond_and_nested_while():
    @ag.function
    def f(x, n):
        total = x * 0
        i = 0
        while i < n:
            j = 0
            while j < i:
                if ag.reduce_sum(total) > 10:
                    total = total - 1.0
                else:
                    total = total + x
                j += 1
            i += 1
        return total

    x, n = np.arange(3.0), np.int64(5)
    graph = f.get_concrete_function(x, n).graph
    np.testing.assert_array_equal(Interpreter(graph).run(x, n)[0], f.python_function(x, n))


def test_run_node_hook_sees_every_executed_node_with_loop_levels():
    @ag.function
    def f(x, n):
        i = 0
        while i < n:
            x = ag.tanh(x)
            i += 1
        return x

    x = np.ones(2)
    graph = f.get_concrete_function(x, np.int64(3)).graph
    seen = []

    class Recording(Interpreter):
        def run_node(self, node, inputs):
            outputs = super().run_node(node, inputs)
            seen.append((node.op, [k for _, k in self.iterations]))
            return outputs

    Recording(graph).run(x, np.int64(3))
    assert [levels for op, levels in seen if op == "Tanh"] == [[0], [1], [2]]
    assert seen[-1][0] == "While"  # a While's record comes after the nodes it ran


def test_interpreter_error_names_the_node():
    @ag.function
    def f(x):
        return ag.reshape(x, (4,))

    x = np.ones(3)
    graph = ag.function(f.python_function).get_concrete_function(np.ones(4)).graph
    with pytest.raises(ValueError) as info:
        Interpreter(graph).run(x)
    assert any("Reshape" in n and "test_interpreter.py" in n for n in info.value.__notes__)
