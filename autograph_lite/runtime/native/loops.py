"""A While loop over scalars and small arrays of static shape as one C function.

A loop over small values (counters, Newton steps, Collatz, a [10] vector until its sum is
small) spends its time in the interpreter: each iteration is a handful of numpy calls at
~0.1-1 µs each. When every node of its condition and body (nested Cond and While
included) can be written by the renderer (render.py), the loop is one C function: loop
variables in and out through pointers (an array's buffer is a fresh copy the loop updates
in place; one of up to STACK_COPY_BYTES is copied to the stack while the loop runs), captured
scalars by value, captured arrays by pointer. The graph ops it may
contain are pure (no printing, randomness or effects), so it may run again from the start.

Tiered: the plan runs the Python loop for the first `TIER_UP_AFTER - 1` runs and
compiles the C loop at the next one, so a function called once never pays a
compile. `NativeLoop(...)(*args)` returns the loop's final values, or None when the
caller should run its Python loop (from the loop's initial values).

The C function returns a status:
- DONE: the final values are in the pointers; UNCHANGED: the body never ran, the loop
  gives its inputs back as they came (a Python int stays one);
- PAUSED: it spent its budget (`BUDGET` elements computed, nested loops counted too) and
  wrote the loop variables back at the start of an iteration of the outermost loop; it is
  called again from there. Between the calls the interpreter runs its signal handlers, so
  Ctrl-C raises KeyboardInterrupt within a few milliseconds, as in the Python loop;
- INEXACT: weak (Python) scalars are carried as int64/double, and a result that Python
  would compute differently (an int outgrowing int64, a division by zero that raises, a
  float power that overflows or turns complex), or an index numpy refuses, stops the C
  loop; the Python loop then runs the whole loop, so a result never depends on how often
  the function ran (and raises where eager raises).
"""
import ctypes
import threading

import numpy as np

from ..opdef import COND, PLACEHOLDER, WHILE
from . import cexpr, compiler
from .entry import BODY_NEVER_RAN
from .functions import (BOX, DONE, FLAGS, INEXACT, PAUSED, STATUS, TIER_UP_AFTER,  # noqa: F401
                        UNCHANGED, NativeFunction, layouts, report_flags, subclass_among, tier_up_after)
from .language import FLAG_BITS, C, Unsupported
from .render import Renderer, Val, _static_shape, placeholder_sources, size_of, zero_d_box

BUDGET = 1 << 18   # elements computed per C call: about a millisecond of simple work
DONATE_BYTES = 1 << 16  # an array start value the plan gives up to the loop from this size (a copy costs)


class Restart(Exception):
    """A loop that was given its start value's array stopped INEXACT: the array may be half
    updated, so the plan runs again from its inputs, with those loops in Python (`restarting`)."""


class _Restarting(threading.local):
    active = False  # the plan is running again after a Restart: loops given arrays run in Python


restarting = _Restarting()
STACK_COPY_BYTES = 1024  # array loop variables up to this size live on the stack while the loop runs


def _typed_by_body(node, i):
    """True if loop variable i's value after an iteration always has the loop's type: the body
    computes it with an op (not a Cond or While, whose paths may pass the value through)."""
    made_by = node.attrs["body"].outputs[i].node
    return made_by is not None and made_by.opdef not in (PLACEHOLDER, COND, WHILE)


def tracked_boxes(node):
    """The loop variables of While `node` that eager may hold as a Python float on one path and
    as a numpy float64 on another (`x = 0.0`, then `x = mid` in one branch of an `if`; or a Python
    float start that the body makes a numpy value): the C carries each as a double with a flag
    saying which box it has (render.Val.python), kept across PAUSEs in the state cell (bit i + 1;
    bit 0: resumed). Raises Unsupported for such a variable of another dtype."""
    n = len(node.attrs["body"].outputs)
    captures = [t.weak for t in node.inputs[n:]]
    python = [t.weak for t in node.inputs[:n]]  # may hold a Python number at the start of an iteration
    while True:
        made = _python_numbers(node.attrs["body"], python + captures)
        grown = [a or b for a, b in zip(python, made)]
        if grown == python:
            break
        python = grown
    tracked = []
    for i, (t, out) in enumerate(zip(node.inputs[:n], node.outputs)):
        if out.weak or out.shape != () or not python[i] or (not made[i] and not t.weak):
            continue
        if np.dtype(t.dtype) == np.dtype(out.dtype) == np.float64:
            tracked.append(i)
        elif made[i]:
            raise Unsupported(f"loop variable {i} may be a Python number or a numpy {out.dtype} depending on the path")
    if tracked and tracked[-1] >= 62:
        raise Unsupported("more than 62 loop variables")
    return tracked


