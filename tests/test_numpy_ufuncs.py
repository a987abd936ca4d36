"""numpy's math ufuncs on tensors (`np.sin(t)`): compiled vs eager, bit for bit.

Every call goes through ops/overloads.py `UFUNC_OPS`; the ufuncs checked here are the
ops of math_ops.MATH_UNARY / MATH_BINARY / BIT_UNARY / BIT_BINARY, so a new entry there is
tested with no edit.
"""
import inspect
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from autograph_lite.runtime.native.compiler import NativeKernelWarning
from autograph_lite.ops.math_ops import BIT_BINARY, BIT_UNARY, MATH_BINARY, MATH_UNARY
from helpers import assert_identical, check_grad, identical_both_ways, same_every_call

UNARY = [getattr(np, name) for name, *_ in MATH_UNARY + BIT_UNARY] + [np.degrees, np.radians]
BINARY = [getattr(np, name) for name, *_ in MATH_BINARY + BIT_BINARY]
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.5, 1e300, -1e-300, 710.0]


def edges(dtype):
    """NaN, infinities, signed zeros, values near poles and overflow, in `dtype` (ints: a few;
    complex: the float edges with imaginary parts from them reversed)."""
    if np.dtype(dtype).kind == "c":
        with np.errstate(over="ignore", invalid="ignore"):
            return (np.array(EDGES) + 1j * np.array(EDGES[::-1])).astype(dtype)
    if np.dtype(dtype).kind != "f":
        return np.array([-3, -1, 0, 1, 2, 7]).astype(dtype)  # uint8: 253, 255, ...; bool: True, False
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        return np.array(EDGES).astype(dtype)


def both(fn, *args):
    """Compiled vs eager, identical; or, where eager raises (`bitwise_and(x, 2.0)`), the same error."""
    try:
        with np.errstate(all="ignore"):
            fn(*args)
    except Exception as e:  # noqa: BLE001 - whatever eager raises, compiled raises too
        with pytest.raises(next(t for t in type(e).__mro__ if t.__module__ == "builtins")):
            ag.function(fn)(*args)
        return None
    return identical_both_ways(fn, *args)


def accepts(ufunc, *args):
    try:
        with np.errstate(all="ignore"):
            ufunc(*args)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("ufunc", UNARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.bool_, np.complex64, np.complex128])
def test_unary_ufunc_matches_eager(ufunc, dtype):
    x = edges(dtype)
    if not accepts(ufunc, x):
        pytest.skip(f"numpy has no {ufunc.__name__} of {np.dtype(dtype)}")
    both(lambda a: ufunc(a), x)
    both(lambda a: ufunc(a[0]), x)                 # a 0-d result: a numpy scalar, as eager
    both(lambda a: ufunc(a * 2) + 1, x.reshape(2, -1) if x.size % 2 == 0 else x)
    both(lambda a: ufunc(a), x[:0])                 # empty


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_, np.complex64, np.complex128])
def test_binary_ufunc_matches_eager_with_broadcasting(ufunc, dtype):
    x = edges(dtype)
    if not accepts(ufunc, x, x):
        pytest.skip(f"numpy has no {ufunc.__name__} of {np.dtype(dtype)}")
    y = x[::-1].copy()
    both(lambda a, b: ufunc(a, b), x, y)
    both(lambda a, b: ufunc(a[:, None], b), x, y)  # broadcast to a square
    both(lambda a: ufunc(a, 2.0), x)               # a Python float is weak (NEP 50): float32 stays
    both(lambda a: ufunc(3, a), x)
    both(lambda a, b: ufunc(a, b), x[:0], y[:0])


def test_arc_distance_runs_as_numpy_does():  # NPBench's arc_distance
    def arc_distance(theta_1, phi_1, theta_2, phi_2):
        temp = (np.sin((theta_2 - theta_1) / 2) ** 2
                + np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2) ** 2)
        return 2 * np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        args = [rng.uniform(-3, 3, 1000).astype(dtype) for _ in range(4)]
        assert both(arc_distance, *args).dtype == dtype


def outer_with_counter(x, n):
    out = x
    for i in range(n):  # i: a Python int known only when the graph runs
        out = np.multiply.outer(x, i + 300)
    return out


