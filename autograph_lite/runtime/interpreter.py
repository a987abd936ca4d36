"""A reference interpreter: runs a Graph node by node through each op's kernel.

The model is PyTorch FX's `Interpreter`: `run_node(node, inputs)` evaluates one node and a
subclass overrides it to check, time or record each value (`ag.debug` does). It runs what
the lowered plan runs (runtime/lowering.py), with the same kernels: `Const` gives its value,
`Cond` runs one branch, `While` runs its condition and body as sub-graphs, every other node
calls `opdef.kernel(xp, **attrs)`. It is the debugger's engine and the test suite's oracle
for plans (tests/test_interpreter.py); the plan stays the fast path and knows nothing of it.

Inside `debugging.running(cls)` (per thread), calls of compiled functions run through
Interpreter class `cls` instead of their plan (`ag.debug`); `NumericsChecker` is the one
`ag.debug.check_numerics` and `ag.function(..., check_numerics=True)` use.
"""
import contextlib
import threading

import numpy as np

from .. import recursion
from ..errors import short_location
from . import devices
from .opdef import COND, CONST, CONTROL_FLOW, PLACEHOLDER, WHILE


class Interpreter:
    """Runs `graph` on a device: `Interpreter(graph).run(*arrays)` returns the tuple of outputs.

    `iterations` holds, while a node runs, the While loops around it, outermost first, as
    [While node, iteration counted from 0] pairs (a condition evaluation counts to the
    iteration it decides on).

        class Counting(Interpreter):
            def run_node(self, node, inputs):
                self.count += 1
                return super().run_node(node, inputs)
    """

    optimized = False  # run through `debugging`: the optimized graph (fused nodes) instead of the traced one

    def __init__(self, graph, device=None):
        self.graph = graph
        self.device = device or devices.CPU
        self.xp = self.device.xp
        self.iterations = []
        self._kernels = {}  # id(node) -> its kernel, built once per node as the plan does
        self._nesting = None  # how deeply sub-graphs nest in the graph, once known

    def run(self, *args):
        """The graph's outputs for input arrays `args` (one per graph input)."""
        if len(args) != len(self.graph.inputs):
            raise TypeError(f"graph {self.graph.name} takes {len(self.graph.inputs)} inputs, got {len(args)}")
        if self.device is not devices.CPU:  # host arrays go to the device, as a compiled call's do
            args = [self.device.put(a) for a in args]
        if self._nesting is None:
            self._nesting = self.graph.nesting()
        # a Cond runs its branch from inside run_node: frames per level of nesting (a subclass's
        # run_node hook included); an `elif` chain of 1,000 tensor conditions nests 1,000 deep
        with recursion.headroom(FRAMES_PER_LEVEL * self._nesting):
            results = self.run_graph(self.graph, args)
        # as the plan does: a returned constant array is a copy, so the caller may change it
        return tuple(r.copy() if t.node.opdef is CONST and (isinstance(r, np.ndarray) or devices.is_device_array(r))
                     else r for t, r in zip(self.graph.outputs, results))

    def run_graph(self, graph, args):
        """Run `graph` (the top graph or a sub-graph) on `args`; returns its outputs as a list."""
        env = {id(t): v for t, v in zip(graph.inputs, args)}
        for node in graph.nodes:
            inputs = [env[id(t)] for t in node.inputs]
            try:
                outputs = self.run_node(node, inputs)
            except Exception as e:
                _note_node(e, node)
                raise
            for t, v in zip(node.outputs, outputs):
                env[id(t)] = v
        return [env[id(t)] for t in graph.outputs]

    def run_node(self, node, inputs):
        """The values of `node`'s outputs (a list) given its input values: the hook to override."""
        return getattr(self, RULES.get(node.opdef, "call_kernel"))(node, inputs)

    def run_const(self, node, inputs):
        return [self.constant(node)]

    def constant(self, node):
        value = node.attrs["value"]
        return self.device.put(value) if isinstance(value, np.ndarray) else value

    def call_kernel(self, node, inputs):
        kernel = self._kernels.get(id(node))
        if kernel is None:
            kernel = self._kernels[id(node)] = node.opdef.kernel(self.xp, **node.attrs)
        result = kernel(*inputs)
        n = len(node.outputs)
        return [] if n == 0 else [result] if n == 1 else list(result)

    def predicate(self, value):
        """A Cond's or While's condition as the host sees it (on a GPU, read by the device layer)."""
        return bool(value) if self.xp is np else bool(self.device.read_predicate(value))

    def run_cond(self, node, inputs):
        branch = node.attrs["then_branch" if self.predicate(inputs[0]) else "else_branch"]
        return self.run_graph(branch, inputs[1:])

    def run_while(self, node, inputs):
        cond, body = node.attrs["cond"], node.attrs["body"]
        n = len(body.outputs)
        state, captured = list(inputs[:n]), list(inputs[n:])
        level = [node, 0]
        self.iterations.append(level)
        try:
            while True:
                (pred,) = self.run_graph(cond, state + captured)
                if not self.predicate(pred):
                    return state
                state = self.run_graph(body, state + captured)
                level[1] += 1
        finally:
            self.iterations.pop()

    def loop_position(self):
        """Where the running node is, as text: 'While 'w' (f.py:3) iteration 2, ...' ('' outside loops)."""
        return ", ".join(f"While '{n.name}' ({short_location(n.location)}) iteration {k}"
                         for n, k in self.iterations)


