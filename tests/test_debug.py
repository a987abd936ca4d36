"""ag.debug: graph pictures (to_dot / render)."""
import html.parser
import inspect
import os
import shutil
import warnings
import xml.dom.minidom

import numpy as np
import pytest

import autograph_lite as ag

FILE = os.path.basename(__file__)


def _line(fn, text):
    """The file line of the first line of `fn`'s source that contains `text`."""
    fn = getattr(fn, "python_function", fn)
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with warnings.catch_warnings():  # log(0) and 1/0 warn eagerly too; these tests look at values
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# --- pictures --------------------------------------------------------------------------

@ag.function
def loop(x, n):
    i = 0
    while i < n:
        x = ag.tanh(x) - 0.5
        i += 1
    return ag.log(x + 1.0)


def test_to_dot_has_clusters_labels_and_fused_nodes():
    x, n = np.ones(3), np.int64(2)
    concrete = loop.get_concrete_function(x, n)
    dot = concrete.graph.to_dot()
    assert 'subgraph "cluster_While"' in dot and 'cluster_While.cond' in dot and 'cluster_While.body' in dot
    for node in concrete.graph.walk():
        assert f'"{node.name}"' in dot or f'/{node.name}"' in dot
    assert f"{FILE}:{_line(loop, 'ag.tanh(x)')}" in dot and "float64[3]" in dot

    @ag.function
    def chain(x):
        return ag.tanh(x * 1.5 + 0.5) * 2.0

    optimized = chain.get_concrete_function(np.ones(1 << 16)).optimized_graph  # fused at this size
    assert any(n.op == "FusedElementwise" for n in optimized.nodes)
    assert "FusedElementwise" in optimized.to_dot() and "#ffe9b3" in optimized.to_dot()


class _Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_render_writes_html_with_every_node(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)  # as without graphviz
    x, n = np.ones(3), np.int64(2)
    path = ag.debug.render(loop, x, n, path=str(tmp_path / "loop.svg"))
    assert path.endswith("loop.html") and "wrote HTML of graph loop" in capsys.readouterr().out
    page = open(path, encoding="utf-8").read()
    parser = _Collect()
    parser.feed(page)
    parser.close()
    ids = {attrs.get("id") for tag, attrs in parser.tags if tag == "g"}
    svg = xml.dom.minidom.parseString(page[page.index("<svg"):page.index("</svg>") + 6])
    assert {g.getAttribute("id") for g in svg.getElementsByTagName("g")} == ids
    graph = loop.get_concrete_function(x, n).graph
    for node in graph.walk():
        assert any(i == node.name or i.endswith("/" + node.name) for i in ids), node.name


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's `dot` binary is not installed here")
def test_render_writes_svg_with_dot(tmp_path):
    path = ag.debug.render(loop, np.ones(3), np.int64(2), path=str(tmp_path / "loop.svg"))
    svg = xml.dom.minidom.parse(path)
    text = svg.toxml()
    for node in loop.get_concrete_function(np.ones(3), np.int64(2)).graph.walk():
        assert node.name in text


# --- check_numerics ----------------------------------------------------------------------

@ag.function
def train(w, steps):
    i = 0
    total = ag.zeros_like(w)
    while i < steps:
        w = w - 0.25
        total = total + ag.log(w)   # w[0] reaches 0 at iteration 3
        i += 1
    return total


def test_check_numerics_names_the_log_line_and_the_iteration():
    w, steps = np.array([1.0, 2.0]), np.int64(6)
    expected = train.python_function(w, steps)  # eager: numpy's NaN, no error
    concrete = train.get_concrete_function(w, steps)
    source = concrete.plan.source
    np.testing.assert_array_equal(train(w, steps), expected)  # without the block: the NaN, like eager
    with pytest.raises(FloatingPointError) as info:
        with ag.debug.check_numerics():
            train(w, steps)
    message = str(info.value)
    assert "op Log" in message and f"{FILE}:{_line(train, 'ag.log(w)')}" in message
    assert "iteration 3" in message and f"({FILE}:{_line(train, 'while i < steps')})" in message
    assert "forward pass" in message and "float64[2] min=0 max=1 nan=0 inf=0" in message
    # the debugger left the fast path alone: same plan, same source, same NaN after the block
    assert concrete.plan.source == source and train.get_concrete_function(w, steps).plan is concrete.plan
    np.testing.assert_array_equal(train(w, steps), expected)


