"""Long fuzz run: `python -m tests.fuzz --programs 20000 --seed 1` (from the repository root).

Programs come from a seeded `random.Random` (fast; no Hypothesis per example). A program
whose compiled run diverges from eager is shrunk by replaying its recorded choices with
parts zeroed or cut (the same idea as Hypothesis' shrinker, over the same choice stream),
and printed as a minimal reproducer. Prints a progress line every `--every` programs and a
summary: programs / ok / refused / diverged, refusal rate, programs per second.

Options: --flags all|ci|<comma list> picks the constructs (default: all, including those
known to diverge on today's main; `ci` is what tests/fuzz/test_fuzz.py runs);
--no-native runs with AG_NATIVE_KERNELS=0; --device standin runs the compiled calls on
tests/standin.py's strict cupy stand-in (the eager oracle stays numpy); --no-shrink prints
failures unshrunk; --max-failures stops after that many distinct divergences.
"""
import argparse
import collections
import os
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    __package__ = "tests.fuzz"

from . import grammar, runner  # noqa: E402
from .shrink import shrink, shrink_source, signature  # noqa: E402


def parse_flags(text):
    if text == "all":
        return grammar.ALL_FLAGS
    if text == "ci":
        return grammar.ALL_FLAGS - grammar.KNOWN_DIVERGENT
    return frozenset(f for f in text.split(",") if f)


def _one(job):
    """Generate and run one program (in a worker process with --jobs)."""
    seed, flags, device = job
    choices = grammar.RandomChoices(seed)
    program = grammar.generate(choices, flags)
    return seed, choices.record, runner.run_program(program, compile_fn=runner.compiled_on(device))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--flags", default="all")
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--no-native", action="store_true")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--max-failures", type=int, default=50)
    ap.add_argument("--shrink-seconds", type=float, default=60.0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--device", default="cpu", choices=("cpu", "standin"))
    args = ap.parse_args(argv)
    if args.no_native:
        os.environ["AG_NATIVE_KERNELS"] = "0"
    if args.device == "standin":
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import standin
        standin.device()
    flags = parse_flags(args.flags)
    counts = collections.Counter()
    refusals = collections.Counter()
    seen = {}
    start = time.time()
    jobs = ((args.seed * 1_000_003 + i, flags, args.device) for i in range(args.programs))
    pool = None
    if args.jobs > 1:
        import multiprocessing
        runner.scratch()
        pool = multiprocessing.get_context("fork").Pool(args.jobs)
        results = pool.imap_unordered(_one, jobs, chunksize=4)
    else:
        results = map(_one, jobs)
    for i, (seed, record, outcome) in enumerate(results):
        counts[outcome.status] += 1
        if outcome.status == "refused":
            refusals[outcome.detail.split(" at ")[0][:90]] += 1
        if outcome.status == "invalid":
            print(f"\n=== invalid program (seed {seed}): {outcome.detail} ===\n{outcome.program}", flush=True)
        if outcome.status == "diverged":
            sig = signature(outcome)
            if sig not in seen:
                if not args.no_shrink:
                    outcome = shrink(record, outcome, flags, args.shrink_seconds / 2)
                    outcome = shrink_source(outcome, args.shrink_seconds / 2)
                seen[sig] = outcome
                print(f"\n=== divergence #{len(seen)} (program seed {seed}, {sig}) ===")
                print(outcome.program)
                print("---", outcome.detail)
                sys.stdout.flush()
                if len(seen) >= args.max_failures:
                    break
        if (i + 1) % args.every == 0:
            el = time.time() - start
            print(f"[{i + 1} programs, {el:.0f} s, {(i + 1) / el:.1f}/s] ok={counts['ok']} "
                  f"refused={counts['refused']} diverged={counts['diverged']} "
                  f"(distinct {len(seen)})", flush=True)
    if pool is not None:
        pool.terminate()
    el = time.time() - start
    total = sum(counts.values())
    print(f"\nprograms={total} ok={counts['ok']} refused={counts['refused']} "
          f"diverged={counts['diverged']} distinct divergences={len(seen)} invalid={counts['invalid']} "
          f"refusal rate={counts['refused'] / max(total, 1):.1%} "
          f"speed={total / el:.1f} programs/s ({el:.0f} s)")
    if refusals:
        print("refusals by message:")
        for msg, k in refusals.most_common(15):
            print(f"  {k:6d}  {msg}")
    return 1 if seen else 0


if __name__ == "__main__":
    sys.exit(main())
