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
