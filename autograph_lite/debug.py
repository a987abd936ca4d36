"""`ag.debug`: see inside compiled graphs, pointing every finding at the user's line.

    with ag.debug.check_numerics():    # first NaN/Inf: FloatingPointError at its op and line
        train(w, x)
    records = ag.debug.dump(f, x)      # every executed node: op, line, iteration, stats, time
    print(records.where(ag.debug.has_nan_or_inf))
    ag.debug.render(f, x, path="f.svg")   # a picture: Cond/While as boxes around their sub-graphs
    print(ag.debug.profile(f, x))      # time per source line and per op

All of these run the traced graph through the reference interpreter (runtime/interpreter.py),
node by node; an ordinary call runs the lowered plan, which knows nothing of this module.
"""
import collections
import contextlib
import dataclasses
import html
import linecache
import os
import shutil
import subprocess
import time

import numpy as np

from .errors import short_location
from .function import ConcreteFunction, Function
from .runtime.devices import to_host
from .runtime.graph import Graph
from .runtime.opdef import CONST, CONTROL_FLOW
from .runtime.interpreter import Interpreter, NumericsChecker, debugging, is_numeric, value_stats
from .runtime.printing import to_dot, to_svg

__all__ = ["check_numerics", "dump", "has_nan_or_inf", "profile", "render", "Record", "Records",
           "NumericsChecker", "Interpreter"]


# --- check_numerics ----------------------------------------------------------------------

@contextlib.contextmanager
def check_numerics():
    """Inside this block, calls of compiled functions run node by node and raise FloatingPointError
    at the first NaN or Inf a node produces (an argument holding one is reported as such).

        with ag.debug.check_numerics():
            loss = train_step(w, x)   # FloatingPointError: op Log ... at model.py:12, in While
                                      # 'while' (model.py:9) iteration 41, in the forward pass
    """
    with debugging.running(NumericsChecker):
        yield


# --- dump --------------------------------------------------------------------------------

@dataclasses.dataclass
class Record:
    """One executed node: what ran, where in the user's code, and a summary of its output."""
    step: int             # position in execution order, from 0
    op: str
    name: str
    location: str         # the user's file:line (for a gradient node, where the backprop engine built it)
    iteration: tuple      # the While iterations around it, outermost first (() outside loops)
    backward: bool        # built by the gradient
    forward_location: str  # the line of the forward op this node differentiates (its own, if forward)
    shape: tuple
    dtype: str
    bytes: int
    time: float           # seconds
    min: float
    max: float
    mean: float
    nan: int
    inf: int
    unrolled: tuple = ()  # the iterations of the Python loops the trace unrolled around it, outermost first

    @property
    def line(self):
        """The user's line this node belongs to: its own, or for a gradient node its forward op's."""
        return self.forward_location


def has_nan_or_inf(record):
    """Predicate for `Records.where`: the node's output holds a NaN or an Inf."""
    return record.nan > 0 or record.inf > 0


_COLUMNS = [("step", "step", "{}"), ("op", "op", "{}"), ("node", "name", "{}"), ("line", "line", None),
            ("iter", "iteration", None), ("py iter", "unrolled", None), ("pass", "backward", None), ("shape", "shape", None),
            ("dtype", "dtype", "{}"), ("bytes", "bytes", "{}"), ("time_us", "time", None),
            ("min", "min", "{:.4g}"), ("max", "max", "{:.4g}"), ("mean", "mean", "{:.4g}"),
            ("nan", "nan", "{}"), ("inf", "inf", "{}")]


def _cell(record, attr, fmt):
    value = getattr(record, attr)
    if attr == "line":
        return short_location(value)
    if attr in ("iteration", "unrolled"):
        return ",".join(map(str, value)) or "-"
    if attr == "backward":
        return "bwd" if value else "fwd"
    if attr == "shape":
        return "-" if value is None else "[" + ",".join(map(str, value)) + "]"
    if attr == "time":
        return f"{value * 1e6:.1f}"
    return "-" if value is None else fmt.format(value)


def _table(header, rows):
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows)] if rows else list(map(len, header))
    fmt = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


