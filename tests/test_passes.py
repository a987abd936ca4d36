"""Each optimization pass on small graphs: what it changes in the graph, and that results
stay those of the eager run."""
import re

import numpy as np
import pytest

import autograph_lite as ag
from examples.models import mandelbrot
from autograph_lite.runtime.native import compiler
from autograph_lite.runtime.native import elementwise as native_elementwise
from helpers import assert_same, cpu_only, force_native, to_host


def optimized(fn, *args):
    """(ops of the optimized graph and its sub-graphs, compiled result) for `fn(*args)`."""
    f = ag.function(fn)
    assert_same(fn(*args), f(*args))
    graph = f.get_concrete_function(*args).optimized_graph
    return [n.op for n in graph.walk()], graph


def ops_of(graph):
    return [n.op for n in graph.nodes]


def test_constant_folding():
    ops, _ = optimized(lambda x: x + ag.reduce_sum(np.arange(4.0) * 2.0) + ag.shape(x)[0], np.ones(3))
    assert "Sum" not in ops and "Shape" not in ops and ops.count("Add") <= 2


def test_common_subexpressions_are_merged():
    ops, _ = optimized(lambda x: ag.tanh(x) * ag.tanh(x) + ag.exp(x) - ag.exp(x), np.ones(3))
    assert ops.count("Tanh") == 1 and ops.count("Exp") == 1


def test_dead_code_is_removed_but_side_effects_stay():
    def fn(x):
        ag.tanh(x) * 2.0            # unused
        ag.random.uniform([2])      # unused, but it draws: stays
        return x + 1.0
    ops, _ = optimized(fn, np.ones(3))
    assert "Tanh" not in ops and "RandomUniform" in ops


def _unused_power(x, y):
    x ** y       # unused: raises eagerly for a negative y (fuzzer, numpy_api grammar)
    return x


def _unused_take(x, i):
    x[i]         # unused: raises eagerly for i out of range
    return x


@pytest.mark.parametrize("fn, args", [
    (_unused_power, (np.array([2, 3], np.int8), np.array([1, -1], np.int8))),
    (_unused_take, (np.arange(3.0), np.int64(5))),
])
def test_unused_nodes_that_can_raise_stay(fn, args):
    """Eager code raises at an unused value that its data makes invalid: the compiled call raises too."""
    with pytest.raises((ValueError, IndexError)) as eager:
        fn(*args)
    with pytest.raises(type(eager.value)):
        ag.function(fn)(*args)
    # with valid data the call runs; an unused int ** int of a non-negative exponent still stays
    good = (args[0], np.abs(args[1])) if fn is _unused_power else (args[0], np.int64(1))
    assert_same(fn(*good), ag.function(fn)(*good))


def test_unused_nodes_whose_shapes_the_trace_checked_go():
    def fn(x):
        ag.concat([x, x], 0)   # shape errors only, and the trace checked the shapes
        x ** 2.0               # a float power never raises
        x[1:]
        return x + 1.0
    ops, _ = optimized(fn, np.ones(3))
    assert not {"Concat", "Pow", "StridedSlice"} & set(ops)


@pytest.mark.parametrize("fn, gone", [
    (lambda x: ag.tanh(x * 1 - 0), ["Mul", "Sub"]),
    (lambda x: ag.tanh(x + -0.0), ["Add"]),
    (lambda x: ag.tanh(-(-x)), ["Neg"]),
    (lambda x: ag.tanh(ag.transpose(ag.transpose(x))), ["Transpose"]),
    (lambda x: ag.tanh(ag.cast(x, np.float64) / 1), ["Cast", "RealDiv"]),
    (lambda x: ag.tanh(x ** 1.0), ["Pow"]),
    (lambda x: ag.tanh(x.copy()) + x, ["Identity"]),   # a copy not returned is its input (ag.grad's)
])
def test_algebraic_simplification(fn, gone):
    ops, _ = optimized(fn, np.ones((2, 3)))
    assert not set(gone) & set(ops)


def _copies(x):
    a = x * 2.0
    b = a.copy()
    b[0] = 7.0          # the store may not reach `a`, which is read after it
    c = x.copy()
    c += 1.0            # nor the argument
    return a + 0.0, b, c, x.copy()


@pytest.mark.parametrize("fn", [lambda x: np.squeeze((x - 0)[None]), lambda x: x.copy()[None], lambda x: (x * 1).T,
                                lambda x: (0 + x)[1:]])
def test_a_returned_view_of_a_simplified_value_is_not_a_view_of_the_argument(fn):
    # fuzzer seed 1193008156: `x - 0` became x, and the returned view of it a view of the caller's x
    x = np.arange(6).reshape(2, 3)
    compiled = ag.function(fn)
    for _ in range(4):  # the plan, then native tiers
        result = compiled(x)
        assert_same(fn(x), result)
        assert not np.shares_memory(result, x)


def test_a_copy_that_is_updated_or_returned_stays_a_copy():
    x = np.arange(6.0).reshape(3, 2)
    compiled = ag.function(_copies)
    for _ in range(4):  # the plan, then native tiers
        given = x.copy()
        results = compiled(given)
        assert_same(_copies(x.copy()), results)
        np.testing.assert_array_equal(given, x)
        assert not any(np.shares_memory(r, given) for r in results)


def _fill_whole(a, b, c):
    a[:] = b @ c        # doitgen: the product is what the caller's a gets (no copy of a's old contents)
    return b


def _fill_whole_returned(a, b, c):
    a[...] = b          # another argument: a gets b's values, and a stays the caller's a
    c[:] = c.T          # a view of itself
    return a, c, b


