"""Every fact a pass or a backend needs about an op is on its OpDef (runtime/opdef.py).

The first tests walk the op table and fail when an op lacks a fact that a pass or an
exporter would otherwise have to guess (a forgotten entry used to give slower or wrong
code silently). The last ones register a new elementwise op in the test and check that
fusion, the C kernel and buffer reuse all pick it up from its OpDef alone.
"""
import importlib
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.ops.core import apply, elementwise, expanded
from autograph_lite.runtime.native import cexpr, compiler
from autograph_lite.runtime.native import elementwise as native_elementwise
from autograph_lite.runtime.opdef import REGISTRY
from autograph_lite.runtime.passes import fusion
from helpers import force_native

IN_PLACE_FORMS = {"+=", "-=", "*=", "/=", "ufunc", "copyto", "store"}


def ops():
    return sorted(REGISTRY.values(), key=lambda op: op.name)


def test_every_elementwise_op_has_a_c_form_or_says_it_has_none():
    # cexpr.no_c(reason) is the explicit "no C"; an op with neither falls back silently
    missing = [op.name for op in ops() if op.elementwise and op.c_expr is None and op.expansion is None]
    assert missing == []


def test_every_ufunc_fact_names_a_numpy_ufunc_computing_the_op():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.5, 2.0, (2, 7))
    for op in ops():
        if op.ufunc is None:
            continue
        ufunc = getattr(np, op.ufunc, None)
        assert isinstance(ufunc, np.ufunc), op.name
        if op.elementwise:
            # in the ufunc's float64 loop, else its int64 one (bit ops, gcd): ldexp's is (float64, int)
            loop = max((t for t in ufunc.types if set(t[:ufunc.nin]) <= set("dql")), key=lambda t: t.count("d"))
            args = tuple((v * 10).astype(code) for v, code in zip((x, y), loop[:ufunc.nin]))
            with np.errstate(invalid="ignore"):  # arcsin of 2.0 is NaN both ways
                np.testing.assert_array_equal(op.kernel(np)(*args), ufunc(*args), err_msg=op.name)


def test_expansions_are_steps_of_ops_the_c_backend_knows():
    for op in ops():
        for ufunc, operands in op.expansion or ():
            assert isinstance(getattr(np, ufunc, None), np.ufunc), (op.name, ufunc)
            assert any(o.ufunc == ufunc and o.c_expr is not None for o in REGISTRY.values()), (op.name, ufunc)
            assert all(a in ("x", "y") or isinstance(a, (int, float)) for a in operands), (op.name, operands)


def test_in_place_facts_are_consistent():
    for op in ops():
        if op.in_place is None:
            continue
        assert op.in_place in IN_PLACE_FORMS, op.name
        # the result has an input's shape and dtype only elementwise, or when the op stores into input 0
        assert op.elementwise or op.in_place == "store", op.name
        if op.in_place == "store":
            # its kernel takes copy=False beside its attrs (the lowering builds the storing kernel so)
            params = inspect.signature(op.kernel).parameters.values()
            assert not op.elementwise and op.fresh and any(p.kind is p.VAR_KEYWORD for p in params), op.name
        if op.in_place == "ufunc":
            assert op.ufunc is not None, op.name


def test_pass_facts_have_the_right_types():
    for op in ops():
        assert callable(op.kernel) and callable(op.infer), op.name
        for flag in ("elementwise", "stateful", "commutative", "fresh", "may_raise", "involution"):
            assert isinstance(getattr(op, flag), bool), (op.name, flag)
        assert op.float_errors is None or isinstance(op.float_errors, str), op.name
        for rule in ("c_expr", "inline", "simplify", "static_value", "view"):
            assert getattr(op, rule) is None or callable(getattr(op, rule)), (op.name, rule)


def test_the_sigmoid_formula_is_written_once():
    sigmoid = REGISTRY["Sigmoid"]
    x = np.linspace(-30, 30, 101)
    np.testing.assert_allclose(sigmoid.kernel(np)(x), 1 / (1 + np.exp(-x)), rtol=1e-15, atol=1e-16)
    # C and fused numpy blocks read the same steps
    assert sigmoid.c_expr is None and sigmoid.expansion is not None


def test_every_op_has_an_onnx_rule_or_is_declared_not_exportable():
    try:
        onnx = importlib.import_module("autograph_lite.export.onnx")
    except ModuleNotFoundError as e:
        if e.name not in ("autograph_lite.export", "autograph_lite.export.onnx"):
            raise
        pytest.skip("autograph_lite/export/onnx.py does not exist yet (issue 13 part 3)")
    missing = [op.name for op in ops() if op not in onnx.RULES and op.name not in onnx.NOT_EXPORTABLE]
    assert missing == []


# --- a new op needs only its OpDef ---------------------------------------------------------