@pytest.mark.parametrize("fn", [
    lambda x: np.multiply.outer(x, 2.5), lambda x: np.add.outer(2.5, x), lambda x: np.multiply.outer(x.astype(np.int8), 300),
    lambda x: np.add.outer(True, x.astype(np.int8)), lambda x: np.subtract.outer(x, 1j)])
def test_outer_takes_python_numbers_as_arrays_of_their_default_dtype(fn):
    # numpy's outer converts its operands with np.asarray: 2.5 is a float64 array, not weak
    same_every_call(fn, np.array([60000.0, 1.0], np.float16))


def test_outer_of_a_run_time_python_int():
    same_every_call(outer_with_counter, np.array([100, 3], np.int8), 2)


def test_floyd_warshall_add_outer():  # NPBench's floyd_warshall
    def floyd_warshall(path):
        for k in range(path.shape[0]):
            path[:] = np.minimum(path, np.add.outer(path[:, k], path[k, :]))
        return path

    def outer_only(a, b):
        return np.add.outer(a, b), np.multiply.outer(a, 2.0), np.maximum.outer(a[0], b)

    a, b = np.arange(6.0).reshape(2, 3), np.array([1.0, -2.0])
    both(outer_only, a, b)
    both(lambda a, b: np.subtract.outer(np.arange(3), b), a, b)  # an ndarray and a tensor


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.minimum, np.logical_and, np.logical_or],
                         ids=lambda u: u.__name__)
def test_reduce(ufunc):
    x = np.array([[1.5, -2.0, 0.0], [3.0, 0.25, -1.0]], dtype=np.float32)
    both(lambda a: (ufunc.reduce(a), ufunc.reduce(a, axis=1), ufunc.reduce(a, axis=None),
                    ufunc.reduce(a, 0, keepdims=True)), x)
    both(lambda a: ufunc.reduce(a > 0, axis=1), x)


@pytest.mark.parametrize("fn, x", [
    (lambda x: np.sum(np.sin(x) * np.cos(2 * x)), np.linspace(-2, 2, 7)),
    (lambda x: np.sum(np.arctan2(x, x[::-1] + 0.5)), np.linspace(0.1, 2, 6)),
    (lambda x: np.sum(np.log1p(x) + np.expm1(x) + np.log2(x) * np.cbrt(x)), np.linspace(0.1, 2, 6)),
    (lambda x: np.sum(np.hypot(x, 3.0) + np.logaddexp(x, x[::-1]) + np.arcsinh(x) * np.tan(x)),
     np.linspace(-1, 1, 6)),
    (lambda x: np.sum(np.arcsin(x) + np.arccos(x) * np.arctanh(x) + np.reciprocal(x + 2) + np.fabs(x)),
     np.linspace(-0.9, 0.9, 6)),
    (lambda x: np.sum(np.fmax(x, 0.0) * np.copysign(x, -1.0) + np.fmod(x, 0.7) + np.deg2rad(x)),
     np.linspace(-2, 2, 7) + 0.05),
    (lambda x: np.sum(np.logaddexp2(x, x[::-1] * 2) + np.float_power(x + 3, 1.5) * np.ldexp(x, 3)),
     np.linspace(-1, 1, 6)),
    (lambda x: np.sum(np.modf(x * 3)[0] * 2 + np.frexp(x * 5)[0] + np.real(x) * np.positive(x) + np.conj(x)),
     np.linspace(-1, 1, 6) + 0.05),
])
def test_gradients_match_finite_differences(fn, x):
    check_grad(fn, x)


def test_predicates_and_roundings_have_zero_gradient():
    g = ag.grad(lambda x: np.sum(np.floor(x) + np.sign(x) + np.rint(x) * np.isnan(x)))(np.linspace(-2, 2, 5))
    np.testing.assert_array_equal(g, np.zeros(5))


