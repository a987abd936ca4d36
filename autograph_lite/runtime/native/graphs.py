"""A whole straight-line graph over small static-shape values (an LSTM cell, a layer) as one
C function, entered once per call instead of once per op.

The renderer (render.py) writes every node; the graph's inputs come in as values (scalars)
or pointers (arrays, read in place), its outputs go out through pointers to cells or fresh
buffers. A graph with a While stays as it is (its loops are native on their own, loops.py,
and can pause for Ctrl-C; a whole graph cannot). Tiered like the loops: the Python plan runs
until the graph's `TIER_UP_AFTER`-th run. INEXACT (a Python scalar op C cannot do exactly, a
row index numpy refuses) makes that call run the Python plan, which raises where eager does;
so does FLAGGED (an op raised a floating-point flag, and numpy would warn): the plan warns at
each op's own line, as eager numpy does. Both are rare; the graph is pure, so rerunning it is.
"""
import numpy as np

from ..opdef import COND, CONST, PLACEHOLDER, WHILE
from . import cexpr, compiler
from .functions import BOX, DONE, INEXACT, NativeFunction, address, layouts, subclass_among
from .language import FLAG_BITS
from .language import C, Unsupported
from .render import Renderer, Val, _static_shape, placeholder_sources, zero_d_box


FLAGGED = 4
# nodes of a graph written as one C function at most: a Python loop unrolled into a graph of
# 100,000 stores (NPBench's seidel_2d) takes seconds to write and minutes to compile
MAX_NODES = 8192


def _ignored():
    """True if numpy would say nothing of a floating-point error of any kind here."""
    modes = np.geterr()
    return all(modes[k] == "ignore" for k in ("divide", "over", "invalid"))


def homes(graph):
    """id(tensor) -> "oJ": a matmul result (a large fresh array, pages the OS must give on every call)
    made in the buffer of output J, which elementwise ops compute from it element by element (its
    only readers, each of the output's shape): every read of an element comes before the output's
    value is written there, at the end (W5's `w1 - lr * dw1`)."""
    found = {}

    def only_here(x, shape):
        return x.shape == shape and len(x.users) == 1 and all(o is not x for o in graph.outputs)

    for j, t in enumerate(graph.outputs):
        if t.node is None or not t.node.opdef.elementwise or sum(o is t for o in graph.outputs) != 1 or t.shape == ():
            continue
        chain = [t.node]
        while chain and f"o{j}" not in found.values():
            for x in chain.pop().inputs:
                made_by = x.node
                if made_by is None or not only_here(x, t.shape):
                    continue
                if (made_by.opdef.ufunc == "matmul" or made_by.opdef.primitive == "dot") and x.dtype == t.dtype \
                        and id(x) not in found:
                    found[id(x)] = f"o{j}"
                    break
                if made_by.opdef.elementwise:
                    chain.append(made_by)
    return found