def test_check_numerics_lists_every_loop_level():
    @ag.function
    def nested(x, n):
        i = 0
        while i < n:
            j = 0
            while j < n:
                x = x - 0.5
                y = ag.sqrt(x)
                j += 1
            i += 1
        return y

    with pytest.raises(FloatingPointError) as info, ag.debug.check_numerics():
        nested(np.array([2.25]), np.int64(3))  # x: 1.75 1.25 0.75 | 0.25 -0.25: i=1, j=1
    message = str(info.value)
    assert "op Sqrt" in message and "NaN" in message and f"{FILE}:{_line(nested, 'ag.sqrt(x)')}" in message
    outer, inner = _line(nested, "while i < n"), _line(nested, "while j < n")
    assert f"({FILE}:{outer}) iteration 1, While" in message and f"({FILE}:{inner}) iteration 1" in message


def _unrolled_log(x):
    for i in range(3):          # Python loops: unrolled into the trace, no While
        for j in range(2):
            x = x * 2.0
            if i == 2 and j == 1:
                x = np.log(x - 1e9)
    return x


def _unrolled_gather(a):
    for k in range(2):
        a = a[[0, 5 * k]]
    return a


def test_unrolled_python_loops_are_named_by_check_numerics_dump_and_runtime_errors():
    outer, inner = _line(_unrolled_log, "for i in range(3)"), _line(_unrolled_log, "for j in range(2)")
    where = (f"{FILE}:{_line(_unrolled_log, 'np.log')} (iteration 2 of the Python loop at "
             f"test_debug.py:{outer}, iteration 1 of the Python loop at test_debug.py:{inner})")
    f = ag.function(_unrolled_log)
    with pytest.raises(FloatingPointError) as info, ag.debug.check_numerics(), np.errstate(invalid="ignore"):
        f(np.ones(2))
    assert "op Log" in str(info.value) and where in str(info.value)
    with np.errstate(invalid="ignore"):
        records = ag.debug.dump(f, np.ones(2))
    logs = [r for r in records if r.op == "Log"]
    assert [r.unrolled for r in logs] == [(2, 1)] and logs[0].nan == 2
    assert sorted({r.unrolled for r in records if r.op == "Mul"}) == [(i, j) for i in range(3) for j in range(2)]
    with pytest.raises(IndexError) as info:
        ag.function(_unrolled_gather)(np.arange(3.0))
    notes = " ".join(info.value.__notes__)
    assert f"(iteration 1 of the Python loop at test_debug.py:{_line(_unrolled_gather, 'for k')})" in notes


def test_a_gradient_nan_names_the_backward_op_and_its_forward_line():
    def loss(x):
        return ag.reduce_sum(ag.minimum(x * np.inf, 1.0))  # forward: min(inf, 1) = 1, finite

    x = np.array([1.0, 2.0])
    grad = ag.grad(loss)
    assert np.isnan(grad(x)).all()  # 0 * inf in the gradient of the Mul, as numpy gives it
    with pytest.raises(FloatingPointError) as info, ag.debug.check_numerics():
        grad(x)
    message = str(info.value)
    assert "produced NaN" in message and "in the backward pass, in the gradient of Mul" in message
    assert f"{FILE}:{_line(loss, 'x * np.inf')}" in message


def test_a_gradient_inf_in_a_loop_names_the_sqrt_line():
    def norm(x):
        return ag.sqrt(ag.reduce_sum(x * x))

    with pytest.raises(FloatingPointError) as info, ag.debug.check_numerics():
        ag.grad(norm)(np.zeros(3))
    message = str(info.value)
    assert "backward pass, in the gradient of Sqrt" in message and f"{FILE}:{_line(norm, 'ag.sqrt')}" in message


def test_check_numerics_reports_an_argument_holding_nan_as_the_callers():
    with pytest.raises(FloatingPointError, match="argument 'w' of train holds NaN .* comes from the caller"):
        with ag.debug.check_numerics():
            train(np.array([np.nan, 2.0]), np.int64(1))


def test_a_constant_inf_is_not_blamed_on_the_ops_passing_it_on():
    @ag.function
    def running_max(x):
        best = -np.inf
        for v in x:
            if v > best:
                best = v * 1.0
        return best - best  # inf - inf would be NaN: finite here

    x = np.array([3.0, 1.0, 4.0])
    with ag.debug.check_numerics():
        assert running_max(x) == 0.0


def test_function_check_numerics_checks_every_call():
    @ag.function(check_numerics=True)
    def f(x):
        return ag.log(x - 1.0) * 2.0

    assert f(np.array([2.0, 3.0]))[0] == 0.0
    with pytest.raises(FloatingPointError, match=f"op Log .* at .*{FILE}:{_line(f, 'ag.log')}"):
        f(np.array([1.0, 3.0]))


def test_check_numerics_is_per_thread():
    import threading
    results = []
    thread = threading.Thread(target=lambda: results.append(train(np.array([1.0, 2.0]), np.int64(6))))
    with ag.debug.check_numerics():
        thread.start()
        thread.join()
    assert np.isnan(results[0][0])  # the other thread's call ran the plan


