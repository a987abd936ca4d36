"""Run a generated program eagerly and compiled, and compare everything the contract covers.

The eager run is the oracle. For each argument set the compiled function must give the
eager result (values exactly, or within a few ulp when the program uses tanh/exp; dtypes;
output structure), the same printed output, the same effects on the caller's arrays and
list, and no output sharing memory with an input where eager's does not. If eager raises,
compiled must raise. If only compiled raises, it must be a clear refusal: ConversionError,
TypeError, ValueError or NotImplementedError whose message names the program's file:line.

The compiled function is called on every argument set twice (8 calls; sets 0-2 share one
trace, so that trace runs 6 times, past the native tier-up at its 3rd run). A program with module
state (`reset`/`mutate`/`STATE`) has `STATE.acc` compared after each call that returns; after a call
that raises (eagerly and compiled) the compiled run goes on from eager's `STATE.acc`.
"""
import atexit
import contextlib
import copy
import importlib.util
import io
import itertools
import os
import shutil
import signal
import sys
import threading
import tempfile
import traceback
import warnings

import numpy as np

import autograph_lite as ag
from autograph_lite.operators import control_flow
from autograph_lite.runtime import devices

_DIR = None
_COUNTER = itertools.count()
CLEAR_ERRORS = (ag.ConversionError, TypeError, ValueError, NotImplementedError)


class Outcome:
    def __init__(self, status, detail="", program=None):
        self.status = status      # "ok", "refused", "diverged", "invalid" (eager never ended)
        self.detail = detail
        self.program = program

    def __repr__(self):
        return f"Outcome({self.status}: {self.detail})"


def scratch():
    """The folder programs are written to, made once per run and removed when the process that
    made it exits (call it before forking workers: they share it, and exit without atexit)."""
    global _DIR
    if _DIR is None:
        _DIR = tempfile.mkdtemp(prefix="ag_fuzz_")
        atexit.register(shutil.rmtree, _DIR, True)
    return _DIR


