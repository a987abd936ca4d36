"""The GPU runtime (cupy). Skipped, with the reason, where cupy or a GPU is missing."""
import importlib.util

import numpy as np
import pytest

import autograph_lite as ag
from examples.models import elementwise_chain, tanh_loop
from helpers import assert_same, fill_and_scan


def _gpu_or_skip():
    try:
        return ag.runtime.devices.get("gpu")
    except RuntimeError as e:
        pytest.skip(str(e))


def test_gpu_request_without_cupy_names_the_extra():
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("cupy is installed: the missing-extra error cannot happen here")
    with pytest.raises(RuntimeError, match=r'pip install "autograph_lite\[gpu\]"'):
        ag.function(lambda x: x, device="gpu")


def test_compiled_gpu_matches_cupy_eager():
    gpu = _gpu_or_skip()
    x = gpu.xp.asarray(np.linspace(-3, 3, 100_000, dtype=np.float32))
    out = ag.function(elementwise_chain)(x)
    assert type(out).__module__.startswith("cupy")
    assert_same(elementwise_chain(x), out)


def test_cupy_inputs_make_no_transfer_but_one_predicate_read_per_iteration():
    gpu = _gpu_or_skip()
    x = gpu.xp.asarray(np.full(10, 0.9, np.float32))
    f = ag.function(tanh_loop)
    f(x)  # first call: constants move to the device once
    before, reads_before = gpu.transfers, gpu.predicate_reads
    out = f(x)
    iterations, y = 0, np.full(10, 0.9, np.float32)
    while y.sum() > 1:
        y, iterations = np.tanh(y), iterations + 1
    assert gpu.predicate_reads - reads_before == iterations + 1  # each test, the last one false
    assert gpu.transfers - before == gpu.predicate_reads - reads_before
    assert_same(y, out)


def test_cupy_generator_argument_advances_as_eagerly():
    gpu = _gpu_or_skip()
    x = gpu.xp.zeros(3)
    rng, twin = gpu.xp.random.default_rng(5), gpu.xp.random.default_rng(5)
    f = ag.function(lambda x, rng: x + rng.standard_normal(x.shape))
    compiled = [f(x, rng), x + rng.standard_normal(x.shape), f(x, rng)]
    eager = [x + twin.standard_normal(x.shape) for _ in range(3)]
    for c, e in zip(compiled, eager):
        assert type(c).__module__.startswith("cupy")
        assert_same(e.get(), c.get())


def test_cupy_global_random_functions_draw_on_each_call():
    gpu = _gpu_or_skip()
    cp = gpu.xp

    def noise(x):
        return x * cp.random.rand(3) + cp.random.standard_normal()
    x, f = cp.ones(3), ag.function(noise)
    cp.random.seed(11)
    compiled = [f(x), noise(x), f(x)]
    cp.random.seed(11)
    eager = [noise(x) for _ in range(3)]
    for c, e in zip(compiled, eager):
        assert_same(e.get(), c.get())


def test_numpy_api_and_item_assignment_on_cupy_match_cupy_eager():
    gpu = _gpu_or_skip()

    x = gpu.xp.asarray(np.linspace(-2, 2, 9))
    assert_same(fill_and_scan(x).get(), ag.function(fill_and_scan)(x).get())
