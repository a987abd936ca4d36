"""benchmarks/bench.py's measuring helpers and benchmarks/stats.py's quartiles (the timings
themselves are not asserted: machines are noisy)."""
import statistics

import numpy as np
import pytest

from benchmarks import bench, peer_workloads
from benchmarks.stats import quartiles
from benchmarks.workloads import WORKLOADS
from helpers import cpu_only


def test_interleaved_samples_spread_and_thread_scaling():
    x = np.ones(8)
    samples = bench.interleaved_samples({"add": np.add, "mul": np.multiply}, (x, x), repeats=5)
    assert set(samples) == {"add", "mul"} and all(len(s) == 5 and min(s) > 0 for s in samples.values())
    low, median, high = quartiles(samples["add"])
    assert min(samples["add"]) <= low <= median <= high <= max(samples["add"])
    assert median == statistics.median(samples["add"]) and quartiles([2.0]) == (2.0, 2.0, 2.0)
    assert list(quartiles([1.0, 2.0, 3.0, 4.0, 5.0])) == statistics.quantiles([1.0, 2.0, 3.0, 4.0, 5.0], n=4)
    assert bench.thread_scaling(np.add, (x, x), seconds=0.05) > 0
    round_trip = bench.core_round_trip()  # None without a second CPU or a C compiler
    assert round_trip is None or 1 < round_trip < 1e6


@pytest.mark.parametrize("peer", ["jax_workloads", "numba_workloads"])
@cpu_only("the peers (jax.jit, numba) take numpy arrays")
def test_peer_versions_compute_what_the_numpy_versions_do(peer):
    workloads = getattr(peer_workloads, peer)()
    if workloads is None:
        pytest.skip(f"{peer.split('_')[0]} is not installed (the `peers` extra)")
    for name, (numpy_fn, _, make_inputs) in WORKLOADS.items():
        if name.split()[0] not in workloads:  # numba without scipy: no `@` on arrays; jax: no W7, W8
            continue
        fn, convert = workloads[name.split()[0]]
        args = make_inputs()
        assert bench.same(numpy_fn(*args), fn(*convert(args)), rtol=1e-4, atol=1e-5), name


def test_cold_first_calls_run_in_a_fresh_process_with_an_empty_cache():
    first, native_from = bench.cold_first_calls("W6 collatz", runs=1)
    assert 0 < first < native_from < 60


def test_the_gpu_benchmark_runs_on_the_standin(tmp_path, capsys):
    """benchmarks/gpu.py, as scripts/gpu_check.sh runs it on a GPU, here on the stand-in device at
    small sizes: its results agree and it writes its JSON and its one summary line."""
    import json

    import standin
    from benchmarks import gpu
    standin.device()
    cases = [(name, fn, lambda make=make: make()) for name, fn, make in gpu.CASES if "64M" not in name
             and "GPU sizes" not in name and "4M" not in name]
    cases.append(("W4 elementwise_chain 64M", gpu.elementwise_chain, lambda: gpu.elementwise_inputs(n=1000)))
    assert gpu.run(standin, "standin", cases, 2, str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("GPU bench: W4 64M ")
    saved = json.loads((tmp_path / "results-gpu.json").read_text())
    assert [r["workload"] for r in saved["workloads"]] == [name for name, _, _ in cases]
    assert "cupy.fuse" in saved["workloads"][-1]["seconds"]


@cpu_only("a CPU-timing script")
def test_the_first_hour_programs_run_and_agree_with_eager(capsys):
    """benchmarks/first_hour.py: each program compiled equals eager (it asserts so) and each
    measure is printed; the figures themselves are for the reader."""
    from benchmarks import first_hour
    first_hour.main(["--repeats", "2"])
    out = capsys.readouterr().out
    for name in ("mandelbrot", "rk4", "value_and_grad", "newton_sqrt", "bisection"):
        assert name in out
    assert "early_return_150: compiles, equals eager" in out
