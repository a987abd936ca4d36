"""Per-retrace time and memory for N distinct shapes through one ag.function.

    python benchmarks/retrace_cost.py 2000 [empty]

Prints the median time of the first and the last 100 retraces (they should match: a new
signature is found without scanning earlier traces), RSS before and after, the cost of
re-calling recent signatures, and whether plan sources leave linecache once the function
is deleted. `empty` uses shapes (0, i), so the array work does not hide the trace cost.
With the default max_traces (256), older traces are evicted along the way.
"""
import gc, linecache, statistics, sys, time, warnings
import numpy as np
import autograph_lite as ag

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

n = int(sys.argv[1])
warnings.simplefilter("ignore")
@ag.function
def f(x):
    return ag.tanh(x) * 2.0 + 1.0
f(np.ones((0, 1)) if len(sys.argv) > 2 else np.ones(1)); gc.collect()
before = rss_mb()
times = []
for i in range(2, n + 2):
    x = np.ones((0, i)) if len(sys.argv) > 2 else np.ones(i)
    t0 = time.perf_counter(); f(x); times.append(time.perf_counter() - t0)
after = rss_mb()
first, last = statistics.median(times[:100]) * 1e3, statistics.median(times[-100:]) * 1e3
print(f"n={n}: traces={f.trace_count} per-retrace median first100={first:.2f} ms last100={last:.2f} ms "
      f"ratio={last/first:.2f}; RSS before={before:.0f} MB after={after:.0f} MB (+{after-before:.0f})")
# lookups of existing signatures
t0 = time.perf_counter()
for i in range(n - 200, n + 2): f(np.ones((0, i)) if len(sys.argv) > 2 else np.ones(i))
print(f"  re-call of 202 recent shapes: {(time.perf_counter()-t0)/202*1e6:.1f} us each; trace_count={f.trace_count}")
plans = sum(1 for k in linecache.cache if k.startswith("<autograph_lite plan"))
del f, x; gc.collect()
print(f"  after del f: RSS={rss_mb():.0f} MB, plan sources in linecache {plans} -> "
      f"{sum(1 for k in linecache.cache if k.startswith('<autograph_lite plan'))}")
