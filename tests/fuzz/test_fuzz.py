"""Differential fuzzing in the suite: random programs compiled vs eager, a fixed-seed slice.

`test_hypothesis_slice` draws programs with Hypothesis (derandomized, no example database),
so a divergence is reported as a shrunk, minimal program. `test_seeded_slice` runs the
plain seeded generator that the long run uses. Constructs in grammar.KNOWN_DIVERGENT
(divergent on main when the fuzzer was written) are left out of both; the long run covers
them: `python -m tests.fuzz --programs 20000 --seed 1` (see tests/fuzz/__main__.py;
`--flags ci` runs the CI set, the default `all` includes the known-divergent ones).
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import grammar, runner

CI_FLAGS = grammar.ALL_FLAGS - grammar.KNOWN_DIVERGENT


@settings(max_examples=150, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_hypothesis_slice(data):
    program = grammar.generate(grammar.HypothesisChoices(data), CI_FLAGS)
    outcome = runner.run_program(program)
    assert outcome.status != "diverged", f"\n{program}\n--- {outcome.detail}"


def test_seeded_slice():
    statuses = []
    for seed in range(300):
        program = grammar.generate(grammar.RandomChoices(seed), CI_FLAGS)
        outcome = runner.run_program(program)
        assert outcome.status != "diverged", f"seed {seed}:\n{program}\n--- {outcome.detail}"
        statuses.append((outcome.status, outcome.detail[:100]))
    # a fuzzer that only finds refusals proves little: most programs must compile and run
    ok = sum(status == "ok" for status, _ in statuses)
    assert ok >= 0.6 * len(statuses), sorted(d for s, d in statuses if s == "refused")


def test_seeded_slice_on_the_standin_device():
    """The same programs with their compiled calls on tests/standin.py's strict cupy stand-in:
    the GPU runtime's placement, transfers and fused CUDA kernels under random programs."""
    import standin
    standin.device()
    copies_before = sum(standin.COPIES.values())
    for seed in range(2000, 2150):
        program = grammar.generate(grammar.RandomChoices(seed), CI_FLAGS)
        outcome = runner.run_program(program, compile_fn=runner.compiled_on("standin"))
        assert outcome.status != "diverged", f"seed {seed}, on the stand-in:\n{program}\n--- {outcome.detail}"
    assert sum(standin.COPIES.values()) > copies_before  # the calls did run on the device


# The comparator itself: each difference the contract names is caught.
@pytest.mark.parametrize("eager, compiled", [
    (np.float32(1.0), np.float64(1.0)),                   # dtype
    (np.array([1, 2], np.int8), np.array([1, 3], np.int8)),  # value
    (np.array([-0.0]), np.array([0.0])),                   # sign of zero
    ((1, 2), [1, 2]),                                      # structure
    ({"a": 1}, {"b": 1}),                                  # keys
    (1, np.float64(1.0)),                                  # Python int vs a float
    (None, 0),                                             # implicit None vs a value
    (3, np.int64(3)),                                      # a Python int vs a numpy scalar: the box
    (True, np.bool_(True)),
    (np.float32(1.5), np.array(1.5, np.float32)),          # a numpy scalar vs a 0-d array
    (np.array(np.nan, np.float32), np.array(1.0, np.float32)),
])
def test_comparator_catches(eager, compiled):
    assert runner.compare(eager, compiled, inexact=False) is not None


@pytest.mark.parametrize("eager, compiled", [
    (3, 3),
    (True, True),
    (np.array(np.nan), np.array(np.nan)),
    ((np.float32(1.5), [np.int8(2)]), (np.float32(1.5), [np.int8(2)])),
])
def test_comparator_accepts(eager, compiled):
    assert runner.compare(eager, compiled, inexact=False) is None


SOURCE = """import numpy as np
import autograph_lite as ag


def f(x, y, n, s, lst):
    print("sum", ag.reduce_sum(x))
    return x + y, x * 1.0, s
"""


