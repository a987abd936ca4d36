"""ag.export_onnx: every exported model passes the ONNX checker and onnxruntime returns what the
eager run returns (values and dtypes) for the six workloads and functions with control flow."""
import sys

import numpy as np
import pytest

import autograph_lite as ag
from helpers import to_host
from autograph_lite.export import onnx as onnx_export
from autograph_lite.runtime.opdef import REGISTRY
from benchmarks.workloads import WORKLOADS

onnx = pytest.importorskip("onnx", reason="ONNX export tests need the onnx extra: pip install autograph_lite[onnx]")
ort = pytest.importorskip("onnxruntime",
                          reason="ONNX export tests need the onnx extra: pip install autograph_lite[onnx]")


def run_onnx(fn, args, tmp_path, **export_args):
    """Export `fn`'s trace for `args`, check the model, run it in onnxruntime; returns its outputs."""
    f = ag.function(fn)
    path = str(tmp_path / f"{fn.__name__}.onnx")
    model = ag.export_onnx(f.get_concrete_function(*args), path, **export_args)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(path)
    arrays = [a for a in args if isinstance(a, (np.ndarray, np.generic))]
    return session.run(None, {i.name: np.asarray(a) for i, a in zip(session.get_inputs(), arrays)})


def assert_matches_eager(fn, *args, tmp_path):
    args = tuple(to_host(list(args)))  # ONNX Runtime takes host arrays
    with ag.device("cpu"):  # the eager oracle: numpy
        eager = _leaves(fn(*args))
    got = run_onnx(fn, args, tmp_path)
    assert len(got) == len(eager)
    for g, e in zip(got, eager):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        if e.dtype.kind == "f":
            # onnxruntime's float32 tanh/exp may differ from numpy's by an ulp or two
            tol = dict(rtol=1e-5, atol=1e-6) if e.dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(g, e, **tol)
            zeros = (g == 0) & (e == 0)
            np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(e[zeros]))  # -0.0 stays -0.0
        else:
            np.testing.assert_array_equal(g, e)