FRAMES_PER_LEVEL = 12


# the interpreter's rule per node kind: the name of the Interpreter method (node, inputs) -> output
# values (a subclass may override it); every op not listed calls its kernel (`call_kernel`)
RULES = {CONST: "run_const", COND: "run_cond", WHILE: "run_while"}
NOT_RUN = {PLACEHOLDER: "a graph input: run() is given its value"}


def _note_node(exc, node):
    """Name the innermost node that raised (as FX's "While executing"), once."""
    if any(str(n).startswith("while executing") for n in getattr(exc, "__notes__", ())):
        return
    text = f"while executing {node.op} node '{node.name}' created at {node.place}"
    if hasattr(exc, "add_note"):
        exc.add_note(text)


# --- value summaries and the NaN/Inf checker ------------------------------------------------

def is_numeric(value):
    return isinstance(value, (np.ndarray, np.generic, bool, int, float, complex)) and \
        np.asarray(value).dtype.kind in "biufc"


def value_stats(value):
    """(min, max, mean, nan count, inf count) of a numeric value, min/max/mean over its finite
    values (None where there are none or the value is not numeric)."""
    value = devices.to_host(value)
    if not is_numeric(value):
        return None, None, None, 0, 0
    a = np.asarray(value)
    if a.dtype.kind == "c":
        a = np.abs(a)
    if a.dtype.kind in "fc":
        nan, inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
        finite = a[np.isfinite(a)] if nan or inf else a
    else:
        nan, inf, finite = 0, 0, a
    if finite.size == 0:
        return None, None, None, nan, inf
    return finite.min().item(), finite.max().item(), finite.astype(np.float64).mean().item(), nan, inf


def _summary(value):
    """'float32[3] min=0 max=2 nan=0 inf=1' for an error message."""
    value = devices.to_host(value)
    if not is_numeric(value):
        return type(value).__name__
    a = np.asarray(value)
    lo, hi, _, nan, inf = value_stats(a)
    return f"{a.dtype.name}{list(a.shape)} min={lo:.6g} max={hi:.6g} nan={nan} inf={inf}" if lo is not None \
        else f"{a.dtype.name}{list(a.shape)} no finite values, nan={nan} inf={inf}"


def _nonfinite(value):
    """'NaN' / 'Inf' / 'NaN and Inf' (with counts) when a float value holds them, else None."""
    value = devices.to_host(value)
    if not is_numeric(value) or np.asarray(value).dtype.kind not in "fc":
        return None
    a = np.asarray(value)
    if np.isfinite(a).all():
        return None
    nan, inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
    kinds = " and ".join(k for k, n in (("NaN", nan), ("Inf", inf)) if n)
    return f"{kinds} ({nan + inf} of {a.size} values)"


def _kinds(value):
    """The set of non-finite kinds ("nan", "inf") a numeric value holds."""
    value = devices.to_host(value)
    if not is_numeric(value) or np.asarray(value).dtype.kind not in "fc":
        return set()
    a = np.asarray(value)
    return {k for k, test in (("nan", np.isnan), ("inf", np.isinf)) if test(a).any()}


def _new_kinds(value, inputs):
    """Whether `value` holds a NaN (or Inf) while none of `inputs` does. Arguments are checked when
    the call starts and every op's output as it is made, so an input holding one got it from a
    constant the user wrote (`best = -np.inf`): passing that on is not blamed, making a new kind is."""
    made = _kinds(value)
    for v in inputs:
        made -= _kinds(v)
    return bool(made)