@pytest.mark.parametrize("fn", [_fill_whole, _fill_whole_returned])
def test_a_store_into_a_whole_argument_writes_the_value_back(fn):
    rng = np.random.default_rng(0)
    make = [lambda: rng.standard_normal((3, 3)), lambda: rng.standard_normal((3, 3)), lambda: rng.standard_normal((3, 3))]
    compiled = ag.function(fn)
    for _ in range(4):  # the plan, then native tiers
        args = [m() for m in make]
        eager_args = [a.copy() for a in args]
        expected = fn(*eager_args)
        got = compiled(*args)
        assert_same(expected, got)
        for e, c in zip(eager_args, args):
            np.testing.assert_array_equal(e, c)
        if fn is _fill_whole_returned:
            assert got[0] is args[0] and got[1] is args[2] and got[2] is args[1]
    if fn is _fill_whole:
        assert "SetItem" not in ops_of(compiled.get_concrete_function(*args).optimized_graph)


SPECIAL = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 5e-324, -1.5, 3.0])


@pytest.mark.parametrize("fn", [
    lambda x: ag.tanh(x + 0.0), lambda x: ag.tanh(0.0 + x), lambda x: ag.tanh(x + 0),
    lambda x: ag.tanh(x - -0.0), lambda x: ag.tanh(x - 0.0), lambda x: ag.tanh(x + -0.0),
    lambda x: ag.tanh(x * 1.0), lambda x: ag.tanh(x / 1), lambda x: ag.tanh(x ** 1),
    lambda x: ag.tanh(-(-x)), lambda x: x + 0.0, lambda x: x - 0.0, lambda x: x * 1.0,
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_simplification_keeps_ieee_values_and_signed_zeros(fn, dtype):
    x = SPECIAL.astype(dtype)
    expected, got = fn(x), to_host(ag.function(fn)(x))
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    assert (np.signbit(got) == np.signbit(expected))[~np.isnan(expected)].all()


def test_adding_a_positive_zero_is_kept_for_floats():
    ops, _ = optimized(lambda x: ag.tanh(x + 0.0) * 2.0, SPECIAL)
    assert "Add" in ops
    ops, _ = optimized(lambda x: ag.tanh(x - -0.0) * 2.0, SPECIAL)
    assert "Sub" in ops


def test_complex_products_by_one_are_kept():
    x = np.array([1 - 0.0j, complex(2.0, -0.0), complex(-0.0, -0.0)])
    fn = lambda x: ag.exp(x * 1.0) + x / 1  # noqa: E731
    ops, _ = optimized(fn, x)
    assert "Mul" in ops and "RealDiv" in ops


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.bool_])
@pytest.mark.parametrize("fn", [
    lambda x: x * 1, lambda x: x + 0, lambda x: x * 1.0, lambda x: x + 0.0, lambda x: x - 0,
    lambda x: -(-x) * 2, lambda x: x * True, lambda x: x + False, lambda x: x ** 1, lambda x: x / 1,
    lambda x: ag.reduce_sum(x * 1) + ag.reduce_sum(x + 0),
])
def test_simplification_keeps_integer_and_bool_dtypes(fn, dtype):
    x = np.array([0, 1, 127, 3], dtype=dtype) if dtype is not np.bool_ else np.array([True, False])
    try:
        expected = fn(x)
    except TypeError:  # numpy refuses (e.g. -bool): so must the compiled function
        with pytest.raises(TypeError):
            ag.function(fn)(x)
        return
    assert_same(expected, ag.function(fn)(x))


def _leaves(result):
    if isinstance(result, dict):
        return list(result.values())
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("fn", [
    lambda x: x * 1.0, lambda x: x + -0.0, lambda x: x - 0, lambda x: x / 1, lambda x: x ** 1,
    lambda x: -(-x), lambda x: ag.cast(x, np.float64), lambda x: ag.transpose(ag.transpose(x)),
    lambda x: (x * 1.0, x), lambda x: {"a": x * 1}, lambda x: (x * 2.0, x * 2.0), lambda x: (x, x),
    lambda x: ag.tanh(x) * 1.0 if x[0, 0] > 0 else x + -0.0,
])
@cpu_only("memory shared with a host argument: a device result is always a fresh device array")
def test_outputs_share_memory_with_inputs_only_where_eager_does(fn):
    """Writing into each output changes the input (and the other outputs) as it does eagerly."""
    base = np.array([[-0.0, 1.5], [2.0, np.nan]])
    compiled = ag.function(fn)
    for x0 in (base, -base):
        x_e, x_c = x0.copy(), x0.copy()
        eager, got = _leaves(fn(x_e)), _leaves(compiled(x_c))
        assert [g is x_c for g in got] == [e is x_e for e in eager]
        for i in range(len(got)):
            np.testing.assert_array_equal(got[i], eager[i])
            eager[i][...], got[i][...] = 7.0 + i, 7.0 + i
            np.testing.assert_array_equal(x_c, x_e)
            for j in range(len(got)):
                np.testing.assert_array_equal(got[j], eager[j])


def test_simplification_never_changes_dtype_or_shape():
    ops, _ = optimized(lambda x: x * 1.0, np.ones(3, np.int32))  # int * 1.0 -> float64: must stay
    assert "Mul" in ops
    ops, _ = optimized(lambda x, y: x + 0 * y, np.ones(3), np.ones((2, 3)))  # broadcasting
    assert "Add" in ops


def loop_with_invariant(x, w, n):
    i = 0
    while i < n:
        x = ag.tanh(x @ (w * 2.0))   # w * 2.0 does not change between iterations
        i += 1
    return x


def test_loop_invariant_code_is_hoisted():
    args = (np.ones((2, 2)), np.eye(2) * 0.5, np.int64(3))
    _, graph = optimized(loop_with_invariant, *args)
    loop = next(n for n in graph.nodes if n.op == "While")
    assert "Mul" in ops_of(graph) and "Mul" not in ops_of(loop.attrs["body"])
    assert "MatMul" in ops_of(loop.attrs["body"])
    for n in (np.int64(0), np.int64(5)):
        assert_same(loop_with_invariant(args[0], args[1], n), ag.function(loop_with_invariant)(args[0], args[1], n))