def _leaves(value):
    """The eager result as the model's outputs: tuple items in order, a list as one stacked array."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    value = to_host(value)
    return [np.asarray(np.stack(value) if isinstance(value, list) else value)]


# --- the six workloads (W7 and W8 store into arrays: SetItem has no ONNX form yet, export/onnx.py) ---

@pytest.mark.parametrize("name", sorted(k for k in WORKLOADS if k.split()[0] not in ("W7", "W8")))
def test_workloads_match_eager(name, tmp_path):
    _, fn, inputs = WORKLOADS[name]
    # W4 at a small size (the exported graph is the same for 4M elements); W5's gradients are
    # part of its traced graph (value_and_grad is traced inline), so the whole SGD step exports
    args = (np.random.default_rng(0).standard_normal(1000).astype(np.float32),) if name.startswith("W4") \
        else inputs()
    assert_matches_eager(fn, *args, tmp_path=tmp_path)


# --- control flow ---------------------------------------------------------------------------

def nested_loops(x, n):
    acc = ag.zeros_like(x)
    for i in ag.range(n):
        for j in ag.range(i):
            acc = acc + x * ag.cast(i * j, x.dtype)
    return acc


def break_in_while(x):
    i = 0
    while i < ag.size(x):
        if x[i] > 0.5:
            break
        i += 1
    return i


def continue_in_for(x):
    total = 0.0
    for i in ag.range(ag.size(x)):
        if i % 3 == 0:
            continue
        total += x[i]
    return total


def return_inside_loop(x):
    for i in ag.range(ag.size(x)):
        if x[i] < 0:
            return x[i] * 2.0
    return ag.reduce_sum(x)


def stacked_in_loop(x, n):
    rows = []
    for i in ag.range(n):
        x = x * 0.5 + ag.cast(i, x.dtype)
        rows.append(x)
    return ag.stack(rows)


def list_returned(x, n):
    rows = [x]
    for i in ag.range(n):
        rows.append(x + ag.cast(i, x.dtype))
    return rows


def cond_inside_while(x):
    steps = 0
    while ag.reduce_max(x) > 1.0:
        if ag.reduce_sum(x) > 10.0:
            x = x * 0.5
        else:
            x = x - 0.25
        steps += 1
    return x, steps


def while_inside_cond(x, n):
    if ag.reduce_sum(x) > 0:
        i = 0
        while i < n:
            x = ag.tanh(x) + 1.0
            i += 1
    else:
        x = -x
    return x


def nested_break(x):
    found = -1
    for i in ag.range(ag.shape(x)[0]):
        for j in ag.range(ag.shape(x)[1]):
            if x[i, j] > 1.5:
                found = i * 10 + j
                break
        if found >= 0:
            break
    return found


def mixed_dtypes(a_i32, b_i8, c_u8, d_f32):
    s = a_i32 + b_i8            # int32
    t = b_i8 + c_u8             # int16
    u = d_f32 * 3 + a_i32       # float64 (int32 with float32)
    v = c_u8 * 2                # uint8, weak int kept
    w = a_i32 / 2               # float64 true division
    return s, t, u, v, w


def small_int_overflow(x_i8, y_u8, n):
    for _ in ag.range(n):
        x_i8 = x_i8 * np.int8(3) + np.int8(1)
        y_u8 = y_u8 + np.uint8(77)
    return x_i8, y_u8, -y_u8


def floor_div_mod(a, b, fa, fb):
    return a // b, a % b, fa // fb, fa % fb, a // 3, a % -3


def signed_zeros(c, x, y):
    return ag.where(c, x, y), ag.where(c, -x, y * 0.0), ag.maximum(x, y), ag.minimum(x, y), ag.nn.relu(x)


def where_and_reductions(x, m):
    y = ag.where(m, x, -x)
    return (ag.reduce_sum(y, axis=0), ag.reduce_mean(y, axis=1, keepdims=True), ag.reduce_max(y),
            ag.reduce_min(y, axis=(0, 1)), ag.reduce_prod(y[0]), ag.reduce_any(m, axis=1), ag.reduce_all(m),
            ag.argmax(y), ag.argmax(y, axis=1), ag.reduce_sum(m))


def nan_reductions(x):
    # numpy's fmax/fmin.reduce (a NaN loses; an all-NaN slice is NaN): the ONNX model fills and masks
    return np.nanmax(x), np.nanmax(x, 0), np.nanmin(x, 1, keepdims=True), np.nanmin(x, (0, 1)), np.nanmax(x[0, 0])


def power_iteration(a, v, n):
    for _ in ag.range(n):
        v = ag.matmul(a, v)
        v = v / ag.sqrt(ag.reduce_sum(v * v))
    return v, ag.matmul(v, ag.matmul(a, v))


def slicing(x, i):
    return (x[1:-1], x[::-1], x[::2, 1], x[i], x[:, None, 0], x[..., -1], x[i:, : i + 1],
            x[::-2, ::-1], x[-1], x[2:0:-1])


def bool_arithmetic(a, b):
    p, q = a > 0, b > 0
    return p + q, p * q, ag.maximum(p, q), ag.reduce_sum(p) + 1, ~p if False else ag.logical_not(p)


def array_ops(x, idx):
    y = ag.reshape(ag.transpose(x), (-1,))
    z = ag.concat([ag.gather(y, idx), ag.ones((2,), np.float32)], axis=0)
    p = ag.pad(x, [[1, 0], [0, 2]])
    s = ag.nn.softmax(x) + ag.nn.relu(x - 0.5) + ag.nn.sigmoid(x)
    return z, p, s, ag.expand_dims(x, 0), ag.squeeze(x[None]), ag.stack([x, x], axis=1), ag.fill((2, 3), x[0, 0])


def zero_iteration_list(x, n):
    rows = []
    for i in ag.range(n):
        rows.append(x * ag.cast(i, x.dtype))
    return ag.concat([ag.stack(rows + [x]), x[None]], axis=0)


def int_power_and_pow(x, f):
    return x ** 3, x ** 0, f ** 2.5, ag.square(x), ag.abs(-x)


def counting_loop_int32(n):
    total = np.int32(0)
    i = np.int32(0)
    while i < n:
        if i % 2 == 0:
            total += i // 2
        else:
            total -= i
        i += 1
    return total, i


def creation_and_shapes(x, n):
    r = ag.range(n) + ag.range(2, n + 2) * ag.range(1, 2 * n + 1, 2)
    z = ag.zeros((n, 2), np.int32) + ag.ones(ag.shape(x), np.int8)[0, :2]
    like = ag.zeros_like(x) - ag.ones_like(x, dtype=np.float64)
    flat = ag.reshape(x, (ag.size(x),))
    return r, z, like, flat, ag.squeeze(ag.expand_dims(x, 2)), ag.reduce_prod(x + 1.0, axis=0)


def logic_and_math(x, y):
    p = ag.logical_and(x > 0, y < 0)
    q = ag.logical_or(p, ag.logical_not(x > y))
    m = ag.cast(ag.exp(x) + ag.log(ag.abs(y) + 1.0) + ag.sqrt(ag.abs(x)), np.int32)
    n = 0
    while not (n >= ag.cast(x[0] * 0.0, np.int64) + 3):
        n += 1
    return p, q, m, ag.cast(x * 3.7, np.int8), ag.cast(m, np.bool_), ag.identity(y), n


def list_appended_in_both_branches(x, n):
    rows = []
    for i in ag.range(n):
        if i % 2 == 0:
            rows.append(x * 2.0)
        else:
            rows.append(x - 1.0)
    return ag.stack(rows)


def python_numbers_in_a_loop(x, n):
    values = [0.5]
    for i in range(n // 2, n + 1):
        values.append(values[-1] * 2 + i)
    total = 0.0
    for v in values:
        total = total + v
    return x * total


def gradient_with_unknown_shapes(x, b):
    return ag.grad(lambda b: ag.reduce_sum(ag.tanh(x * b)))(b)


def gradient_through_indexing(x, i):
    # ScatterAdd: the gradient of slices, of a tensor index and of repeated gather indices
    return ag.grad(lambda x: ag.reduce_sum(ag.tanh(x[1:, ::-2]) * 3.0) + ag.reduce_sum(x[i] ** 2)
                   + ag.reduce_sum(x[:, None, 0]) + ag.reduce_sum(ag.gather(x, np.array([0, 0, 2]))))(x)


def shape_relaxed_loop(x, n):
    i = 0
    while i < n:
        x = ag.concat([x, x[:1] * 2.0], 0)  # grows each iteration: a loop variable of shape [None]
        i += 1
    return x


def branch_shapes(x):
    if ag.reduce_sum(x) > 0:
        y = x[:2]
    else:
        y = x
    return y


def for_over_a_tensor(x):
    n = 0
    for v in x:
        if v > 0:
            n += 1
    return n


RNG = np.random.default_rng(7)
F32 = lambda *shape: RNG.standard_normal(shape).astype(np.float32)  # noqa: E731

CASES = [
    (nested_loops, (F32(3), np.int32(5))),
    (break_in_while, (np.array([0.1, 0.2, 0.9, 0.3], np.float32),)),
    (break_in_while, (np.array([0.1, 0.2], np.float32),)),
    (continue_in_for, (F32(10),)),
    (return_inside_loop, (np.array([1.0, 2.0, -3.0, 4.0]),)),
    (return_inside_loop, (np.array([1.0, 2.0, 3.0]),)),
    (stacked_in_loop, (F32(4), np.int64(6))),
    (list_returned, (F32(2), np.int64(3))),
    (cond_inside_while, (F32(5) * 10,)),
    (while_inside_cond, (np.abs(F32(4)), np.int64(3))),
    (while_inside_cond, (-np.abs(F32(4)), np.int64(3))),
    (nested_break, (F32(4, 5),)),
    (mixed_dtypes, (np.arange(-3, 3, dtype=np.int32), np.arange(-3, 3, dtype=np.int8) * 40,
                    np.arange(250, 256, dtype=np.uint8), F32(6))),
    (small_int_overflow, (np.arange(-4, 4, dtype=np.int8) * 30, np.arange(0, 256, 37, dtype=np.uint8),
                          np.int32(5))),
    (floor_div_mod, (np.array([7, -7, 7, -7, 0, -128, 5], np.int32), np.array([2, 2, -2, -2, 3, -1, 0], np.int32),
                     np.array([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 1.0, np.inf, 5.0]),
                     np.array([2.0, 2.0, -2.0, -2.0, -3.0, 3.0, 0.1, 2.0, 0.0]))),
    (floor_div_mod, (np.array([-128, -128, 127, -7, 7, 0], np.int8), np.array([-1, 3, -1, 2, -2, 0], np.int8),
                     np.array([0.0, -0.0, 1e-300, -1e-300, -np.inf, np.nan], np.float32),
                     np.array([-7.5, 5.0, 3.0, 3.0, 2.0, 1.0], np.float32))),
    (signed_zeros, (np.array([1, 1, 0, 1, 0, 1], bool), np.array([-0.0, 0.0, -0.0, np.nan, 1.0, -np.inf]),
                    np.array([0.0, -0.0, -0.0, 2.0, np.nan, 3.0]))),
    (where_and_reductions, (F32(3, 4), RNG.random((3, 4)) > 0.5)),
    (nan_reductions, (np.array([[np.nan, 1.5, np.nan], [np.nan, -2.0, np.nan], [np.nan, np.nan, 3.0]], np.float32),)),
    (power_iteration, (np.eye(4) + 0.1, np.ones(4), np.int32(20))),
    (slicing, (F32(5, 4), np.int64(2))),
    (bool_arithmetic, (F32(6), F32(6))),
    (array_ops, (F32(3, 4), np.array([0, 5, -1], np.int64))),
    (zero_iteration_list, (F32(3), np.int64(0))),
    (zero_iteration_list, (F32(3), np.int64(4))),
    (int_power_and_pow, (np.array([-3, 0, 2, 7], np.int16), np.array([0.5, 2.0, 9.0], np.float32))),
    (counting_loop_int32, (np.int32(9),)),
    (creation_and_shapes, (F32(3, 4), np.int64(3))),
    (logic_and_math, (F32(5), F32(5))),
    (list_appended_in_both_branches, (F32(2), np.int64(5))),
    (python_numbers_in_a_loop, (F32(3), np.int64(4))),
    (shape_relaxed_loop, (F32(2), np.int64(3))),
    (branch_shapes, (np.ones(4, np.float32),)),
    (branch_shapes, (-np.ones(4, np.float32),)),
    (for_over_a_tensor, (np.array([1.0, -2.0, 3.0]),)),
    (gradient_through_indexing, (RNG.standard_normal((4, 5)), np.int64(-1))),
]


@pytest.mark.parametrize("fn, args", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # eager numpy warns of x // 0 (the oracle still answers)
def test_control_flow_matches_eager(fn, args, tmp_path):
    assert_matches_eager(fn, *args, tmp_path=tmp_path)


def test_gradient_with_shapes_known_only_at_run_time(tmp_path):
    # summing a gradient back to an operand's shape picks its axes when the model runs
    f = ag.function(gradient_with_unknown_shapes)
    path = str(tmp_path / "g.onnx")
    ag.export_onnx(f, path, args=(ag.TensorSpec([None, None], np.float64), ag.TensorSpec([None], np.float64)))
    onnx.checker.check_model(path, full_check=True)
    session = ort.InferenceSession(path)
    for x, b in [(RNG.standard_normal((4, 3)), np.arange(3.0)), (RNG.standard_normal((2, 1)), np.ones(1))]:
        np.testing.assert_allclose(session.run(None, {"x": x, "b": b})[0], gradient_with_unknown_shapes(x, b),
                                   rtol=1e-12)


def test_stacked_list_becomes_a_loop_scan_output(tmp_path):
    f = ag.function(stacked_in_loop)
    model = ag.export_onnx(f.get_concrete_function(F32(4), np.int64(6)), str(tmp_path / "m.onnx"))
    (loop,) = [n for n in model.graph.node if n.op_type == "Loop"]
    assert len(loop.output) == 3  # x and the iteration counter carried, the rows a scan output
    assert not [n for n in loop.attribute[0].g.node if n.op_type == "Concat"]


# --- choosing a trace, errors -----------------------------------------------------------------

def test_function_with_one_trace_or_args(tmp_path):
    f = ag.function(continue_in_for)
    f(F32(6))
    ag.export_onnx(f, str(tmp_path / "one.onnx"))
    f(F32(7).astype(np.float64))
    with pytest.raises(ValueError, match="continue_in_for has 2 traces .*pass args="):
        ag.export_onnx(f, str(tmp_path / "two.onnx"))
    model = ag.export_onnx(f, str(tmp_path / "picked.onnx"), args=(ag.TensorSpec([None], np.float64),))
    session = ort.InferenceSession(str(tmp_path / "picked.onnx"))
    x = RNG.standard_normal(11)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], continue_in_for(x), rtol=1e-12)
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dim0"
    # the IR version the opset needs, not the onnx package's newest: an onnxruntime older than the
    # onnx package loads it (the GPU machine's refused IR 14 with "Unsupported model IR version")
    assert model.ir_version == onnx.helper.find_min_ir_version_for(list(model.opset_import)) < onnx.IR_VERSION


def printing(x):
    y = x * 2.0
    print(y)
    return y


def test_an_op_without_a_mapping_names_the_op_and_the_users_line(tmp_path):
    f = ag.function(printing)
    line = printing.__code__.co_firstlineno + 2
    with pytest.raises(ag.ConversionError, match=rf"Print node .*no side effects.*test_onnx\.py:{line}\b"):
        ag.export_onnx(f, str(tmp_path / "p.onnx"), args=(F32(3),))


def int_power_of_a_tensor(x, e):
    return x ** e


def test_an_unmapped_form_names_the_op_and_the_users_line(tmp_path):
    f = ag.function(int_power_of_a_tensor)
    line = int_power_of_a_tensor.__code__.co_firstlineno + 1
    with pytest.raises(ag.ConversionError, match=rf"Pow node .*constant exponent.*test_onnx\.py:{line}\b"):
        ag.export_onnx(f, str(tmp_path / "p.onnx"), args=(np.arange(3), np.int64(2)))


def test_bad_opset_and_missing_onnx(tmp_path, monkeypatch):
    f = ag.function(continue_in_for)
    with pytest.raises(ValueError, match="opset must be an int from 18"):
        ag.export_onnx(f, str(tmp_path / "m.onnx"), opset=11, args=(F32(3),))
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install autograph_lite\[onnx\]"):
        ag.export_onnx(f, str(tmp_path / "m.onnx"), args=(F32(3),))


def test_every_op_has_a_rule_or_a_reason():
    for op in REGISTRY.values():
        assert (op in onnx_export.RULES) != (op.name in onnx_export.NOT_EXPORTABLE), op.name


def test_a_run_time_check_python_makes_is_left_out_with_a_warning(tmp_path):
    # ag.stack of a list a tensor loop left empty raises ValueError compiled, as eagerly; ONNX cannot
    # raise, so the model leaves the check out and says so; an `assert` stays refused
    from autograph_lite.export.onnx import ExportWarning
    x = F32(4)
    with pytest.warns(ExportWarning, match="need at least one array to stack"):
        outputs = run_onnx(stacked_in_loop, (x, np.int64(3)), tmp_path)
    np.testing.assert_allclose(outputs[0], stacked_in_loop(x, np.int64(3)), rtol=1e-6)
    with pytest.raises(ValueError, match="need at least one array to stack"):
        ag.function(stacked_in_loop)(F32(4), np.int64(0))
