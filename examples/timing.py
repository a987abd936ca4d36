"""Timing helpers for the demo: medians with their spread after warm-up, first calls."""
import statistics
import time

from autograph_lite.runtime.native import compiler
from autograph_lite.runtime.native.functions import TIER_UP_AFTER


def warm_up(fn, args):
    """Call `fn` until its native code is built and in use (it is built in the background)."""
    for _ in range(TIER_UP_AFTER):
        fn(*args)
    compiler.wait_for_builds()
    fn(*args)


def median_seconds(fn, args, repeats=7, min_time=0.05):
    """(median, (first quartile, third quartile)) over `repeats` rounds of the per-call time,
    each round at least `min_time` long."""
    warm_up(fn, args)
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
    q1, _, q3 = statistics.quantiles(rounds, n=4)
    return statistics.median(rounds), (q1, q3)


def first_call_seconds(make, args):
    """(the first call of a freshly made compiled function: trace + lower + run; the time from
    its start until native code runs: the calls up to the tier-up and the compile they start,
    which runs in the background and is quick when the kernel cache holds it)."""
    fn = make()
    start = time.perf_counter()
    fn(*args)
    first = time.perf_counter() - start
    warm_up(fn, args)
    return first, time.perf_counter() - start


def fmt_time(seconds):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"