@pytest.fixture
def new_ops():
    """Two ops registered for one test: a ufunc op with a C rule, and one defined by its formula."""
    made = [elementwise("TestExpm1", lambda xp: xp.expm1, ufunc="expm1", c_expr=cexpr.libm("expm1"),
                        in_place="ufunc"),
            expanded("TestCube", (("multiply", ("x", "x")), ("multiply", ("y", "x"))))]
    try:
        yield made
    finally:
        for op in made:
            del REGISTRY[op.name]


def test_a_new_elementwise_op_is_fused_with_its_neighbours(new_ops):
    expm1, cube = new_ops

    @ag.function
    def f(x):
        return apply(cube, (apply(expm1, (x * 0.5,)),)) + 1.0

    x = np.random.default_rng(1).uniform(-1, 1, fusion.BLOCKED_MIN_SIZE * 2)
    np.testing.assert_allclose(f(x), np.expm1(x * 0.5) ** 3 + 1.0, rtol=1e-13)
    fused = [n for n in f.get_concrete_function(x).optimized_graph.nodes if n.op == "FusedElementwise"]
    assert len(fused) == 1
    assert fused[0].attrs["expr"] == "Add(TestCube(TestExpm1(Mul($0, $1))), $2)"


def test_a_new_elementwise_op_is_written_as_c(new_ops, monkeypatch):
    force_native(monkeypatch)
    expm1, cube = new_ops
    steps = [("TestExpm1", (("in", 0),), np.dtype(np.float64)), ("TestCube", (("t", 0),), np.dtype(np.float64))]
    operands = [(np.dtype(np.float64), False, "full")]
    source = native_elementwise.source(steps, operands)
    assert "expm1(a0[i])" in source and "(t0 * t0)" in source
    if compiler.compiler() is None:
        pytest.skip("no C compiler on this machine")
    run = native_elementwise.cpu_kernel(steps, operands)
    x = np.linspace(-2, 2, 1001)
    out = np.empty_like(x)
    run(out, [x], 0, x.size)
    np.testing.assert_allclose(out, np.expm1(x) ** 3, rtol=1e-14)


def test_a_new_elementwise_op_takes_part_in_buffer_reuse(new_ops):
    expm1, cube = new_ops

    @ag.function
    def f(x, y):
        return ag.tanh(apply(cube, (x,))) + apply(expm1, (x + y,))  # small: not fused

    x, y = np.random.default_rng(2).uniform(-1, 1, (2, 8, 4))
    np.testing.assert_allclose(f(x, y), np.tanh(x ** 3) + np.expm1(x + y), rtol=1e-14)
    graph = f.get_concrete_function(x, y).optimized_graph
    by_op = {n.op: n for n in graph.nodes}
    assert by_op["Tanh"].in_place_input == 0      # tanh writes into the cube's fresh result
    assert by_op["TestExpm1"].in_place_input == 0  # expm1 runs in place on x + y
    assert "out=" in f.get_concrete_function(x, y).plan.source


