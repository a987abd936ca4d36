"""Views in native C (runtime/native/render.py): transposes, slices, columns and new axes are
read in place through their strides, broadcasts (BroadcastLike) where they are read, SumToShape
and multi-axis sums as one reduction, concatenation as copies into place, a fused chain by its
steps. Each program runs compiled (C once hot) against its eager run, bit for bit; where numpy's
result depends on memory order (a float reduction of a transposed view) the region stays numpy
and says why."""

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.ops.core import apply
from autograph_lite.ops.gradient_ops import BROADCAST, SUM_TO
from autograph_lite.runtime.native import compiler, loops
from examples.models import mlp_step, mlp_step_inputs
from helpers import force_native, native_regions, plan_after_tier_up

pytestmark = pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")
CALLS = loops.TIER_UP_AFTER + 2


@pytest.fixture(autouse=True)
def native_on(monkeypatch):
    force_native(monkeypatch)


def regions(fn, *args):
    """Call compiled fn CALLS times against eager; its plan's regions (native or numpy, and why)."""
    return plan_after_tier_up(fn, *args).native


def all_native(fn, *args):
    found = regions(fn, *args)
    assert found and all(r.native is not None and r.native.fn for r in found), found


def rnn_by_columns(inputs, seq_len, w, b, w_out, b_out):
    """W2 as a user with batch-major inputs writes it: a column per step, the step's input and
    the state joined by np.concatenate for one matmul."""
    state = np.zeros((inputs.shape[0], w.shape[1]), inputs.dtype)
    for i in ag.range(ag.shape(inputs)[1]):
        updated = np.tanh(np.concatenate([inputs[:, i], state], axis=1) @ w + b)
        state = np.where(i >= seq_len[:, None], state, updated)
    return state @ w_out + b_out


def rnn_by_columns_unrolled(inputs, seq_len, w, b):
    state = np.zeros((inputs.shape[0], w.shape[1]), inputs.dtype)
    for i in range(inputs.shape[1]):  # a Python loop: one straight-line graph
        updated = np.tanh(np.concatenate([inputs[:, i], state], axis=1) @ w + b)
        state = np.where(i >= seq_len[:, None], state, updated)
    return state


def rnn_args(batch=6, steps=7, n_in=3, units=5, dtype=np.float32):
    rng = np.random.default_rng(1)
    r = lambda *shape: (rng.standard_normal(shape) * 0.4).astype(dtype)  # noqa: E731
    return (r(batch, steps, n_in), rng.integers(1, steps + 1, batch), r(n_in + units, units), r(units),
            r(units, 2), r(2))


def test_w2_written_with_columns_and_concatenate_is_one_c_region():
    all_native(rnn_by_columns, *rnn_args())
    all_native(rnn_by_columns_unrolled, *rnn_args(dtype=np.float64)[:4])


def test_w5_gradient_graph_is_one_c_region():
    """mlp_step via ag.value_and_grad: the transposes feeding matmul, the broadcast of the mean's
    gradient, the fused update: one C function, equal to the eager gradient bit for bit."""
    all_native(mlp_step, *mlp_step_inputs(n=8, d=30, h=12, out=3))
    all_native(mlp_step, *mlp_step_inputs())   # W5's sizes: arrays of 100,000 elements on the heap


def matmuls_of_views(x, w):
    return (x.T @ x, x[::2].T @ x[1::2], x[:, ::-1] @ w, x[:, 1:3] @ w[1:3], np.transpose(w) @ x.T,
            x[::-1, ::-2] @ w[::2])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_matmul_reads_transposes_and_strided_slices_in_place(dtype):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((6, 4)) * 3).astype(dtype)
    w = (rng.standard_normal((4, 5)) * 3).astype(dtype)
    all_native(matmuls_of_views, x, w)


def dots_of_views(x, w, y):
    a = x[:5] * 2.0
    return (np.dot(x[::-1], w), np.dot(x[:, ::-1], w[::-1]), np.dot(x.T, x), np.dot(x, x.T),
            np.dot(a, (x[:5] * 2.0).T), a @ a.T, a @ (x[:5] * 2.0).T, np.dot(x[::2, :3], w[:3, ::2]),
            np.dot(y[::-1], y), np.dot(y[:1], y[-1:]), np.dot(y[::2], y[1::2]), np.dot(x[1], w[:, 0][::-1]),
            y[::-1] @ y, y[:1] @ y[-1:])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dot_copies_what_numpys_dot_copies_and_multiplies_one_element_vectors(dtype):
    """np.dot in C as numpy's dot computes it: a flipped operand copied for BLAS (np.matmul's loop
    sums it in place), a matrix neither C- nor F-contiguous copied, one-element vectors multiplied
    (-1.5 * 0.0 is -0.0; matmul's sum onto 0 gives 0.0), a matrix and its transpose by syrk,
    two equal arrays (`x[:5] * 2.0` twice) by gemm; bit for bit, signed zeros too."""
    rng = np.random.default_rng(12)
    x, w, y = ((rng.standard_normal(shape) * 100).astype(dtype) for shape in ((8, 6), (6, 7), 40))
    y[0], y[-1] = -1.5, 0.0
    compiled = ag.function(dots_of_views)
    eager = dots_of_views(x, w, y)
    for _ in range(CALLS):
        result = compiled(x, w, y)
        for k, (e, c) in enumerate(zip(eager, result)):
            assert type(c) is type(e) and c.dtype == e.dtype and c.tobytes() == e.tobytes(), (k, e, c)
    found = compiled.get_concrete_function(x, w, y).plan.native
    assert found and all(r.native is not None and r.native.fn for r in found), found


