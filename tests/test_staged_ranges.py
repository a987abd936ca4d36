"""Long Python range loops: once the trace has unrolled a Python `for` over a range into more than
`control_flow.STAGE_AFTER_NODES` nodes, the rest of it is one graph loop (as `range(n)` with a
tensor n is), so a loop nest written with Python ranges traces in a fraction of a second; where the
body cannot be traced with a tensor target the function is traced again unrolling it, as before."""
import io
import contextlib

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.operators import control_flow

from helpers import assert_identical, on_fresh_arguments


@pytest.fixture
def small_budget(monkeypatch):
    """Stage after a few nodes, so short loops show it."""
    monkeypatch.setattr(control_flow, "STAGE_AFTER_NODES", 10)
    monkeypatch.setattr(control_flow, "STAGE_AT_LEAST", 2)


def _ops(fn, *args):
    return [n.op for n in fn.get_concrete_function(*args).graph.nodes]


def cholesky(A):  # NPBench's polybench cholesky, unchanged
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def _spd(n):
    b = np.random.default_rng(0).random((n, n))
    return b @ b.T + n * np.eye(n)


def test_a_loop_nest_over_python_ranges_stages_its_rest_and_equals_eager():
    a = _spd(120)  # 7,000 inner iterations: unrolled, ~40,000 nodes
    on_fresh_arguments(cholesky, a.copy, same=assert_identical)
    compiled = ag.function(cholesky)
    assert "While" in _ops(compiled, a.copy())


def test_the_staged_rest_continues_from_the_unrolled_iterations(small_budget):
    def running(x):
        total, count = 0.0, 0
        for i in range(3, 40, 3):
            total = total * 0.5 + x[i % x.shape[0]] * i
            count += 1
        return total, count

    x = np.linspace(-1.0, 1.0, 7)
    compiled = ag.function(running)
    assert_identical(running(x), compiled(x))  # count stays a Python int, as eagerly
    assert "While" in _ops(compiled, x)


def test_break_and_return_on_the_loop_index_in_the_staged_rest(small_budget):
    def first_over(x, limit):
        s = x[0] * 0
        for i in range(50):
            if i == 37:
                break
            s = s + x[i % 4]
            if s > limit:
                return s, i
        return s, -1

    x = np.array([0.5, 1.5, -0.25, 2.0])
    compiled = ag.function(first_over)
    for limit in (3.0, 1e9):
        assert_identical(first_over(x, limit), compiled(x, limit))


def test_printing_in_the_staged_rest_prints_each_iteration(small_budget):
    def loud(x):
        for i in range(6):
            x = x * 2.0
            print("step", i, x)
        return x

    x = np.float64(0.75)
    eager, compiled = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(eager):
        expected = loud(x)
    fn = ag.function(loud)
    with contextlib.redirect_stdout(compiled):
        got = fn(x)
    assert_identical(expected, got)
    assert compiled.getvalue() == eager.getvalue()
    assert "While" in _ops(fn, x)


def test_a_body_that_needs_a_python_index_is_traced_again_unrolled(small_budget, caplog):
    weights = [0.5, -1.0, 2.0, 0.25, 3.0, -0.5, 1.5, 4.0]

    def weighted(x):
        s = x * 0
        for i in range(len(weights)):
            s = s + weights[i] * x  # a list indexed by a tensor target fails; unrolled it traces
        return s

    x = np.arange(3.0)
    compiled = ag.function(weighted)
    with caplog.at_level("INFO", logger="autograph_lite"):
        assert_identical(weighted(x), compiled(x))
    assert "again unrolling the Python loops at" in caplog.text
    assert "While" not in _ops(compiled, x)
    assert compiled.trace_count == 1


def test_a_body_error_of_the_code_is_raised_as_eager_raises(small_budget):
    def bad(x):
        for i in range(10):
            x = x + np.ones(3)[i]  # eagerly: IndexError at i == 3
        return x

    with pytest.raises(IndexError):
        bad(np.float64(1.0))
    with pytest.raises(IndexError):
        ag.function(bad)(np.float64(1.0))


def test_arrays_written_in_the_staged_rest_are_the_callers(small_budget):
    def fill(out, x):
        for i in range(1, out.shape[0]):
            out[i] = out[i - 1] * 0.5 + x[i]
        return out.sum()

    x = np.linspace(0.0, 3.0, 30)
    on_fresh_arguments(fill, lambda: np.ones(30), lambda: x, same=assert_identical)


def self_energies(neigh_idx, dH, G, D, Sigma):  # NPBench's scattering_self_energies, unchanged
    for k in range(G.shape[0]):
        for E in range(G.shape[1]):
            for q in range(D.shape[0]):
                for w in range(D.shape[1]):
                    for i in range(D.shape[-2]):
                        for j in range(D.shape[-1]):
                            for a in range(neigh_idx.shape[0]):
                                for b in range(neigh_idx.shape[1]):
                                    if E - w >= 0:
                                        dHG = G[k, E - w, neigh_idx[a, b]] @ dH[a, b, i]
                                        dHD = dH[a, b, j] * D[q, w, a, b, i, j]
                                        Sigma[k, E, a] += dHG @ dHD


def _self_energies_args(kz=2, ne=4, qz=3, nw=2, n3d=2, na=6, nb=2, orb=3):
    rng = np.random.default_rng(2)
    c = lambda *shape: rng.random(shape) + 1j * rng.random(shape)  # noqa: E731
    return (rng.integers(0, na, (na, nb)), c(na, nb, n3d, orb, orb), c(kz, ne, na, orb, orb),
            c(qz, nw, na, nb, n3d, n3d), np.zeros((kz, ne, na, orb, orb), np.complex128))


def test_a_nest_of_short_loops_stages_where_its_rest_is_large(monkeypatch, caplog):
    # no loop of the nest has STAGE_AT_LEAST iterations: a loop whose rest would make as many nodes
    # as the budget stages, and a loop staged once in this trace is staged whole where it comes again
    monkeypatch.setattr(control_flow, "STAGE_AFTER_NODES", 300)
    monkeypatch.setattr(control_flow, "UNROLL_WARNING_SECONDS", 0.0)
    args = _self_energies_args()
    with caplog.at_level("WARNING", logger="autograph_lite"):
        on_fresh_arguments(self_energies, *[a.copy for a in args], same=assert_identical)  # one trace
    said = [r.getMessage().split(" has run")[0] for r in caplog.records if "while tracing" in r.getMessage()]
    assert said and len(said) == len(set(said)), said  # each loop's long-unroll warning once per trace
    compiled = ag.function(self_energies)
    nodes = [n.op for n in compiled.get_concrete_function(*args).graph.walk()]
    assert "While" in nodes and len(nodes) < 3000, len(nodes)  # unrolled: ~11,000

