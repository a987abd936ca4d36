"""numpy floating-point warnings reported at the user's line, once per call site.

numpy reports a floating-point error (divide by zero, overflow, invalid value) from the
Python frame that called the ufunc: inside this package for an eager `ag.*` op, a line
of generated plan for a compiled one. Ops whose OpDef names `float_errors` run with
numpy's 'call' mode in place of 'warn'; the handler warns with `warnings.warn_explicit`
at the user's `file:line` (a node's own location in a plan), so the default filter shows
each once per call site, as numpy does. The user's own settings are kept: 'ignore',
'raise' and 'print' act as numpy's do, and a user's 'call'/'log' handler is left alone.
"""
import functools
import sys
import warnings
import weakref

import numpy as np

from .. import errors
from .boxes import ARRAY, box_of
from .opdef import CONTROL_FLOW, REGISTRY

try:  # numpy >= 2: the error state is a context variable; swapping it costs a few hundred ns
    from numpy._core._ufunc_config import _extobj_contextvar as _STATE
except ImportError:  # pragma: no cover - older numpy: np.errstate, about 1.5 us
    _STATE = None

_CACHE_LIMIT = 64


class Reporter:
    """Runs calls with the user's 'warn' settings turned into a call of `locate`.

    `locate(frame, kind)` gives (op name, user `file:line`, module globals or None) for an
    error of `kind` ('divide by zero') raised while `frame` (the innermost Python frame) runs.
    """

    def __init__(self, locate):
        self.locate = locate
        self._states = {}  # id(user's error state) -> (that state, ours or None)
        # the error states we make hold the handler, and we hold them: a weak reference
        # back keeps that a chain, not a cycle the collector cannot see through numpy's state
        self._handler = _handler_for(weakref.ref(self))

    def _state_for(self, current):
        hit = self._states.get(id(current))
        if hit is not None and hit[0] is current:
            return hit[1]
        modes = np.geterr()
        ours = None
        if "warn" in modes.values() and not {"call", "log"} & set(modes.values()):
            ours = {k: "call" if v == "warn" else v for k, v in modes.items()}
            if _STATE is not None:
                with np.errstate(call=self._handler, **ours):
                    ours = _STATE.get()
        if len(self._states) >= _CACHE_LIMIT:
            self._states.clear()
        self._states[id(current)] = (current, ours)  # holding `current` keeps its id unique
        return ours

    def call(self, fn, *args):
        """`fn(*args)`, its floating-point warnings reported where `locate` says."""
        current = _STATE.get() if _STATE is not None else tuple(np.geterr().items())
        ours = self._state_for(current)
        if ours is None:
            return fn(*args)
        if _STATE is None:  # pragma: no cover
            with np.errstate(call=self._handler, **ours):
                return fn(*args)
        token = _STATE.set(ours)
        try:
            return fn(*args)
        finally:
            _STATE.reset(token)

    def wrap(self, fn):
        """`fn` reporting as `call` does, in one frame (the common case costs two context-variable
        swaps: it runs on every eager op and every plan call that can warn)."""
        if _STATE is None:  # pragma: no cover
            return functools.partial(self.call, fn)
        from .native import entry
        module = entry.loaded()
        if module is not None:  # the same wrapper in C (a third of the cost), once the module is loaded
            return module.Reporting(fn, self._state_for, _STATE)
        get, set_, reset, state_for = _STATE.get, _STATE.set, _STATE.reset, self._state_for
        last = [(None, None)]  # (the user's state seen last, ours for it): one item, for threads

        def reporting(*args):
            current = get()
            seen = last[0]
            if current is seen[0]:
                ours = seen[1]
            else:
                ours = state_for(current)
                last[0] = current, ours
            if ours is None:
                return fn(*args)
            token = set_(ours)
            try:
                return fn(*args)
            finally:
                reset(token)
        reporting.__wrapped__ = fn
        return reporting


def _handler_for(reporter_ref):
    def handler(kind, flag):
        reporter = reporter_ref()
        if reporter is not None:
            name, location, module_globals = reporter.locate(sys._getframe(1), kind)
            warn_at(f"{kind} encountered in {name}", location, module_globals)
    return handler


def warn_at(message, location, module_globals=None, category=RuntimeWarning):
    """A RuntimeWarning (or `category`) at `location` ('file:line'), filtered and de-duplicated as
    numpy's are."""
    filename, _, line = location.rpartition(":")
    if not line.isdigit():
        filename, line = location, "0"
    module_globals = module_globals if module_globals is not None else _module_globals(filename)
    registry = module_globals.setdefault("__warningregistry__", {})
    module = module_globals.get("__name__") or filename.removesuffix(".py")
    warnings.warn_explicit(message, category, filename, int(line), module=module, registry=registry)


_globals_of_file = {}  # file name -> its module's globals (or a registry of our own)


def _module_globals(filename):
    """The globals of the module loaded from `filename`, where a warning there is registered
    (so eager and compiled runs of one line share numpy's once-per-line)."""
    found = _globals_of_file.get(filename)
    if found is None:
        module = next((m for m in list(sys.modules.values())
                       if getattr(m, "__file__", None) == filename), None)
        found = _globals_of_file[filename] = vars(module) if module is not None else {}
    return found


def user_frame_location(frame):
    """(user 'file:line', the frame's globals or None) of the innermost user frame from `frame`."""
    while frame is not None:
        code = frame.f_code
        mapped = errors.mapped_location(code.co_filename, frame.f_lineno)
        if mapped:
            return mapped, frame.f_globals
        if not errors.is_internal_file(code.co_filename) and "threading.py" not in code.co_filename:
            return f"{code.co_filename}:{frame.f_lineno}", frame.f_globals
        frame = frame.f_back
    return "<unknown>:0", None


