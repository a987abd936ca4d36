"""benchmarks/bench.py's measuring helpers (the timings themselves are not asserted: machines are noisy)."""
import numpy as np

from benchmarks import bench


def test_interleaved_samples_spread_and_thread_scaling():
    x = np.ones(8)
    samples = bench.interleaved_samples({"add": np.add, "mul": np.multiply}, (x, x), repeats=5)
    assert set(samples) == {"add", "mul"} and all(len(s) == 5 and min(s) > 0 for s in samples.values())
    low, high = bench.spread(samples["add"])
    assert min(samples["add"]) <= low <= high <= max(samples["add"])
    assert bench.spread([2.0]) == (2.0, 2.0)
    assert bench.thread_scaling(np.add, (x, x), seconds=0.05) > 0