def load(source):
    """Write `source` to a fresh file and import it, so inspect.getsource works."""
    name = f"fuzz_prog_{os.getpid()}_{next(_COUNTER)}"
    path = os.path.join(scratch(), name + ".py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, path


def unload(module, path):
    sys.modules.pop(module.__name__, None)
    with contextlib.suppress(OSError):
        os.remove(path)


def _call(fn, args, seed):
    """(result, stdout, args after the call, exception) of one call on copies of `args`, numpy's
    global RandomState seeded with `seed` first (eager and compiled calls draw the same numbers)."""
    args = copy.deepcopy(args)
    np.random.seed(seed)
    out = io.StringIO()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            with contextlib.redirect_stdout(out):
                result = fn(*args)
            return result, out.getvalue(), args, None
        except Exception as e:  # noqa: BLE001 - any exception is an outcome to compare
            return None, out.getvalue(), args, e


def _stateful_call(module, fn, step, args, seed):
    """`_call` after `module.mutate(step)`; the result holds what the call left in `STATE.acc` too."""
    module.mutate(step)
    res, out, args, exc = _call(fn, args, seed)
    # copied now: a result or argument may be the array a global holds, which later calls change in place
    return copy.deepcopy((res, module.STATE.acc)), out, copy.deepcopy(args), exc


def _is_tensor_like(value):
    return isinstance(value, ag.Tensor)


def compare(eager, compiled, inexact, path="result", boxes=True):
    """None if `compiled` matches the eager oracle, else a description of the first difference
    (a result on a device is read to the host first). `boxes`: the Python types must match too
    (numpy scalar, 0-d array, Python number), as they do on the CPU; a device has no numpy scalars."""
    on_device = devices.is_device_array(compiled)
    if on_device:  # a device has no numpy scalars: its 0-d arrays are compared by dtype and value
        compiled = compiled.get()
        compiled = compiled[()] if compiled.ndim == 0 else compiled
    if _is_tensor_like(compiled):
        return f"{path}: a symbolic Tensor escaped: {compiled!r}"
    if isinstance(eager, (tuple, list, dict)):
        if type(compiled) is not type(eager):
            return f"{path}: structure {type(compiled).__name__} != eager {type(eager).__name__}"
        if len(compiled) != len(eager):
            return f"{path}: length {len(compiled)} != eager {len(eager)}"
        if isinstance(eager, dict):
            if set(eager) != set(compiled):
                return f"{path}: keys {sorted(compiled)} != eager {sorted(eager)}"
            items = [(k, eager[k], compiled[k]) for k in eager]
        else:
            items = [(i, e, c) for i, (e, c) in enumerate(zip(eager, compiled))]
        for k, e, c in items:
            diff = compare(e, c, inexact, f"{path}[{k!r}]", boxes)
            if diff:
                return diff
        return None
    if eager is None or isinstance(eager, str):
        return None if compiled == eager and type(compiled) is type(eager) else \
            f"{path}: {compiled!r} != eager {eager!r}"
    if not isinstance(compiled, (bool, int, float, np.ndarray, np.generic)):
        return f"{path}: compiled gave a {type(compiled).__name__}: {compiled!r}"
    if type(compiled) is not type(eager) and boxes and not on_device:  # the box: numpy scalar, 0-d array, Python number
        return f"{path}: type {type(compiled).__name__} != eager {type(eager).__name__} (compiled {compiled!r}, " \
               f"eager {eager!r})"
    e, c = np.asarray(eager), np.asarray(compiled)
    if type(eager) in (bool, int, float):
        # on a device a Python scalar may come back as a 0-d value of the same kind (tests/helpers.py)
        kinds = {bool: "b", int: "iu", float: "f"}[type(eager)]
        if c.dtype.kind not in kinds:
            return f"{path}: dtype {c.dtype} for eager Python {type(eager).__name__} {eager!r}"
    elif c.dtype != e.dtype:
        return f"{path}: dtype {c.dtype} != eager {e.dtype} (compiled {c!r}, eager {e!r})"
    if c.shape != e.shape:
        return f"{path}: shape {c.shape} != eager {e.shape}"
    if not _values_equal(e, c, inexact):
        return f"{path}: value {c!r} != eager {e!r}"
    return None


def _values_equal(e, c, inexact):
    if e.dtype.kind == "f" and c.dtype.kind == "f":
        if inexact:
            rtol = 1e-6 if np.finfo(e.dtype).bits <= 32 else 1e-12
            return bool(np.allclose(c, e, rtol=rtol, atol=0, equal_nan=True))
        same = np.array_equal(c, e, equal_nan=True)
        # -0.0 and +0.0 are different results (IEEE: x + 0.0 is +0.0 for x = -0.0)
        zeros = (e == 0) & (c == 0)
        return bool(same and np.array_equal(np.signbit(e[zeros]), np.signbit(c[zeros])))
    return bool(np.array_equal(c.astype(e.dtype) if c.dtype.kind == e.dtype.kind else c, e))


def _arrays(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v)
    else:
        yield value   # one entry per leaf, so eager's and compiled's lists line up


def _aliases(result, args):
    return [isinstance(r, np.ndarray)
            and any(np.shares_memory(r, a) for a in args if isinstance(a, np.ndarray))
            for r in _arrays(result)]


def clear_refusal(exc, path):
    """A refusal the contract accepts: a clear error type naming the program's file:line."""
    if not isinstance(exc, CLEAR_ERRORS):
        return False
    text = str(exc)
    if isinstance(exc, ag.ConversionError):
        # the location may be in a note ("while tracing f, at file:line")
        text = "\n".join([text] + list(getattr(exc, "__notes__", [])))
    base = os.path.basename(path)
    return f"{base}:" in text or f"{path}:" in text


class ProgramTimeout(BaseException):
    """A program that did not finish (its loops are bounded, so eager always does)."""


def _alarm(signum, frame):
    raise ProgramTimeout()


def compiled_on(device):
    """A `compile_fn` whose compiled calls run with `device` the default (ag.function for 'cpu')."""
    if device == "cpu":
        return ag.function

    def compile_fn(fn):
        compiled = ag.function(fn)

        def call(*args, **kwargs):
            with ag.device(device):
                return compiled(*args, **kwargs)
        return call
    compile_fn.exact_boxes = False  # a device has no numpy scalars: results compared by dtype and value
    return compile_fn


def run_program(program, rounds=2, compile_fn=None, timeout_s=60):
    """Outcome of `program` (a grammar.Program); `compile_fn` defaults to ag.function."""
    try:
        module, path = load(program.source)
    except Exception as e:  # noqa: BLE001 - a shrinking step left a module that does not load
        return Outcome("invalid", f"the program does not load: {_describe(e)}", program)
    use_alarm = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if use_alarm:
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(timeout_s)
    phase = []   # "eager" while the eager runs go, then "compiled"
    try:
        with _staging(program):
            return _run(module, path, program, rounds, compile_fn or ag.function, phase)
    except ProgramTimeout:
        if phase[-1:] == ["compiled"]:
            return Outcome("diverged", f"hang: the compiled run did not finish in {timeout_s} s", program)
        # not the compiler's: the program is outside the grammar's contract (its loops are bounded)
        return Outcome("invalid", f"the eager run did not finish in {timeout_s} s: a grammar bug", program)
    finally:
        if use_alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        unload(module, path)


def _describe(exc):
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300] if exc else "no exception"