def _line_of(marker):
    lines, start = inspect.getsourcelines(_refusals)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def _refusals():
    return [
        (lambda a: np.isnat.at(a, 0), "np.isnat.at is not supported on tensors", "#at"),  #at
        (lambda a: np.sin(a, out=np.empty(3)), "np.sin", "#out"),  #out
        (lambda a: np.tanh(a, where=a > 0), "np.tanh with where= without out= is not supported", "#where"),  #where
        (lambda a: np.add.reduceat(a, [0]), "np.add.reduceat is not supported", "#reduceat"),  #reduceat
        (lambda a: np.add.at(np.zeros(3), [0], a[0]), "np.add.at into a numpy array", "#add_at"),  #add_at
        (lambda a: np.add.accumulate(a, out=a), "np.add.accumulate with out= is not supported", "#acc_out"),  #acc_out
        (lambda a: np.matvec(a, a), "np.matvec is not supported on tensors", "#matvec"),  #matvec
        (lambda a: np.add.reduce(a, where=a > 0), "np.add.reduce with where= is not supported", "#rwhere"),  #rwhere
        (lambda a: np.add(a, a, order="F"), "np.add with order= is not supported", "#order"),  #order
        (lambda a: np.divmod(a, a, out=(a, a)), "np.divmod with out= is not supported", "#divmod"),  #divmod
        (lambda a: np.add(a, 1, out=a.sum()), "np.add with out= a", "#out_scalar"),  #out_scalar
    ]


@pytest.mark.parametrize("case", range(len(_refusals())))
def test_unsupported_ufunc_calls_are_refused_at_the_users_line(case):
    fn, message, marker = _refusals()[case]
    with pytest.raises((ConversionError, TypeError), match=message) as info:
        ag.function(fn)(np.arange(3.0))
    assert f"test_numpy_ufuncs.py:{_line_of(marker)}" in str(info.value)


def test_tensor_size_is_a_python_int_as_ndarray_size():
    # NPBench spmv: `A_row.size` on a tensor raised AttributeError
    def f(x):
        return x * x.size, type(x.size) is int

    compiled = ag.function(f)(np.ones((2, 3)))
    expected = f(np.ones((2, 3)))
    np.testing.assert_array_equal(expected[0], compiled[0])
    assert compiled[1] is True

    g = ag.function(lambda x: x.size * 1.5, input_signature=[ag.TensorSpec([None], np.float64)])
    assert g(np.ones(4)) == 6.0 and type(g(np.ones(4))) is float


# --- numpy's keywords, ufunc methods and the ufuncs with two outputs ----------------------

def test_ufunc_dtype_keyword_runs_numpys_loop():
    x = np.array([1.5, -2.25, 3.0, 1e10], dtype=np.float64)
    i = np.array([3, -1, 200, 7], dtype=np.int16)
    both(lambda a: np.add(a, a, dtype=np.float32), x)
    both(lambda a: np.multiply(a, 3, dtype=np.int8), i)           # wraps in int8, as numpy's loop
    both(lambda a, b: np.add(a, b, dtype=np.float64), i, x.astype(np.float32))
    both(lambda a: np.sqrt(a, dtype=np.float32), x)
    both(lambda a: np.add(a, 1.5, dtype=np.int16), i)             # a float into an int loop: refused as numpy
    both(lambda a: np.add(a, a, dtype=np.int64, casting="unsafe"), x)
    both(lambda a: np.negative(a[0], dtype=np.float32), i)         # a 0-d result: a numpy scalar
    both(lambda a, b: np.add(a, b, casting="no"), i, x)               # mixed inputs: numpy's casting error
    both(lambda a: (np.add(a, a, casting="no"), np.multiply(a, 2.5, casting="safe")), x)
    both(lambda a: np.add(a, 2, casting="unsafe", dtype=np.uint8), i)


