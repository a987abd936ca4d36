"""Time NPBench's numpy kernels: numpy, ag compiled, and the peers on the same kernels.

    python benchmarks/bench.py --npbench PATH [--preset M] [--kernels gemm,crc16] [--repeats 5]
    python benchmarks/npbench_speed.py PATH ...            (the same)

PATH is a checkout of NPBench (https://github.com/spcl/npbench; never vendored here). For each
kernel, in its own process (one BLAS thread; a crash or hang stops only that kernel), with the
preset's inputs built as `benchmarks/npbench.py` builds them:

- the ways: `numpy` (the `<name>_numpy.py` kernel, eagerly), `ag` (`ag.function` of that same
  function), and, when installed, `numba` (`numba.njit` of that same unchanged source, as a user
  would try it), `numba_npbench` (NPBench's own `<name>_numba_n.py`, rewritten for numba) and
  `jax` (NPBench's own `<name>_jax.py` under its own `jax.jit`);
- each way is called once and checked against the eager call (the result, else the arguments'
  final contents, as `npbench.py` compares them: a way that differs or fails is not timed), warmed
  up, then timed in interleaved rounds, each call on a fresh copy of the inputs (kernels update
  their arguments; the copy is not timed);
- per way: the median per call and its interquartile range, and the ratio to numpy.

Prints one table and the geometric mean of each way's ratio to numpy over the kernels every
way in that mean ran; writes the records to `results.json` (key `npbench`) in `--out`.
"""
import argparse
import copy
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import npbench  # noqa: E402
from benchmarks.stats import quartiles  # noqa: E402

WAYS = ("numpy", "ag", "numba", "numba_npbench", "jax")
WARMUP = 2


def _ways(root, info, kernel):
    """{way: callable} of the ways available here (a missing peer is left out)."""
    import autograph_lite as ag
    ways = {"numpy": kernel, "ag": ag.function(kernel)}
    try:
        import numba
    except ImportError:
        numba = None
    if numba is not None:
        ways["numba"] = numba.njit(kernel)
        ways["numba_npbench"] = _peer(root, info, "_numba_n")
    try:
        import jax  # noqa: F401
        ways["jax"] = _peer(root, info, "_jax")
    except ImportError:
        pass
    return {name: fn for name, fn in ways.items() if fn is not None}


def _peer(root, info, suffix):
    try:
        return getattr(npbench._module(root, info, suffix), info["func_name"])
    except (ImportError, AttributeError):
        return None


def _host(value):
    """A peer's result as numpy values (jax arrays to ndarrays), structure kept."""
    if isinstance(value, (tuple, list)):
        return type(value)(_host(v) for v in value)
    if value is None or isinstance(value, (np.ndarray, np.generic, int, float, bool, complex)):
        return value
    return np.asarray(value)


def _agrees(info, eager, eager_args, result, args, peer):
    """None if a way's call gives eager's answer, else how it differs. ag is held to npbench.py's
    contract (result and arguments, dtypes exactly); a peer only to the values NPBench checks (its
    result, or the output arguments when it returns nothing), as NPBench's own harness does."""
    if not peer:
        return npbench.call_difference(eager, eager_args, result, args, info["input_args"])
    if result is not None and eager is not None:
        e, r = _host(eager), _host(result)
        if isinstance(e, tuple) != isinstance(r, tuple):
            return "result structure"
        pairs = zip(e, r) if isinstance(e, tuple) else [(e, r)]
    else:
        named = dict(zip(info["input_args"], args))
        eager_named = dict(zip(info["input_args"], eager_args))
        pairs = [(eager_named[n], named[n]) for n in info.get("output_args", [])]
    for a, b in pairs:
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or not np.allclose(a.astype(np.result_type(a, b)), b, rtol=1e-5, atol=1e-7,
                                                 equal_nan=True):
            return "values"
    return None


def time_kernel(root, name, preset, repeats):
    """The record of one kernel: per way its status and, when it agrees with eager, its timings."""
    info = npbench.bench_info(root, name)
    record = {"kernel": name, "ways": {}}
    try:
        data = npbench.inputs(root, info, preset)
        kernel = getattr(npbench._module(root, info, "_numpy"), info["func_name"])
        eager_args = copy.deepcopy(data)
        eager = kernel(*eager_args)
    except Exception as e:  # noqa: BLE001 - NPBench's own code failed: nothing to compare with
        record["skipped"] = f"{type(e).__name__}: {e}"[:200]
        return record
    timed = {}
    for way, fn in _ways(root, info, kernel).items():
        try:
            args = copy.deepcopy(data)
            result = fn(*args)
            difference = None if way == "numpy" else _agrees(info, eager, eager_args, result, args, way != "ag")
        except Exception as e:  # noqa: BLE001 - a way that cannot run the kernel is reported, not timed
            record["ways"][way] = {"status": "failed", "detail": f"{type(e).__name__}: {e}"[:160]}
            continue
        if difference:
            record["ways"][way] = {"status": "differs", "detail": difference[:160]}
            continue
        record["ways"][way] = {"status": "ok"}
        timed[way] = fn
    for fn in timed.values():
        for _ in range(WARMUP):
            fn(*copy.deepcopy(data))
    samples = {way: [] for way in timed}
    for _ in range(repeats):  # rounds interleaved: machine drift hits every way alike
        for way, fn in timed.items():
            args = copy.deepcopy(data)
            start = time.perf_counter()
            out = fn(*args)
            if way == "jax" and hasattr(out, "block_until_ready"):
                out.block_until_ready()
            samples[way].append(time.perf_counter() - start)
    for way, times in samples.items():
        low, median, high = quartiles(times)
        record["ways"][way].update(median_s=median, q1_s=low, q3_s=high)
    return record