def _python_numbers(graph, inputs):
    """Per output of `graph`: whether it may hold a Python number, given that per input (an op's
    result is one where it is typed weak, or keeps Python numbers and takes only such: NEP 50)."""
    python = {id(p): w for p, w in zip(graph.inputs, inputs)}
    for node in graph.nodes:
        ins = [python.get(id(t), t.weak) for t in node.inputs]
        if node.opdef is COND:
            outs = [a or b for a, b in zip(_python_numbers(node.attrs["then_branch"], ins[1:]),
                                           _python_numbers(node.attrs["else_branch"], ins[1:]))]
        elif node.opdef is WHILE:
            outs = [t.weak or w for t, w in zip(node.outputs, ins)]
        else:
            outs = [t.weak or bool(node.opdef.weak_result and ins and all(ins)) for t in node.outputs]
        python.update((id(t), w) for t, w in zip(node.outputs, outs))
    return [python.get(id(t), t.weak) for t in graph.outputs]


def passed_on(node):
    """The loop variables of While `node` that eager may give back as an argument's object (a
    0-d array or numpy scalar no branch reassigned: `out is arg`; render.zero_d_kinds "input")."""
    sources = placeholder_sources(node.graph) if node.graph is not None else {}
    return [i for i, t in enumerate(node.attrs["body"].outputs) if t.shape == () and not t.weak and
            not node.inputs[i].weak and zero_d_box(t, sources, f"loop variable {i}")[1]]