def test_ufunc_out_keyword_updates_the_out_tensor():
    x = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    for fn, arg in ((lambda a: np.add(a, 1.0, out=a), x), (lambda a: np.multiply(a, 2, out=a).sum(), x.astype(np.int32)),
                    (lambda a: np.add(a, 0.5, out=a, where=a > 1), x)):
        eager_arg, compiled_arg = arg.copy(), arg.copy()
        assert_identical(fn(eager_arg), ag.function(fn)(compiled_arg))
        assert_identical(eager_arg, compiled_arg)  # the argument updated in place, as eagerly

    def into_copy(a):
        out = np.zeros_like(a, dtype=np.float32)
        out = np.sin(a, out=out)
        return out

    both(into_copy, x)
    both(lambda a: np.add(a, a[0], out=a.copy(), where=a > 0), x)   # where=: out's values kept
    both(lambda a: np.exp(a, out=np.zeros(3, dtype=np.int64)), x[0])   # float into int out: TypeError as numpy
    both(lambda a: np.add(a, a[0], out=a[0].copy()), x)                 # out smaller than the result: ValueError

    def reads_the_updated_value(a):
        b = a.copy()
        r = np.add(a, 1.0, out=b)   # out's memory is written, and numpy returns out itself
        return b, r is b

    both(reads_the_updated_value, x)


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.logaddexp, np.bitwise_or, np.subtract,
                                   np.fmax, np.hypot], ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_reduce_and_accumulate_of_any_binary_ufunc(ufunc, dtype):
    x = np.array([[1.5, -2.0, 0.0], [3.0, 0.25, -1.0], [np.nan, 2.0, 7.0]]).astype(dtype) if dtype != np.int32 \
        else np.array([[1, -2, 0], [3, 5, -1], [4, 2, 7]], dtype=dtype)
    both(lambda a: (ufunc.reduce(a), ufunc.reduce(a, axis=-1), ufunc.reduce(a, axis=None),
                    ufunc.reduce(a, 0, keepdims=True)), x)
    both(lambda a: ufunc.reduce(a, axis=1, initial=2), x)
    both(lambda a: ufunc.reduce(a, axis=0, dtype=np.float64), x)
    both(lambda a: ufunc.reduce(a[:0], axis=0), x)                      # empty: the identity, or numpy's error
    both(lambda a: (ufunc.accumulate(a), ufunc.accumulate(a, axis=-1), ufunc.accumulate(a[0])), x)
    both(lambda a: ufunc.accumulate(a, axis=1, dtype=np.float64), x)
    both(lambda a: ufunc.accumulate(a, axis=None), x)                   # numpy's error for several axes
    both(lambda a: ufunc.accumulate(a[:0]), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
def test_ufuncs_with_two_outputs(dtype):
    x = np.array([2.5, -3.75, 0.0, 7.0, -0.5, 1e6]).astype(dtype)
    y = np.array([1.5, 2.0, -3.0, 0.5, 4.0, -7.0]).astype(dtype)
    both(lambda a, b: np.divmod(a, b), x, y)
    both(lambda a, b: np.divmod(a[:, None], b), x, y)
    both(lambda a: divmod(a, 3), x)
    both(lambda a: np.modf(a), x)
    both(lambda a: np.frexp(a), x)
    both(lambda a: (np.modf(a[0]), np.frexp(a[:0])), x)
    both(lambda a: np.modf(np.array([np.nan, np.inf, -np.inf, -0.0], dtype=np.float32) + a[:4] * 0), x)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint16, np.bool_])
def test_bit_operators_on_integer_and_bool_tensors(dtype):
    x = np.array([0, 1, 5, 7, 100, 127, 3, 6]).astype(dtype)
    y = np.array([1, 3, 2, 0, 4, 1, 7, 5]).astype(dtype)
    both(lambda a, b: (a & b, a | b, a ^ b, ~a), x, y)
    both(lambda a: (0xF & a, a | 1, 3 ^ a, a & True), x)
    both(lambda a, b: (a << b, a >> b, 1 << b, a >> 1), x, y)
    both(lambda a, b: (a[0] & b[0], ~a[0], a[:, None] ^ b), x, y)

    def in_place(a, b):
        a = a.copy()
        a &= b
        a |= 2
        a ^= b
        a <<= 1
        a >>= 1
        return a

    both(in_place, x, y)


def test_bit_operators_on_floats_are_numpys_type_error():
    for fn in (lambda a: a & 1, lambda a: ~a, lambda a: a << 1, lambda a: 1 ^ a):
        both(fn, np.ones(3))


def test_crc16_runs_as_numpy_does():  # NPBench's crc16: int `&`, `^`, `>>`, `~` on a Python int carried by a loop
    def crc16(data, poly=0x8408):
        crc = 0xFFFF
        for b in data:
            cur_byte = 0xFF & b
            for _ in range(0, 8):
                if (crc & 0x0001) ^ (cur_byte & 0x0001):
                    crc = (crc >> 1) ^ poly
                else:
                    crc >>= 1
                cur_byte >>= 1
        crc = (~crc & 0xFFFF)
        crc = (crc << 8) | ((crc >> 8) & 0xFF)
        return crc & 0xFFFF

    data = np.random.default_rng(0).integers(0, 256, 40, dtype=np.uint8)
    assert both(crc16, data) == crc16(data)