def elementwise_of_views(x, y, k):
    a = x.T * 2.0 + y                 # a transpose broadcast against a row
    b = np.tanh(x[:, ::-1]) - x[::-1]  # numpy's loop over a packed copy of a view
    c = x[:, k] + x[k]                 # a column and a row by a computed index
    d = x[None, :, 1] * x[:, None, 0]  # new axes
    return a, b, c, d, a.reshape(-1) + 1.0, x.T.reshape(2, -1) * 3.0


def test_elementwise_ops_and_reshapes_read_views_through_their_strides():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 4))
    all_native(elementwise_of_views, x, rng.standard_normal(4), np.int64(2))
    with pytest.raises(IndexError):
        ag.function(elementwise_of_views)(x, rng.standard_normal(4), np.int64(9))


def shortest_paths(path):
    # NPBench's floyd_warshall: np.add.outer is `a[..., None] + b`, its column read at stride 0
    for k in ag.range(ag.shape(path)[0]):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))
    return path[..., 1:, None] * 2


@pytest.mark.parametrize("n", [6, 160])  # 160: arrays beyond a C function's locals, in its heap block
def test_ellipsis_views_and_large_loop_bodies_are_native(n):
    path = np.random.default_rng(5).integers(1, 50, (n, n)).astype(np.float64)
    _, found = native_regions(shortest_paths, path)
    assert found and all(r.native is not None and r.native.fn for r in found), found


def sums_of_views(x):
    return (x[:, 1:3].sum(axis=1), x[1:, ::2].sum(axis=0), x[::-1, 2].sum(), x[1, ::-1].mean(), np.max(x[:, 0]))


def test_reductions_of_views_in_numpys_order():
    x = np.random.default_rng(4).standard_normal((40, 30)).astype(np.float32)
    all_native(sums_of_views, x)


def order_sensitive(x):
    return x.T.sum(axis=0), x[:, :150].sum(), (x.T * 2.0).sum(axis=1), x.T.sum()


def test_a_float_reduction_that_depends_on_memory_order_stays_numpy_and_says_why():
    """numpy sums a transposed view (or a result laid out as one) in memory order and a slice
    with rows of their own pairwise: such a region is numpy's, equal to eager. (Before views, the
    slice's sum was a contiguous copy's: -214.72287 against eager's -214.7229.)"""
    x = np.random.default_rng(1).standard_normal((300, 400)).astype(np.float32)
    (region,) = regions(order_sensitive, x)
    assert region.native is None and "reduces in the order of its memory layout" in region.why
    # integer sums do not depend on the order
    all_native(lambda x: (x.T.sum(axis=0), x[:, :20].sum()), np.arange(1200).reshape(40, 30))


def multi_axis_sums(x):
    return x.sum(axis=(0, 1)), x.sum(axis=(1, 2)), x.mean(axis=(0, 1)), x.max(axis=(1, 2))


def test_sums_over_adjacent_axes_are_one_reduction():
    x = np.random.default_rng(6).standard_normal((5, 6, 70))
    all_native(multi_axis_sums, x)


def broadcasts_and_sums_to_shape(g, like, row):
    wide = apply(BROADCAST, (row, like))           # [1, n] to [m, n]: a fresh array in numpy
    return (apply(SUM_TO, (g, row)), apply(SUM_TO, (g, like[0])), wide * 2.0, wide @ g.T,
            apply(SUM_TO, (g * wide, np.zeros((1, 1)))))


def test_gradient_broadcasts_and_sums_to_shape_with_size_one_dims():
    rng = np.random.default_rng(7)
    all_native(broadcasts_and_sums_to_shape, rng.standard_normal((5, 3)), np.zeros((5, 3)),
               rng.standard_normal((1, 3)))


def concatenations(x, y, n):
    return (np.concatenate([x, y], axis=0), np.concatenate([x, x[:, :0], y.T[:2] * n], axis=1),
            np.concatenate([x[:, ::-1], x.T[:, :2].T.astype(np.float32)], axis=-1), ag.concat([x[0], y[:, 1]], 0))


