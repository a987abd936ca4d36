"""The device discipline of the GPU runtime, on the strict stand-in for cupy (tests/standin.py):
numpy inputs are copied to the device once per call, device inputs never, outputs stay on the
device, and a While reads its predicate once per test of its condition and copies nothing else."""
import numpy as np
import pytest

import autograph_lite as ag
import standin
from benchmarks.workloads import WORKLOADS
from helpers import assert_same, fill_and_scan, to_host

DEVICE = standin.device()


@pytest.fixture
def copies():
    standin.COPIES.clear()
    return standin.COPIES


def test_the_standin_refuses_what_cupy_refuses():
    a = standin.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    with pytest.raises(TypeError, match="numpy arrays"):
        standin.add(a, np.arange(3.0))
    assert type(standin.sum(a)) is standin.ndarray  # reductions stay on the device, 0-d
    assert type(np.tanh(a)) is standin.ndarray      # numpy's ufuncs dispatch to the device


def test_w1_loop_reads_its_predicate_once_per_test_and_copies_nothing_else(copies):
    _, tanh_loop, make_inputs = WORKLOADS["W1 tanh_loop"]
    x = to_host(make_inputs()[0])
    tests = 1  # the condition is tested once more than the body runs
    y = x
    while np.sum(y) > 1:
        y, tests = np.tanh(y), tests + 1
    f = ag.function(tanh_loop)
    on_device = standin.asarray(x)
    with ag.device("standin"):
        f(on_device)
        copies.clear()
        reads_before = DEVICE.predicate_reads
        out = f(on_device)
    assert DEVICE.predicate_reads - reads_before == tests
    assert copies == {"to_host": tests}
    assert type(out) is standin.ndarray
    assert_same(y, out.get())


def test_w2_loop_copies_nothing(copies):
    """W2's loop runs over range(steps): its counter and condition live on the host, so an
    iteration reads nothing from the device and copies nothing to it."""
    _, rnn, make_inputs = WORKLOADS["W2 rnn"]
    args = make_inputs()
    on_device = [standin.asarray(a) for a in args]
    f = ag.function(rnn)
    with ag.device("standin"):
        f(*on_device)
        for _ in range(2):
            copies.clear()
            out = f(*on_device)
            assert copies == {}
            assert type(out) is standin.ndarray
    assert_same(rnn(*args), out.get())


def test_numpy_inputs_are_copied_to_the_device_once_per_call(copies):
    _, rnn, make_inputs = WORKLOADS["W2 rnn"]
    args = make_inputs()
    f = ag.function(rnn)
    with ag.device("standin"):
        f(*args)
        copies.clear()
        out = f(*args)
    assert copies == {"to_device": len(args)}
    assert type(out) is standin.ndarray
    assert_same(rnn(*args), out.get())


def test_a_cond_reads_its_predicate_once(copies):
    @ag.function
    def f(x):
        if ag.reduce_sum(x) > 0:
            y = x * 2
        else:
            y = -x
        return y + 1
    x = standin.asarray(np.arange(4.0) - 1)
    with ag.device("standin"):
        f(x)
        copies.clear()
        out = f(x)
    assert copies == {"to_host": 1}
    assert_same(np.arange(4.0) * 2 - 1, out.get())


@pytest.mark.skipif(not hasattr(standin, "RawModule"), reason="no C++ compiler: the stand-in has no raw kernels")
@pytest.mark.parametrize("offset, kernel", [(0, "kernel_vec4"), (1, "kernel")])
def test_a_fused_chain_runs_as_one_cuda_kernel(offset, kernel, copies):
    """W4's chain on the device is one launch of its generated CUDA kernel: the float4 one when
    the arrays are 16-byte aligned, the plain one otherwise (an array starting one element in)."""
    numpy_chain, chain, make_inputs = WORKLOADS["W4 elementwise_chain"]
    x = to_host(make_inputs()[0])[:100_003]  # a length that leaves the float4 kernel a tail
    on_device = standin.asarray(x)[offset:]
    f = ag.function(chain)
    with ag.device("standin"):
        f(on_device)
        standin.LAUNCHES.clear()
        copies.clear()
        out = f(on_device)
    assert standin.LAUNCHES == {kernel: 1} and copies == {}
    np.testing.assert_allclose(out.get(), numpy_chain(x[offset:]), rtol=1e-6, atol=1e-6)


def _noisy(x, rng):
    return x + rng.standard_normal(x.shape)


def _global_noise(x):
    return x * standin.random.rand(3) + standin.random.standard_normal()


def test_a_device_generator_argument_advances_as_eagerly(copies):
    """A device generator cannot be copied (cupy's holds a cuRAND handle): the trace learns the
    draw's shape from a fresh one, and each call draws from the user's, as eager code does."""
    x = standin.asarray(np.zeros(3))
    rng, twin = standin.random.default_rng(5), standin.random.default_rng(5)
    f = ag.function(_noisy)
    with ag.device("standin"):
        compiled = [f(x, rng), _noisy(x, rng), f(x, rng)]
    eager = [_noisy(x, twin) for _ in range(3)]
    for c, e in zip(compiled, eager):
        assert type(c) is standin.ndarray
        assert_same(e.get(), c.get())
    assert f.trace_count == 1


def test_the_device_global_random_functions_draw_on_each_call():
    x = standin.asarray(np.ones(3))
    f = ag.function(_global_noise)
    with ag.device("standin"):
        standin.random.seed(11)
        compiled = [f(x), _global_noise(x), f(x)]
        standin.random.seed(11)
        eager = [_global_noise(x) for _ in range(3)]
        standin.random.seed(11)
        assert_same(compiled[0].get(), f(x).get())  # a reseed between calls is seen
    for c, e in zip(compiled, eager):
        assert_same(e.get(), c.get())
    assert not np.array_equal(compiled[0].get(), compiled[2].get())


def test_reseeding_the_device_generator_inside_is_refused_at_its_line():
    def reseed(x):
        standin.random.seed(3)
        return x
    with ag.device("standin"), pytest.raises(ag.ConversionError, match=r"random\.seed\(\).*test_standin_device\.py"):
        ag.function(reseed)(standin.asarray(np.ones(2)))


def test_numpy_api_and_item_assignment_on_the_device_match_its_eager():
    x = standin.asarray(np.linspace(-2, 2, 9))
    with ag.device("standin"):
        compiled = ag.function(fill_and_scan)(x)
    assert type(compiled) is standin.ndarray
    assert_same(fill_and_scan(x).get(), compiled.get())