def test_bit_operators_on_python_bools_known_at_run_time():
    def g(x):
        b, n = True, 0
        i = 0
        while i < x.shape[0] and x[i] > 0:  # a tensor loop: b and n are Python values known at run time
            b = b ^ (i < 2)
            n = (n | i) & 6
            i += 1
        return b, b & True, b | False, n, n << 2, n >> 1

    both(g, np.array([3.0, 1.0, 2.0, -1.0]))
    both(g, np.array([3.0, -1.0]))


def test_every_numpy_ufunc_has_an_op_or_is_refused_by_name():
    from autograph_lite.ops.numpy_api.ufuncs import MULTI_OUTPUT, UFUNC_OPS
    refused = {"isnat", "matvec", "vecmat", "vecdot"}  # datetimes; gufuncs (np.einsum computes them)
    ufuncs = {v for v in vars(np).values() if isinstance(v, np.ufunc)}
    assert {u.__name__ for u in ufuncs if u not in UFUNC_OPS and u not in MULTI_OUTPUT} <= refused


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_bit_operators_in_native_loops(dtype, monkeypatch):
    from helpers import force_native
    force_native(monkeypatch)

    def shifts(x, s, n):
        acc = x
        i = 0
        while i < n:
            acc = (acc << s) ^ (acc >> s) ^ (~acc & x) | (x >> 70 % 8)
            i += 1
        return acc, (acc >> 200) if False else acc >> s

    x = np.array([0, 1, 5, 100, 127, -3, -128, 77]).astype(dtype)
    s = np.array([0, 1, 3, 7, 8, 9, 64, 2]).astype(dtype)
    both(shifts, x, s, 3)
    with warnings.catch_warnings():  # the C compiles: no fallback to numpy
        warnings.simplefilter("error", NativeKernelWarning)
        assert_identical(shifts(x, s, 3), ag.function(shifts)(x, s, 3))

    def python_ints(n):  # Python ints known at run time: Python's shifts (no wrapping, big values rerun)
        crc, i = 0xFFFF, 0
        while i < n:
            crc = ((crc << 3) ^ (crc >> 1)) & 0xFFFFFFFFFFFF
            i += 1
        return crc, crc << 40

    both(python_ints, np.int64(12))


def test_bit_ops_export_to_onnx(tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")

    def f(x, b):
        return (x & 6) | (x ^ 3), ~x, (b & (x > 2)) | ~b, np.logical_xor(b, x > 4), np.positive(x)

    x, b = np.array([1, 2, 5, 7], dtype=np.int32), np.array([True, False, True, False])
    compiled = ag.function(f)
    ag.export_onnx(compiled, str(tmp_path / "bits.onnx"), args=(x, b))
    session = ort.InferenceSession(str(tmp_path / "bits.onnx"))
    names = [i.name for i in session.get_inputs()]
    for got, expected in zip(session.run(None, dict(zip(names, (x, b)))), f(x, b)):
        np.testing.assert_array_equal(got, expected)


def _at_updates(x, idx, v):
    a = x * 1.0
    np.add.at(a, idx, v)           # a repeated index adds each time (numpy's unbuffered update)
    b = x.copy()
    np.negative.at(b, [0, 1])      # a unary ufunc
    row = a[1:]
    np.multiply.at(row, [0, 0], 2.0)  # through a view: a reads the update
    np.maximum.at(x, idx, 2.5)     # the caller's array, written back
    return a, b, row


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_ufunc_at_updates_memory_as_numpy(dtype):
    make = lambda: (np.arange(5).astype(dtype), np.array([0, 0, 3]), np.array([1, 2, 3]).astype(dtype))
    eager_args, compiled_args = make(), make()
    expected = _at_updates(*eager_args)
    got = ag.function(_at_updates)(*compiled_args)
    for e, g in zip(expected + tuple(eager_args), got + tuple(compiled_args)):
        np.testing.assert_array_equal(e, g)
        assert e.dtype == g.dtype
