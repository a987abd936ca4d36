"""Random state is an input: a compiled call draws from the generator eager code would use
(numpy's global RandomState, a Generator argument, closure or attribute), advancing it the same
way, so eager and compiled calls interleave in one stream and give the same numbers, bit for bit.
Each test runs the eager function and the compiled one on twin states and compares."""
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import assert_identical, to_host


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def where(fn, text):
    return rf"[^ ]*test_random_state.py:{line_of(fn, text)}"


def interleaved_global(fn, *args, seed=0, calls=3):
    """`np.random.seed(seed)`, then eager, compiled, eager, ... against eager throughout: equal."""
    compiled = ag.function(fn)
    np.random.seed(seed)
    want = [fn(*args) for _ in range(2 * calls)]
    np.random.seed(seed)
    got = [f(*args) for _ in range(calls) for f in (fn, compiled)]
    for w, g in zip(want, got):
        assert_identical(w, g)
    return compiled, got


def noisy(x):
    return x + 0.1 * np.random.standard_normal(x.shape)


def test_global_random_not_frozen():
    compiled, got = interleaved_global(noisy, np.zeros(4))
    assert not np.array_equal(to_host(got[1]), to_host(got[3]))  # compiled calls draw anew
    assert compiled.trace_count == 1


def monte_carlo_pi(n):
    x = np.random.random(n)
    y = np.random.rand(n)
    inside = x * x + y * y < 1.0
    return 4.0 * np.mean(inside) + 0.0 * np.random.uniform(-1.0, 1.0)


def test_monte_carlo_pi_equals_eager():
    compiled, got = interleaved_global(monte_carlo_pi, 1000, seed=5)
    assert len({float(to_host(v)) for v in got}) > 1
    assert all(abs(float(to_host(v)) - np.pi) < 0.3 for v in got)


def test_compiled_calls_alone_follow_the_eager_stream():
    compiled = ag.function(noisy)
    x = np.zeros(3)
    np.random.seed(11)
    want = [noisy(x) for _ in range(3)]
    np.random.seed(11)
    for w in want:
        assert_identical(w, compiled(x))


def test_seed_between_calls_is_seen():
    compiled = ag.function(noisy)
    x = np.zeros(3)
    np.random.seed(2)
    first = to_host(compiled(x))
    np.random.seed(2)
    assert_identical(first, compiled(x))
    np.random.seed(3)
    want = noisy(x)
    np.random.seed(3)
    assert_identical(want, compiled(x))


def unused_draws(x):
    np.random.random(5)       # unused: still advances the stream, as eagerly
    first = np.random.random()
    np.random.random(5)
    return x - first           # the order of draws matters: first is the 6th number


def test_unused_draws_are_kept_in_order():
    interleaved_global(unused_draws, np.zeros(2), seed=12)


def draws(rng, x):
    return rng.random(3) + x, rng.normal(loc=x, scale=2.0), rng.integers(0, 10, size=2)


def test_generator_argument_advances():
    compiled = ag.function(draws)
    x = np.ones(3)
    eager_rng, compiled_rng = np.random.default_rng(7), np.random.default_rng(7)
    for _ in range(3):
        assert_identical(draws(eager_rng, x), compiled(compiled_rng, x))
    # interleaved on one generator: the same stream as eager calls only
    rng, oracle = np.random.default_rng(8), np.random.default_rng(8)
    for f in (draws, compiled, draws, compiled):
        assert_identical(draws(oracle, x), f(rng, x))
    assert compiled.trace_count == 2  # one per generator object


def test_generator_in_a_closure():
    rng, oracle = np.random.default_rng(21), np.random.default_rng(21)

    def scaled(x):
        return x * rng.standard_normal(x.shape)

    def eager(x):
        return x * oracle.standard_normal(x.shape)

    compiled = ag.function(scaled)
    x = np.arange(4.0)
    for f in (compiled, scaled, compiled):
        assert_identical(eager(x), f(x))


class Dropout:
    def __init__(self, seed, rate):
        self.rng, self.rate = np.random.default_rng(seed), rate

    def __call__(self, x):
        keep = self.rng.random(x.shape) >= self.rate
        return x * keep / (1.0 - self.rate)


