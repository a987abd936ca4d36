"""benchmarks/bench.py's measuring helpers (the timings themselves are not asserted: machines are noisy)."""
import numpy as np
import pytest

from benchmarks import bench, peer_workloads
from benchmarks.workloads import WORKLOADS


def test_interleaved_samples_spread_and_thread_scaling():
    x = np.ones(8)
    samples = bench.interleaved_samples({"add": np.add, "mul": np.multiply}, (x, x), repeats=5)
    assert set(samples) == {"add", "mul"} and all(len(s) == 5 and min(s) > 0 for s in samples.values())
    low, high = bench.spread(samples["add"])
    assert min(samples["add"]) <= low <= high <= max(samples["add"])
    assert bench.spread([2.0]) == (2.0, 2.0)
    assert bench.thread_scaling(np.add, (x, x), seconds=0.05) > 0


@pytest.mark.parametrize("peer", ["jax_workloads", "numba_workloads"])
def test_peer_versions_compute_what_the_numpy_versions_do(peer):
    workloads = getattr(peer_workloads, peer)()
    if workloads is None:
        pytest.skip(f"{peer.split('_')[0]} is not installed (the `peers` extra)")
    for name, (numpy_fn, _, make_inputs) in WORKLOADS.items():
        fn, convert = workloads[name.split()[0]]
        args = make_inputs()
        assert bench.same(numpy_fn(*args), fn(*convert(args)), rtol=1e-4, atol=1e-5), name


def test_cold_first_calls_run_in_a_fresh_process_with_an_empty_cache():
    first, native_from = bench.cold_first_calls("W6 collatz")
    assert 0 < first < native_from < 60
