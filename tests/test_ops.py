"""Every op of the public op list: compiled result == eager result (values, dtype, shape), on two
dtypes; broadcasting where the op broadcasts; and the shape rule with a None dim."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import cpu_only, assert_identical, assert_same, run_both


def data(shape, dtype, rng, positive=False):
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) > 0.5
    x = rng.standard_normal(shape) * 3
    if positive:
        x = np.abs(x) + 0.5
    return x.astype(dtype)


FLOATS = (np.float32, np.float64)
NUMERIC = (np.float32, np.int32)

# op name -> (fn(*args), arg shapes, dtypes, positive inputs)
ELEMENTWISE_BINARY = {
    "add": ag.add, "subtract": ag.subtract, "multiply": ag.multiply, "divide": ag.divide,
    "maximum": ag.maximum, "minimum": ag.minimum, "equal": ag.equal, "not_equal": ag.not_equal,
    "less": ag.less, "less_equal": ag.less_equal, "greater": ag.greater,
    "greater_equal": ag.greater_equal,
}
ELEMENTWISE_UNARY = {
    "tanh": (ag.tanh, FLOATS, False), "exp": (ag.exp, FLOATS, False), "log": (ag.log, FLOATS, True),
    "sqrt": (ag.sqrt, FLOATS, True), "square": (ag.square, NUMERIC, False),
    "abs": (ag.abs, NUMERIC, False), "relu": (ag.nn.relu, NUMERIC, False),
    "sigmoid": (ag.nn.sigmoid, FLOATS, False), "negative": (ag.negative, NUMERIC, False),
}


@pytest.mark.parametrize("name", ELEMENTWISE_BINARY)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_binary_two_dtypes(name, dtype, rng):
    op = ELEMENTWISE_BINARY[name]
    x, y = data((4, 3), dtype, rng), data((4, 3), dtype, rng, positive=True)
    run_both(lambda a, b: op(a, b), x, y)


@pytest.mark.parametrize("name", ELEMENTWISE_BINARY)
def test_binary_broadcasting_and_weak_scalars(name, rng):
    op = ELEMENTWISE_BINARY[name]
    x, row = data((4, 3), np.float32, rng), data((3,), np.float32, rng, positive=True)
    run_both(lambda a, b: op(a, b), x, row)
    run_both(lambda a, b: op(a[:, None], b), row, x[0])        # (3,1) with (3,) -> (3,3)
    run_both(lambda a: op(a, 2.5), x)                           # Python float stays weak: float32
    run_both(lambda a: op(3, a), data((5,), np.int32, rng, positive=True))


@pytest.mark.parametrize("name", ELEMENTWISE_UNARY)
def test_unary_two_dtypes(name, rng):
    op, dtypes, positive = ELEMENTWISE_UNARY[name]
    for dtype in dtypes:
        run_both(lambda a: op(a), data((2, 5), dtype, rng, positive))


def test_logical_ops(rng):
    a, b = data((6,), np.bool_, rng), data((6,), np.bool_, rng)
    for op in (ag.logical_and, ag.logical_or):
        run_both(lambda x, y: op(x, y), a, b)
        run_both(lambda x, y: op(x, y), a[:, None], b)  # broadcasting
    run_both(lambda x: ag.logical_not(x), a)
    run_both(lambda x, y: ag.logical_and(x > 0, y > 0), data((3,), np.int32, rng), data((3,), np.float64, rng))


def test_matmul(rng):
    for dtype in (np.float32, np.int64):
        run_both(lambda a, b: ag.matmul(a, b), data((4, 3), dtype, rng), data((3, 2), dtype, rng))
    run_both(lambda a, b: a @ b, data((5, 4, 3), np.float32, rng), data((3, 2), np.float32, rng))  # batch broadcast
    run_both(lambda a, b: a @ b, data((3,), np.float64, rng), data((3, 2), np.float64, rng))       # 1-D promoted


REDUCTIONS = [ag.reduce_sum, ag.reduce_mean, ag.reduce_max, ag.reduce_min, ag.reduce_prod]


@pytest.mark.parametrize("op", REDUCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", NUMERIC)
def test_reductions(op, dtype, rng):
    x = data((3, 4), dtype, rng)
    run_both(lambda a: op(a), x)
    run_both(lambda a: op(a, axis=0), x)
    run_both(lambda a: op(a, axis=-1, keepdims=True), x)
    run_both(lambda a: op(a, axis=(0, 1)), x)
    run_both(lambda a, b: op(a + b, axis=1), x, x[0])  # broadcasting into the reduction


@pytest.mark.parametrize("op", [ag.reduce_any, ag.reduce_all], ids=lambda f: f.__name__)
def test_boolean_reductions(op, rng):
    for x in (data((3, 4), np.bool_, rng), data((3, 4), np.int32, rng)):
        run_both(lambda a: op(a), x)
        run_both(lambda a: op(a, axis=1, keepdims=True), x)


def test_argmax(rng):
    for dtype in NUMERIC:
        x = data((3, 5), dtype, rng)
        run_both(lambda a: ag.argmax(a), x)
        run_both(lambda a: ag.argmax(a, axis=1), x)
        run_both(lambda a, b: ag.argmax(a * b, axis=0), x, x[0])


def test_where_and_cast(rng):
    for dtype in NUMERIC:
        x, y = data((4, 3), dtype, rng), data((3,), dtype, rng)
        run_both(lambda a, b: ag.where(a > 0, a, b), x, y)  # broadcasts condition and values
        run_both(lambda a: ag.where(a > 0, a, 0), x)        # weak scalar branch
        run_both(lambda a: ag.cast(a, np.int16), x)
        run_both(lambda a: ag.cast(a > 0, np.float32), x)


def test_creation_ops(rng):
    x = data((2, 3), np.float32, rng)
    for dtype in (np.float32, np.int32):
        run_both(lambda a: ag.zeros((2, 3), dtype) + a.astype(dtype), x)
        run_both(lambda a: ag.ones(ag.shape(a), dtype) * 2, x)
        run_both(lambda a: ag.zeros_like(a, dtype), x)
        run_both(lambda a: ag.ones_like(a.astype(dtype)), x)
        run_both(lambda a: ag.fill((2, 3), ag.reduce_max(a).astype(dtype)), x)
        run_both(lambda a: ag.constant([1, 2, 3], dtype) + a.astype(dtype), x)
        run_both(lambda n: ag.range(n, dtype=dtype), np.int32(5))
    run_both(lambda n: ag.range(1, n, 2), np.int64(9))
    run_both(lambda a: ag.range(0.0, ag.reduce_max(ag.abs(a)), 0.5), x)


def test_joining_and_shapes(rng):
    for dtype in NUMERIC:
        a, b = data((2, 3), dtype, rng), data((4, 3), dtype, rng)
        run_both(lambda x, y: ag.concat([x, y], 0), a, b)
        run_both(lambda x, y: ag.concat([x, y[:2]], axis=1), a, b)
        run_both(lambda x, y: ag.stack([x, y[:2]], axis=1), a, b)
        run_both(lambda x: ag.reshape(x, (3, -1)), a)
        run_both(lambda x: ag.reshape(x, ag.shape(x)[::-1]), a)
        run_both(lambda x: ag.transpose(x), a)
        run_both(lambda x: ag.transpose(x[None], (2, 0, 1)), a)
        run_both(lambda x: ag.shape(x), a)
        run_both(lambda x: ag.size(x), a)
        run_both(lambda x: ag.expand_dims(x, -1), a)
        run_both(lambda x: ag.squeeze(x[:1], 0), a)
        run_both(lambda x: ag.squeeze(x[:, :1]), a)
        run_both(lambda x: ag.gather(x, np.array([3, 0, 0])), b)
        run_both(lambda x, i: ag.gather(x, i, axis=1), b, np.array([[2, 1], [0, 0]]))


def test_indexing(rng):
    x = data((5, 4), np.float32, rng)
    run_both(lambda a: (a[1], a[-1], a[1:3], a[:, 2], a[::-2, 1:], a[..., -1], a[None, 0]), x)
    run_both(lambda a, i: (a[i], a[:, i], a[i:i + 2], a[-i]), x, np.int64(2))
    run_both(lambda a: a[a > 0], x)
    run_both(lambda a, idx: a[idx, 1:], x, np.array([4, 0, 2]))
    run_both(lambda a: a[1, 1], data((3, 3), np.int32, rng))


def test_softmax(rng):
    for dtype in FLOATS:
        x = data((3, 4), dtype, rng)
        run_both(lambda a: ag.nn.softmax(a), x)
        run_both(lambda a: ag.nn.softmax(a, axis=0), x)


def test_numpy_ufuncs_on_tensors(rng):
    x = data((3,), np.float32, rng)
    run_both(lambda a: np.tanh(a) + np.ones(3, np.float32) * a, x)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_numpy_reductions_and_methods_on_tensors(dtype, rng):
    """np.sum(t, ...), t.all(), np.any(t, axis=...) and the rest take numpy's keywords and give
    numpy's values, dtypes and shapes."""
    def f(x):
        return (np.sum(x), np.sum(x, axis=0), np.sum(x, dtype=np.float64), np.mean(x, axis=1, keepdims=True),
                np.prod(x, axis=0), np.max(x), x.min(axis=0), np.all(x), x.all(axis=1), np.any(x, keepdims=True),
                (x > 0).any(), np.all(x > 0, axis=(0, 1)))
    run_both(f, (rng.normal(size=(3, 4)) * 3).astype(dtype))


