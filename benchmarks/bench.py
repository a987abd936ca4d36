"""Time the workloads of benchmarks/workloads.py (W1-W8): handwritten numpy, ag eager, ag compiled,
and jax.jit and numba when installed (benchmarks/peer_workloads.py).

The workloads and how a run is reported: docs/workloads.md.

    python benchmarks/bench.py [--repeats 15] [--only W3,W4] [--out benchmarks/results]
    python benchmarks/bench.py --npbench PATH [--preset M] [--kernels gemm,crc16] [--timeout 600]   (benchmarks/npbench_speed.py)

One process, rounds interleaved so machine noise hits every way alike; medians per
call with their interquartile range, ratios to numpy and of ag compiled to each peer, the
first call split into convert / trace / optimize / lower / run, the first call with an
empty kernel cache (a fresh process) beside each peer's first call and the time until ag's
native code runs there (the tier-up and its background compile), the overhead of a compiled identity function and two-thread scaling. Writes
results.json and (with matplotlib, the `bench` extra) results.png. Exits non-zero if a
compiled or peer result differs from the eager one.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import autograph_lite as ag  # noqa: E402
from autograph_lite import loader, operators  # noqa: E402
from autograph_lite.runtime.native import compiler  # noqa: E402
from benchmarks.peer_workloads import jax_workloads, numba_workloads  # noqa: E402
from benchmarks.stats import quartiles  # noqa: E402
from benchmarks.workloads import WORKLOADS  # noqa: E402
from examples.timing import fmt_time, warm_up  # noqa: E402


WARMUP_CALLS = 5  # more than native.scalar_loop.TIER_UP_AFTER
# seconds of rest before a first call is timed, ours and the peers': a first call is what a
# user meets starting a program, and right after seconds of both cores busy a shared VM runs
# slower for a moment (W4's empty-cache first call measured 27 ms at rest, 50-80 ms right after)
SETTLE = 1.0


def calls_per_round(fn, args, target=0.02):
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        if time.perf_counter() - start >= target:
            return calls
        calls *= 2


def interleaved_samples(ways, args, repeats):
    """Per-call times of each way, one per round, rounds interleaved so drift hits all alike."""
    sizes = {name: calls_per_round(fn, args) for name, fn in ways.items()}
    samples = {name: [] for name in ways}
    for _ in range(repeats):
        for name, fn in ways.items():
            start = time.perf_counter()
            for _ in range(sizes[name]):
                fn(*args)
            samples[name].append((time.perf_counter() - start) / sizes[name])
    return samples


def interleaved_medians(ways, args, repeats):
    """Median per-call time of each way (interleaved rounds)."""
    return {name: statistics.median(s) for name, s in interleaved_samples(ways, args, repeats).items()}


def thread_scaling(fn, args, seconds=1.0):
    """Calls per second of `fn(*args)` from two threads over one thread (compiled native code
    releases the GIL while it runs)."""
    import threading
    rates = {}
    for threads in (1, 2):
        counts, stop = [0] * threads, time.perf_counter() + seconds

        def worker(i):
            n = 0
            while time.perf_counter() < stop:
                fn(*args)
                n += 1
            counts[i] = n
        workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        rates[threads] = sum(counts) / seconds
    return rates[2] / rates[1]


CORE_ROUND_TRIP = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <time.h>
static volatile long turn __attribute__((aligned(64)));
static long rounds;
static int pin(int cpu) {
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
#else
    return 0;
#endif
}
static void* answer(void* unused) {
    pin(1);
    for (long i = 0; i < rounds; i++) {
        while (turn != 2 * i + 1) {}
        turn = 2 * i + 2;
    }
    return 0;
}
double round_trip_ns(long n) {  /* a cache line passed from CPU 0 to CPU 1 and back, n times */
    pthread_t other;
    struct timespec t0, t1;
    rounds = n;
    turn = 0;
    if (pthread_create(&other, 0, answer, 0) != 0) return -1;
    int pinned = pin(0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        turn = 2 * i + 1;
        while (turn != 2 * i + 2) {}
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(other, 0);
    return pinned != 0 ? -1 : ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
}
"""