def _run(module, path, program, rounds, compile_fn, phase):
    fn = module.f
    stateful = hasattr(module, "reset")  # outside state: changed between calls, compared after each
    if stateful:
        try:
            module.reset()
            module.mutate(0)
            module.STATE.acc
        except Exception:  # noqa: BLE001 - a shrinking step removed part of the state helpers
            return Outcome("invalid", "the program's module-level state lost a part (a shrinking step)", program)
    sequence = [(rnd, i, args) for rnd in range(rounds) for i, args in enumerate(program.inputs)]
    phase.append("eager")
    if stateful:
        module.reset()
        eager = [_stateful_call(module, fn, step, args, i) for step, (_, i, args) in enumerate(sequence)]
    else:
        eager = [_call(fn, args, i) for i, args in enumerate(program.inputs)]
    phase.append("compiled")
    return _run_compiled(fn, module, path, program, compile_fn, stateful, sequence, eager)


@contextlib.contextmanager
def _staging(program):
    """For a `staged_range` program, Python range loops stage their rest after the first iteration,
    in the eager run's own traces too (`ag.grad` of a helper traces it: fuzzer seed 1206003998,
    whose unrolled trace refused what the staged one compiled)."""
    if "staged_range" not in program.flags:
        yield
        return
    saved = control_flow.STAGE_AFTER_NODES, control_flow.STAGE_AT_LEAST
    control_flow.STAGE_AFTER_NODES, control_flow.STAGE_AT_LEAST = 0, 1
    try:
        yield
    finally:
        control_flow.STAGE_AFTER_NODES, control_flow.STAGE_AT_LEAST = saved


def _run_compiled(fn, module, path, program, compile_fn, stateful, sequence, eager):
    compiled_fn = compile_fn(fn)
    boxes = getattr(compile_fn, "exact_boxes", True) and devices.current() is devices.CPU
    calls = 0
    if stateful:
        module.reset()
    for step, (rnd, i, args) in enumerate(sequence):
        calls += 1
        if stateful:
            e_res, e_out, e_args, e_exc = eager[step]
            c_res, c_out, c_args, c_exc = _stateful_call(module, compiled_fn, step, args, i)
        else:
            e_res, e_out, e_args, e_exc = eager[i]
            c_res, c_out, c_args, c_exc = _call(compiled_fn, args, i)
        where = f"input set {i}, call {calls}"
        if c_exc is not None and e_exc is None:
            if clear_refusal(c_exc, path):
                return Outcome("refused", _describe(c_exc), program)
            tb = "".join(traceback.format_exception(c_exc)[-6:])
            return Outcome("diverged", f"{where}: compiled raised, eager returned {e_res!r}:\n"
                           f"{tb}", program)
        if e_exc is not None:
            if c_exc is None:
                return Outcome("diverged", f"{where}: eager raised {_describe(e_exc)}; "
                               f"compiled returned {c_res!r}", program)
            if stateful:
                # what a call that raises leaves in outside state is not compared (eagerly the writes
                # before the error stay; a refused trace restores the state): the next calls start
                # from eager's (fuzzer seed 1137004384)
                module.STATE.acc = copy.deepcopy(e_res[1])
            continue
        diff = compare(e_res, c_res, program.inexact, boxes=boxes)
        if diff is None and c_out != e_out:
            diff = f"printed output {c_out!r} != eager {e_out!r}"
        if diff is None:
            for name, ea, ca in zip("xynsl", e_args, c_args):
                d = compare(ea, ca, False, f"argument {name} after the call")
                if d:
                    diff = d
                    break
        if diff is None:
            e_alias = _aliases(e_res, e_args)
            c_alias = _aliases(c_res, c_args)
            if any(c and not e for e, c in zip(e_alias, c_alias)):
                diff = "an output shares memory with an input array (eager's does not)"
        if diff is not None:
            return Outcome("diverged", f"{where}: {diff}\n  eager:    {e_res!r}\n"
                           f"  compiled: {c_res!r}", program)
    return Outcome("ok", "", program)
