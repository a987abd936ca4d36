"""A While loop over scalars as one C function.

A loop whose every value is a 0-d number (counters, Newton steps, Collatz) spends its
time in the interpreter: each iteration is a handful of numpy scalar operations at
~50 ns each. When every node of its condition and body (nested Cond and While
included) has a C translation (`cexpr`), the loop is written as C: loop variables
in and out through pointers, captured scalars by value. The graph ops it may contain
are pure (no printing, randomness or effects), so it may run again from the start.

Tiered: the plan runs the Python loop for the first `TIER_UP_AFTER - 1` runs and
compiles the C loop at the next one, so a function called once never pays a
compile. `NativeLoop(...)(*args)` returns the loop's final values, or None when the
caller should run its Python loop (from the loop's initial values).

The C function returns a status:
- DONE: the final values are in the pointers;
- PAUSED: it ran `BUDGET` iterations (those of nested loops counted too) and wrote the
  loop variables back at the start of an iteration of the outermost loop; it is called
  again from there. Between the calls the interpreter runs its signal handlers, so
  Ctrl-C raises KeyboardInterrupt within a few milliseconds, as in the Python loop;
- INEXACT: weak (Python) scalars are carried as int64/double, and a result that Python
  would compute differently (an int outgrowing int64, a division by zero that raises, a
  float power that overflows or turns complex) stops the C loop; the Python loop then
  runs the whole loop, so a result never depends on how often the function ran.
"""
import ctypes
import itertools
import threading

import numpy as np

from . import cexpr, compiler
from .elementwise import _CTYPES_SCALAR, as_number

TIER_UP_AFTER = 3
BUDGET = 1 << 18   # iterations per C call: about a millisecond of simple scalar work
DONE, PAUSED, INEXACT = 0, 1, 2

_BOX = {"b": bool, "i": int, "u": int, "f": float}


def source(node):
    """C source of `int loop(T* vars..., C captures...)` for While `node`; raises cexpr.Unsupported."""
    writer = _Writer(cexpr.Emitter(compiler.vector_math()))
    n = len(node.attrs["body"].outputs)
    params, values = [], []
    for i, t in enumerate(node.inputs):
        _check_scalar(t)
        if i < n:  # loop variables are passed in their loop dtype (NativeLoop converts them)
            if t.dtype != node.outputs[i].dtype and np.dtype(node.outputs[i].dtype) == np.bool_:
                raise cexpr.Unsupported("a loop variable that becomes a bool")
            t = node.outputs[i]
        t_c = cexpr.c_type(t.dtype)
        params.append(f"{t_c}* p{i}" if i < n else f"{t_c} c{i}")
        values.append(cexpr.Value(f"(*p{i})" if i < n else f"c{i}", np.dtype(t.dtype), t.weak))
    writer.lines.append(f"    int64_t ag_budget = {BUDGET};")
    outs = writer.while_(node, values, 1, pause=[f"p{i}" for i in range(n)])
    writer.lines += [f"    *p{i} = {v.expr};" for i, v in enumerate(outs)]
    writer.lines.append(f"    return {DONE};")
    if writer.inexact:
        writer.lines += ["ag_inexact:", f"    return {INEXACT};"]
    return "\n".join([writer.emitter.prelude(), f"int loop({', '.join(params)}) {{",
                      *writer.lines, "}", ""])


def _check_scalar(t):
    if t.shape != ():
        raise cexpr.Unsupported(f"a value of shape {t.shape}")


