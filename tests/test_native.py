"""Native (C) kernels for fused elementwise chains: numpy's results, to the bit where
numpy's own loops are exact, for every op and dtype the C translation accepts."""
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.runtime import fused
from autograph_lite.runtime.native import cexpr, compiler, elementwise
from helpers import assert_same, force_native

pytestmark = pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")

N = fused.SPLIT_MIN * 2  # large enough to be fused and split across threads


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AG_CACHE_DIR", str(tmp_path))
    force_native(monkeypatch)
    compiler._loaded.clear()  # libraries loaded from another test's cache
    monkeypatch.setattr(compiler, "_warned", False)  # each test may see the once-per-process warning


def native_run(steps, operands, *inputs):
    """Run the C kernel of `steps` over `inputs` (arrays of N or Python scalars)."""
    run = elementwise.cpu_kernel(steps, operands)
    assert run is not None, elementwise.source(steps, operands)
    out = np.empty(N, steps[-1][2])
    run(out, list(inputs), 0, N)
    return out


def tile(values, dtype):
    return np.resize(np.array(values, dtype=dtype), N)


FLOATS = [0.0, -0.0, 1.0, -1.5, 2.5, 1e-30, -7.25, 3e5, np.inf, -np.inf, np.nan, 0.3]
UNARY = {"Neg": np.negative, "Tanh": np.tanh, "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt,
         "Square": np.square, "Abs": np.abs, "Relu": lambda x: np.maximum(x, 0),
         "Sigmoid": lambda x: 0.5 * np.tanh(0.5 * x) + 0.5}
BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide,
          "Pow": np.power, "Maximum": np.maximum, "Minimum": np.minimum, "Equal": np.equal,
          "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal,
          "Greater": np.greater, "GreaterEqual": np.greater_equal}


def expect_close(got, want, dtype, atol=0):
    assert got.dtype == want.dtype
    if want.dtype.kind == "f":
        # libm and numpy's SIMD loops differ by a few ulp on transcendental functions
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_float_ops_match_numpy(op, dtype):
    x = tile(FLOATS, dtype) * tile(np.linspace(0.5, 2, 7), dtype)
    with np.errstate(all="ignore"):
        want = UNARY[op](x).astype(dtype)
        got = native_run([(op, (("in", 0),), np.dtype(dtype))], [(np.dtype(dtype), False, "full")], x)
    # sigmoid = 0.5 * tanh(x / 2) + 0.5: tanh's few ulp near -1 are absolute errors near 0
    expect_close(got, want, dtype, atol=4 * np.finfo(dtype).eps if op == "Sigmoid" else 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_float_ops_match_numpy(op, dtype):
    x = tile(FLOATS, dtype)
    y = tile(FLOATS[::-1] + [2.0], dtype)  # a different period: every pair meets
    with np.errstate(all="ignore"):
        want = BINARY[op](x, y)
        got = native_run([(op, (("in", 0), ("in", 1)), want.dtype)],
                         [(np.dtype(dtype), False, "full")] * 2, x, y)
    expect_close(got, want, dtype)


INT_VALUES = {np.int8: [0, 1, -1, 7, -7, 127, -128, 3, -3, 100],
              np.int32: [0, 1, -1, 7, -7, 2**31 - 1, -2**31, 3, -3, 10**6],
              np.int64: [0, 1, -1, 7, -7, 2**63 - 1, -2**63, 3, -3, 10**12],
              np.uint8: [0, 1, 255, 7, 128, 3, 200, 2]}


@pytest.mark.parametrize("dtype", sorted(INT_VALUES, key=lambda d: np.dtype(d).name))
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "FloorDiv", "FloorMod", "Maximum", "Minimum",
                                "Less", "Equal", "Neg", "Abs", "Square", "RealDiv"])
def test_integer_ops_match_numpy_including_overflow_and_zero_divisors(op, dtype):
    values = INT_VALUES[dtype]
    x = tile(values, dtype)
    y = tile(values[::-1] + [values[1]], dtype)
    fn = {"FloorDiv": np.floor_divide, "FloorMod": np.remainder, "Neg": np.negative,
          "Abs": np.abs, "Square": np.square, **BINARY}[op]
    unary = op in ("Neg", "Abs", "Square")
    with np.errstate(all="ignore"):
        want = fn(x) if unary else fn(x, y)
    args = (("in", 0),) if unary else (("in", 0), ("in", 1))
    got = native_run([(op, args, want.dtype)], [(np.dtype(dtype), False, "full")] * len(args),
                     *([x] if unary else [x, y]))
    expect_close(got, want, want.dtype)