def test_generator_in_an_attribute_of_self():
    layer, oracle = Dropout(4, 0.5), Dropout(4, 0.5)
    compiled = ag.function(layer)
    x = np.arange(1.0, 9.0)
    outs = [compiled(x) for _ in range(3)]
    for got in outs:
        assert_identical(oracle(x), got)
    assert not np.array_equal(to_host(outs[0]), to_host(outs[1]))


def boxes(x):
    return np.random.random(), np.random.randint(5), np.random.standard_normal(), x


def test_python_float_and_numpy_scalar_boxes_match_eager():
    _, got = interleaved_global(boxes, np.zeros(2))
    assert type(got[1][0]) is float and type(got[1][1]) is int

    def generator_boxes(rng):
        return rng.random(), rng.integers(5), rng.random(2), rng.random() * 2.0, rng.integers(5) + 1

    compiled = ag.function(generator_boxes)
    a, b = np.random.default_rng(1), np.random.default_rng(1)
    for _ in range(2):
        want, got = generator_boxes(a), compiled(b)
        assert [type(to_host(v)) for v in got] == [float, np.int64, np.ndarray, float, np.int64]
        assert_identical(want, got)


def test_a_draw_inside_a_tensor_loop_draws_each_iteration():
    def until(limit):
        total = np.float64(0.0)
        n = 0
        while total < limit:  # limit is an array: a tensor while
            total = total + np.random.random()
            n += 1
        return total, n

    compiled, got = interleaved_global(until, np.array(5.0), seed=9)
    graph = compiled.get_concrete_function(np.array(5.0)).graph
    assert any(n.op == "While" for n in graph.nodes)
    assert len({int(n) for _, n in got}) > 1


def test_a_draw_inside_a_tensor_if():
    def branch(x):
        if x.sum() > 0:
            y = x + np.random.standard_normal(x.shape)
        else:
            y = x - np.random.random(x.shape)
        return y, np.random.random()

    interleaved_global(branch, np.ones(3), seed=4)
    interleaved_global(branch, -np.ones(3), seed=4)


def reseeds(x):
    np.random.seed(0)
    return x


def shuffles(rng, x):
    rng.shuffle(x)
    return x


def test_a_method_that_is_not_a_draw_is_refused_at_its_line():
    with pytest.raises(ConversionError, match=r"np\.random\.seed\(\) reseeds the generator.*" + where(reseeds, "seed(0)")):
        ag.function(reseeds)(np.ones(2))
    with pytest.raises(ConversionError, match=r"Generator\.shuffle\(\) shuffles its argument in place.*"
                       + where(shuffles, "rng.shuffle") + r".*permutation"):
        ag.function(shuffles)(np.random.default_rng(0), np.ones(2))


def sized_by_a_tensor(n):
    return np.random.random(n.sum())


def test_a_tensor_argument_that_sets_the_shape_is_refused():
    with pytest.raises(ConversionError, match=r"np\.random\.random\(\) cannot be compiled \(at "
                       + where(sized_by_a_tensor, "np.random.random") + r"\): the shape or type"):
        ag.function(sized_by_a_tensor)(np.array([2, 1]))


def test_a_generator_made_from_a_seed_inside_the_function_matches_eager():
    def local(x):
        rng = np.random.default_rng(3)
        return x + rng.random(x.shape)

    compiled = ag.function(local)
    x = np.zeros(2)
    for _ in range(2):
        assert_identical(local(x), compiled(x))

    def unseeded(x):
        return x + np.random.default_rng().random(x.shape)

    with pytest.raises(ConversionError, match=r"default_rng\(\) without a seed.*" + where(unseeded, "default_rng()")):
        ag.function(unseeded)(x)