def _program():
    x = np.array([1.0, -2.0, 3.0, 4.0], np.float32)
    args = (x, x, np.array(1, np.int32), 1, [])
    return grammar.Program(SOURCE, ("float32", "float32"), frozenset(), False, [args] * 4)


def _wrong(change):
    """A stand-in for ag.function whose 5th call differs from eager by `change`."""
    def compile_fn(fn):
        calls = []

        def run(*args):
            calls.append(1)
            result = fn(*args)
            return change(result, args) if len(calls) == 5 else result
        return run
    return compile_fn


def _print_extra(result, args):
    print("extra")
    return result


@pytest.mark.parametrize("change, expected", [
    (lambda r, a: (r[0].astype(np.float64),) + r[1:], "dtype float64"),
    (lambda r, a: list(r), "structure list"),
    (lambda r, a: r[:2] + (r[2] + 1,), "value"),
    (lambda r, a: r[:2] + (float(r[2]),), "type float != eager int" if os.environ.get("AG_TEST_DEVICE", "cpu") ==
     "cpu" else "dtype float64 for eager Python int"),  # a device has no numpy scalars: no box check
    (_print_extra, "printed output"),
    (lambda r, a: (a[4].append(0), r)[1], "argument l after the call"),
    (lambda r, a: (a[0].__isub__(1), r)[1], "argument x after the call"),
    (lambda r, a: (r[0], a[0], r[2]), "shares memory"),
])
def test_runner_reports_each_difference(change, expected):
    assert runner.run_program(_program()).status == "ok"
    outcome = runner.run_program(_program(), compile_fn=_wrong(change))
    assert outcome.status == "diverged" and expected in outcome.detail, outcome.detail
    assert "call 5" in outcome.detail


def test_every_numpy_table_entry_is_drawn():
    """The grammar draws from the numpy tables tensors go through: each entry has a form that
    numpy takes on the fuzzer's vectors (float and int) and that gives a scalar or a vector."""
    samples = [{"a": np.arange(1.0, grammar.VEC + 1), "b": np.linspace(-1, 1, grammar.VEC),
                "c": np.arange(grammar.VEC) % 2 == 0},
               {"a": np.arange(1, grammar.VEC + 1), "b": np.arange(grammar.VEC, 0, -1), "c": np.bool_(True)}]
    undrawn = []
    for name, forms in grammar.numpy_forms():
        def usable(form, env):
            try:
                value = grammar._eval(form.format(a="a", b="b", c="c"), dict(env))
            except grammar.Reject:
                return False
            k = grammar.tkey(value)
            return k[0] == "py" or (k[0] == "t" and k[1] in grammar.DTYPES and np.shape(value) in ((), (grammar.VEC,)))
        if not any(usable(form, env) for form in forms for env in samples):
            undrawn.append(name)
    assert undrawn == [], f"add a form to grammar.NUMPY_FORMS for {undrawn}"


STATEFUL_SOURCE = """import numpy as np
import autograph_lite as ag


class _State:
    pass


STATE = _State()


def reset():
    STATE.acc = np.zeros(4)


def mutate(step):
    pass


def f(x, y, n, s, lst):
    if s:
        STATE.acc = x * 1.0
        return [1.5, 2.5][s]   # eager keeps the write above; the compiled trace raises first
    return x
"""


def test_a_call_raising_both_ways_leaves_eagers_state_for_the_next_calls():
    # fuzzer seed 1137004384: a write eager made before its error was missing compiled (a trace that
    # raises restores outside state), and the next call, which returns, was compared from there
    x = np.array([1.0, -2.0, 3.0, 4.0])
    program = grammar.Program(STATEFUL_SOURCE, ("float64", "float64"), frozenset(), False,
                              [(x, x, np.array(1, np.int32), s, []) for s in (2, 0)])
    assert runner.run_program(program).status == "ok"
