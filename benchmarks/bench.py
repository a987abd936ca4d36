"""Time each workload as handwritten numpy, ag eager and ag compiled, interleaved, in one run.

    python benchmarks/bench.py [--repeats 15]

Prints median per-call times, ratios to numpy and the first-call time; exits non-zero if a
compiled result differs from the eager one.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import autograph_lite as ag  # noqa: E402
from benchmarks.workloads import WORKLOADS  # noqa: E402
from examples.timing import first_call_seconds, fmt_time  # noqa: E402


def calls_per_round(fn, args, target=0.02):
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        if time.perf_counter() - start >= target:
            return calls
        calls *= 2


def interleaved_medians(ways, args, repeats):
    """Median per-call time of each way, rounds interleaved so drift hits all alike."""
    sizes = {name: calls_per_round(fn, args) for name, fn in ways.items()}
    samples = {name: [] for name in ways}
    for _ in range(repeats):
        for name, fn in ways.items():
            start = time.perf_counter()
            for _ in range(sizes[name]):
                fn(*args)
            samples[name].append((time.perf_counter() - start) / sizes[name])
    return {name: statistics.median(s) for name, s in samples.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    opts = parser.parse_args()
    failed = False
    print(f"{'workload':<16} {'numpy':>10} {'ag eager':>10} {'compiled':>10} {'eager/np':>9} "
          f"{'compiled/np':>12} {'eager/compiled':>15} {'first call':>11}")
    for name, (numpy_fn, ag_fn, make_inputs) in WORKLOADS.items():
        args = make_inputs()
        compiled = ag.function(ag_fn)
        eager_out, compiled_out, numpy_out = ag_fn(*args), compiled(*args), numpy_fn(*args)
        for e, c in zip(ag.nest.flatten(eager_out), ag.nest.flatten(compiled_out)):
            if np.asarray(e).dtype != np.asarray(c).dtype or not np.allclose(e, c, rtol=1e-5, atol=1e-6):
                print(f"MISMATCH in {name}: compiled result differs from eager", file=sys.stderr)
                failed = True
        for e, n in zip(ag.nest.flatten(eager_out), ag.nest.flatten(numpy_out)):
            if not np.allclose(e, n, rtol=1e-4, atol=1e-5):
                print(f"MISMATCH in {name}: the numpy reference differs from the ag version", file=sys.stderr)
                failed = True
        t = interleaved_medians({"numpy": numpy_fn, "eager": ag_fn, "compiled": compiled}, args, opts.repeats)
        first = first_call_seconds(lambda: ag.function(ag_fn), args)
        print(f"{name:<16} {fmt_time(t['numpy']):>10} {fmt_time(t['eager']):>10} {fmt_time(t['compiled']):>10} "
              f"{t['eager'] / t['numpy']:>9.2f} {t['compiled'] / t['numpy']:>12.2f} "
              f"{t['eager'] / t['compiled']:>14.2f}x {fmt_time(first):>11}")
    print(f"\nmedians of {opts.repeats} interleaved rounds; ratios < 1 mean faster than numpy")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