def core_round_trip():
    """Nanoseconds for a cache line to go from CPU 0 to CPU 1 and back (None without a C compiler
    or a second CPU), in a thread of its own (it pins itself). Two threads calling compiled code
    hand the GIL and CPython's shared objects between the cores at every call, so their scaling
    follows this figure: a virtual machine's host may place its two vCPUs far apart for a while."""
    import ctypes
    import threading
    from autograph_lite.runtime.native import compiler
    if (os.cpu_count() or 1) < 2:
        return None
    fn = compiler.load(CORE_ROUND_TRIP, "round_trip_ns")
    if fn is None:
        return None
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_long]
    found = []
    worker = threading.Thread(target=lambda: found.append(fn(200000)))
    worker.start()
    worker.join()
    return found[0] if found and found[0] > 0 else None


def first_call_split(fn, args):
    """Seconds for each stage of a first call, on a function never converted before."""
    loader._cache.pop(fn, None)
    f = ag.function(fn)
    t0 = time.perf_counter()
    operators.call(fn)                     # convert (cached for the trace below)
    t1 = time.perf_counter()
    concrete = f.get_concrete_function(*args)
    t2 = time.perf_counter()
    concrete.optimized_graph
    t3 = time.perf_counter()
    concrete.plan
    t4 = time.perf_counter()
    f(*args)
    t5 = time.perf_counter()
    return {"convert": t1 - t0, "trace": t2 - t1, "optimize": t3 - t2, "lower": t4 - t3,
            "run": t5 - t4, "total": t5 - t0}


COLD = """
import sys, time
sys.path.insert(0, {root!r})
from benchmarks.workloads import WORKLOADS
import autograph_lite as ag
from examples.timing import warm_up
_, fn, make_inputs = WORKLOADS[{name!r}]
args = make_inputs()
f = ag.function(fn)
start = time.perf_counter()
f(*args)
first = time.perf_counter() - start
warm_up(f, args)
print(first, time.perf_counter() - start)
"""