class Records(list):
    """The records of `dump`, in execution order; `print(records)` shows an aligned table."""

    result = None  # what the call returned

    def where(self, predicate):
        """The records for which `predicate(record)` is true (e.g. `has_nan_or_inf`)."""
        return Records(r for r in self if predicate(r))

    def sorted_by(self, key="time"):
        """The records, largest `key` first ("time" or "bytes", or any Record field)."""
        return Records(sorted(self, key=lambda r: getattr(r, key), reverse=True))

    def by_line(self):
        """Per user source line (a gradient node counts at the forward line it differentiates):
        nodes run, total time, bytes produced, NaN/Inf counts; slowest first."""
        return _Summary.of(self, "line", lambda r: r.line)

    def by_op(self):
        """Per op: nodes run, total time, bytes produced, NaN/Inf counts; slowest first."""
        return _Summary.of(self, "op", lambda r: r.op)

    def __str__(self):
        header = [c for c, _, _ in _COLUMNS]
        return _table(header, [[_cell(r, attr, fmt) for _, attr, fmt in _COLUMNS] for r in self])

    __repr__ = __str__  # the table at the prompt too


class _Summary(list):
    """Rows (key, count, time in seconds, bytes, nan, inf), slowest first; prints as a table."""

    @classmethod
    def of(cls, records, title, key):
        groups = collections.OrderedDict()
        for r in records:
            row = groups.setdefault(key(r), [key(r), 0, 0.0, 0, 0, 0])
            row[1] += 1
            row[2] += r.time
            row[3] += r.bytes
            row[4] += r.nan
            row[5] += r.inf
        summary = cls(sorted((tuple(v) for v in groups.values()), key=lambda row: -row[2]))
        summary.title = title
        return summary

    def __str__(self):
        total = sum(row[2] for row in self) or 1.0
        rows = [[short_location(k) if self.title == "line" else k, n, f"{t * 1e6:.1f}", f"{100 * t / total:.1f}",
                 b, nan, inf] + ([_source_text(k)] if self.title == "line" else []) for k, n, t, b, nan, inf in self]
        code = ["code"] if self.title == "line" else []
        return _table([self.title, "nodes", "time_us", "%", "bytes", "nan", "inf"] + code, rows)

    __repr__ = __str__


def _source_text(location):
    """The stripped source line at 'file:line' ('' when it cannot be read)."""
    path, _, line = str(location).rpartition(":")
    return linecache.getline(path, int(line)).strip()[:60] if line.isdigit() else ""


class Recorder(Interpreter):
    """Records every executed node (Cond and While themselves excluded: their sub-graphs' nodes are
    recorded) into the class's `records`."""

    records = None

    def run_node(self, node, inputs):
        if node.opdef in CONTROL_FLOW:
            return super().run_node(node, inputs)
        start = time.perf_counter()
        outputs = super().run_node(node, inputs)
        elapsed = time.perf_counter() - start
        first = to_host(outputs[0]) if outputs else None
        numeric = [np.asarray(to_host(v)) for v in outputs if is_numeric(to_host(v))]
        lo, hi, mean, nan, inf = value_stats(first)
        for extra in numeric[1:]:
            nan, inf = nan + value_stats(extra)[3], inf + value_stats(extra)[4]
        forward = node.forward
        self.records.append(Record(
            len(self.records), node.op, node.name, node.location, tuple(k for _, k in self.iterations),
            forward is not None, forward.location if forward is not None else node.location,
            tuple(np.shape(first)) if first is not None and is_numeric(first) else None,
            np.asarray(first).dtype.name if first is not None and is_numeric(first) else type(first).__name__,
            sum(a.nbytes for a in numeric), elapsed, lo, hi, mean, nan, inf,
            tuple(k for _, k in node.unrolled or (forward.unrolled if forward is not None else ()))))
        return outputs


def dump(f, *args, optimized=False, **kwargs):
    """Call `f(*args, **kwargs)` once (a compiled function, or code calling some) through the
    interpreter; returns the Records of every executed node in execution order (loop iterations
    listed one by one). `records.result` is what the call returned. `optimized=True` runs the
    graph after the optimization passes (fused nodes) instead of the traced one.

        records = ag.debug.dump(step, w, x)
        print(records)                                  # an aligned table
        print(records.where(ag.debug.has_nan_or_inf))
        print(records.sorted_by("bytes")[:5])
        print(records.by_line())
    """
    records = Records()
    recorder = type("Recorder", (Recorder,), {"records": records, "optimized": optimized})
    with debugging.running(recorder):
        records.result = f(*args, **kwargs)
    if not records and not _ran_graph(f):
        raise TypeError(f"ag.debug.dump: calling {getattr(f, '__name__', f)!r} ran no compiled function; "
                        f"pass an @ag.function (or ag.function(f))")
    return records