def test_loop_hoisting_skips_ops_that_can_fail():
    def fn(x, k, n):
        i = 0
        while i < n:
            x = x * x[k]     # loop-invariant, but would raise if hoisted and the loop never ran
            i += 1
        return x
    f = ag.function(fn)
    assert_same(fn(np.ones(3), np.int64(5), np.int64(0)), f(np.ones(3), np.int64(5), np.int64(0)))
    body = next(n for n in f.get_concrete_function(np.ones(3), np.int64(5), np.int64(0)).optimized_graph.nodes
                if n.op == "While").attrs["body"]
    assert "StridedSlice" in ops_of(body)


def chain(x, y):
    return ag.tanh(x * 1.5 + 0.5) * ag.nn.sigmoid(x) - 0.25 * x * y


def test_large_elementwise_chain_becomes_one_node():
    x = np.linspace(-3, 3, 200_000).astype(np.float32)
    _, graph = optimized(chain, x, x[::-1].copy())
    assert ops_of(graph).count("FusedElementwise") == 1
    assert not {"Tanh", "Sigmoid", "Mul"} & set(ops_of(graph))
    assert "Sigmoid(" in str(graph)  # the fused node shows what it computes


def test_small_chains_are_left_alone():
    ops, _ = optimized(chain, np.ones(10, np.float32), np.ones(10, np.float32))
    assert "FusedElementwise" not in ops


def test_fused_kernel_with_unknown_dims_broadcasting_and_small_inputs():
    f = ag.function(chain, input_signature=[ag.TensorSpec([None]), ag.TensorSpec([None])])
    assert "FusedElementwise" in str(f.get_concrete_function().optimized_graph)
    for n in (7, 100_003):  # whole-array and blocked paths
        x = np.linspace(-2, 2, n).astype(np.float32)
        assert_same(chain(x, x[::-1].copy()), f(x, x[::-1].copy()))
    g = ag.function(chain, input_signature=[ag.TensorSpec([None, 1]), ag.TensorSpec([None])])
    x, y = np.ones((3, 1), np.float32), np.linspace(0, 1, 70_000).astype(np.float32)
    assert_same(chain(x, y), g(x, y))  # broadcasting: evaluated on whole arrays


def test_fused_kernel_on_non_contiguous_input():
    x = np.linspace(-3, 3, 300_000).astype(np.float32)
    f = ag.function(chain)
    f(x[:150_000], x[:150_000])
    assert_same(chain(x[::2], x[::2]), f(x[::2], x[::2]))


def _stencil_chain(a, b):
    return b[1:, :] - 0.5 * (a[1:, :-1] - a[:-1, :-1]) + (a[:, 1:] - a[:, :-1])[1:, :] * 0.25


def test_fused_strided_chain_reuses_its_temporaries_and_leaves_its_inputs(monkeypatch):
    # without C kernels, strided views take the whole-array path, whose dead temporaries the next
    # step writes into (runtime/fused._into), never an input or a broadcast-shaped temporary
    monkeypatch.setenv("AG_NATIVE_KERNELS", "0")
    rng = np.random.default_rng(0)
    for a, b in ((rng.standard_normal((400, 451)), rng.standard_normal((400, 450))),
                 (rng.standard_normal((400, 451)).astype(np.float32), rng.standard_normal((400, 1)).astype(np.float32))):
        copies = a.copy(), b.copy()
        f = ag.function(_stencil_chain)
        assert "FusedElementwise" in ops_of(f.get_concrete_function(a, b).optimized_graph)
        for _ in range(3):
            assert_same(_stencil_chain(a, b), f(a, b))
        np.testing.assert_array_equal(a, copies[0])
        np.testing.assert_array_equal(b, copies[1])


def _strided_kernel_calls(monkeypatch):
    """A list that each call of a fused node's strided C kernel (built after this) appends to."""
    calls, build = [], native_elementwise.cpu_strided_kernel

    def counting(steps, operands):
        run = build(steps, operands)
        if not callable(run):
            return run

        def counted(out, inputs, meta, start, stop):
            calls.append(out.shape)
            return run(out, inputs, meta, start, stop)
        return counted
    monkeypatch.setattr(native_elementwise, "cpu_strided_kernel", counting)
    return calls


def _reversed_chain(a, b):
    return a[:0:-1, 1:] * 2.0 - b[:, ::-1] * (b[:, ::-1] - a[1:, :-1] * 0.5)


def _heat_step(a):
    inner = a[1:-1, 1:-1, 1:-1]
    return inner + 0.125 * (a[2:, 1:-1, 1:-1] - 2.0 * inner + a[:-2, 1:-1, 1:-1]) \
        + 0.125 * (a[1:-1, 1:-1, 2:] - 2.0 * inner + a[1:-1, 1:-1, :-2])


def _rows_from_itself(a, b):
    # the update reads rows of the array it writes: the chain's output is fresh, stored afterwards
    a[1:, :] -= 0.5 * (a[1:, :] - a[:-1, :]) * b[1:, :]
    a[:, :-1] = a[:, 1:] * 0.25 + a[:, :-1]
    return a


def _sum_of_transposed(a, b):
    # numpy's a.T * 2 - b.T is F-ordered and its sum adds in that order: the chain keeps numpy's layout
    c = a.T * 2.0 - b.T * (b.T - 0.5)
    return c, np.sum(c), c.sum(axis=0)


_rng = np.random.default_rng(1)
_STRIDED_CASES = [
    (_stencil_chain, lambda: (_rng.standard_normal((400, 451)), _rng.standard_normal((400, 450)))),
    (_stencil_chain, lambda: (_rng.standard_normal((400, 451)).astype(np.float32),
                              _rng.standard_normal((400, 1)).astype(np.float32))),  # a column broadcast along rows
    (_stencil_chain, lambda: (_rng.standard_normal((400, 451))[::-1], _rng.standard_normal((400, 900))[:, ::-2])),
    (_reversed_chain, lambda: (_rng.standard_normal((401, 301)).astype(np.float32),
                               _rng.standard_normal((400, 300)).astype(np.float32))),
    (_heat_step, lambda: (_rng.standard_normal((50, 60, 70)),)),
    (_rows_from_itself, lambda: (_rng.standard_normal((300, 400)), _rng.standard_normal((300, 400)))),
    (_sum_of_transposed, lambda: (_rng.standard_normal((400, 300)), _rng.standard_normal((400, 300))[:, ::-1])),
]


@pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")
@pytest.mark.parametrize("fn, make", _STRIDED_CASES, ids=["f64", "f32-column", "negative-steps", "reversed-f32",
                                                          "3d", "rows-of-the-output", "transposed"])
def test_fused_chain_over_strided_views_is_one_c_loop(monkeypatch, fn, make):
    # NPBench's fdtd_2d, hdiff, heat_3d: a chain over slices of arrays is the C kernel reading
    # each view through its strides (runtime/native/elementwise.cpu_strided_kernel), numpy's bits
    force_native(monkeypatch)
    calls = _strided_kernel_calls(monkeypatch)
    f = ag.function(fn)
    args = make()
    assert "FusedElementwise" in ops_of(f.get_concrete_function(*args).optimized_graph)
    for _ in range(3):
        eager_args, compiled_args = [a.copy() for a in args], [a.copy() for a in args]
        if fn is not _rows_from_itself:  # views as arguments too: the copies above are contiguous
            eager_args, compiled_args = list(args), list(args)
        copies = [a.copy() for a in args]
        eager, compiled = fn(*eager_args), f(*compiled_args)
        assert_same(eager, compiled)
        for e, c in zip(eager if isinstance(eager, tuple) else [eager], compiled if isinstance(compiled, tuple) else [compiled]):
            assert c.flags.c_contiguous == e.flags.c_contiguous and c.flags.f_contiguous == e.flags.f_contiguous
        for e, c in zip(eager_args, compiled_args):
            np.testing.assert_array_equal(e, c)
        if fn is not _rows_from_itself:
            for a, copy in zip(args, copies):
                np.testing.assert_array_equal(a, copy)
    # (a transposed view keeps numpy's ufuncs)
    assert bool(calls) == (fn is not _sum_of_transposed), \
        "the strided chain ran on numpy, not as the C kernel"


def test_passes_can_be_turned_off(monkeypatch):
    fn = lambda x: ag.tanh(x) + ag.tanh(x)  # noqa: E731
    monkeypatch.setenv("AG_DISABLE_PASSES", "cse")
    ops, _ = optimized(fn, np.ones(3))
    assert ops.count("Tanh") == 2
    monkeypatch.setenv("AG_DISABLE_PASSES", "all")
    f = ag.function(lambda x: x * 1 + 0)
    assert "Mul" in ops_of(f.get_concrete_function(np.ones(2)).optimized_graph)
    monkeypatch.setenv("AG_DISABLE_PASSES", "fusoin")
    with pytest.raises(ValueError, match=r"unknown passes \['fusoin'\]"):
        ag.function(lambda x: x)(np.ones(2))


def test_traced_graph_is_not_changed_by_optimization():
    f = ag.function(lambda x: x * 1 + ag.tanh(x) * ag.tanh(x))
    cf = f.get_concrete_function(np.ones(2))
    before = str(cf.graph)
    cf.optimized_graph
    assert str(cf.graph) == before and before.count("= Tanh(") == 2


def cell(x, h, w):
    g = x @ w + h            # MatMul result reused by the add
    return ag.tanh(g) * 2.0 - h, h + 1.0


def test_buffer_reuse_writes_only_into_dead_intermediates():
    x, h, w = np.ones((4, 3)), np.full((4, 3), 0.5), np.eye(3)
    copies = [a.copy() for a in (x, h, w)]
    f = ag.function(cell)
    cf = f.get_concrete_function(x, h, w)
    assert "+=" in cf.plan.source or "out=" in cf.plan.source
    for _ in range(2):
        assert_same(cell(x, h, w), f(x, h, w))
    for a, c in zip((x, h, w), copies):  # inputs are never written
        np.testing.assert_array_equal(a, c)


def test_buffer_reuse_never_targets_views_or_outputs():
    def fn(x):
        y = x[1:] * 2.0      # a fresh array
        z = y + 1.0          # may reuse y
        return z, y[0] * 1.0 + ag.reshape(z, (-1,))[0]
    x = np.arange(4.0)
    assert_same(fn(x), ag.function(fn)(x))
    np.testing.assert_array_equal(x, np.arange(4.0))


def _recurrence(x):
    y = np.empty_like(x)
    y[:, 0] = x[:, 0]
    for j in range(1, x.shape[1]):
        y[:, j] = 0.5 * x[:, j] + 0.25 * y[:, j - 1]   # reads y through a view, then stores into it
    return y


def _read_after_the_store(x):
    y = x * 2.0
    row = y[0]              # a view read after the store below
    total = y.sum()         # a value read once, after the store: the plan may inline it there
    y[0] = 7.0
    return row * 1.0, total + 1.0, y


def _view_returned(x):
    y = x * 2.0
    v = y[1:]
    s = y[0] + 1.0
    y[2] = s
    return v, y


def _returned_expression(x):
    y = x * 2.0
    a = 0.0 + y             # returned and read nowhere else: the plan computes it in the return statement
    y[1] = 9.0
    return a, y


def _store_of_its_own_view(x):
    y = x * 2.0
    y[:] = y[::-1]          # the value is a view of the buffer stored into (numpy copies the overlap)
    return y


@pytest.mark.parametrize("fn", [_recurrence, _read_after_the_store, _view_returned, _returned_expression,
                                _store_of_its_own_view])
def test_a_store_writes_in_place_only_after_every_read_of_the_old_array(fn):
    """A SetItem writes into its array where every other reader runs before it (NPBench's
    deriche copied its array once per unrolled store); never where a view, a returned view or an
    expression inlined later reads the old contents."""
    x = np.arange(12.0).reshape(3, 4) if fn is _recurrence else np.arange(6.0)
    compiled = ag.function(fn)
    for _ in range(5):  # the plan, then native tiers
        assert_same(fn(x.copy()), compiled(x.copy()))
    stores = [n for n in compiled.get_concrete_function(x).optimized_graph.nodes if n.op == "SetItem"]
    in_place = [n.in_place_input == 0 for n in stores]
    if fn is _recurrence:
        assert in_place[1:] == [True] * 3  # the stores of the loop (the first writes np.empty_like's array)
    elif fn in (_read_after_the_store, _returned_expression):
        assert in_place == [False]