def test_numpy_reduction_keywords_without_a_graph_form_are_refused_at_the_users_line(rng):
    def f(x):
        return np.sum(x, where=x > 0)
    with pytest.raises(TypeError, match=r"sum\(\) of a symbolic Tensor with where .*test_ops.py:\d+"):
        ag.function(f)(rng.normal(size=3))


def test_a_reduction_dtype_accumulates_in_it_as_numpy_does():
    """np.sum(x, dtype=int8) wraps as numpy's int8 accumulator does; mean with an int dtype
    truncates; ndarray's positional order (axis, out, keepdims) for max; to one value a
    narrowing dtype is refused (it would give a 0-d array where numpy gives a scalar)."""
    def f(a, b, c):
        return (np.sum(a, axis=0, dtype=np.int8), np.sum(b, axis=1, dtype=bool), np.mean(c, axis=0, dtype=np.int64),
                np.prod(a, axis=1, dtype=np.int8), a.max(0, None, True), np.any(b, where=True),
                np.sum(c, dtype=np.float32), np.sum(a, dtype=np.int64))
    args = (np.full((3, 3), 100, np.int32), np.array([[0, 2, 3], [0, 0, 0]]), np.array([[1.0, -2.5], [2.0, -2.0]]))
    assert_identical(f(*args), ag.function(f)(*args))

    def narrowing(a):
        return np.sum(a, dtype=np.int8)
    with pytest.raises(TypeError, match=r"dtype=int8\) of a symbolic Tensor to one value .*test_ops.py:\d+"):
        ag.function(narrowing)(args[0])


