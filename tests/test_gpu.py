"""The GPU runtime (cupy). Skipped, with the reason, where cupy or a GPU is missing."""
import importlib.util

import numpy as np
import pytest

import autograph_lite as ag
from examples.models import elementwise_chain, tanh_loop
from helpers import assert_same


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