# --- dump and profile --------------------------------------------------------------------

def _non_control(graph):
    return [n for n in graph.nodes if n.op not in ("Cond", "While")]


def test_dump_records_every_executed_node_with_its_iteration():
    w, steps = np.array([3.0, 4.0]), np.int64(4)
    records = ag.debug.dump(train, w, steps)
    np.testing.assert_array_equal(records.result, train.python_function(w, steps))
    graph = train.get_concrete_function(w, steps).graph
    (loop_node,) = [n for n in graph.nodes if n.op == "While"]
    cond, body = loop_node.attrs["cond"], loop_node.attrs["body"]
    assert len(records) == len(_non_control(graph)) + 5 * len(cond.nodes) + 4 * len(body.nodes)
    assert [r.step for r in records] == list(range(len(records)))
    logs = [r for r in records if r.op == "Log"]
    assert [r.iteration for r in logs] == [(0,), (1,), (2,), (3,)]
    assert all(r.location.endswith(f"{FILE}:{_line(train, 'ag.log(w)')}") and not r.backward for r in logs)
    assert logs[0].shape == (2,) and logs[0].dtype == "float64" and logs[0].bytes == 16
    assert logs[0].min == pytest.approx(np.log(2.75)) and logs[0].max == pytest.approx(np.log(3.75))
    assert all(r.time > 0 for r in records)
    outside = [r for r in records if r.iteration == ()]
    assert len(outside) == len(_non_control(graph))


def test_dump_filters_sorts_and_summarizes():
    records = ag.debug.dump(train, np.array([1.0, 2.0]), np.int64(6))
    bad = records.where(ag.debug.has_nan_or_inf)
    first = bad[0]
    assert first.op == "Log" and first.iteration == (3,) and first.inf == 1
    assert all(r.nan or r.inf for r in bad) and len(bad) < len(records)
    by_bytes = records.sorted_by("bytes")
    assert [r.bytes for r in by_bytes] == sorted((r.bytes for r in records), reverse=True)
    lines = records.by_line()
    assert sum(row[1] for row in lines) == len(records)
    log_row = next(row for row in lines if row[0].endswith(f":{_line(train, 'ag.log(w)')}"))
    assert log_row[1] == 12 and log_row[5] >= 1  # Log and Add each of 6 iterations; Infs counted
    table = str(records)
    assert table.splitlines()[0].split()[:4] == ["step", "op", "node", "line"]
    assert len(table.splitlines()) == len(records) + 2
    assert "ag.log(w)" in str(lines)  # the source text of each line


def test_dump_marks_gradient_nodes_with_their_forward_line():
    def loss(x):
        return ag.reduce_sum(ag.tanh(x) * 3.0)

    records = ag.debug.dump(ag.grad(loss), np.array([0.5, -1.0]))
    np.testing.assert_allclose(records.result, 3.0 * (1 - np.tanh([0.5, -1.0]) ** 2))
    backward = [r for r in records if r.backward]
    assert backward and any(r.line.endswith(f"{FILE}:{_line(loss, 'ag.tanh')}") for r in backward)
    assert all(not r.backward for r in records[:2])


def test_dump_refuses_a_call_that_runs_no_graph():
    with pytest.raises(TypeError, match="ran no compiled function"):
        ag.debug.dump(lambda x: x + 1, np.ones(2))


def test_profile_gives_time_per_line_and_per_op():
    profile = ag.debug.profile(train, np.array([3.0, 4.0]), np.int64(4), repeat=3)
    ops = {row[0]: row for row in profile.ops}
    assert ops["Log"][1] == 12 and "Const" not in ops  # 4 iterations x 3 runs; constants cost nothing
    assert all(row[2] > 0 for row in profile.ops)
    assert [row[2] for row in profile.lines] == sorted((row[2] for row in profile.lines), reverse=True)
    assert sum(row[2] for row in profile.lines) == pytest.approx(sum(row[2] for row in profile.ops))
    text = str(profile)
    assert "time per source line" in text and "time per op" in text and "total = total + ag.log(w)" in text


def test_debug_tools_run_a_loaded_function(tmp_path):
    w, steps = np.array([1.0, 2.0]), np.int64(6)
    train(w, steps)
    ag.save(train, str(tmp_path / "train.agz"))
    loaded = ag.load(str(tmp_path / "train.agz"))
    assert np.isnan(loaded(w, steps)[0])
    with pytest.raises(FloatingPointError, match="(?s)op Log .* iteration 3"), ag.debug.check_numerics():
        loaded(w, steps)
    records = ag.debug.dump(loaded, w, steps)
    assert [r.iteration for r in records if r.op == "Log"] == [(k,) for k in range(6)]