def run(root, name, preset, repeats, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        command = [sys.executable, os.path.abspath(__file__), root, "--child", name, "--preset", preset,
                   "--repeats", str(repeats), "--out", out]
        env = {**os.environ, **{k: v for k, v in npbench.SINGLE_THREADED.items() if k not in os.environ}}
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"kernel": name, "skipped": f"over {timeout:g} s", "ways": {}}
        if os.path.exists(out):
            with open(out) as f:
                return json.load(f)
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-1:])
        return {"kernel": name, "skipped": f"process exited {done.returncode}: {tail}"[:200], "ways": {}}


def ratio(record, way):
    ways = record["ways"]
    if "median_s" not in ways.get(way, {}) or "median_s" not in ways.get("numpy", {}):
        return None
    return ways[way]["median_s"] / ways["numpy"]["median_s"]


def geometric_means(records, ways):
    """{way: (geometric mean of its ratio to numpy, kernels)} over the kernels every way in `ways` ran."""
    common = [r for r in records if all(ratio(r, w) is not None for w in ways)]
    return {w: (math.exp(statistics.fmean(math.log(ratio(r, w)) for r in common)) if common else None,
                len(common)) for w in ways}


def table(records):
    present = [w for w in WAYS if any(w in r["ways"] for r in records)]
    lines = [f"{'kernel':<26} {'numpy ms':>10} " + " ".join(f"{w + ' /np':>16}" for w in present[1:])]
    for r in records:
        if "skipped" in r:
            lines.append(f"{r['kernel']:<26} skipped: {r['skipped']}")
            continue
        numpy_ms = r["ways"].get("numpy", {}).get("median_s")
        cells = []
        for w in present[1:]:
            way = r["ways"].get(w)
            if way is None:
                cells.append(f"{'-':>16}")
            elif "median_s" in way:
                spread = (way["q3_s"] - way["q1_s"]) / r["ways"]["numpy"]["median_s"]
                cells.append(f"{ratio(r, w):>9.3f} ±{spread:<5.3f}")
            else:
                cells.append(f"{way['status']:>16}")
        lines.append(f"{r['kernel']:<26} {numpy_ms * 1e3 if numpy_ms else float('nan'):>10.2f} " + " ".join(cells))
    for w in present[1:]:
        means = geometric_means(records, ["ag", w] if w != "ag" else ["ag"])
        mean, n = means[w]
        if mean is not None:
            against = f" (ag on the same {n}: {means['ag'][0]:.3f})" if w != "ag" else ""
            lines.append(f"geometric mean of {w}/numpy over {n} kernels: {mean:.3f}{against}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="a checkout of github.com/spcl/npbench")
    parser.add_argument("--kernels", default="", help="comma-separated bench_info names, e.g. gemm,crc16")
    parser.add_argument("--preset", default="M", help="NPBench's preset: S, M, L or paper")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600, help="seconds per kernel, all ways")
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if not opts.path or not os.path.isdir(os.path.join(opts.path, "bench_info")):
        print(npbench.GET_NPBENCH.replace("npbench.py", "npbench_speed.py"), file=sys.stderr)
        return 2
    root = os.path.abspath(opts.path)
    if opts.child:
        sys.path[:] = [REPO] + [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]
        with open(opts.out, "w") as f:
            json.dump(time_kernel(root, opts.child, opts.preset, opts.repeats), f)
        return 0
    available = npbench.kernels(root)
    names = [k.strip() for k in opts.kernels.split(",") if k.strip()] or list(available)
    unknown = [n for n in names if n not in available]
    if unknown:
        print(f"no numpy kernel named {', '.join(unknown)} in {root}/bench_info", file=sys.stderr)
        return 2
    records = []
    try:
        for name in names:
            records.append(run(root, name, opts.preset, opts.repeats, opts.timeout))
            print(f"  {name}: " + ", ".join(f"{w} {v['status']}" for w, v in records[-1]["ways"].items()),
                  file=sys.stderr, flush=True)
            write(opts, records)  # after each kernel: a long run stopped keeps what it measured
    except KeyboardInterrupt:
        print(f"stopped (Ctrl-C) after {len(records)} of {len(names)} kernels", file=sys.stderr)
    print(table(records))
    if records:
        print(f"wrote {write(opts, records)} (key 'npbench')")
    return 0


def write(opts, records):
    """Put the records so far under the key 'npbench' of `results.json` in `--out`; its path."""
    os.makedirs(opts.out, exist_ok=True)
    path = os.path.join(opts.out, "results.json")
    results = {}
    if os.path.exists(path):
        with open(path) as f:
            results = json.load(f)
    results["npbench"] = {"date": datetime.date.today().isoformat(), "preset": opts.preset,
                          "repeats": opts.repeats, "numpy": np.__version__, "kernels": records,
                          "geometric_means": {w: geometric_means(records, ["ag", w]) for w in WAYS[2:]}}
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
    os.replace(path + ".tmp", path)
    return path


if __name__ == "__main__":
    sys.exit(main())