def row_loop(xs, w, n):
    acc = ag.zeros((xs.shape[1], w.shape[1]))
    for i in ag.range(n):
        acc = acc + xs[i] @ w
    return acc


def test_row_products_become_one_batched_matmul():
    xs, w = np.random.default_rng(0).standard_normal((5, 2, 3)), np.ones((3, 4))
    f = ag.function(row_loop)
    for n in (np.int64(0), np.int64(3), np.int64(5)):
        assert_same(row_loop(xs, w, n), f(xs, w, n))
    graph = f.get_concrete_function(xs, w, np.int64(1)).optimized_graph
    loop = next(n for n in graph.nodes if n.op == "While")
    assert "MatMul" in ops_of(graph) and "MatMul" not in ops_of(loop.attrs["body"])


def masked_update(x, state, mask):
    updated = ag.tanh(x + state)
    return ag.where(mask, state, updated)


def test_where_writes_into_the_dead_branch_value():
    rng = np.random.default_rng(0)
    x, state, mask = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.random((4, 1)) > 0.5
    copies = [a.copy() for a in (x, state, mask)]
    f = ag.function(masked_update)
    assert "where=" in f.get_concrete_function(x, state, mask).plan.source
    assert_same(masked_update(x, state, mask), f(x, state, mask))
    for a, c in zip((x, state, mask), copies):
        np.testing.assert_array_equal(a, c)


def test_a_commutative_op_writes_into_its_second_operand_when_only_that_one_is_dead():
    def fn(x, w, b):
        return b * ((x + (x @ w)) + b)   # x @ w is fresh and dead after the add; x is an input
    x, w, b = np.arange(6.0).reshape(2, 3), np.eye(3) * 0.5, np.array([1.0, -2.0, 3.0])
    copies = [a.copy() for a in (x, w, b)]
    f = ag.function(fn)
    source = f.get_concrete_function(x, w, b).plan.source
    assert "+= a0" in source, source
    for _ in range(2):
        assert_same(fn(x, w, b), f(x, w, b))
    for a, c in zip((x, w, b), copies):
        np.testing.assert_array_equal(a, c)


# --- editing a graph through the graph ----------------------------------------------------

def _traced(fn, *args):
    return ag.function(fn).get_concrete_function(*args).graph


def test_users_follow_every_edit_and_replace_all_uses_rewires_them():
    graph = _traced(lambda x: (ag.tanh(x) + ag.tanh(x) * ag.tanh(x), ag.exp(x)), np.ones(3))
    x = graph.inputs[0]
    tanh_a, tanh_b, tanh_c = [n for n in graph.nodes if n.op == "Tanh"]
    mul = next(n for n in graph.nodes if n.op == "Mul")
    assert [n.op for n in x.users] == ["Tanh", "Tanh", "Tanh", "Exp"]
    assert tanh_b.outputs[0].users == [mul]
    graph.replace_all_uses(tanh_c.outputs[0], tanh_b.outputs[0])
    assert mul.inputs == (tanh_b.outputs[0], tanh_b.outputs[0])
    assert tanh_b.outputs[0].users == [mul, mul]  # once per input slot
    assert tanh_c.outputs[0].users == []
    graph.erase_nodes([tanh_c])
    assert tanh_c not in graph.nodes and [n.op for n in x.users] == ["Tanh", "Tanh", "Exp"]
    exp = graph.outputs[1].node
    graph.replace_all_uses(exp.outputs[0], tanh_a.outputs[0])  # a graph output too
    assert graph.outputs[1] is tanh_a.outputs[0]


def test_create_node_inserts_typed_nodes_where_asked():
    graph = _traced(lambda x: ag.tanh(x) * 2.0, np.ones((2, 3), np.float32))
    x = graph.inputs[0]
    tanh = graph.nodes[0]
    neg = graph.create_node("Neg", [x], {}, [((2, 3), np.float32, False)], tanh.location, before=tanh)
    assert graph.nodes.index(neg) == graph.nodes.index(tanh) - 1
    assert neg.name != tanh.name and neg.graph is graph and neg.opdef.involution
    assert neg.outputs[0].shape == (2, 3) and neg.outputs[0].dtype == np.float32 and neg in x.users
    end = graph.create_node("Abs", [neg.outputs[0]], {}, [((2, 3), np.float32, False)], tanh.location)
    assert graph.nodes[-1] is end and neg.outputs[0].users == [end]


def test_optimizing_keeps_the_traced_graph_and_its_users_intact():
    def fn(x):
        return ag.tanh(x * 1.0) + ag.tanh(x * 1.0)
    f = ag.function(fn)
    concrete = f.get_concrete_function(np.ones(3))
    traced = [(n.op, [t.name for t in n.inputs]) for n in concrete.graph.nodes]
    users = [[u.name for u in t.users] for n in concrete.graph.nodes for t in n.outputs]
    assert_same(fn(np.ones(3)), f(np.ones(3)))
    assert len(concrete.optimized_graph.nodes) < len(concrete.graph.nodes)
    assert [(n.op, [t.name for t in n.inputs]) for n in concrete.graph.nodes] == traced
    assert [[u.name for u in t.users] for n in concrete.graph.nodes for t in n.outputs] == users


def test_buffer_reuse_marks_the_node_not_a_side_table():
    def fn(x, y):
        return ag.tanh(x @ y) * 2.0
    f = ag.function(fn)
    x = np.ones((4, 4))
    assert_same(fn(x, x), f(x, x))
    graph = f.get_concrete_function(x, x).optimized_graph
    assert not hasattr(graph, "reuse")
    marked = {n.op: n.in_place_input for n in graph.nodes if n.op != "Const"}
    assert marked == {"MatMul": None, "Tanh": 0, "Mul": 0}