# --- shape rules with unknown dims -------------------------------------------------------

def traced_shape(fn, *specs):
    """The static shape(s) the trace gives `fn`'s outputs for inputs with None dims."""
    f = ag.function(fn, input_signature=list(specs))
    outs = f.get_concrete_function().graph.outputs
    return [t.shape for t in outs] if len(outs) > 1 else outs[0].shape


F = np.float32
NONE_DIM_CASES = [
    # (op, fn, input shapes, expected output shape, concrete inputs' shapes)
    ("add", lambda a, b: a + b, [(None, 3), (3,)], (None, 3), [(2, 3), (3,)]),
    ("broadcast_none_with_1", lambda a, b: a * b, [(None, 1), (1, 4)], (None, 4), [(3, 1), (1, 4)]),
    ("where", lambda a, b: ag.where(a > 0, a, b), [(None, 3), (3,)], (None, 3), [(2, 3), (3,)]),
    ("tanh", lambda a: ag.tanh(a), [(None, 2)], (None, 2), [(5, 2)]),
    ("matmul", lambda a, b: a @ b, [(None, 3), (3, 4)], (None, 4), [(2, 3), (3, 4)]),
    ("reduce_sum", lambda a: ag.reduce_sum(a, axis=1), [(None, 3)], (None,), [(2, 3)]),
    ("reduce_mean", lambda a: ag.reduce_mean(a, axis=0, keepdims=True), [(None, 3)], (1, 3), [(4, 3)]),
    ("reduce_max", lambda a: ag.reduce_max(a, 0), [(None, 3)], (3,), [(2, 3)]),
    ("reduce_min", lambda a: ag.reduce_min(a, 1), [(None, 3)], (None,), [(2, 3)]),
    ("reduce_prod", lambda a: ag.reduce_prod(a), [(None, 3)], (), [(2, 3)]),
    ("reduce_any", lambda a: ag.reduce_any(a > 0, 1), [(None, 3)], (None,), [(2, 3)]),
    ("reduce_all", lambda a: ag.reduce_all(a > 0, 0), [(None, 3)], (3,), [(2, 3)]),
    ("argmax", lambda a: ag.argmax(a, 1), [(None, 3)], (None,), [(2, 3)]),
    ("range", lambda a: ag.range(ag.size(a)), [(None,)], (None,), [(4,)]),
    ("zeros", lambda a: ag.zeros(ag.shape(a)), [(None, 3)], (None, 3), [(2, 3)]),
    ("ones", lambda a: ag.ones((ag.shape(a)[0], 2)), [(None, 3)], (None, 2), [(2, 3)]),
    ("zeros_like", lambda a: ag.zeros_like(a), [(None, 3)], (None, 3), [(2, 3)]),
    ("ones_like", lambda a: ag.ones_like(a), [(None, 3)], (None, 3), [(2, 3)]),
    ("fill", lambda a: ag.fill(ag.shape(a), 1.5), [(None, 3)], (None, 3), [(2, 3)]),
    ("concat", lambda a, b: ag.concat([a, b], 0), [(None, 3), (2, 3)], (None, 3), [(1, 3), (2, 3)]),
    ("concat_axis1", lambda a, b: ag.concat([a, b], 1), [(None, 3), (None, 2)], (None, 5), [(2, 3), (2, 2)]),
    ("stack", lambda a, b: ag.stack([a, b]), [(None, 3), (2, 3)], (2, 2, 3), [(2, 3), (2, 3)]),
    ("reshape", lambda a: ag.reshape(a, (-1,)), [(None, 3)], (None,), [(2, 3)]),
    ("reshape_known", lambda a: ag.reshape(a, (3, -1)), [(2, None)], (3, None), [(2, 3)]),
    ("transpose", lambda a: ag.transpose(a), [(None, 3)], (3, None), [(2, 3)]),
    ("shape", lambda a: ag.shape(a), [(None, 3)], (2,), [(2, 3)]),
    ("size", lambda a: ag.size(a), [(None, 3)], (), [(2, 3)]),
    ("gather", lambda a, i: ag.gather(a, i), [(None, 3), (None,)], (None, 3), [(4, 3), (2,)]),
    ("expand_dims", lambda a: ag.expand_dims(a, 1), [(None, 3)], (None, 1, 3), [(2, 3)]),
    ("squeeze", lambda a: ag.squeeze(a, 1), [(None, 1)], (None,), [(2, 1)]),
    ("cast", lambda a: ag.cast(a, np.int32), [(None, 3)], (None, 3), [(2, 3)]),
    ("comparison", lambda a, b: a < b, [(None, 3), (None, 1)], (None, 3), [(2, 3), (2, 1)]),
    ("logical", lambda a: ag.logical_not(a > 0), [(None,)], (None,), [(3,)]),
    ("getitem", lambda a: a[1:, 0], [(None, 3)], (None,), [(4, 3)]),
    ("getitem_static", lambda a: a[:, 1:], [(None, 3)], (None, 2), [(4, 3)]),
    ("softmax", lambda a: ag.nn.softmax(a), [(None, 3)], (None, 3), [(2, 3)]),
]