def test_passes_and_backends_name_ops_only_to_build_nodes_or_match_a_rewrite():
    """No pass or backend keeps its own list of op names: any op name in runtime/ is one it
    builds (FusedElementwise, the row-product and sibling-slice rewrites) or a node kind it
    runs itself (CheckFits and CheckShape in a C loop)."""
    import ast
    import pathlib
    import autograph_lite.runtime
    allowed = {"FusedElementwise", "StridedSlice", "MatMul", "CheckFits", "CheckShape"}
    found = {}
    for path in pathlib.Path(autograph_lite.runtime.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in REGISTRY and node.value not in allowed:
                found.setdefault(path.name, []).append(node.value)
    assert found == {}


def test_a_new_ops_algebraic_and_hoisting_facts_are_used():
    # logaddexp(x, -inf) is x exactly; both sides, as it commutes; no input makes it raise
    op = elementwise("TestLogAddExp", lambda xp: xp.logaddexp, ufunc="logaddexp", commutative=True,
                     identity=-np.inf, c_expr=cexpr.no_c("a test op"))
    try:
        def fn(x, y, n):
            acc = x * 0.0
            for _ in range(n):
                acc = acc + apply(op, (x, y)) + apply(op, (-np.inf, x))
            return acc

        f = ag.function(fn)
        x, y, n = np.linspace(-1, 1, 5), np.linspace(2, 3, 5), np.int64(3)
        np.testing.assert_array_equal(f(x, y, n), fn(x, y, n))
        graph = f.get_concrete_function(x, y, n).optimized_graph
        (loop,) = [node for node in graph.nodes if node.op == "While"]
        assert [node.op for node in graph.nodes].count("TestLogAddExp") == 1  # hoisted before the loop
        assert "TestLogAddExp" not in [node.op for node in loop.attrs["body"].walk()]  # and -inf's is x
    finally:
        del REGISTRY[op.name]


# --- one table per interpretation: every node kind is covered or declared -------------------

def node_kinds():
    from autograph_lite.runtime.opdef import all_ops
    return sorted(all_ops(), key=lambda op: op.name)


def test_the_structural_node_kinds_are_opdefs_compared_by_identity():
    from autograph_lite.runtime import opdef
    for op in (opdef.PLACEHOLDER, opdef.CONST, opdef.COND, opdef.WHILE):
        assert op.structural and opdef.lookup(op.name) is op and op.attrs == opdef.STRUCTURAL[op.name]

    @ag.function
    def f(x):
        return x * 2.0 if x.sum() > 0 else x

    graph = f.get_concrete_function(np.ones(3)).graph
    assert [n.opdef for n in graph.nodes if n.op == "Cond"] == [opdef.COND]


def test_every_node_kind_runs_in_the_interpreter_or_says_why_not():
    from autograph_lite.runtime import interpreter
    missing = [op.name for op in node_kinds()
               if op.kernel is None and op not in interpreter.RULES and op not in interpreter.NOT_RUN]
    assert missing == []
    assert all(hasattr(interpreter.Interpreter, rule) for rule in interpreter.RULES.values())


def test_every_node_kind_is_lowered_or_says_why_not():
    from autograph_lite.runtime import lowering
    missing = [op.name for op in node_kinds()
               if op.kernel is None and op not in lowering.RULES and op not in lowering.NOT_LOWERED]
    assert missing == []
    # spelled from facts: every operator ufunc and one-step expansion, no table entry needed
    spelled = {op.name for op in node_kinds() if lowering.spelling(op) is not None}
    assert {"Add", "Less", "Neg", "Relu", "StridedSlice", "Sum", "Not"} <= spelled


def test_every_structural_node_kind_is_rendered_as_c_or_says_why_not():
    from autograph_lite.runtime.native import render
    missing = [op.name for op in node_kinds()
               if op.structural and op not in render.RULES and op not in render.NOT_RENDERED]
    assert missing == []


def test_c_rules_come_from_the_renderers_table_keyed_by_facts():
    # an elementwise op with a known ufunc or primitive needs no entry of its own
    for op in ops():
        if (op.ufunc or op.primitive) in cexpr.BY_COMPUTATION:
            assert cexpr.rule_for(op) is cexpr.BY_COMPUTATION[op.ufunc or op.primitive], op.name


def test_ops_import_no_native_code_for_spellings():
    import ast
    import pathlib
    import autograph_lite.ops
    for path in pathlib.Path(autograph_lite.ops.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "native" not in (node.module or ""), path.name


def test_every_node_kind_has_a_gradient_rule_or_says_why_not():
    gradients = importlib.import_module("autograph_lite.ops.gradients")  # ops.gradients is also a function
    from autograph_lite.ops.core import GRADIENTS
    missing = [op.name for op in node_kinds() if op not in GRADIENTS and op.name not in gradients.NOT_DIFFERENTIABLE]
    assert missing == []
    both = [op.name for op in node_kinds() if op in GRADIENTS and op.name in gradients.NOT_DIFFERENTIABLE]
    assert both == []


def test_every_node_kind_is_exported_to_onnx_or_says_why_not():
    onnx = importlib.import_module("autograph_lite.export.onnx")
    assert [op.name for op in node_kinds() if (op in onnx.RULES) == (op.name in onnx.NOT_EXPORTABLE)] == []


def test_every_node_kind_can_be_loaded_or_says_why_not():
    from autograph_lite.saving import graphs
    missing = [op.name for op in node_kinds()
               if op.infer is None and op not in graphs._STRUCTURAL_TYPES and op not in graphs.NOT_NODES]
    assert missing == []


def test_passes_import_no_backend():
    import ast
    import pathlib
    import autograph_lite.runtime.passes
    for path in pathlib.Path(autograph_lite.runtime.passes.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "native" not in (node.module or ""), path.name


def test_a_new_elementwise_op_is_exported_to_onnx_from_its_expansion(new_ops, tmp_path):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    onnx_export = importlib.import_module("autograph_lite.export.onnx")
    _, cube = new_ops
    assert cube not in onnx_export.RULES and onnx_export.rule_for(cube) is not None

    @ag.function
    def f(x):
        return apply(cube, (x,)) * 2.0

    x = np.linspace(-2, 2, 5).astype(np.float32)
    ag.export_onnx(f, str(tmp_path / "cube.onnx"), args=(x,))
    session = ort.InferenceSession(str(tmp_path / "cube.onnx"))
    (got,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(got, x ** 3 * 2.0, rtol=1e-6)
    assert onnx.load(str(tmp_path / "cube.onnx")).graph.node
