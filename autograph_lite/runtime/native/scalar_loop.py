"""A While loop over scalars as one C function.

A loop whose every value is a 0-d number (counters, Newton steps, Collatz) spends its
time in the interpreter: each iteration is a handful of numpy scalar operations at
~50 ns each. When every node of its condition and body (nested Cond and While
included) has a C translation (`cexpr`), the loop is written as C: loop variables
in and out through pointers, captured scalars by value.

Tiered: the plan runs the Python loop for the first `TIER_UP_AFTER - 1` runs and
compiles the C loop at the next one, so a function called once never pays a
compile. `NativeLoop(...)(*args)` returns the loop's final values, or None while the
caller should run its Python loop.

Weak (Python) scalars are carried as int64/double, so a weak int that would outgrow
int64 wraps here where Python's would not.
"""
import ctypes
import itertools
import threading

import numpy as np

from . import cexpr, compiler
from .elementwise import _CTYPES_SCALAR, as_number

TIER_UP_AFTER = 3

_BOX = {"b": bool, "i": int, "u": int, "f": float}


def source(node):
    """C source of `void loop(T* vars..., C captures...)` for While `node`; raises cexpr.Unsupported."""
    writer = _Writer(cexpr.Emitter(compiler.vector_math()))
    n = len(node.attrs["body"].outputs)
    params, values = [], []
    for i, t in enumerate(node.inputs):
        _check_scalar(t)
        t_c = cexpr.c_type(t.dtype)
        params.append(f"{t_c}* p{i}" if i < n else f"{t_c} c{i}")
        values.append(cexpr.Value(f"(*p{i})" if i < n else f"c{i}", np.dtype(t.dtype), t.weak))
    outs = writer.while_(node, values, 1)
    writer.lines += [f"    *p{i} = {v.expr};" for i, v in enumerate(outs)]
    return "\n".join([writer.emitter.prelude(), f"void loop({', '.join(params)}) {{",
                      *writer.lines, "}", ""])


def _check_scalar(t):
    if t.shape != ():
        raise cexpr.Unsupported(f"a value of shape {t.shape}")


class _Writer:
    def __init__(self, emitter):
        self.emitter, self.lines, self.counter = emitter, [], itertools.count()

    def local(self, t, indent, expr=None):
        """A C local for tensor `t` (declared, and set to `expr` if given)."""
        _check_scalar(t)
        name = f"v{next(self.counter)}"
        init = f" = {expr}" if expr is not None else ""
        self.lines.append("    " * indent + f"{cexpr.c_type(t.dtype)} {name}{init};")
        return cexpr.Value(name, np.dtype(t.dtype), t.weak)

    def graph(self, graph, inputs, indent):
        """Emit `graph`'s nodes with `inputs` bound to its placeholders; its outputs' Values."""
        values = {id(t): v for t, v in zip(graph.inputs, inputs)}
        for node in graph.nodes:
            if len(node.outputs) != 1 and node.op not in ("Cond", "While"):
                raise cexpr.Unsupported(f"{node.op} with {len(node.outputs)} outputs")
            ins = [values[id(t)] for t in node.inputs]
            if node.op == "Const":
                out = node.outputs[0]
                _check_scalar(out)
                value = cexpr.Value(cexpr.literal(np.asarray(node.attrs["value"]).item(), out.dtype),
                                    np.dtype(out.dtype), out.weak)
                outs = [value]
            elif node.op == "Cond":
                outs = self.cond(node, ins, indent)
            elif node.op == "While":
                outs = self.while_(node, ins, indent)
            else:
                out = node.outputs[0]
                outs = [self.local(out, indent, self.emitter.op(node.op, ins, out.dtype))]
            values.update((id(t), v) for t, v in zip(node.outputs, outs))
        return [values[id(t)] for t in graph.outputs]

    def assign(self, targets, values, indent):
        pad = "    " * indent
        # through temporaries: `a, b = b, a` must read both before writing either
        temps = [self.local_like(t, v, indent) for t, v in zip(targets, values)]
        self.lines += [f"{pad}{t.expr} = {v.expr};" for t, v in zip(targets, temps)]

    def local_like(self, target, value, indent):
        name = f"v{next(self.counter)}"
        self.lines.append("    " * indent + f"{cexpr.c_type(target.dtype)} {name} = "
                          f"{self.emitter.cast(value, target.dtype)};")
        return cexpr.Value(name, target.dtype, target.weak)

    def cond(self, node, ins, indent):
        outs = [self.local(t, indent) for t in node.outputs]
        pad = "    " * indent
        self.lines.append(f"{pad}if ({self.emitter.cast(ins[0], np.bool_)}) {{")
        self.assign(outs, self.graph(node.attrs["then_branch"], ins[1:], indent + 1), indent + 1)
        self.lines.append(f"{pad}}} else {{")
        self.assign(outs, self.graph(node.attrs["else_branch"], ins[1:], indent + 1), indent + 1)
        self.lines.append(f"{pad}}}")
        return outs

    def while_(self, node, ins, indent):
        cond, body = node.attrs["cond"], node.attrs["body"]
        n = len(body.outputs)
        loop_vars = [self.local(t, indent, self.emitter.cast(v, t.dtype))
                     for t, v in zip(node.outputs, ins[:n])]
        pad = "    " * indent
        self.lines.append(f"{pad}for (;;) {{")
        (pred,) = self.graph(cond, loop_vars + ins[n:], indent + 1)
        self.lines.append(f"{pad}    if (!{self.emitter.cast(pred, np.bool_)}) break;")
        self.assign(loop_vars, self.graph(body, loop_vars + ins[n:], indent + 1), indent + 1)
        self.lines.append(f"{pad}}}")
        return loop_vars


class NativeLoop:
    """The C version of one While node, built at its TIER_UP_AFTER-th run."""

    def __init__(self, node, text):
        self.text, self.runs, self.fn = text, 0, None
        self.n = len(node.attrs["body"].outputs)
        self.var_types = [_CTYPES_SCALAR[cexpr.c_type(t.dtype)] for t in node.inputs[:self.n]]
        self.arg_types = ([ctypes.POINTER(c) for c in self.var_types] +
                          [_CTYPES_SCALAR[cexpr.c_type(t.dtype)] for t in node.inputs[self.n:]])
        self.boxes = [_BOX[t.dtype.kind] if t.weak else t.dtype.type for t in node.outputs]
        self._lock = threading.Lock()

    @classmethod
    def for_node(cls, node):
        """A NativeLoop for While `node`, or None if it is not all scalars C can compute."""
        if not compiler.enabled():
            return None
        try:
            return cls(node, source(node))
        except cexpr.Unsupported:
            return None

    def __call__(self, *args):
        fn = self.fn
        if fn is None:
            with self._lock:
                self.runs += 1
                if self.runs < TIER_UP_AFTER or self.fn is False:
                    return None
                fn = self.fn = self._build() or False
            if fn is False:
                return None
        cells = [c(as_number(v)) for c, v in zip(self.var_types, args)]
        fn(*cells, *[as_number(v) for v in args[self.n:]])
        return tuple(box(c.value) for box, c in zip(self.boxes, cells))

    def _build(self):
        library = compiler.load(self.text)
        if library is None:
            return None
        fn = library.loop
        fn.restype, fn.argtypes = None, self.arg_types
        return fn