@pytest.mark.parametrize("case", NONE_DIM_CASES, ids=lambda c: c[0])
def test_shape_rule_with_none_dims(case, rng):
    name, fn, shapes, expected, concrete = case
    specs = [ag.TensorSpec(s, np.int64 if name == "gather" and i == 1 else F) for i, s in enumerate(shapes)]
    assert traced_shape(fn, *specs) == expected
    args = [rng.integers(0, 2, s) if name == "gather" and i == 1 else data(s, F, rng)
            for i, s in enumerate(concrete)]
    f = ag.function(fn, input_signature=specs)
    assert_same(fn(*args), f(*args))


def test_shape_errors_name_the_user_line():
    @ag.function
    def f(a, b):
        return a @ b
    with pytest.raises(ValueError, match=r"MatMul: inner dimensions differ.*test_ops.py:\d+"):
        f(np.ones((2, 3)), np.ones((4, 2)))


def test_every_listed_op_exists():
    listed = """constant add subtract multiply divide matmul tanh exp log sqrt square abs maximum
    minimum reduce_sum reduce_mean reduce_max reduce_min reduce_prod reduce_any reduce_all argmax
    range zeros ones zeros_like ones_like fill concat stack reshape transpose where cast shape size
    gather expand_dims squeeze equal not_equal less less_equal greater greater_equal logical_and
    logical_or logical_not""".split()
    assert all(callable(getattr(ag, name)) for name in listed)
    assert all(callable(getattr(ag.nn, n)) for n in ("relu", "sigmoid", "softmax"))
    assert all(callable(getattr(ag.random, n)) for n in ("uniform", "normal", "set_seed"))