def source(node, language=None, track=True):
    """(C source of `int loop(T* vars..., captures..., [numpy loop tables, state cell])` for While
    `node` (the tables and the state cell where `tracked_boxes` or `passed_on` finds variables),
    the (ufunc, dtypes) of the numpy inner loops it calls, the loop variables whose origin it
    tracks); raises Unsupported.

    The state cell: int64s, [0] bit 0 "resumed after a PAUSE", bit i + 1 loop variable i's box
    (tracked_boxes); [1 + i] for a variable of `passed_on`: the index of the argument whose object
    it holds (-1: one computed here). `track=False` (rendered again where the tracking met code
    that does not keep it, a nested loop): no origins; 0-d arguments must then be numpy scalars."""
    emitter = cexpr.Emitter(language or C(compiler.vector_math()))
    renderer = Renderer(emitter)
    n = len(node.attrs["body"].outputs)
    tracked = tracked_boxes(node)
    origins = passed_on(node) if track else []
    params, loop_vars, captures = [], [], []
    copies = {}  # a small loop variable's local copy -> its buffer p{i}
    renderer.emit(f"int64_t ag_budget = {BUDGET};", 1)
    renderer.emit("int ag_ran = 0;  /* the body ran: loop variables have their loop types */", 1)
    for i, t in enumerate(node.inputs):
        out = node.outputs[i] if i < n else t
        # a capture is read in place, however large; so is a loop variable's buffer (a copy of its
        # start), which ops may read and store into but not make a large local of
        shape = _static_shape(t, local=False)
        dtype, t_c = np.dtype(out.dtype), emitter.language.type(out.dtype)
        if i in tracked:  # a Python float or a numpy float64: a double and its box's flag
            params.append(f"{t_c}* p{i}")
            loop_vars.append(renderer.declare(dtype, False, (), 1, f"*p{i}")._replace(python=f"ag_w{i}"))
            renderer.emit(f"int ag_w{i} = (*ag_state & 1) ? (int)((*ag_state >> {i + 1}) & 1) : {int(t.weak)};", 1)
            if i in origins:
                loop_vars[-1] = loop_vars[-1]._replace(origin=f"ag_o{i}")
                renderer.emit(f"int ag_o{i} = (*ag_state & 1) ? (int)ag_state[{i + 1}] : {i};", 1)
            continue
        if i < n and (shape != _static_shape(out, local=False) or t.dtype != out.dtype or t.weak != out.weak) and (
                shape != () or dtype == np.bool_ or not _typed_by_body(node, i)):
            # the Python loop returns such a variable as the path that last set it left it: as it
            # came in when a branch passed it through (a Python float stays one). C would convert it.
            # (A zero-trip loop returns its inputs as they came: UNCHANGED below.)
            raise Unsupported(f"loop variable {i} starts as {t.dtype}{'(weak)' * t.weak}{list(shape)} and may "
                              f"stay so or become {out.dtype}{'(weak)' * out.weak}")
        if i < n and shape == ():  # a scalar loop variable: a local, written back at the end
            params.append(f"{t_c}* p{i}")
            loop_vars.append(renderer.declare(dtype, out.weak, (), 1, f"*p{i}"))
            if i in origins:  # the argument whose object it holds (its own at the start)
                loop_vars[-1] = loop_vars[-1]._replace(origin=f"ag_o{i}")
                renderer.emit(f"int ag_o{i} = (*ag_state & 1) ? (int)ag_state[{i + 1}] : {i};", 1)
        elif i < n and 0 < size_of(shape) * dtype.itemsize <= STACK_COPY_BYTES:
            # a small array loop variable: a copy on this thread's stack, written back at the end
            # (its buffer may share a cache line with another thread's: writing it every
            # iteration would bounce that line between the cores)
            params.append(f"{t_c}* {emitter.language.restrict} p{i}")
            loop_vars.append(renderer.declare(dtype, out.weak, shape, 1))
            renderer.copy(loop_vars[-1], Val(f"p{i}", dtype, out.weak, shape, f"p{i}"), 1)
            copies[loop_vars[-1].base] = f"p{i}"
        elif i < n:  # an array loop variable: its buffer, updated in place
            params.append(f"{t_c}* {emitter.language.restrict} p{i}")
            loop_vars.append(Val(f"p{i}", dtype, out.weak, shape, f"p{i}"))
        elif shape == ():
            params.append(f"{t_c} c{i}")
            captures.append(Val(f"c{i}", dtype, t.weak, origin=None if t.weak or not origins else str(i)))
        else:
            params.append(f"const {t_c}* {emitter.language.restrict} c{i}")
            captures.append(Val(f"c{i}", dtype, t.weak, shape, f"c{i}"))

    def write_back(values):
        return " ".join(f"*p{i} = {v.expr};" if v.shape == () else
                        f"for (int64_t k = 0; k < {size_of(v.shape)}; k++) p{i}[k] = {v.expr}[k];"
                        for i, v in enumerate(values) if v.expr != f"p{i}")

    def save_boxes(resumed):
        return " ".join([f"*ag_state = {' | '.join([resumed] + [f'((int64_t)ag_w{i} << {i + 1})' for i in tracked])};"]
                        + [f"ag_state[{i + 1}] = ag_o{i};" for i in origins]) if tracked or origins else ""

    outs = renderer.while_(node, loop_vars + captures, 1, loop_vars=loop_vars, ran="ag_ran", pause=lambda values: (
        f"{write_back(values)} {save_boxes('1')} {renderer.release()} return {PAUSED} | ag_seen | ag_flags();"))
    renderer.emit(write_back(outs), 1)
    renderer.emit(save_boxes("0"), 1)
    renderer.emit(renderer.release(), 1)
    renderer.emit(f"return (ag_ran ? {DONE} : {UNCHANGED}) | ag_seen | ag_flags();", 1)
    renderer.lines[:0] = renderer.prologue()
    if renderer.inexact:
        renderer.lines += ["ag_inexact:", f"    {renderer.release()} return {INEXACT};"]
    if renderer.origin_lost and origins:
        return source(node, language, track=False)
    if renderer.numpy_loops or tracked or origins:  # the tables of numpy inner loops it calls (numpy_loops.py)
        params += ["void* const* ag_fn", "void* const* ag_data"]
    if tracked or origins:
        params.append("int64_t* ag_state")
    text = "\n".join(["#include <fenv.h>", emitter.prelude(), FLAG_BITS,
                      f"{emitter.language.entry_prefix}int loop({', '.join(params)}) {{",
                      "    ag_clear_flags();", "    int ag_seen = 0;",
                      *renderer.lines, "}", ""])
    for local, buffer in copies.items():  # a small loop variable's local copy is read as its buffer
        for found in (renderer.exact_layout, renderer.ordered_layout):
            if local in found:
                found.add(buffer)
    bases = [f"p{i}" if i < n else f"c{i}" for i in range(len(node.inputs))]
    return text, renderer.numpy_loops, origins, layouts(renderer, bases)


