"""Timing helpers shared by the demo and the benchmarks: medians after warm-up."""
import statistics
import time


def median_seconds(fn, args, repeats=7, min_time=0.05):
    """Median over `repeats` rounds of the per-call time, each round at least `min_time` long."""
    fn(*args)  # warm-up
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        if time.perf_counter() - start >= min_time / 5 or calls > 1 << 20:
            break
        calls *= 2
    calls = max(1, int(calls * min_time / max(time.perf_counter() - start, 1e-9) / 5) or 1)
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        rounds.append((time.perf_counter() - start) / calls)
    return statistics.median(rounds)


def first_call_seconds(make, args):
    """Time of the first call of a freshly made compiled function (trace + lower + run)."""
    fn = make()
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def fmt_time(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"