def test_concatenation_copies_each_piece_into_place_cast_as_numpy_casts():
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((2, 3)), rng.integers(-5, 5, (3, 3)).astype(np.int32)
    all_native(concatenations, x, y, np.int32(3))


def test_a_zero_size_result_stays_numpy():
    (region,) = regions(lambda x: (np.concatenate([x[:, :0], x[:, 3:]], axis=1) + 1.0, x.sum()), np.ones((3, 3)))
    assert region.native is None and "empty" in region.why


def sgd_update(w, x, d):
    return w - 0.1 * (x.T @ d)


def sgd_update_and_gradient_sum(w, x, d):
    g = x.T @ d
    return w - 0.1 * g, g.sum()


def test_a_matmul_read_only_by_an_outputs_elementwise_op_is_made_in_that_output():
    """W5's `w1 - lr * dw1`: dw1 is made in the output's buffer (no array of its own, whose pages
    the OS would give on every call); each element is read before it is written."""
    rng = np.random.default_rng(9)
    w, x, d = rng.standard_normal((200, 100)), rng.standard_normal((30, 200)), rng.standard_normal((30, 100))
    all_native(sgd_update, w, x, d)
    (region,) = regions(sgd_update, w, x, d)
    assert "(char*)o0}" in region.native.text and "malloc" not in region.native.text
    (region,) = regions(sgd_update_and_gradient_sum, w, x, d)  # read twice: an array of its own
    assert region.native is not None and "(char*)o0}" not in region.native.text


def nested_loop_over_a_view(x, n):
    total = x[0] * 0.0
    i = 0
    while i < n:
        row = x.T[i % 3]             # a strided row of a transpose, carried into the inner loop
        j = 0
        while j < 2:
            row = row * 0.5 + x[:, 0]
            j += 1
        total = total + row
        i += 1
    return total


def test_loops_carry_views_as_copies_of_their_own():
    x = np.random.default_rng(10).standard_normal((3, 3))
    all_native(nested_loop_over_a_view, x, np.int64(4))


def empty_views(x):
    return x[:, 2:2].sum(axis=1), x[:, 2:2] @ x[2:2], x[1:, ::-1] + 1.0


def test_views_with_a_zero_size_dim_run_as_numpy_does():
    x = np.arange(12.0).reshape(3, 4)
    (region,) = regions(empty_views, x)
    assert region.native is None and "empty" in region.why
    compiled = ag.function(lambda x: np.max(x[:, 1:1], axis=1))
    with pytest.raises(ValueError):
        np.max(x[:, 1:1], axis=1)
    for _ in range(CALLS):
        with pytest.raises(ValueError):
            compiled(x)


VIEWS = {"x": lambda x: x, "x.T": lambda x: x.T, "x[::-1]": lambda x: x[::-1], "x[:, ::-2]": lambda x: x[:, ::-2],
         "x[1:, :1]": lambda x: x[1:, :1], "x[None, 1]": lambda x: x[None, 1], "x.T[::2]": lambda x: x.T[::2],
         "x[2]": lambda x: x[2], "x[:, 3:4].T": lambda x: x[:, 3:4].T}


def combinations(view_a, view_b):
    def fn(x, y):
        a, b = view_a(x), view_b(y)
        both = a * 2 + b                                  # broadcast against each other
        out = [both, np.maximum(a, b).sum(axis=0), np.where(a > 0, a, b), both.max()]
        if a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0]:
            out.append(a @ b)
        if a.ndim == b.ndim and a.shape[1:] == b.shape[1:]:
            out.append(np.concatenate([a, b]))
        return tuple(out)
    return fn


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_every_pair_of_views_broadcast_reduced_multiplied_and_joined_equals_eager(dtype):
    """A differential sweep: views with negative steps, size-1 dims and new axes, in pairs that
    broadcast, through elementwise ops, reductions, matmul and concatenation."""
    rng = np.random.default_rng(11)
    x, y = (rng.standard_normal((4, 4)) * 4).astype(dtype), (rng.standard_normal((4, 4)) * 4).astype(dtype)
    native = 0
    for name_a, view_a in VIEWS.items():
        for name_b, view_b in VIEWS.items():
            try:
                np.broadcast_shapes(view_a(x).shape, view_b(y).shape)
            except ValueError:
                continue
            fn = combinations(view_a, view_b)
            fn.__name__ = f"views_{len(name_a)}_{len(name_b)}"
            native += all(r.native is not None for r in regions(fn, x, y))
    assert native >= 30


def test_a_whole_float_sum_of_a_slice_is_numpys_not_a_contiguous_copys():
    """Before views, the C summed a contiguous copy of x[:, :150] in one pairwise pass: -214.72287
    where numpy, which sums row by row, gives -214.7229. Now that region stays numpy."""
    x = np.random.default_rng(1).standard_normal((300, 400)).astype(np.float32)
    (region,) = regions(lambda x: x[:, :150].sum(), x)
    assert region.native is None
