"""Run NPBench's numpy kernels eagerly and through `ag.function`, and say which compile to the same result.

    python benchmarks/npbench.py PATH [--kernels adi,gemm] [--timeout 120] [--jobs 1] [--out DIR] [--markdown]

PATH is a checkout of NPBench (https://github.com/spcl/npbench; never vendored here). For each
kernel in PATH/bench_info/*.json that has a `<module>_numpy.py`, in its own process (a crash, a
hang or a runaway allocation stops only that kernel), with the `S` preset:

1. build the inputs as NPBench's harness does (`npbench/infrastructure/benchmark.py`: the preset's
   `parameters`, then `init.output_args = init.func_name(*init.input_args)` from the kernel's
   `<module>.py`), and take the call's arguments from `input_args`;
2. call the kernel on a deep copy of the inputs, then `ag.function(kernel)` twice, each on a
   fresh deep copy (the second call runs the cached trace);
3. compare each compiled call with the eager one: the returned structure, dtypes exactly, values
   within a tolerance (float64/complex128 rtol 1e-6 atol 1e-8, float32/complex64 rtol 1e-4
   atol 1e-6, others exactly), and every array argument's contents after the call (kernels
   update their arguments in place);
4. classify: `equal`; `differs` (the first difference); `refused` (ConversionError, TypeError,
   ValueError or NotImplementedError whose message names a line of the kernel's file: the
   construct, from the message); `crashed` (any other exception, or one whose message does not
   name the kernel's line: where it was raised); `timeout`; `skipped` (NPBench's own code failed:
   building the inputs or the eager call, e.g. an init function needing scipy, or two eager
   calls giving different results).

Prints one table (kernel, status, the compiled first call (convert + trace + optimize + run),
the eager call (the second of two: the first warms numpy up), detail) and a summary line; writes the records as JSON (default
benchmarks/results/npbench.json). The first call uses the usual converted-function disk cache.
"""
import argparse
import copy
import datetime
import importlib
import json
import linecache
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GET_NPBENCH = ("benchmarks/npbench.py needs a checkout of NPBench: "
               "git clone https://github.com/spcl/npbench /tmp/npbench && "
               "python benchmarks/npbench.py /tmp/npbench")
PRESET = "S"
STATUSES = ("equal", "differs", "refused", "crashed", "timeout", "skipped")
REFUSAL_TYPES = ("ConversionError", "TypeError", "ValueError", "NotImplementedError")
DETAIL_CHARS = 120
# (rtol, atol) by dtype kind and size; integers, booleans and everything else compare exactly
TOLERANCES = {("f", 8): (1e-6, 1e-8), ("c", 16): (1e-6, 1e-8), ("f", 4): (1e-4, 1e-6), ("c", 8): (1e-4, 1e-6)}
# one BLAS thread per kernel process: the machines are shared and --jobs runs several at once
SINGLE_THREADED = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def kernels(root):
    """{name: bench_info} for each kernel of the checkout at `root` that has a numpy version,
    by bench_info file name (`adi`, `gemm`, ...)."""
    info_dir = os.path.join(root, "bench_info")
    found = {}
    for file in sorted(os.listdir(info_dir)):
        if not file.endswith(".json"):
            continue
        with open(os.path.join(info_dir, file)) as f:
            info = json.load(f)["benchmark"]
        if os.path.exists(kernel_file(root, info)):
            found[file[:-len(".json")]] = info
    return found


def kernel_file(root, info):
    return os.path.join(root, "npbench", "benchmarks", info["relative_path"], info["module_name"] + "_numpy.py")


def _module(root, info, suffix=""):
    if root not in sys.path:
        sys.path.insert(0, root)
    package = "npbench.benchmarks." + info["relative_path"].replace("/", ".")
    return importlib.import_module(f"{package}.{info['module_name']}{suffix}")


def inputs(root, info, preset=PRESET):
    """The kernel's arguments, in `input_args` order, built as NPBench's Benchmark.get_data builds
    them: the preset's parameters, then the init function's outputs called on them."""
    data = dict(info["parameters"][preset])
    init = info.get("init")
    if init:
        make = getattr(_module(root, info), init["func_name"])
        made = make(*[data[name] for name in init["input_args"]])
        names = init["output_args"]
        data.update(zip(names, made) if len(names) > 1 else [(names[0], made)])
    return [data[name] for name in info["input_args"]]