def test_the_plan_frees_each_value_after_its_last_use():
    """An unrolled loop's intermediates are freed as eager's are (a variable of the plan whose value
    is dead is rebound to the next result): peak memory near eager's, not one array per step."""
    import tracemalloc
    c = np.linspace(-2, 1, 120)[None, :] + 1j * np.linspace(-1.2, 1.2, 80)[:, None]
    compiled = ag.function(mandelbrot)
    assert_same(mandelbrot(c), compiled(c))
    peaks = []
    for fn in (mandelbrot, compiled):
        tracemalloc.start()
        fn(c)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    eager, plan = peaks
    assert plan <= 1.5 * eager, (plan, eager)


def contour_sums(ham, points, y):
    """NPBench's contour_integral, its loop over a tensor: a graph loop the plan runs in Python
    (complex128 has no C form), each iteration's arrays large."""
    p0 = np.zeros((y.shape[0], y.shape[1]), np.complex128)
    p1 = np.zeros((y.shape[0], y.shape[1]), np.complex128)
    for z in points:
        tz = np.zeros((ham.shape[1], ham.shape[1]), np.complex128)
        for n in range(ham.shape[0]):
            tz += np.power(z, 1.0 - n) * ham[n]
        x = np.linalg.solve(tz, y)
        if abs(z) < 1.0:
            x = -x
        p0 += x
        p1 += z * x
    return p0, p1


def test_a_loop_body_frees_each_value_after_its_last_use_and_writes_its_own_arrays_in_place(rng):
    # (a fixture: tests/test_interpreter.py does not rerun it, the interpreter keeping every value)
    import tracemalloc
    ham = rng.random((3, 60, 60)) + 1j * rng.random((3, 60, 60))
    points, y = np.exp(1j * np.linspace(0.1, 6.2, 12)) * 1.1, rng.random((60, 90)) + 0j
    compiled = ag.function(contour_sums)
    assert_same(contour_sums(ham, points, y), compiled(ham, points, y))
    body = next(n for n in compiled.get_concrete_function(ham, points, y).optimized_graph.nodes
                if n.op == "While").attrs["body"]
    assert any(n.op == "Add" and n.in_place_input is not None and any(n.inputs[n.in_place_input] is p
                                                                      for p in body.inputs)
               for n in body.nodes)  # p0 += x, into the loop's own p0
    peaks = []
    for fn in (contour_sums, compiled):
        tracemalloc.start()
        fn(ham, points, y)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    eager, plan = peaks
    assert plan <= eager, (plan, eager)  # each iteration's arrays kept to its next: 1.003x eager's


def _views_of_the_next_value(p, s, x, n):
    q = p * 1.0
    for i in ag.range(n):
        p = p + x           # p's next value; q below holds a view of it, read in the next iteration
        s = s + q
        q = p.reshape(-1)
    return p, s, q


def test_a_loop_variable_another_variable_views_is_not_written_in_place():
    # written in place, p's buffer would change under q's view: eagerly `p + x` makes a new array
    args = (np.arange(6.0), np.zeros(6), np.ones(6), np.int64(4))
    eager = _views_of_the_next_value(*args)
    compiled = ag.function(_views_of_the_next_value)
    for _ in range(4):  # past the native tier-up too
        assert_same(eager, compiled(*args))


def _unused_index_and_shape_ops(y, n):
    np.take_along_axis(y, np.minimum(y - 1, 0))  # unused: numpy raises for an index out of range
    np.broadcast_to(y[:1], (n, 4))               # unused: numpy raises for a negative length
    return 1


@pytest.mark.parametrize("n", [np.int64(-1), -1])
def test_unused_ops_that_raise_for_their_index_or_shape_values_stay(n):
    """Fuzzer seed 1212007928: an unused np.take_along_axis out of range was dropped, not raised."""
    for y, length in ((np.array([-5, 2, 0, 0], np.int8), 2), (np.array([1, 2, 3, 4], np.int8), n)):
        with pytest.raises((IndexError, ValueError)) as eager:
            _unused_index_and_shape_ops(y, length)
        with pytest.raises(type(eager.value)):
            ag.function(_unused_index_and_shape_ops)(y, length)
    assert ag.function(_unused_index_and_shape_ops)(np.array([1, 2, 3, 4], np.int8), 2) == 1


def _unused_histogram(x):
    np.histogram(x, bins=4)  # unused: numpy raises for a non-finite range
    return x


def test_an_unused_numpy_function_that_raises_for_its_values_stays():
    """numpy's own functions (histogram, np.linalg) raise for values (fuzzer seed 1130005277)."""
    with pytest.raises(ValueError):
        _unused_histogram(np.array([np.inf, 1.0]))
    with pytest.raises(ValueError):
        ag.function(_unused_histogram)(np.array([np.inf, 1.0]))
    assert_same(_unused_histogram(np.array([0.5, 1.0])), ag.function(_unused_histogram)(np.array([0.5, 1.0])))


def _fills_rows(table, data, n):
    for i in ag.range(n):             # a graph loop (AG_NATIVE=off: the plan's Python loop)
        table[i, i:] = table[i:, i] = data[i, i:] * 2.0   # the loop variable is only stored into
    return table


def _reads_then_fills(table, data, n):
    out = table.copy()
    for i in ag.range(n):
        row = out[i - 1] + 1.0 if i > 0 else out[0]   # reads the array it then stores into
        out[i] = row * data[i]
    return out, table


