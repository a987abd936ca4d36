"""numpy's math ufuncs on tensors (`np.sin(t)`): compiled vs eager, bit for bit.

Every call goes through ops/overloads.py `UFUNC_OPS`; the ufuncs checked here are the
ops of math_ops.MATH_UNARY / MATH_BINARY, so a new entry there is tested with no edit.
"""
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from autograph_lite.ops.math_ops import MATH_BINARY, MATH_UNARY
from helpers import check_grad, identical_both_ways

UNARY = [getattr(np, name) for name, *_ in MATH_UNARY]
BINARY = [getattr(np, name) for name, *_ in MATH_BINARY]
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.5, 1e300, -1e-300, 710.0]


def edges(dtype):
    """NaN, infinities, signed zeros, values near poles and overflow, in `dtype` (ints: a few)."""
    if np.dtype(dtype).kind != "f":
        return np.array([-3, -1, 0, 1, 2, 7], dtype=dtype)
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        return np.array(EDGES).astype(dtype)


both = identical_both_ways  # compiled vs eager, identical


def accepts(ufunc, *args):
    try:
        with np.errstate(all="ignore"):
            ufunc(*args)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("ufunc", UNARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.bool_])
def test_unary_ufunc_matches_eager(ufunc, dtype):
    x = edges(dtype)
    if not accepts(ufunc, x):
        pytest.skip(f"numpy has no {ufunc.__name__} of {np.dtype(dtype)}")
    both(lambda a: ufunc(a), x)
    both(lambda a: ufunc(a[0]), x)                 # a 0-d result: a numpy scalar, as eager
    both(lambda a: ufunc(a * 2) + 1, x.reshape(2, -1) if x.size % 2 == 0 else x)
    both(lambda a: ufunc(a), x[:0])                 # empty


@pytest.mark.parametrize("ufunc", BINARY, ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
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
        (lambda a: np.sin.at(a, 0), "np.sin.at is not supported on tensors", "#at"),  #at
        (lambda a: np.sin(a, out=np.empty(3)), "np.sin", "#out"),  #out
        (lambda a: np.tanh(a, where=a > 0), "np.tanh with where= is not supported", "#where"),  #where
        (lambda a: np.add.reduceat(a, [0]), "np.add.reduceat is not supported", "#reduceat"),  #reduceat
        (lambda a: np.add.accumulate(a), "np.add.accumulate is not supported", "#accumulate"),  #accumulate
        (lambda a: np.logaddexp.reduce(a), "np.logaddexp.reduce is not supported", "#lae"),  #lae
        (lambda a: np.gcd(a, a), "np.gcd is not supported on tensors", "#gcd"),  #gcd
        (lambda a: np.add.reduce(a, initial=1.0), "np.add.reduce with initial= is not supported", "#initial"),  #initial
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
