"""Native code built in the background, as users get it (the rest of the suite builds in the
foreground, AG_NATIVE_BUILD=wait, to know which run is the first native one). Each case runs
in a fresh process with its own kernel cache: every call equals eager before, during and after
the build; a failed build warns once, at the user's line; a process that exits mid-build
leaves a cache the next one trusts."""
import os

import pytest

from test_faults import HAS_HEADERS, needs_cc, run_child

pytestmark = needs_cc

# A loop over scalars and a fused elementwise chain over a large array, called until both run
# native: the tier-up run starts the builds and returns at once (the Python code runs).
CHILD = r"""
import json, os, sys, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import autograph_lite as ag
    from autograph_lite.runtime.native import compiler, functions

    def loop(n):
        acc = 0
        i = 0
        while i < n:
            acc = acc + i * i - (i // 3)
            i += 1
        return acc

    def chain(x):
        return np.tanh(x * 1.5 + 0.5) - 0.25 * x * x

    n, x = np.int64(1000), np.linspace(-3, 3, 1 << 20)
    g, h = ag.function(loop), ag.function(chain)
    # the fused chain's C tanh may differ from numpy's by an ulp (docs/ARCHITECTURE.md)
    same = lambda: (g(n) == loop(n) and type(g(n)) is type(loop(n))
                    and np.allclose(h(x), chain(x), rtol=1e-15, atol=1e-15))
    ok = all(same() for _ in range(functions.TIER_UP_AFTER))
    started = bool(compiler._pending)
    if os.environ.get("EXIT_NOW"):
        print(json.dumps({"started": started}), flush=True)
        os._exit(0)  # mid-build: the worker thread and its compiler are cut off with the process
    compiler.wait_for_builds()
    ok = ok and same() and same()
    native_loop = g.get_concrete_function(n).plan.native_loops[0]
print(json.dumps({"ok": ok, "started": started, "native": bool(native_loop.fn),
                  "entry": type(native_loop.call).__name__ == "Entry",
                  "kernels": sum(isinstance(v, tuple) for v in compiler._loaded.values()),
                  "warnings": [(f"{w.category.__name__}: {w.message}", w.filename) for w in caught]}))
"""


def background(**env):
    """A child's environment as users have it: background builds, the default tiering (whatever
    AG_NATIVE the suite runs under)."""
    return dict(env, AG_NATIVE_BUILD="background", AG_NATIVE="")


def test_builds_run_in_the_background_and_every_call_equals_eager(tmp_path):
    report = run_child(background(), code=CHILD, cache=tmp_path / "cache")
    assert report["ok"] and report["started"], report  # the tier-up run did not wait for gcc
    assert report["native"] and report["warnings"] == [], report
    assert report["entry"] == HAS_HEADERS and report["kernels"] == 2, report  # the loop, the chain
    again = run_child(background(), code=CHILD, cache=tmp_path / "cache")  # a warm cache: nothing to build
    assert again["ok"] and not again["started"] and again["native"] and again["kernels"] == 2, again


@pytest.mark.parametrize("cc", ["/bin/false", "/bin/true"])
def test_a_failed_background_build_warns_once_at_the_users_line(tmp_path, cc):
    report = run_child(background(CC=cc), code=CHILD, cache=tmp_path / "cache")
    assert report["ok"] and not report["native"] and report["kernels"] == 0, report
    [(message, filename)] = report["warnings"]
    assert message.startswith("NativeKernelWarning") and "AG_NATIVE_KERNELS=0" in message, report
    assert os.path.basename(filename).startswith("child"), report  # the user's script, not a worker thread


def test_a_process_that_exits_mid_build_leaves_a_cache_the_next_one_trusts(tmp_path):
    cache = tmp_path / "cache"
    assert run_child(background(EXIT_NOW="1"), code=CHILD, cache=cache)["started"]
    report = run_child(background(), code=CHILD, cache=cache)
    assert report["ok"] and report["native"] and report["kernels"] == 2, report
    assert report["warnings"] == [], report