@pytest.mark.parametrize("fn", [_fills_rows, _reads_then_fills])
def test_a_loop_stores_into_its_own_array_in_place_and_leaves_the_start_value(monkeypatch, fn):
    monkeypatch.setenv("AG_NATIVE", "off")
    data = np.random.default_rng(1).random((6, 6))
    compiled = ag.function(fn)
    for _ in range(3):
        start, eager_start = np.zeros((6, 6)), np.zeros((6, 6))
        assert_same(fn(eager_start, data, np.int64(5)), compiled(start, data, np.int64(5)))
        np.testing.assert_array_equal(start, eager_start)
    graph = compiled.get_concrete_function(np.zeros((6, 6)), data, np.int64(5)).optimized_graph
    (loop,) = [n for n in graph.nodes if n.op == "While"]
    stores = [n for n in loop.attrs["body"].nodes if n.op == "SetItem"]
    # each iteration stores into the loop's array, not into a copy of it (one copy on entering)
    assert all(n.in_place_input == 0 for n in stores) == (fn is _fills_rows)


def _sums_under_an_if(sigma, g, n):
    """NPBench's scattering_self_energies in small: a tensor `if` in a loop adds into the array
    the loop carries (complex128: the plan's Python loop)."""
    for e in range(n):
        for w in range(2):
            if e - w >= 0:
                sigma[e] += g[e - w] @ g[w]
    return sigma


def _if_keeps_the_old_array(sigma, g, n):
    acc, total = sigma * 1.0, sigma[0] * 0.0
    for e in range(n):
        old = acc                    # the same array: eagerly it shows the branch's store
        if e % 2 == 0:
            acc[e] = g[e] @ g[e]
        total = total + old[e]
    return acc, total


def _if_gives_another_array(sigma, g, n):
    acc, other = sigma * 1.0, sigma * 2.0
    for e in range(n):
        if e % 3 == 0:
            acc = acc + g[e]
        else:
            acc = other              # an array read after the loop too
        acc = acc * 1.0
        acc[e] = g[e] @ g[0]
    return acc, other


def _if_writes_a_view(sigma, g, n):
    acc = sigma * 1.0
    rows = acc[1:]                   # a view: the branch's store shows in acc
    for e in range(n):
        if e % 2 == 0:
            rows[e % 5] = g[e]
        acc[e] += rows[0]
    return acc


def _if_after_a_copy(sigma, g, n):
    acc, total = sigma * 1.0, sigma[0] * 0.0
    for e in range(n):
        before = acc.copy()          # the old contents, read after the branch's store
        if e % 2 == 0:
            acc[e] = g[e]
        total = total + before[e]
    return acc, total


def _if_hands_one_array_to_two_names(sigma, g, n):
    a, b = sigma[0] * 1.0, sigma[0] * 2.0
    for e in range(n):
        if e % 2 == 0:
            a = a + g[e]             # into a's array only where nothing else holds it
        else:
            b = a                    # from here b holds a's array
    return a, b


def _if_hands_a_view_on(sigma, g, n):
    a, b = sigma[0] * 1.0, sigma[0] * 2.0
    for e in range(n):
        if e % 2 == 0:
            a = a + g[e]
        else:
            b = a.T
    return a, b


def _nested_ifs_write_the_loop_array(sigma, g, n):
    for e in range(n):
        if e % 2 == 0:
            if e % 4 == 0:
                sigma[e] = g[e]
            else:
                sigma[e] -= g[e]
    return sigma


@pytest.mark.parametrize("fn", [_sums_under_an_if, _if_keeps_the_old_array, _if_gives_another_array,
                                _if_writes_a_view, _if_after_a_copy, _if_hands_one_array_to_two_names,
                                _if_hands_a_view_on, _nested_ifs_write_the_loop_array])
def test_a_branch_writes_the_loop_array_in_place_only_where_nothing_reads_the_old_one(fn):
    rng = np.random.default_rng(3)
    g = rng.random((6, 3, 3)) + 1j * rng.random((6, 3, 3))
    compiled = ag.function(fn)
    for n in (5, 6, 5, 6):  # past the native tier-up too; the last iteration taking either branch
        sigma, eager_sigma = np.ones((6, 3, 3), np.complex128), np.ones((6, 3, 3), np.complex128)
        assert_same(fn(eager_sigma, g, np.int64(n)), compiled(sigma, g, np.int64(n)))
        np.testing.assert_array_equal(sigma, eager_sigma)


def test_a_branch_stores_into_the_array_a_loop_carries_without_copying_it():
    g = np.ones((6, 3, 3), np.complex128)
    graph = ag.function(_sums_under_an_if).get_concrete_function(
        np.zeros((6, 3, 3), np.complex128), g, np.int64(6)).optimized_graph
    stores = [n for n in graph.walk() if n.op == "SetItem" and n.graph is not graph]
    assert stores and all(n.in_place_input == 0 for n in stores)
    # one store a branch: `sigma[e] = sigma[e]`, what `+=` on an item leaves after its update, is gone
    assert len(stores) == sum(n.op == "Cond" for n in graph.walk())


def _stores_of_every_index_kind(data, n):
    out = np.zeros((4, 5, 6))
    mask = data[0, 0] > 0.5
    for i in ag.range(n):
        out[i] = data[i]                          # an int from the loop
        out[i, 1:i + 2] += 1.0                    # a slice with a tensor bound; `+=` on an item
        out[..., i] = out[..., i + 1] * 2.0       # an Ellipsis
        out[i, ::-2, None] = data[i, ::-2, None]  # a negative step, a new axis
        out[i, 0, mask] = -1.0                    # a bool mask
        out[[0, 2], i] = 3.0                      # an index list
    return out


def test_a_store_written_in_place_is_python_item_assignment(monkeypatch):
    monkeypatch.setenv("AG_NATIVE", "off")  # the plan's own Python loop
    data = np.random.default_rng(2).random((4, 5, 6))
    compiled = ag.function(_stores_of_every_index_kind)
    for _ in range(3):
        assert_same(_stores_of_every_index_kind(data, np.int64(4)), compiled(data, np.int64(4)))
    plan = compiled.get_concrete_function(data, np.int64(4)).plan.source
    stores = [line for line in plan.splitlines() if re.match(r"\s+l\d+\[.*\] = ", line)]
    assert len(stores) == 6, plan  # each store a subscript of the loop's own array, not a kernel call
    with pytest.raises(IndexError):
        _stores_of_every_index_kind(data, np.int64(5))
    with pytest.raises(IndexError):
        compiled(data, np.int64(5))