def test_weak_scalars_take_the_array_dtype_and_mixed_dtypes_promote():
    x = tile([0.1, 0.2, 0.30000001, -1.0], np.float32)
    i = tile([1, -2, 3, 2**20 + 1], np.int32)
    steps = [("Greater", (("in", 0), ("in", 1)), np.dtype(bool)),      # x > 0.1 in float32
             ("Add", (("in", 0), ("in", 2)), np.dtype(np.float64)),     # float32 + int32 -> float64
             ("Mul", (("t", 1), ("in", 3)), np.dtype(np.float64)),      # * weak int 3
             ("LogicalNot", (("t", 0),), np.dtype(bool)),
             ("Less", (("t", 2), ("in", 4)), np.dtype(bool)),           # < float32 scalar (strong)
             ("LogicalOr", (("t", 3), ("t", 4)), np.dtype(bool))]
    operands = [(np.dtype(np.float32), False, "full"), (np.dtype(np.float64), True, "scalar"),
                (np.dtype(np.int32), False, "full"), (np.dtype(np.int64), True, "scalar"),
                (np.dtype(np.float32), False, "scalar")]
    got = native_run(steps, operands, x, 0.1, i, 3, np.float32(2.5).item())
    want = ~(x > 0.1) | ((x + i) * 3 < np.float32(2.5))
    np.testing.assert_array_equal(got, want)


def test_unsupported_ops_and_dtypes_are_refused_not_mistranslated():
    with pytest.raises(cexpr.Unsupported):
        elementwise.source([("Pow", (("in", 0), ("in", 0)), np.dtype(np.int32))],
                           [(np.dtype(np.int32), False, "full")])
    with pytest.raises(cexpr.Unsupported):
        elementwise.source([("Tanh", (("in", 0),), np.dtype(np.float16))],
                           [(np.dtype(np.float16), False, "full")])
    assert elementwise.cpu_kernel([("FloorDiv", (("in", 0), ("in", 0)), np.dtype(np.float32))],
                                  [(np.dtype(np.float32), False, "full")]) is None


def chain(x, y):
    return ag.tanh(x * 1.5 + 0.5) * ag.nn.sigmoid(y) - 0.25 * x * x + ag.maximum(x, y) / (1.0 + ag.abs(y))


