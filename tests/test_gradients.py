"""ag.grad / ag.value_and_grad on every differentiable op, checked against central differences."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check_grad

rng = np.random.default_rng(0)
X = rng.uniform(0.5, 2.0, (3, 4))       # positive, away from kinks
Y = rng.uniform(0.5, 2.0, (3, 4))
V = rng.uniform(-2.0, 2.0, (3, 4))
ROW = rng.uniform(0.5, 2.0, (4,))

S = ag.reduce_sum
OPS = {
    "add": lambda x, y: S(ag.add(x, y) ** 2),
    "subtract": lambda x, y: S(ag.subtract(x, y) ** 2),
    "multiply": lambda x, y: S(ag.multiply(x, y)),
    "divide": lambda x, y: S(ag.divide(x, y)),
    "mod": lambda x, y: S(ag.mod(x * 3.0, y)),
    "pow": lambda x, y: S(ag.pow(x, y)),
    "maximum": lambda x, y: S(ag.maximum(x, y * 1.1) ** 2),
    "minimum": lambda x, y: S(ag.minimum(x, y * 1.1) ** 2),
    "matmul": lambda x, y: S(ag.matmul(x, ag.transpose(y)) ** 2),
    "where": lambda x, y: S(ag.where(x > y, x * y, x + y)),
    "broadcast_add": lambda x, y: S(ag.tanh(x + y[0])),
}
UNARY = {
    "tanh": lambda x: S(ag.tanh(x)), "exp": lambda x: S(ag.exp(x)), "log": lambda x: S(ag.log(x)),
    "sqrt": lambda x: S(ag.sqrt(x)), "square": lambda x: S(ag.square(x)), "abs": lambda x: S(ag.abs(x - 1.3)),
    "negative": lambda x: S(ag.negative(x) ** 3), "relu": lambda x: S(ag.nn.relu(x - 1.2) ** 2),
    "sigmoid": lambda x: S(ag.nn.sigmoid(x)), "softmax": lambda x: S(ag.nn.softmax(x) * ag.range(4.0)),
    "cast": lambda x: S(ag.cast(x * 3.0, np.float64) ** 2),
    "reduce_sum": lambda x: S(ag.reduce_sum(x, axis=0) ** 2),
    "reduce_mean": lambda x: S(ag.reduce_mean(x, axis=1) ** 2),
    "reduce_max": lambda x: S(ag.reduce_max(x, axis=1) ** 2),
    "reduce_min": lambda x: S(ag.reduce_min(x, axis=0, keepdims=True) ** 2),
    "reduce_prod": lambda x: S(ag.reduce_prod(x, axis=1)),
    "concat": lambda x: S(ag.concat([x, x * 2.0], 0) ** 2),
    "stack": lambda x: S(ag.stack([x, x ** 2], 1)),
    "reshape": lambda x: S(ag.reshape(x, (2, 6)) * ag.range(6.0)),
    "transpose": lambda x: S(ag.transpose(x) * ag.range(3.0)),
    "expand_dims": lambda x: S(ag.expand_dims(x, 1) ** 2),
    "squeeze": lambda x: S(ag.squeeze(x[:1], 0) ** 2),
    "gather": lambda x: S(ag.gather(x, np.array([0, 2, 0])) ** 2),
    "getitem": lambda x: S(x[1:, ::2] ** 2) + S(x[np.array([0, 0, 2])]),
    "fill": lambda x: S(ag.fill((2, 2), ag.reduce_sum(x)) ** 2),
    "zeros_like": lambda x: S(ag.zeros_like(x) + x),
}


@pytest.mark.parametrize("name", OPS)
def test_binary_op_gradients(name):
    y = ROW[None] if name == "broadcast_add" else Y
    check_grad(OPS[name], X, y, argnums=(0, 1))


@pytest.mark.parametrize("name", UNARY)
def test_unary_op_gradients(name):
    check_grad(UNARY[name], X)


def test_cast_to_float32_and_back():
    g = ag.grad(lambda x: S(ag.cast(ag.cast(x, np.float32) ** 2, np.float64)))(X)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * X, rtol=1e-6)


def test_mixed_sign_inputs():
    check_grad(lambda v: S(ag.tanh(v) * ag.abs(v) + ag.exp(v * 0.5)), V)


def test_where_does_not_leak_nan_from_the_side_not_taken():
    fn = lambda x: S(ag.where(x > 0, ag.sqrt(x), 0.0))  # noqa: E731
    with np.errstate(all="ignore"):
        g = ag.grad(fn)(np.array([0.0, -1.0, 4.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 0.25])


def test_where_log_abs_at_zero():
    fn = lambda x: S(ag.where(x != 0, ag.log(ag.abs(x)), 0.0))  # noqa: E731
    with np.errstate(all="ignore"):
        g = ag.grad(fn)(np.array([0.0, 2.0, -4.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, -0.25])


def sqrt_branch(x):
    if x > 0:
        y = ag.sqrt(x)
    else:
        y = 0.0 * x
    return y


def test_cond_does_not_leak_nan():
    with np.errstate(all="ignore"):
        for value, expected in ((0.0, 0.0), (-1.0, 0.0), (4.0, 0.25)):
            assert float(ag.grad(sqrt_branch)(np.float64(value))) == expected


def test_value_and_grad_and_argnums():
    fn = lambda w, b, x: S((x @ w + b) ** 2)  # noqa: E731
    w, b, x = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((4, 3))
    value, (dw, db) = ag.value_and_grad(fn, argnums=(0, 1))(w, b, x)
    assert np.isclose(value, fn(w, b, x))
    check_grad(fn, w, b, x, argnums=(0, 1))
    assert ag.grad(fn, 2)(w, b, x).shape == x.shape


def test_gradient_with_respect_to_structures():
    fn = lambda params, x: S(ag.tanh(x @ params["w"]) * params["scale"])  # noqa: E731
    params = {"w": rng.standard_normal((3, 2)), "scale": 2.0}
    g = ag.grad(fn)(params, rng.standard_normal((4, 3)))
    assert set(g) == {"w", "scale"} and g["w"].shape == (3, 2) and np.shape(g["scale"]) == ()


def test_integer_argument_is_an_error_naming_it():
    def loss(weights, count):
        return S(weights) * count
    with pytest.raises(TypeError, match=r"with respect to 'count': it is int64"):
        ag.grad(loss, argnums=1)(np.ones(2), np.int64(3))


def test_non_scalar_output_is_an_error():
    with pytest.raises(TypeError, match="float scalar"):
        ag.grad(lambda x: x * 2.0)(np.ones(2))


def test_integer_ops_carry_no_gradient():
    fn = lambda x: S(x * ag.cast(ag.argmax(x), np.float64)) + S(ag.cast(x > 1, np.float64))  # noqa: E731
    check_grad(fn, X)


def test_second_order_straight_line_and_cond():
    f = lambda x: S(x ** 3)  # noqa: E731
    np.testing.assert_allclose(ag.grad(lambda x: S(ag.grad(f)(x)))(np.array([1.0, 2.0])), [6.0, 12.0])

    def branchy(x):
        if S(x) > 0:
            y = S(x ** 3)
        else:
            y = S(x ** 2)
        return y
    inner = lambda x: S(ag.grad(branchy)(x))  # noqa: E731
    np.testing.assert_allclose(ag.grad(inner)(np.array([1.0, 2.0])), [6.0, 12.0])
    np.testing.assert_allclose(ag.grad(inner)(np.array([-1.0, -2.0])), [2.0, 2.0])


def test_second_order_through_while_is_a_clear_error():
    def loop(x):
        while S(x) > 1:
            x = x * 0.5
        return S(x * x)
    with pytest.raises(NotImplementedError, match="gradients of a gradient through a data-dependent While"):
        ag.grad(lambda x: S(ag.grad(loop)(x)))(np.array([3.0, 1.0]))


def test_grad_is_traced_once_per_signature():
    calls = []
    note = ag.do_not_convert(lambda: calls.append(1))  # runs while tracing only

    def fn(x):
        note()
        return S(x * x)
    g = ag.grad(fn)
    for k in range(3):
        g(np.full(3, float(k)))
    assert len(calls) == 1


def _scaled_sum(s, x):
    if isinstance(s, np.ndarray):  # never, eagerly: s is a Python float or a numpy scalar
        s = s * 0.0
    return np.sum(s * x) + (1.0 if isinstance(s, float) else 0.0)


@pytest.mark.parametrize("s", [0.7, np.float64(0.7), np.float32(0.7)])
def test_a_float_argument_keeps_its_box_and_weakness_under_value_and_grad(s):
    """A Python float stays one (weak: `0.7 * float32` is float32), a numpy scalar stays one:
    the value is eager's, in type and bits; the gradient matches a central difference."""
    x = np.array([0.1, 0.2, 0.3], np.float32)
    eager = _scaled_sum(s, x)
    for vg in (ag.value_and_grad(_scaled_sum), ag.function(ag.value_and_grad(_scaled_sum))):
        for _ in range(3):
            value, grad = vg(s, x)
            assert type(value) is type(eager) and value == eager
            h = 1e-3
            numeric = (_scaled_sum(type(s)(s + h), x) - _scaled_sum(type(s)(s - h), x)) / (2 * h)
            assert np.isclose(grad, numeric, rtol=1e-3)