@pytest.mark.parametrize("name", ELEMENTWISE_BINARY)
def test_binary_shape_rule_with_none_dims(name, rng):
    op = ELEMENTWISE_BINARY[name]
    fn = lambda a, b: op(a, b)  # noqa: E731
    specs = [ag.TensorSpec([None, 3], F), ag.TensorSpec([None, 1], F)]
    assert traced_shape(fn, *specs) == (None, 3)
    a, b = data((4, 3), F, rng), data((4, 1), F, rng, positive=True)
    assert_same(fn(a, b), ag.function(fn, input_signature=specs)(a, b))


@pytest.mark.parametrize("name", ELEMENTWISE_UNARY)
def test_unary_shape_rule_with_none_dims(name, rng):
    op, dtypes, positive = ELEMENTWISE_UNARY[name]
    fn = lambda a: op(a)  # noqa: E731
    spec = ag.TensorSpec([2, None], dtypes[0])
    assert traced_shape(fn, spec) == (2, None)
    a = data((2, 5), dtypes[0], rng, positive)
    assert_same(fn(a), ag.function(fn, input_signature=[spec])(a))


def test_constant_has_a_static_shape_even_beside_none_dims(rng):
    fn = lambda a: a + ag.constant([1.0, 2.0, 3.0], np.float32)  # noqa: E731
    assert traced_shape(fn, ag.TensorSpec([None, 3], F)) == (None, 3)
    a = data((2, 3), F, rng)
    with ag.device("cpu"):  # the eager oracle: numpy
        expected = fn(a)
    assert_same(expected, ag.function(fn, input_signature=[ag.TensorSpec([None, 3], F)])(a))


# --- issue 11: pad, identity, integer random values -----------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC)
def test_pad_matches_numpy_eagerly_and_compiled(dtype, rng):
    x = data((2, 3), dtype, rng)
    eager, _, _ = run_both(lambda x: ag.pad(x, [[1, 0], [0, 2]], 7), x)
    np.testing.assert_array_equal(eager, np.pad(x, [(1, 0), (0, 2)], constant_values=7))
    assert ag.function(lambda x: ag.pad(x, [[1, 1], [2, 0]])).get_concrete_function(
        ag.TensorSpec((None, 3), dtype)).graph.outputs[0].shape == (None, 5)


def test_pad_and_identity_gradients():
    from helpers import check_grad
    x = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    check_grad(lambda x: ag.reduce_sum(ag.pad(x * x, [[1, 0], [0, 2]], 1.0) * 3.0), x)
    check_grad(lambda x: ag.reduce_sum(ag.identity(x) * x), x)


@pytest.mark.parametrize("dtype", NUMERIC + (np.bool_,))
@cpu_only("memory shared with a host argument: a device result is always a fresh device array")
def test_identity_is_a_fresh_copy(dtype, rng):
    x = data((3,), dtype, rng)
    eager, compiled, _ = run_both(ag.identity, x)
    assert not np.shares_memory(eager, x) and not np.shares_memory(compiled, x)


@pytest.mark.parametrize("dtype", (np.int32, np.int64, np.uint8))
def test_random_uniform_with_an_integer_dtype_draws_from_minval_to_maxval(dtype):
    def draw():
        return ag.random.uniform((50,), 3, 9, dtype=dtype)
    ag.random.set_seed(5)
    eager = draw()
    ag.random.set_seed(5)
    compiled = ag.function(draw)()
    assert eager.dtype == dtype and compiled.dtype == dtype
    np.testing.assert_array_equal(eager, compiled)
    assert eager.min() >= 3 and eager.max() < 9 and len(set(eager.tolist())) > 1


def test_random_uniform_with_an_integer_dtype_needs_maxval():
    with pytest.raises(ValueError, match="needs maxval"):
        ag.random.uniform((2,), dtype=np.int32)
    with pytest.raises(TypeError, match="integer minval and maxval"):
        ag.random.uniform((2,), 0, 2.5, dtype=np.int32)