class NativeLoop(NativeFunction):
    """The C version of one While node, built at its TIER_UP_AFTER-th run."""

    loop = True

    def __init__(self, node, text, numpy_loops=(), origins=(), exact=(), donated=()):
        self.n = len(node.attrs["body"].outputs)
        carried = list(node.outputs) + list(node.inputs[self.n:])
        sources = placeholder_sources(node.graph) if node.graph is not None else {}
        # what the body gives (a zero-trip loop gives its inputs back as they came: UNCHANGED)
        boxes = [(BOX[t.dtype.kind], False) if t.weak else zero_d_box(t, sources, f"loop variable {i}")
                 if t.shape == () else (None, False) for i, t in enumerate(node.attrs["body"].outputs)]
        self.boxes = [box for box, _ in boxes]
        self.tracked = tracked_boxes(node)  # boxed as Python floats where the state cell's bit i + 1 says
        self.origins = list(origins)  # given back as the argument the state cell's [i + 1] names, if any
        self.state_size = 1 + self.n if self.origins else 1
        # loop variables by pointer (an array's buffer, a scalar's cell), captures read as they are
        super().__init__(text, "loop", carried, written=range(self.n), numpy_loops=numpy_loops, boxes=self.boxes,
                         donated=donated, state=bool(self.tracked or self.origins), exact=exact)
        self.entry_specs = [spec + (i + 1 if i in self.tracked else -1, i + 1 if i in self.origins else -1)
                            for i, spec in enumerate(self.entry_specs)]
        # a 0-d argument a loop variable may pass on must be a numpy scalar, as the box says, unless
        # the C tracks which argument the variable holds (then it is given back as it came)
        self.scalar_inputs = any(needs for i, (_, needs) in enumerate(boxes) if i not in self.origins)
        # Python ints may not fit the C type that carries them: (index, min, max + 1); a literal
        # too (a Python int constant of any size is a weak int64 in the graph)
        self.weak_ints = [(i, int(np.iinfo(c.dtype).min), int(np.iinfo(c.dtype).max) + 1)
                          for i, (t, c) in enumerate(zip(node.inputs, carried))
                          if t.weak and t.dtype.kind in "iu" and c.dtype.kind in "iu"]

    @classmethod
    def for_node(cls, node, donated=()):
        """(a NativeLoop for While `node`, None) or (None, why it stays on numpy). `donated`: the
        loop variables whose start arrays the plan gives up (no one reads them after the loop)."""
        return cls.attempt(lambda: cls(node, *source(node), donated=[
            i for i in donated if node.inputs[i].shape and
            np.prod(node.inputs[i].shape) * np.dtype(node.inputs[i].dtype).itemsize >= DONATE_BYTES]))

    def _python_call(self, *args):
        fn = self.fn or self.tier_up()
        if not fn or subclass_among(args) or self.laid_out_otherwise(args):
            return None
        for i, low, high in self.weak_ints:
            if not low <= args[i] < high:
                return None
        if self.scalar_inputs and not all(type(a) is not np.ndarray or a.shape for a in args):
            return None  # a 0-d array argument: the Python loop gives it back as it is
        cells, held = self.arguments(args)
        state = (ctypes.c_int64 * self.state_size)()
        if self.tracked or self.origins:
            cells += [None, None] * (not self.tables) + [state]
        status = fn(*cells)
        flags, first = status & ~STATUS, status & STATUS
        while status & STATUS == PAUSED:  # back in the interpreter: a pending Ctrl-C raises here
            status = fn(*cells)
            flags |= status & ~STATUS
        if status & STATUS == INEXACT:
            return self.finish(INEXACT, None)  # the Python loop runs from the start
        if first == UNCHANGED:  # the body never ran: the loop gives its inputs back as they came
            return self.finish(UNCHANGED | flags | BODY_NEVER_RAN, tuple(args[:self.n]))
        boxes = [float if i in self.tracked and state[0] >> (i + 1) & 1 else box for i, box in enumerate(self.boxes)]
        results = self.results(cells[:self.n], held, boxes)
        if self.origins:  # a variable holding an argument's object gives it back (eager's `out is arg`)
            results = tuple(args[state[i + 1]] if i in self.origins and state[i + 1] >= 0 else r
                            for i, r in enumerate(results))
        return self.finish(status & STATUS | flags, results)

    def finish(self, status, results):
        """The loop's final values, once the floating-point errors it raised are reported
        as numpy reports them; None (INEXACT) for the Python loop to run from the start, or
        Restart where the start value's array was given up and may be half updated."""
        if status == INEXACT:
            if self.donated:
                raise Restart()
            return None
        if status & FLAGS:
            report_flags(status & FLAGS)
        return results