def test_save_keeps_the_global_random_state_and_refuses_a_generator(tmp_path):
    compiled = ag.function(noisy)
    x = np.zeros(3)
    compiled(x)
    ag.save(compiled, tmp_path / "noisy.agz")
    loaded = ag.load(tmp_path / "noisy.agz")
    np.random.seed(6)
    want = [noisy(x), noisy(x)]
    np.random.seed(6)
    for w in want:
        assert_identical(w, loaded(x))

    def typed(x):
        return x + np.random.randint(0, 9, size=3, dtype=np.int32), np.random.randint(5, dtype=int)

    compiled = ag.function(typed)
    compiled(x)
    ag.save(compiled, tmp_path / "typed.agz")
    loaded = ag.load(tmp_path / "typed.agz")
    np.random.seed(7)
    want = [typed(x), typed(x)]
    np.random.seed(7)
    for w in want:
        got = loaded(x)
        assert type(got[1]) is int
        assert_identical(w, got)

    rng = np.random.default_rng(0)
    compiled = ag.function(lambda x: x + rng.random(x.shape))
    compiled(x)
    with pytest.raises(ValueError, match=r"RandomDraw node .*Generator\(PCG64\) at 0x[0-9A-F]+, which cannot be "
                       r"saved.*Only numpy's global RandomState"):
        ag.save(compiled, tmp_path / "closure.agz")
    compiled = ag.function(draws)
    compiled(rng, x)
    with pytest.raises(ValueError, match=r"Generator\(PCG64\) at 0x[0-9A-F]+, which cannot be saved"):
        ag.save(compiled, tmp_path / "draws.agz")


def test_gradient_through_x_plus_noise():
    def loss(x):
        return np.sum((x + np.random.standard_normal(x.shape)) ** 2)

    grad = ag.grad(loss)
    x = np.arange(3.0)
    np.random.seed(1)
    noise = np.random.standard_normal(3)
    np.random.seed(1)
    np.testing.assert_allclose(to_host(grad(x)), 2 * (x + noise), rtol=1e-12)
    rng = np.random.default_rng(0)
    with pytest.raises(NotImplementedError, match="no gradient is defined for op RandomDraw"):
        ag.grad(lambda x: np.sum(rng.normal(loc=x)))(x)


def test_python_random_module_draws_each_call():
    import random

    def f(x):
        if random.random() < 0.5:  # a data-dependent branch on a draw: a graph Cond
            return x + random.gauss(0.0, 1.0)
        return x - random.randint(1, 5)

    compiled = ag.function(f)
    random.seed(3)
    eager = [f(np.zeros(2)) for _ in range(6)]
    random.seed(3)
    for e in eager:
        assert_identical(e, compiled(np.zeros(2)))
    assert compiled.trace_count == 1


def test_library_code_drawing_while_tracing_is_refused():
    @ag.do_not_convert
    def noise(shape):
        return np.random.standard_normal(shape)  # runs while tracing only: its numbers would freeze

    with pytest.raises(ag.ConversionError, match="global random state or Python's `random` module advanced"):
        ag.function(lambda x: x + noise(x.shape))(np.zeros(3))


def test_a_python_random_instance_draws_each_call():
    import random
    eager_rng, compiled_rng = random.Random(4), random.Random(4)

    def make(rng):
        return lambda x: x * rng.random() + rng.gauss(0.0, 1.0) + rng.randint(0, 9)

    eager, compiled = make(eager_rng), ag.function(make(compiled_rng))
    for _ in range(4):
        assert_identical(eager(np.ones(2)), compiled(np.ones(2)))


CHOICE_P = np.array([0.1, 0.2, 0.7])


def test_choice_with_probabilities_read_from_outside_or_passed_draws_as_eager():
    def make(rng):
        return lambda x, q: x + rng.choice(3, p=CHOICE_P) + rng.choice(3, size=2, p=q)

    eager, compiled = make(np.random.default_rng(0)), ag.function(make(np.random.default_rng(0)))
    q = np.array([0.5, 0.5, 0.0])
    try:
        for _ in range(4):
            assert_identical(eager(np.ones(2), q), compiled(np.ones(2), q))
            CHOICE_P[:] = np.roll(CHOICE_P, 1)
            q[:] = np.roll(q, 1)
    finally:
        CHOICE_P[:] = [0.1, 0.2, 0.7]