def test_compiled_chain_uses_one_native_kernel_and_matches_eager(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3, N // 3), dtype=np.float32)
    x[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    f = ag.function(chain)
    with np.errstate(invalid="ignore"):  # inf - inf, as numpy computes it
        assert_same(chain(x, y), f(x, y))
    graph = f.get_concrete_function(x, y).optimized_graph
    assert [n.op for n in graph.nodes if n.op != "Const"] == ["FusedElementwise"]
    assert len(list(tmp_path.glob("kernels/*.so"))) == 1


def test_without_native_kernels_the_numpy_path_gives_the_same_results(monkeypatch, tmp_path):
    x, y = np.random.default_rng(1).standard_normal((2, N), dtype=np.float32)
    native = ag.function(chain)(x, y)
    monkeypatch.setenv("AG_NATIVE_KERNELS", "0")
    assert elementwise.cpu_kernel([("Neg", (("in", 0),), np.dtype(np.float32))],
                                  [(np.dtype(np.float32), False, "full")]) is None
    on_numpy = ag.function(chain)(x, y)
    np.testing.assert_allclose(native, on_numpy, rtol=1e-6, atol=1e-6)
    assert_same(chain(x, y), on_numpy)


def test_non_contiguous_and_broadcast_inputs_are_read_through_their_strides():
    x = np.random.default_rng(2).standard_normal((N, 2), dtype=np.float32)
    f = ag.function(chain)
    assert_same(chain(x[:, 0], x[:, 1]), f(x[:, 0], x[:, 1]))   # strided views
    row = x[:3, 1].reshape(3, 1)
    big = np.resize(x[:, 0], (3, N // 3))
    assert_same(chain(big, row), f(big, row))                     # broadcasting
    assert {fn.__name__ for fns in compiler._loaded.values() for fn in fns} == {"kernel_strided"}


def _strided_run(steps, operands, *inputs):
    """The strided C kernel of `steps` over `inputs` (views), as runtime/fused.py calls it."""
    native = fused._Native(steps, operands)
    shape, meta, rows = native.strided_layout(inputs)
    run = elementwise.cpu_strided_kernel(steps, operands)
    assert run is not None, elementwise.strided_source(steps, operands)
    out = np.empty(shape, steps[-1][2])
    run(out, [elementwise.as_number(a) if s else a for a, s in zip(inputs, native.scalars)], meta, 0, rows)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
def test_strided_kernel_equals_the_flat_kernel_on_contiguous_copies(dtype):
    # views of every layout the strided kernel reads: row slices, column slices, negative and
    # non-unit steps, a row broadcast, a column broadcast along the rows (read at stride 0: copied
    # into a contiguous chunk of a row first, rows longer than one chunk), a 3-D view whose rows are
    # not evenly spaced
    dt = np.dtype(dtype)
    steps = [("Mul", (("in", 0), ("in", 2)), dt), ("Sub", (("t", 0), ("in", 1)), dt),
             ("Maximum", (("t", 1), ("in", 0)), dt), ("Less", (("t", 2), ("in", 1)), np.dtype(bool))]
    operands = [(dt, False, "full"), (dt, False, "full"), (dt, True, "scalar")]
    base = (np.random.default_rng(4).standard_normal((3, 130, 1030)) * 50).astype(dtype)
    views = [(base[0, 1:, :-1], base[1, :-1, ::-1][:, 1:]), (base[2, :0:-1, 1::2], base[1, 1:, ::2]),
             (base[0, ::2, ::-1], base[1, 1::2, :]), (base[0, 0], base[2]),
             (base[:, 1:, 2:], base[:, :-1, :-2]), (base[0, :, :1], base[1]), (base[0, :, 5:6], base[1, :, ::-2])]
    for a, b in views:
        shape = np.broadcast_shapes(a.shape, b.shape)
        want = np.empty(shape, bool)
        flat = [np.ascontiguousarray(np.broadcast_to(v, shape)) for v in (a, b)]
        elementwise.cpu_kernel(steps, operands)(want, [*flat, 3], 0, want.size)
        got = _strided_run(steps, operands, a, b, 3)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(got, np.less(np.maximum(a * dt.type(3) - b, a), b))
    # numpy's result of transposed views is transposed too (a later sum adds in its order): not taken
    assert fused._Native(steps, operands).strided_layout([base[0].T, base[1].T, 3]) is None


def test_a_built_kernel_is_loaded_from_the_disk_cache(tmp_path):
    source = elementwise.source([("Neg", (("in", 0),), np.dtype(np.float64))],
                                [(np.dtype(np.float64), False, "full")])
    assert compiler.load(source, "kernel") is not None
    [built] = tmp_path.glob("kernels/*.so")
    [manifest] = tmp_path.glob("kernels/*.sha256")
    assert (tmp_path / "kernels").stat().st_mode & 0o777 == 0o700
    stamp = built.stat().st_mtime_ns
    compiler._loaded.clear()
    assert compiler.load(source, "kernel") is not None
    assert built.stat().st_mtime_ns == stamp and len(list(tmp_path.glob("kernels/*"))) == 2


def test_a_rejected_source_warns_with_the_compiler_message_and_falls_back():
    with pytest.warns(compiler.NativeKernelWarning, match="rejected a generated kernel") as caught:
        assert compiler.load("this is not C;", "kernel") is None
    assert "AG_NATIVE_KERNELS=0" in str(caught[0].message)
    assert caught[0].filename == __file__  # the user's line, not the package's


def test_without_a_compiler_kernels_stay_on_numpy_after_one_warning(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    compiler.compiler.cache_clear()
    try:
        with pytest.warns(compiler.NativeKernelWarning, match="CC='/nonexistent/cc' was not found"):
            assert not compiler.enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # once per process
            x = np.linspace(-3, 3, N, dtype=np.float32)
            assert_same(chain(x, x), ag.function(chain)(x, x))
    finally:
        monkeypatch.delenv("CC")
        compiler.compiler.cache_clear()


def dense_tanh(x, w, b):
    return ag.tanh(ag.matmul(x, w) + b) * 0.5 + 0.5 * x


def test_a_bias_is_read_as_a_row_and_other_layouts_take_the_numpy_path():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((N // 64, 64), dtype=np.float32), rng.standard_normal((64, 64), dtype=np.float32)
    b = rng.standard_normal(64, dtype=np.float32)
    f = ag.function(dense_tanh)
    fused = [n for n in f.get_concrete_function(x, w, b).optimized_graph.nodes if n.op == "FusedElementwise"]
    assert len(fused) == 1 and [k for _, _, k in fused[0].attrs["operands"]].count("row") == 1
    assert_same(dense_tanh(x, w, b), f(x, w, b))
    assert len(compiler._loaded) == 1
    # inputs the kernel was not built for take its strided twin: a (1, 64) bias, a strided x
    assert_same(dense_tanh(x, w, b[None, :]), f(x, w, b[None, :]))
    strided = np.repeat(x, 2, axis=1)[:, ::2]
    assert not strided.flags.c_contiguous
    assert_same(dense_tanh(strided, w, b), f(strided, w, b))