_eager = {}  # numpy's name for an op -> the Reporter of its eager calls


def eager_reporter(name):
    """The Reporter for eager calls of ops numpy names `name` (e.g. 'divide')."""
    reporter = _eager.get(name)
    if reporter is None:
        reporter = _eager[name] = Reporter(lambda frame, kind: (name, *user_frame_location(frame)))
    return reporter


def report_eagerly(opdef, kernel):
    """`kernel` wrapped so its floating-point warnings point at the user's line (as is if the op has none)."""
    if not opdef.float_errors:
        return kernel
    return eager_reporter(opdef.float_errors).wrap(kernel)


def plan_reporter(plan):
    """A Reporter for a plan: an error is reported at the location of the node on the plan's line."""
    plan_ref, filename = weakref.ref(plan), plan.filename  # no cycle: the plan holds the reporter

    def error_name(node):
        if node.op == "FusedElementwise":  # the first step that can raise one
            return next(filter(None, (_float_errors(op) for op, _, _ in node.attrs["steps"])), None)
        return _float_errors(node.op)

    def inner(node, kind):
        """For a loop run as C (one plan line): the first node inside it that can raise `kind`
        (the loop body before its condition)."""
        if node.opdef not in CONTROL_FLOW:
            return node
        inside = [n for sub in reversed(node.subgraphs()) for n in sub.walk() if error_name(n)]
        likely = [n for n in inside if error_name(n) in _LIKELY.get(kind, ())]
        return (likely or inside or [node])[0]

    def locate(frame, kind):
        step = fused_step(frame)
        plan_frame = frame
        while plan_frame is not None and plan_frame.f_code.co_filename != filename:
            plan_frame = plan_frame.f_back
        plan = plan_ref()
        nodes = []
        if plan_frame is not None and plan is not None:  # the expression running: its columns
            _, _, col, end_col = _positions(plan_frame.f_code)[plan_frame.f_lasti // 2]
            nodes = plan.nodes_at(plan_frame.f_lineno, col, end_col)
        named = [(error_name(n), n) for n in (inner(n, kind) for n in nodes)]
        name, node = next(((e, n) for e, n in named if e), (None, nodes[0] if nodes else None))
        name = step or name or (node.opdef.ufunc if node is not None else None)  # -x of an int8: 'negative'
        if node is None or not node.location:
            return name or "a compiled function", *user_frame_location(frame)
        if name and scalar_math(node):
            name = f"scalar {name}"
        return name or node.op, node.location, None
    return Reporter(locate)


def scalar_math(node):
    """Whether eager numpy computes `node` with its scalar math (a Python operator on numpy scalars: the
    plan's spelling, or its kernel, `abs`), whose warnings say "in scalar add" where the ufunc's say "in add"."""
    from .lowering import spelling  # lowering imports this module
    return (spelling(node.opdef) is not None or node.opdef.weak_result) and bool(node.inputs) \
        and all(i.shape == () and box_of(i) != ARRAY for i in node.inputs) and not all(i.weak for i in node.inputs)


@functools.lru_cache(maxsize=256)
def _positions(code):
    return list(code.co_positions())


# Native code (runtime/native/) reads the CPU's floating-point flags itself (<fenv.h>; it writes
# comparisons quietly, so only an op making a NaN raises 'invalid') and reports each raised one
# here, through numpy, as a ufunc would have.
_TRIGGER = {"divide": lambda: np.divide(np.float64(1.0), np.float64(0.0)),
            "over": lambda: np.multiply(np.float64(1e308), np.float64(10.0)),
            "invalid": lambda: np.subtract(np.float64(np.inf), np.float64(np.inf))}


def report(kind):
    """Report a floating-point error of `kind` ('divide', 'over', 'invalid') that native code
    raised, through numpy, from the caller's frame (a plan line: the Reporter names the op)."""
    _TRIGGER[kind]()


# which ops most likely raised an error of a kind, when only a whole loop is known to have
_LIKELY = {"divide by zero": ("divide", "floor_divide", "remainder", "log", "power"),
           "overflow": ("exp", "multiply", "power", "square", "add", "subtract", "divide", "matmul", "floor_divide"),
           "invalid value": ("divide", "log", "sqrt", "power", "subtract", "add", "multiply", "remainder")}


def may_raise(graph):
    """True if a node of `graph` (or of its sub-graphs) can raise a floating-point error."""
    return any(_float_errors(n.op) or n.op == "FusedElementwise" for n in graph.walk())


def float_errors_of(node):
    """True if `node` itself (not its sub-graphs) can raise a floating-point error."""
    return bool(_float_errors(node.op)) or node.op == "FusedElementwise"


_fused_steps = {}  # the file name of a fused chain's step-by-step code -> {line: the op of its step}


def name_steps(filename, ops):
    """Record which op each line of a fused chain's generated code (runtime/fused.py) runs."""
    _fused_steps[filename] = ops


def fused_step(frame):
    """numpy's name for the op of the fused chain's step running in `frame` or a frame it called
    from, or None: a chain computed step by step (its C raised a flag) warns as the op that did."""
    while frame is not None:
        steps = _fused_steps.get(frame.f_code.co_filename)
        if steps is not None:
            op = steps.get(frame.f_lineno)
            return _float_errors(op) if op else None
        frame = frame.f_back
    return None


def _float_errors(op):
    opdef = REGISTRY.get(op)  # Const, Placeholder, Cond and While have none
    return opdef.float_errors if opdef is not None else None