def first_difference(eager, compiled, where="result"):
    """None if `compiled` matches `eager` (structure, types, dtypes, values within TOLERANCES), else
    a one-line description of the first difference."""
    if isinstance(eager, (tuple, list, dict)) or isinstance(compiled, (tuple, list, dict)):
        if type(eager) is not type(compiled):
            return f"{where}: {type(compiled).__name__} where eager gives {type(eager).__name__}"
        if len(eager) != len(compiled) or (isinstance(eager, dict) and list(eager) != list(compiled)):
            return f"{where}: structure {_brief(compiled)} where eager gives {_brief(eager)}"
        keys = list(eager) if isinstance(eager, dict) else range(len(eager))
        for key in keys:
            found = first_difference(eager[key], compiled[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if type(eager) is not type(compiled):
        return f"{where}: {type(compiled).__name__} where eager gives {type(eager).__name__}"
    if eager is None:
        return None
    e, c = np.asarray(eager), np.asarray(compiled)
    if e.dtype != c.dtype:
        return f"{where}: dtype {c.dtype} where eager gives {e.dtype}"
    if e.shape != c.shape:
        return f"{where}: shape {c.shape} where eager gives {e.shape}"
    rtol, atol = TOLERANCES.get((e.dtype.kind, e.dtype.itemsize), (0, 0))
    if e.dtype.kind in "fc":
        close = np.isclose(c, e, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = e == c
    if np.all(close):
        return None
    index = tuple(int(i) for i in np.argwhere(~np.asarray(close))[0])
    at = f"{where}{list(index) if index else ''}"
    return f"{at}: {c[index]!r} where eager gives {e[index]!r} ({np.size(close) - np.count_nonzero(close)} elements differ)"


def call_difference(eager, eager_args, result, args, names):
    """The first difference between two calls: in the result, else in an array argument's final
    contents (None if there is none)."""
    found = first_difference(eager, result)
    for name, before, after in zip(names, eager_args, args):
        if found:
            break
        if isinstance(before, np.ndarray):
            found = first_difference(before, after, f"argument {name}")
    return found


def _brief(value):
    return f"{type(value).__name__} of {len(value)}"


def classify_error(exc, file):
    """(status, detail, line) for an exception the compiled call raised: 'refused' with the construct
    and the innermost line of the kernel's file the message names, or 'crashed' with where it was
    raised (line None)."""
    message = " ".join(str(exc).split())
    # "the body of a loop on a tensor (at f:9) raised TypeError while it was traced (REASON); ..."
    wrapped = re.search(r"raised \w+ while it was traced \((.*)\); the body is traced", message)
    construct = wrapped.group(1) if wrapped else message
    mention = r"(?:\(at |,? at )?\S*?" + re.escape(os.path.basename(file)) + r":(\d+)\)?"
    lines = re.findall(mention, message)
    if lines and any(t.__name__ in REFUSAL_TYPES for t in type(exc).__mro__):
        construct = re.sub(mention, "", construct)
        construct = re.sub(r'Tensor\("[^"]*", shape=[^)]*\), dtype=\w+\)', "Tensor", construct)
        construct = re.sub(r"\s+([;,.)])", r"\1", construct).strip()
        return "refused", f"{os.path.basename(file)}:{lines[-1]}: {construct}"[:DETAIL_CHARS], int(lines[-1])
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    raised_at = f" (raised at {os.path.relpath(frame.filename, REPO)}:{frame.lineno})" if frame else ""
    return "crashed", f"{type(exc).__name__}: {message[:DETAIL_CHARS]}{raised_at}", None


def run_kernel(root, name, preset=PRESET):
    """One kernel's record: status, detail and times (in this process; `run` calls it in a child)."""
    import autograph_lite as ag
    info = bench_info(root, name)
    file = kernel_file(root, info)
    record = {"kernel": name, "file": os.path.relpath(file, root), "preset": preset}
    try:
        kernel = getattr(_module(root, info, "_numpy"), info["func_name"])
        args = inputs(root, info, preset)
    except Exception as exc:  # noqa: BLE001 - NPBench's own code failed here (a missing scipy, ...)
        return dict(record, status="skipped", detail=f"inputs: {type(exc).__name__}: {exc}"[:200])
    # eager twice: the second call's time is the one reported (the first pays numpy's and BLAS's
    # warm-up in this fresh process), and two eager calls that differ make the comparison moot
    for call in ("eager_first", "eager"):
        eager_args = copy.deepcopy(args)
        start = time.perf_counter()
        try:
            eager = kernel(*eager_args)
        except Exception as exc:  # noqa: BLE001
            return dict(record, status="skipped", detail=f"eager run: {type(exc).__name__}: {exc}"[:200])
        record[f"{call}_s"] = time.perf_counter() - start
        if call == "eager_first":
            first_eager, first_eager_args = eager, eager_args
    nondeterministic = call_difference(first_eager, first_eager_args, eager, eager_args, info["input_args"])
    if nondeterministic:
        return dict(record, status="skipped", detail=f"two eager calls differ: {nondeterministic}"[:200])
    compiled = ag.function(kernel)
    for call in ("first", "second"):
        compiled_args = copy.deepcopy(args)
        start = time.perf_counter()
        try:
            result = compiled(*compiled_args)
        except Exception as exc:  # noqa: BLE001
            status, detail, line = classify_error(exc, file)
            record.update(message=str(exc), line=line, source=line and linecache.getline(file, line).strip())
            prefix = "" if call == "first" else "second call: "
            return dict(record, status=status, detail=prefix + detail)
        record[f"{call}_call_s"] = time.perf_counter() - start
        difference = call_difference(eager, eager_args, result, compiled_args, info["input_args"])
        if difference:
            return dict(record, status="differs", detail=f"{call} call: {difference}"[:200])
    return dict(record, status="equal", detail="")


def bench_info(root, name):
    with open(os.path.join(root, "bench_info", name + ".json")) as f:
        return json.load(f)["benchmark"]


def _limit_memory(gigabytes):
    def limit():
        size = int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
    return limit


def run(root, name, timeout=120, memory_gb=8):
    """Run one kernel in a child process; its record, or a `timeout` / `crashed` record."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "record.json")
        command = [sys.executable, os.path.abspath(__file__), root, "--child", name, "--out", out]
        env = {**os.environ, **{k: v for k, v in SINGLE_THREADED.items() if k not in os.environ}}
        start = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                                  preexec_fn=_limit_memory(memory_gb) if memory_gb else None)
        except subprocess.TimeoutExpired:
            return {"kernel": name, "status": "timeout", "detail": f"over {timeout:g} s"}
        if os.path.exists(out):
            with open(out) as f:
                return json.load(f)
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-1:])
        return {"kernel": name, "status": "crashed", "wall_s": time.perf_counter() - start,
                "detail": f"process exited {done.returncode}: {tail}"[:200]}


def run_all(root, names, timeout=120, jobs=1, memory_gb=8, on_record=None):
    """Records for `names`, each kernel in its own process, `jobs` at a time, in `names` order."""
    def one(name):
        record = run(root, name, timeout, memory_gb)
        if on_record:
            on_record(record)
        return record
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, names))


def _ms(seconds):
    return "" if seconds is None else f"{seconds * 1e3:.1f}"


def table(records):
    """The printed table and summary line."""
    lines = [f"{'kernel':<26} {'status':<8} {'first call ms':>13} {'eager ms':>9}  detail"]
    for r in records:
        lines.append(f"{r['kernel']:<26} {r['status']:<8} {_ms(r.get('first_call_s')):>13} "
                     f"{_ms(r.get('eager_s')):>9}  {r.get('detail', '')}")
    lines.append(summary(records))
    return "\n".join(lines)


def markdown(records):
    """The table as markdown, for docs/npbench.md (`--markdown`)."""
    lines = ["| kernel | status | first call ms | eager ms | detail |", "|---|---|---:|---:|---|"]
    for r in records:
        detail = r.get("detail", "").replace("|", "\\|")
        lines.append(f"| {r['kernel']} | {r['status']} | {_ms(r.get('first_call_s'))} | {_ms(r.get('eager_s'))} | "
                     f"{detail} |")
    return "\n".join(lines + ["", f"**{summary(records)}**"])


def summary(records):
    counts = {s: sum(r["status"] == s for r in records) for s in STATUSES}
    return f"{len(records)} kernels: " + ", ".join(f"{n} {s}" for s, n in counts.items())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="a checkout of github.com/spcl/npbench")
    parser.add_argument("--kernels", default="", help="comma-separated bench_info names, e.g. adi,gemm")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per kernel")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--memory", type=float, default=8, help="GiB of address space per kernel (0: no limit)")
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"),
                        help="directory for npbench.json")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown (docs/npbench.md)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # run one kernel here, write its record to --out
    opts = parser.parse_args(argv)
    if not opts.path or not os.path.isdir(os.path.join(opts.path, "bench_info")):
        print(GET_NPBENCH, file=sys.stderr)
        return 2
    root = os.path.abspath(opts.path)
    if opts.child:
        # this file's own directory would make `npbench` this module, not the checkout's package
        sys.path[:] = [REPO] + [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(__file__)]
        record = run_kernel(root, opts.child)
        with open(opts.out, "w") as f:
            json.dump(record, f)
        return 0
    available = kernels(root)
    names = [k.strip() for k in opts.kernels.split(",") if k.strip()] or list(available)
    unknown = [n for n in names if n not in available]
    if unknown:
        print(f"no numpy kernel named {', '.join(unknown)} in {root}/bench_info", file=sys.stderr)
        return 2
    records = run_all(root, names, opts.timeout, opts.jobs, opts.memory,
                      on_record=lambda r: print(f"  {r['kernel']}: {r['status']}", file=sys.stderr, flush=True))
    print(markdown(records) if opts.markdown else table(records))
    os.makedirs(opts.out, exist_ok=True)
    path = os.path.join(opts.out, "npbench.json")
    with open(path, "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "preset": PRESET, "numpy": np.__version__,
                   "command": "python benchmarks/npbench.py " + " ".join(sys.argv[1:] if argv is None else argv),
                   "summary": summary(records), "kernels": records}, f, indent=1)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