def _fills_new_arrays(x):
    zeros, empty, negative_zeros = np.zeros((3, 200, 100)), np.empty((3, 200, 100)), np.full((3, 200, 100), -0.0)
    for k in range(3):
        zeros[k, :, :50] = x[k, :, 50:]
        empty[k] = x[k] * 2.0
        negative_zeros[k, 1:] = x[k, 1:]
    return zeros, empty, negative_zeros


def test_a_store_into_a_constant_of_zeros_makes_new_zeros_instead_of_copying_it():
    x = np.random.default_rng(4).random((3, 200, 100))
    compiled = ag.function(_fills_new_arrays)
    for _ in range(3):
        eager, got = _fills_new_arrays(x), compiled(x)
        assert_same(eager, got)
        assert np.signbit(got[2][0, 0]).all() and not np.signbit(got[0][0, :, 50:]).any()
    plan = compiled.get_concrete_function(x).plan.source
    # zeros as new zeros (its constant is every byte zero; np.empty's is whatever memory it got, and
    # -0.0 is not: signbit above), not a copy of the constant
    assert re.search(r"v\d+ = k\d+\(\(3, 200, 100\), k\d+\)\n\s+v\d+\[0, :, :50\] = ", plan), plan


# a review of the branch-donation change found three ways a plan wrote an array another value still
# held: a loop variable handed another variable's array (its start value, never copied), a loop's
# result passing a swapped variable's start value on, and a simplification making two results one array

def _hands_a_start_value_to_another_variable(a, b, n):
    p = a
    j = a * 0.0
    for i in range(n):
        if i % 2 == 1:
            j = j + 1.0
        else:
            j = p                    # i = 0: j holds a's array, which the next iteration adds to
        p = b * i
    return j


def _hands_a_kept_array_on(a, b, n):
    p = a * 3.0
    keep = p
    out = a * 0.0
    for i in range(n):
        if i % 2 == 0:
            r = p
        else:
            r = b * 1.0
        if i < 100:
            r = r + 1.0
        out = out + r
        p = b * i
    return out, keep


def _swaps_then_adds(a, b, n):
    x = a * 1.0
    y = b
    i = 0
    while i < n:
        x, y = y, a * i          # after one iteration x is b's array
        i += 1
    if n > 0:
        x = x + 1.0
    return x


def _two_results_of_one_value(a):
    y = a + 1.0
    z = y * 1.0                  # equal to y, but eagerly another array
    return y, z


@pytest.mark.parametrize("fn, n", [(_hands_a_start_value_to_another_variable, 3), (_hands_a_kept_array_on, 3),
                                   (_swaps_then_adds, 1), (_swaps_then_adds, 2)])
def test_an_array_handed_between_loop_variables_is_not_written_in_place(fn, n):
    compiled = ag.function(fn)
    for _ in range(4):
        a, b, eager_a, eager_b = np.arange(4.0), np.ones(4), np.arange(4.0), np.ones(4)
        assert_same(fn(eager_a, eager_b, np.int64(n)), compiled(a, b, np.int64(n)))
        np.testing.assert_array_equal(a, eager_a)
        np.testing.assert_array_equal(b, eager_b)


def test_two_results_equal_by_simplification_stay_two_arrays():
    y, z = ag.function(_two_results_of_one_value)(np.arange(4.0))
    assert_same(_two_results_of_one_value(np.arange(4.0)), (y, z))
    assert not np.shares_memory(y, z)


# a second review found: a loop variable donated to a branch while another variable still viewed the
# array the last iteration gave it; two simplifications making two results one array; numpy
# functions handing an input back as their result (the plan then wrote the caller's array)

def _adds_in_a_branch_to_an_array_another_variable_views(a, n):
    p = a * 1.0
    v = a[1:] * 0.0
    acc = a[1:] * 0.0
    for i in range(n):
        if i % 2 == 0:
            p = p + 1.0              # a new array eagerly: v keeps the last iteration's p[1:]
        acc = acc + v
        p = p * 2.0
        v = p[1:]
    return p, acc


def _two_rules_on_one_value(a):
    y = a + 1.0
    return y * 1.0, y / 1.0


def _numpy_hands_an_input_back(a, bins):
    counts, edges = np.histogram(a, bins=bins)   # edges is `bins` itself
    power = np.linalg.matrix_power(a.reshape(2, 2), 1)  # a's array itself, as a 2 x 2 view
    return counts, edges * 2.0, power + 1.0


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_branch_does_not_write_an_array_another_loop_variable_views(n, monkeypatch):
    monkeypatch.setenv("AG_NATIVE", "off")  # the plan's Python loop (a C loop makes its own arrays)
    compiled = ag.function(_adds_in_a_branch_to_an_array_another_variable_views)
    for _ in range(4):
        assert_same(_adds_in_a_branch_to_an_array_another_variable_views(np.arange(4.0), np.int64(n)),
                    compiled(np.arange(4.0), np.int64(n)))


def test_results_equal_by_two_simplifications_stay_two_arrays():
    first, second = ag.function(_two_rules_on_one_value)(np.arange(4.0))
    assert_same(_two_rules_on_one_value(np.arange(4.0)), (first, second))
    assert not np.shares_memory(first, second)


def test_a_numpy_function_handing_an_input_back_leaves_the_callers_array(monkeypatch):
    monkeypatch.setenv("AG_NATIVE", "off")
    compiled = ag.function(_numpy_hands_an_input_back)
    for _ in range(3):
        a, bins = np.arange(4.0), np.array([0.0, 1.5, 3.0])
        assert_same(_numpy_hands_an_input_back(a.copy(), bins.copy()), compiled(a, bins))
        np.testing.assert_array_equal(a, np.arange(4.0))
        np.testing.assert_array_equal(bins, [0.0, 1.5, 3.0])