def source(graph, language=None):
    """C source of `int graph(inputs..., outputs..., [numpy loop tables])` for `graph`, and the
    numpy inner loops it calls; raises Unsupported."""
    emitter = cexpr.Emitter(language or C(compiler.vector_math()))
    renderer = Renderer(emitter)
    renderer.heap = []  # large arrays (a copy written in place, a value stored twice) on the heap
    restrict = emitter.language.restrict
    params, inputs = [], []
    for i, t in enumerate(graph.inputs):
        shape, t_c = _static_shape(t, local=False), emitter.language.type(t.dtype)
        params.append(f"{t_c} a{i}" if shape == () else f"const {t_c}* {restrict} a{i}")
        inputs.append(Val(f"a{i}", np.dtype(t.dtype), t.weak, shape, None if shape == () else f"a{i}"))
    count = 0
    for node in graph.walk():
        if node.opdef is WHILE:
            raise Unsupported("a graph with a while loop (its loops run native on their own)")
        count += 1
    if count > MAX_NODES:
        raise Unsupported(f"a graph of {count} nodes: more than one C function is written for ({MAX_NODES})")
    renderer.homes = homes(graph)
    outs = renderer.graph(graph, inputs, 1)
    sources = placeholder_sources(graph)
    for j, (t, value) in enumerate(zip(graph.outputs, outs)):
        made_by = t.node
        if not t.weak and t.shape == ():
            zero_d_box(t, sources, f"output {j}")  # raises where numpy's kind varies
        if made_by is None or made_by.opdef in (PLACEHOLDER, CONST, COND) or made_by.opdef.view is not None \
                or value.shape != _static_shape(t, local=False) or getattr(value, "python", None):
            # numpy gives back an input, a constant's copy or a view as such, and a branch may pass
            # one through (or give a Python number on one path): the Python plan does it
            raise Unsupported(f"output {j} is not a value the graph computes")
        t_c = emitter.language.type(t.dtype)
        params.append(f"{t_c}* {restrict} o{j}")
        target = Val(f"o{j}", np.dtype(t.dtype), t.weak, value.shape, f"o{j}")
        if value.shape == ():
            renderer.emit(f"*o{j} = {emitter.cast(cexpr.Value(value.expr, value.dtype, value.weak), t.dtype)};", 1)
        else:
            renderer.copy(target, value, 1)
    free = "".join(f"free({name}); " for name, _ in renderer.heap) + renderer.release() + " "
    # a floating-point flag raised: the Python plan runs the call again and warns at each op's line
    renderer.emit(f"if (ag_seen | ag_flags()) {{ {free}return {FLAGGED}; }}", 1)
    renderer.emit(f"{free}return {DONE};", 1)
    renderer.lines[:0] = [f"    {t_c}* {name} = NULL;" for name, t_c in renderer.heap] + renderer.prologue()
    if renderer.inexact:
        renderer.lines += ["ag_inexact:", f"    {free}return {INEXACT};"]
    if renderer.numpy_loops:
        params += ["void* const* ag_fn", "void* const* ag_data"]
    text = "\n".join(["#include <fenv.h>", emitter.prelude(), FLAG_BITS, f"{emitter.language.entry_prefix}int graph({', '.join(params)}) {{",
                      "    int64_t ag_budget = 0; (void)ag_budget;", "    ag_clear_flags();",
                      "    int ag_seen = 0;",
                      *renderer.lines, "}", ""])
    return text, renderer.numpy_loops, layouts(renderer, [f"a{i}" for i in range(len(graph.inputs))])


class NativeGraph(NativeFunction):
    """The C version of a straight-line graph: `native.call(*inputs)` gives its outputs, or None
    when the caller should run its Python plan (not yet hot, or INEXACT)."""

    def __init__(self, graph, text, numpy_loops=(), exact=()):
        self.n_in = len(graph.inputs)
        sources = placeholder_sources(graph)
        boxes = [(BOX[t.dtype.kind], False) if t.weak else zero_d_box(t, sources, "an output")
                 if t.shape == () else (None, False) for t in graph.outputs]
        self.boxes = [box for box, _ in boxes]
        values = list(graph.inputs) + list(graph.outputs)
        super().__init__(text, "graph", values, written=range(self.n_in, len(values)), numpy_loops=numpy_loops,
                         boxes=self.boxes, exact=exact)
        # a 0-d argument passed through to an output must be a numpy scalar, as the box says
        self.scalar_inputs = any(needs for _, needs in boxes)
        self.outputs = self.arrays[self.n_in:]  # per output: None (a scalar) or (dtype, shape)

    @classmethod
    def for_graph(cls, graph):
        """(a NativeGraph, None) or (None, why the graph stays on its Python plan)."""
        return cls.attempt(lambda: cls(graph, *source(graph)))

    def _python_call(self, *args):
        fn = self.fn or self.tier_up()
        if not fn or subclass_among(args) or self.laid_out_otherwise(args):
            return None
        if self.scalar_inputs and not all(type(a) is not np.ndarray or a.shape for a in args):
            return None  # a 0-d array argument: the plan gives it back as it is
        cells, _ = self.arguments(args, tables=False)
        buffers = []
        for ctype, array in zip(self.scalar_types[self.n_in:], self.outputs):
            if array is None:  # a scalar output: a cell the C writes
                cells.append(ctype())
            else:
                buffers.append(np.empty(array[1], array[0]))
                cells.append(address(buffers[-1]))
        status = fn(*cells, *self.tables)
        if status == INEXACT:
            return None
        arrays = iter(buffers)
        return self.finish(status, tuple(box(cell.value) if array is None else next(arrays)
                                         for box, cell, array in zip(self.boxes, cells[self.n_in:], self.outputs)))

    def finish(self, status, results):
        """The outputs, or None when numpy would warn of a floating-point error (FLAGGED): the
        Python plan runs the call again and warns at each op's line."""
        if status != DONE and not (status == FLAGGED and _ignored()):
            return None
        return results