class _Writer:
    def __init__(self, emitter):
        self.emitter, self.lines, self.counter = emitter, [], itertools.count()
        self.inexact = False  # some result may be one Python computes differently: `ag_inexact`

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
            if node.op == "CheckFits":
                # a Python int numpy would refuse for an array dtype (NEP 50): the Python loop
                # runs instead and raises OverflowError where eager does
                info = np.iinfo(node.attrs["dtype"])
                (value,) = [values[id(t)] for t in node.inputs]
                self.bail(f"{value.expr} < {int(info.min)}LL || {value.expr} > {int(info.max)}LL", indent)
                continue
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
            elif node.outputs[0].weak:
                outs = [self.weak_op(node.op, ins, node.outputs[0], indent)]
            else:
                out = node.outputs[0]
                outs = [self.local(out, indent, self.emitter.op(node.op, ins, out.dtype))]
            values.update((id(t), v) for t, v in zip(node.outputs, outs))
        return [values[id(t)] for t in graph.outputs]

    def weak_op(self, op, ins, out, indent):
        """Op `op` on Python scalars: exactly Python's result, or a jump to `ag_inexact`."""
        kind = out.dtype.kind
        a = [self.emitter.cast(v, out.dtype) for v in ins]
        python = cexpr.python_scalars(op)
        if kind in "iu" and python.overflow:  # Python ints do not wrap
            value = self.local(out, indent)
            builtin, x, y = python.overflow
            self.bail(f"__builtin_{builtin}_overflow({x.format(*a)}, {y.format(*a)}, &{value.expr})", indent)
            return value
        if kind in "iu" and python.int_guard:
            self.bail(python.int_guard.format(*a), indent)
            return self.local(out, indent, self.emitter.op(op, ins, out.dtype))
        kinds = {v.dtype.kind for v in ins}
        if cexpr.is_comparison(op) and "f" in kinds and kinds & {"i", "u"}:
            # Python compares an int with a float exactly; C rounds the int to a double
            self.bail(" || ".join(f"({v.expr} > {_EXACT_DOUBLE} || {v.expr} < -{_EXACT_DOUBLE})"
                                  for v in ins if v.dtype.kind in "iu"), indent)
        if python.exact or kind == "b":
            return self.local(out, indent, self.emitter.op(op, ins, out.dtype))
        if kind == "f" and python.float_guard == "divisor":  # x / 0 raises; int / int is exact beyond 2**53
            tests = [f"{a[1]} == 0"] + [f"({v.expr} > {_EXACT_DOUBLE} || {v.expr} < -{_EXACT_DOUBLE})"
                                        for v in ins if v.dtype.kind in "iu"]
            self.bail(" || ".join(tests), indent)
            return self.local(out, indent, self.emitter.op(op, ins, out.dtype))
        if kind == "f" and python.float_guard == "finite":  # Python raises on overflow, gives complex for (-x) ** 0.5
            value = self.local(out, indent, self.emitter.op(op, ins, out.dtype))
            self.bail(f"!isfinite({value.expr})", indent)
            return value
        raise cexpr.Unsupported(f"{op} on Python scalars")

    def bail(self, test, indent):
        self.inexact = True
        self.lines.append("    " * indent + f"if ({test}) goto ag_inexact;")

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

    def while_(self, node, ins, indent, pause=None):
        """The loop; `pause`: the pointers to write its variables to when the budget is spent."""
        cond, body = node.attrs["cond"], node.attrs["body"]
        n = len(body.outputs)
        loop_vars = [self.local(t, indent, self.emitter.cast(v, t.dtype))
                     for t, v in zip(node.outputs, ins[:n])]
        pad = "    " * indent
        self.lines.append(f"{pad}for (;;) {{")
        if pause:
            saves = " ".join(f"*{p} = {v.expr};" for p, v in zip(pause, loop_vars))
            self.lines.append(f"{pad}    if (ag_budget <= 0) {{ {saves} return {PAUSED}; }}")
        (pred,) = self.graph(cond, loop_vars + ins[n:], indent + 1)
        self.lines.append(f"{pad}    if (!{self.emitter.cast(pred, np.bool_)}) break;")
        self.lines.append(f"{pad}    ag_budget--;")
        self.assign(loop_vars, self.graph(body, loop_vars + ins[n:], indent + 1), indent + 1)
        self.lines.append(f"{pad}}}")
        return loop_vars


_EXACT_DOUBLE = "9007199254740992"   # 2**53: ints up to it are exact as doubles


class NativeLoop:
    """The C version of one While node, built at its TIER_UP_AFTER-th run."""

    def __init__(self, node, text):
        self.text, self.runs = text, 0
        self.fn = None  # the C function once built; False when it could not be (warned)
        self.n = len(node.attrs["body"].outputs)
        self.var_types = [_CTYPES_SCALAR[cexpr.c_type(t.dtype)] for t in node.outputs]
        self.arg_types = ([ctypes.POINTER(c) for c in self.var_types] +
                          [_CTYPES_SCALAR[cexpr.c_type(t.dtype)] for t in node.inputs[self.n:]])
        self.boxes = [_BOX[t.dtype.kind] if t.weak else t.dtype.type for t in node.outputs]
        # Python ints may not fit the C type that carries them: (index, min, max + 1)
        carried = list(node.outputs) + list(node.inputs[self.n:])
        self.weak_ints = [(i, int(np.iinfo(c.dtype).min), int(np.iinfo(c.dtype).max) + 1)
                          for i, (t, c) in enumerate(zip(node.inputs, carried))
                          if t.weak and t.dtype.kind in "iu" and c.dtype.kind in "iu"
                          and not (t.node is not None and t.node.op == "Const"
                                   and np.can_cast(t.dtype, c.dtype))]  # a literal was checked
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
        if not fn:
            if fn is False:
                return None
            with self._lock:
                if self.fn is None:
                    self.runs += 1
                    if self.runs >= TIER_UP_AFTER:
                        self.fn = self._build() or False
                fn = self.fn
            if not fn:
                return None
        for i, low, high in self.weak_ints:
            if not low <= args[i] < high:
                return None
        cells = [c(as_number(v)) for c, v in zip(self.var_types, args)]
        if len(args) > self.n:
            cells += [as_number(v) for v in args[self.n:]]  # captures, by value
        status = fn(*cells)
        while status == PAUSED:  # back in the interpreter: a pending Ctrl-C raises here
            status = fn(*cells)
        if status != DONE:
            return None  # INEXACT: the Python loop runs from the start
        return tuple(box(c.value) for box, c in zip(self.boxes, cells))

    def _build(self):
        fn = compiler.load(self.text, "loop")
        if fn is not None:
            fn.restype, fn.argtypes = ctypes.c_int, self.arg_types
        return fn