def _ran_graph(f):
    return isinstance(f, (Function, ConcreteFunction))  # a graph with no nodes still ran


class Profile:
    """Time per source line and per op, measured node by node in the interpreter: relative costs
    (the plan runs the same kernels without the interpreter's few µs per node). Constants are left
    out: the plan binds them once, they cost nothing per call."""

    def __init__(self, records):
        self.records = records.where(lambda r: r.op != CONST.name)
        self.lines, self.ops = self.records.by_line(), self.records.by_op()

    def __str__(self):
        return f"time per source line:\n{self.lines}\n\ntime per op:\n{self.ops}"

    __repr__ = __str__


def profile(f, *args, repeat=1, optimized=True, **kwargs):
    """Run `f(*args, **kwargs)` `repeat` times through the interpreter; returns a Profile whose
    `lines` and `ops` are tables of time per user source line and per op (slowest first). It times
    the optimized graph, what the plan runs (folded and hoisted code); `optimized=False` the traced one.

        print(ag.debug.profile(step, w, x))
    """
    records = Records()
    for _ in range(repeat):
        records.extend(dump(f, *args, optimized=optimized, **kwargs))
    return Profile(records)


# --- pictures ----------------------------------------------------------------------------

def _graph_of(f, args, kwargs, optimized):
    if isinstance(f, Graph):
        return f
    if isinstance(f, Function):
        f = f.get_concrete_function(*args, **kwargs)
    if isinstance(f, ConcreteFunction):
        return f.optimized_graph if optimized else f.graph
    seen = []  # any other callable: the last graph its call ran

    class Capturing(Interpreter):
        def run(self, *arrays):
            seen.append(self.graph)
            return super().run(*arrays)

    with debugging.running(Capturing):
        f(*args, **kwargs)
    if not seen:
        raise TypeError(f"ag.debug.render: calling {getattr(f, '__name__', f)!r} ran no compiled function")
    return seen[-1]


def render(f, *args, path=None, optimized=False, **kwargs):
    """Write a picture of the graph `f(*args)` runs (a Function, ConcreteFunction, Graph or code
    calling one): SVG through graphviz's `dot` when it is installed, else a self-contained HTML page
    (an SVG drawn without graphviz plus the DOT source). `optimized=True` draws the graph after the
    optimization passes (fused nodes shaded). Returns the path written and prints what it wrote.

        ag.debug.render(f, x, path="f.svg")
    """
    graph = _graph_of(f, args, kwargs, optimized)
    dot = to_dot(graph)
    path = path or f"{graph.name}.svg"
    count = sum(1 for _ in graph.walk())
    if shutil.which("dot") and path.endswith(".svg"):
        svg = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True, check=True).stdout
        with open(path, "wb") as out:
            out.write(svg)
        print(f"ag.debug.render: wrote SVG of graph {graph.name} ({count} nodes) to {path}")
        return path
    if path.endswith(".svg"):
        path = path[:-4] + ".html"
    with open(path, "w", encoding="utf-8") as out:
        out.write(to_html(graph, dot))
    print(f"ag.debug.render: wrote HTML of graph {graph.name} ({count} nodes) to {path}"
          + ("" if shutil.which("dot") else " (graphviz's `dot` is not installed, so no SVG through it)"))
    return os.fspath(path)


def to_html(graph, dot=None):
    """A self-contained HTML page: the graph drawn as SVG (no graphviz needed) and its DOT source."""
    dot = dot if dot is not None else to_dot(graph)
    name = html.escape(graph.name)
    return "\n".join([
        "<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">", f"<title>graph {name}</title>",
        "<style>body{font-family:sans-serif} pre{background:#f6f6f6;padding:8px}</style></head><body>",
        f"<h1>graph {name}</h1>",
        "<p>Nodes in execution order; each Cond/While is a dashed box holding its sub-graphs; arcs on the "
        "left go from a value to its users. Shaded: fused nodes (yellow), gradient nodes (violet).</p>",
        to_svg(graph),
        "<details><summary>DOT source (paste into graphviz)</summary><pre>", html.escape(dot), "</pre></details>",
        "</body></html>", ""])