def cold_first_calls(name, runs=3):
    """(the first call, the time until native code runs), each the median of `runs` fresh
    processes with an empty kernel cache: the second is the calls up to the tier-up and the
    compile they start in the background, the entry module's included."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            done = subprocess.run([sys.executable, "-c", COLD.format(root=root, name=name)], capture_output=True,
                                  text=True, env=dict(os.environ, AG_CACHE_DIR=cache), timeout=600)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        found.append([float(v) for v in done.stdout.strip().splitlines()[-1].split()])
    return tuple(statistics.median(column) for column in zip(*found))


def load_peers():
    """({"jax.jit": make, "numba": make} for the peers installed, JAX's backend started; a line
    naming those missing)."""
    peers, missing = {}, []
    for label, make in (("jax.jit", jax_workloads), ("numba", numba_workloads)):
        if make() is None:
            missing.append(label)
        else:
            peers[label] = make
    if "jax.jit" in peers:
        import jax.numpy as jnp
        jnp.zeros(1).block_until_ready()
    note = f"not installed: {', '.join(missing)} (pip install \"autograph_lite[peers]\")" if missing else ""
    return peers, note


def identity_overhead(repeats):
    def identity(x):
        return x
    compiled = ag.function(identity)
    x = np.ones(3)
    t = interleaved_medians({"python": identity, "compiled": compiled}, (x,), repeats)
    return t["compiled"] - t["python"]


class _Settings:
    """16 Python floats a compiled function reads from an argument object: 16 guarded values."""
    def __init__(self):
        for k in range(16):
            setattr(self, f"a{k}", float(k))


def _read_settings(x, s):
    return x * (s.a0 + s.a1 + s.a2 + s.a3 + s.a4 + s.a5 + s.a6 + s.a7 +
                s.a8 + s.a9 + s.a10 + s.a11 + s.a12 + s.a13 + s.a14 + s.a15)


def guard_cost(repeats):
    """(seconds per guarded value, seconds a call of a function with 16 guards costs over the
    plain Python call): the check a compiled call makes of the outside state its trace read."""
    import timeit
    compiled, settings, x = ag.function(_read_settings), _Settings(), np.ones(3)
    compiled(x, settings)
    state = compiled.concrete_functions[0]._outside
    leaves, number = [x, settings], 20000
    per_read = statistics.median(timeit.repeat(lambda: state.read(leaves), number=number, repeat=max(repeats, 5)))
    empty = statistics.median(timeit.repeat(lambda: None, number=number, repeat=max(repeats, 5)))
    t = interleaved_medians({"python": _read_settings, "compiled": compiled}, (x, settings), repeats)
    return (per_read - empty) / number / len(state), t["compiled"] - t["python"]


def same(a, b, rtol=1e-5, atol=1e-6):
    a, b = ag.nest.flatten(a), ag.nest.flatten(b)
    return len(a) == len(b) and all(
        np.asarray(x).dtype == np.asarray(y).dtype and np.allclose(x, y, rtol=rtol, atol=atol) for x, y in zip(a, b))


def _tensorflow():
    """(TF_WORKLOADS, to_tensors, to_numpy) if TensorFlow is installed, else None."""
    try:
        from benchmarks import tf_workloads
    except ImportError:
        return None
    return tf_workloads


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--only", default="", help="comma-separated workload ids, e.g. W3,W4")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"),
                        help="gpu: W2, W4 and W5 on the GPU against cupy eager and cupy.fuse (benchmarks/gpu.py)")
    parser.add_argument("--npbench", metavar="PATH",
                        help="time NPBench's numpy kernels at PATH instead (benchmarks/npbench_speed.py)")
    parser.add_argument("--preset", default="M", help="with --npbench: NPBench's preset")
    parser.add_argument("--kernels", default="", help="with --npbench: comma-separated kernels")
    parser.add_argument("--timeout", type=float, default=600, help="with --npbench: seconds per kernel, all ways")
    opts = parser.parse_args()
    if opts.npbench:
        from benchmarks import npbench_speed
        repeats = [] if "--repeats" not in sys.argv else ["--repeats", str(opts.repeats)]
        return npbench_speed.main([opts.npbench, "--preset", opts.preset, "--kernels", opts.kernels,
                                   "--timeout", str(opts.timeout), "--out", opts.out, *repeats])
    if opts.device == "gpu":
        from benchmarks import gpu
        return gpu.main(opts.repeats, opts.out)
    wanted = [w.strip() for w in opts.only.split(",") if w.strip()]
    peers, missing = load_peers()
    failed, rows = False, []
    print(f"{'workload':<22} {'numpy':>9} {'ag eager':>9} {'compiled':>9} {'eager/np':>9} "
          f"{'compiled/np (IQR)':>20} {'first call':>11}  (convert/trace/optimize/lower/run)")
    for name, (numpy_fn, ag_fn, make_inputs) in WORKLOADS.items():
        if wanted and name.split()[0].rstrip("abc") not in wanted:  # W2 runs its variant W2b too
            continue
        args = make_inputs()
        compiled = ag.function(ag_fn)
        eager_out, compiled_out, numpy_out = ag_fn(*args), compiled(*args), numpy_fn(*args)
        # warm-up: native kernels and loops tier in after a few calls (built in the background:
        # waited for here); check those results too
        warm_outs = [compiled(*args) for _ in range(WARMUP_CALLS)]
        compiler.wait_for_builds()
        warm_outs += [compiled(*args) for _ in range(2)]
        if not all(same(eager_out, out) for out in [compiled_out, *warm_outs]):
            print(f"MISMATCH in {name}: compiled result differs from eager", file=sys.stderr)
            failed = True
        if not all(np.allclose(e, n, rtol=1e-4, atol=1e-5) for e, n in
                   zip(ag.nest.flatten(eager_out), ag.nest.flatten(numpy_out))):
            print(f"MISMATCH in {name}: the numpy reference differs from the ag version", file=sys.stderr)
            failed = True
        ways = {"numpy": numpy_fn, "eager": ag_fn, "compiled": compiled}
        peer_first = {}
        for label, make in peers.items():  # a fresh jit / dispatcher: its first call compiles
            if name.split()[0] not in make():
                continue
            peer_fn, convert = make()[name.split()[0]]
            peer_args = convert(args)
            time.sleep(SETTLE)
            start = time.perf_counter()
            try:
                peer_out = peer_fn(*peer_args)
            except Exception as e:  # noqa: BLE001 - a peer refusing the workload is its result, not ours
                print(f"{label} cannot run {name}: {type(e).__name__}: {str(e).strip().splitlines()[0]}",
                      file=sys.stderr)
                continue
            peer_first[label] = time.perf_counter() - start
            if not same(eager_out, peer_out, rtol=1e-4, atol=1e-5):
                print(f"MISMATCH in {name}: the {label} version differs from the ag version", file=sys.stderr)
                failed = True
            ways[label] = (lambda f, a: lambda *_: f(*a))(peer_fn, peer_args)
        samples = interleaved_samples(ways, args, opts.repeats)
        t = {k: statistics.median(v) for k, v in samples.items()}
        iqr = {k: quartiles(v)[::2] for k, v in samples.items()}  # (p25, p75)
        time.sleep(SETTLE)  # the peers' thread pools may still be spinning from the rounds above
        split = first_call_split(ag_fn, args)
        time.sleep(SETTLE)
        cold_first, native_from = cold_first_calls(name)
        low, high = iqr["compiled"]
        rows.append({"workload": name, "seconds": t, "iqr_seconds": iqr, "first_call": split,
                     "first_call_empty_cache": cold_first, "native_from_empty_cache": native_from,
                     "peer_first_call": peer_first,
                     "ratio_to_numpy": {k: v / t["numpy"] for k, v in t.items()},
                     "compiled_ratio_iqr": [low / t["numpy"], high / t["numpy"]],
                     "compiled_over_peer": {label: t["compiled"] / t[label] for label in peers if label in t}})
        stages = "/".join(f"{split[k] * 1e3:.1f}" for k in ("convert", "trace", "optimize", "lower", "run"))
        print(f"{name:<22} {fmt_time(t['numpy']):>9} {fmt_time(t['eager']):>9} {fmt_time(t['compiled']):>9} "
              f"{t['eager'] / t['numpy']:>9.2f} {t['compiled'] / t['numpy']:>6.3f} ({low / t['numpy']:.3f}-"
              f"{high / t['numpy']:.3f}) {fmt_time(split['total']):>11}  ({stages} ms)")
    if peers:
        print(f"\n{'workload':<22} {'peer':<8} {'peer/np (IQR)':>20} {'compiled/peer':>14} "
              f"{'first call':>11} {'ag first, empty cache':>22} {'ag native from':>15}")
        for row in rows:
            t, iqr = row["seconds"], row["iqr_seconds"]
            for label in (label for label in peers if label in t):
                low, high = (q / t["numpy"] for q in iqr[label])
                print(f"{row['workload']:<22} {label:<8} {t[label] / t['numpy']:>7.3f} ({low:.3f}-{high:.3f}) "
                      f"{row['compiled_over_peer'][label]:>14.2f} {fmt_time(row['peer_first_call'][label]):>11} "
                      f"{fmt_time(row['first_call_empty_cache']):>22} {fmt_time(row['native_from_empty_cache']):>15}")
    if missing:
        print(missing)
    overhead = identity_overhead(opts.repeats)
    print(f"\ncompiled identity function: {overhead * 1e6:.2f} µs over the plain Python call")
    per_guard, guarded_overhead = guard_cost(opts.repeats)
    print(f"outside-state guards: {per_guard * 1e6:.3f} µs per guarded value; a function reading 16 Python "
          f"values from an object: {guarded_overhead * 1e6:.2f} µs over its plain Python call")
    scaling = {}
    for name in WORKLOADS:
        if name.split()[0] in ("W1", "W6") and (not wanted or name.split()[0] in wanted):
            numpy_fn, ag_fn, make_inputs = WORKLOADS[name]
            fn, fn_args = ag.function(ag_fn), make_inputs()
            warm_up(fn, fn_args)
            before = core_round_trip()
            runs = sorted(thread_scaling(fn, fn_args) for _ in range(3))  # a busy second core shows in one
            after = core_round_trip()
            scaling[name] = {"scaling": runs[1], "core_round_trip_ns": [before, after]}
            trips = "n/a" if before is None or after is None else f"{before:.0f}/{after:.0f} ns"
            print(f"{name}: two threads make {runs[1]:.2f}x the calls per second of one "
                  f"(median of 3 one-second runs; {runs[0]:.2f}-{runs[2]:.2f}; core-to-core round trip "
                  f"before/after: {trips})")
    if scaling:
        print("  (two threads hand the GIL and CPython's shared objects between the cores at every call: "
              "near 100 ns a round trip they scale; at 300+ ns, when a VM's host has put its vCPUs far "
              "apart, the Python part of a call runs ~3x slower and two threads ~1x)")
    print(f"medians of {opts.repeats} interleaved rounds; ratios < 1 mean faster than numpy")
    failed |= _compare_with_tensorflow(rows, opts.repeats)
    os.makedirs(opts.out, exist_ok=True)
    with open(os.path.join(opts.out, "results.json"), "w") as f:
        json.dump({"workloads": rows, "identity_overhead_seconds": overhead, "two_thread_scaling": scaling,
                   "guard_seconds_per_value": per_guard, "guarded_call_overhead_seconds": guarded_overhead,
                   "repeats": opts.repeats}, f, indent=2)
    _chart(rows, os.path.join(opts.out, "results.png"))
    return 1 if failed else 0


def _compare_with_tensorflow(rows, repeats):
    """Second phase, TensorFlow loaded only now (its threads would disturb the timings above):
    tf.function against numpy in interleaved rounds. Returns True on a result mismatch."""
    tf = _tensorflow()
    if tf is None:
        print("tf.function: TensorFlow is not installed (pip install tensorflow-cpu to compare)")
        return False
    failed = False
    print(f"\n{'workload':<22} {'numpy':>9} {'tf.function':>12} {'tf/np':>7} {'compiled/np':>12}  (TensorFlow loaded)")
    for row in rows:
        name = row["workload"]
        numpy_fn, ag_fn, make_inputs = WORKLOADS[name]
        if name.split()[0] not in tf.TF_WORKLOADS:
            continue
        args = make_inputs()
        tf_fn, tf_args = tf.TF_WORKLOADS[name.split()[0]], tf.to_tensors(args)
        if not all(np.allclose(e, t, rtol=1e-4, atol=1e-5) for e, t in
                   zip(ag.nest.flatten(ag_fn(*args)), ag.nest.flatten(tf.to_numpy(tf_fn(*tf_args))))):
            print(f"MISMATCH in {name}: the TensorFlow version differs from the ag version", file=sys.stderr)
            failed = True
        t = interleaved_medians({"numpy": numpy_fn, "tf.function": lambda *_: tf_fn(*tf_args)}, args, repeats)
        row["tf_seconds"] = t
        row["ratio_to_numpy"]["tf.function"] = t["tf.function"] / t["numpy"]
        print(f"{name:<22} {fmt_time(t['numpy']):>9} {fmt_time(t['tf.function']):>12} "
              f"{t['tf.function'] / t['numpy']:>7.2f} {row['ratio_to_numpy']['compiled']:>12.2f}")
    slower = [r["workload"] for r in rows if r["ratio_to_numpy"]["compiled"] >= r["ratio_to_numpy"]["tf.function"]]
    print("ag compiled is faster than tf.function (ratios to numpy) on " +
          ("every workload" if not slower else f"all but {', '.join(slower)}"))
    return failed


def _chart(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print('no chart: matplotlib is missing (pip install "autograph_lite[bench]")')
        return
    ways = [w for w in ("numpy", "eager", "compiled", "jax.jit", "numba", "tf.function")
            if w in rows[0]["ratio_to_numpy"]]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(ways)
    for i, way in enumerate(ways):
        ax.bar([r + i * width for r in range(len(rows))], [row["ratio_to_numpy"].get(way, np.nan) for row in rows],
               width, label=way)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks([r + width * (len(ways) - 1) / 2 for r in range(len(rows))], [row["workload"] for row in rows], rotation=15)
    ax.set_ylabel("time relative to numpy (lower is better)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"chart: {path}")


if __name__ == "__main__":
    sys.exit(main())