def _where_in_code(node):
    """'at f.py:3, in the forward pass', or for a gradient node the forward op and line it differentiates
    (its own location is the backprop engine's)."""
    if node.forward is None:
        return f"at {node.place}, in the forward pass"
    return (f"in the backward pass, in the gradient of {node.forward.op} (node '{node.forward.name}') at "
            f"{node.forward.place}")


class NumericsChecker(Interpreter):
    """Raises FloatingPointError at the first node whose output holds NaN or Inf, naming the op,
    the user's `file:line`, the While iterations around it, forward or backward, and its inputs.
    An argument holding NaN/Inf is reported as the caller's; a NaN/Inf the user wrote as a constant
    is not blamed on the ops passing it on, only on one making a new kind (NaN from `inf - inf`)."""

    def run(self, *args):
        for t, value in zip(self.graph.inputs, args):
            bad = _nonfinite(value)
            if bad:
                name = t.node.attrs.get("argument", t.node.name)
                raise FloatingPointError(
                    f"ag.debug.check_numerics: argument '{name}' of {self.graph.name} holds {bad} when the call "
                    f"starts: {_summary(value)} (input {t.node.name}); the NaN/Inf comes from the caller")
        return super().run(*args)

    def run_node(self, node, inputs):
        outputs = super().run_node(node, inputs)
        if node.opdef in CONTROL_FLOW or node.opdef is CONST:
            # a Cond's or While's values come from sub-graph nodes, already checked
            return outputs
        for t, value in zip(node.outputs, outputs):
            bad = _nonfinite(value)
            if bad and _new_kinds(value, inputs):
                raise FloatingPointError(self._message(node, t, bad, inputs))
        return outputs

    def _message(self, node, t, bad, inputs):
        lines = [f"ag.debug.check_numerics: op {node.op} (node '{node.name}') produced {bad} "
                 f"{_where_in_code(node)}"]
        where = self.loop_position()
        if where:
            lines.append(f"  in {where} (iterations counted from 0)")
        for k, (i, value) in enumerate(zip(node.inputs, inputs)):
            held = "" if not _nonfinite(value) else f" (a constant written at {i.node.location})" \
                if i.node.opdef is CONST else " (already held NaN/Inf)"
            lines.append(f"  input {k} ({i.name}): {_summary(value)}{held}")
        if len(node.outputs) > 1:
            lines.append(f"  output {t.index} of {len(node.outputs)}")
        return "\n".join(lines)


class InterpretedPlan:
    """Stands in for a lowered Plan: `fn(*arrays)` runs `graph` through `interpreter_class`."""

    def __init__(self, graph, device, interpreter_class):
        self.graph, self.device, self.interpreter_class = graph, device, interpreter_class

    def fn(self, *arrays):
        return self.interpreter_class(self.graph, self.device).run(*arrays)

    def failing_nodes(self, exc):
        return []  # the interpreter names the node in a note itself


class _Debugging:
    """Which Interpreter class compiled calls run through instead of their plan (`ag.debug`).

    A plain call reads only `active`, the number of debug blocks open in any thread; the class
    itself is per thread (`interpreter()`), so a block in one thread leaves the others' calls alone."""

    def __init__(self):
        self.active = 0
        self._local = threading.local()
        self._lock = threading.Lock()

    def interpreter(self):
        return getattr(self._local, "interpreter", None)

    @contextlib.contextmanager
    def running(self, interpreter_class):
        """Calls of compiled functions on this thread run through `interpreter_class` in this block."""
        saved, self._local.interpreter = self.interpreter(), interpreter_class
        with self._lock:
            self.active += 1
        try:
            yield
        finally:
            self._local.interpreter = saved
            with self._lock:
                self.active -= 1


debugging = _Debugging()


def debug_plan(concrete, plan, check_numerics=False):
    """The plan a call of `concrete` (a ConcreteFunction or a loaded one) runs: `plan`, or its traced
    graph (the optimized one if the class says `optimized`) on `plan`'s device through this thread's
    debug interpreter, else through NumericsChecker if `check_numerics` (`ag.function(...,
    check_numerics=True)`). Callers ask only when `debugging.active or check_numerics`."""
    cls = debugging.interpreter() or (NumericsChecker if check_numerics else None)
    if cls is None:
        return plan
    return InterpretedPlan(concrete.optimized_graph if cls.optimized else concrete.graph, plan.device, cls)
