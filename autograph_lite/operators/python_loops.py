"""Tensor loops run as Python when the graph runs.

A `while`/`for` on a tensor whose body cannot be traced with static ranks (a loop variable changes
rank, `np.zeros(np.arange(i))` needs a rank known only at run time: `NeedsPython`) is staged as one
`PythonLoop` node (ops/python_values.py). When the graph runs, the node calls the loop's converted
test and body, as the `while`/`for` statement's Python path does, on the run's values: each
iteration is eager numpy, printing, drawing and raising as eager code does. The converted functions
are rebuilt for each run with fresh closure cells holding the run's values where the trace held
tensors (and the contents the cells had when the loop was traced), so runs do not share state.

The loop's variables come out as `PythonValue`s (ops/python_values.py): what the function does with
them later is deferred to the run too, or refused where it needs their value while tracing (which
makes a tensor loop around it run as Python too). A `for` over a PythonValue runs as Python the same
way. Arrays the loop is given are read-only to it: an in-place write to one (which eager would make
to the caller's array or a value the graph shares) raises when the graph runs. On a device the loop
runs on host copies of its values (its code is numpy code), and what it gives stays on the host.
"""
from ..errors import NeedsPython
from ..ops.python_values import PYTHON_LOOP, TRACE_ONLY, CannotRun, PythonValue, Templates, build, read_only_writes, \
    run_python, unviewed
from ..runtime.graph import Tensor
from .lists import TensorList
from .logical import Choice
from .variables import DO_RETURN, RETURN_VALUE

TRACE_ONLY.extend((TensorList, Choice))  # a loop run as Python cannot be given these


def while_loop(test, body, state, names, first, location, extra, opts, error):
    """The `while` statement's variables after a PythonLoop node running it; `first` is its first
    test, traced already. Re-raises `error` (a NeedsPython) where the loop cannot run as Python."""
    return _stage("while", (test, body, first), state, names, location, extra, opts, error)


def for_loop(iterable, extra_test, body, state, names, location, extra, opts, error=None):
    """The `for` statement's variables after a PythonLoop node running it over `iterable`, a tensor or
    a PythonValue."""
    if isinstance(iterable, Tensor):
        python_range = id(iterable) in iterable.graph.python_ranges
    elif isinstance(iterable, PythonValue):
        python_range = False
    else:
        raise error
    return _stage("for", (iterable, extra_test, body, python_range), state, names, location, extra, opts, error)


def _stage(kind, parts, state, names, location, extra, opts, error):
    why = _why_not(extra, opts)
    try:
        if why:
            raise CannotRun(why)
        loop = PythonLoop(kind, parts, tuple(state), names, location)
    except CannotRun as e:
        if error is None:
            raise NeedsPython(f"the `{kind}` loop at {location} goes over a value known only when the graph runs, "
                              f"so it runs as Python then, but it cannot: {e}") from None
        raise NeedsPython(f"{error}; it cannot run as Python either: {e}") from error
    return tuple(run_python(PYTHON_LOOP, loop, f"{kind} loop at {location}", [_LABELS.get(n, f"'{n}'") for n in names],
                            location))


# the loop variables the converter adds, in words (the variables' own names are quoted)
_LABELS = {DO_RETURN: "whether a `return` inside it ran", RETURN_VALUE: "what a `return` inside it returns"}


def _why_not(extra, opts):
    if extra:
        return (f"it carries {', '.join(repr(n) for n in extra.names)} through closure cells, items or "
                f"attributes, which a loop run as Python cannot hand back")
    if (opts or {}).get("test_binds"):
        return "its condition binds names (`:=`)"
    return None


class PythonLoop(Templates):
    """A tensor loop's converted code and what it reads (`Templates`), run as the `while`/`for`
    statement's Python path runs it, on each run's values (`run`)."""

    def __init__(self, kind, parts, state, names, location):
        super().__init__()
        self.kind, self.location = kind, location
        self.parts = tuple(self.template(p) for p in parts)
        self.state = self.template(state)
        self.outputs = len(names)

    def __repr__(self):
        return f"<PythonLoop: the {self.kind} loop at {self.location}>"

    def run(self, *values):
        given, views = self.given(values)
        memo = {}
        state = build(self.state, given, memo)
        with read_only_writes(f"the {self.kind} loop at {self.location} (run as Python: its variables' ranks "
                              f"change)"):
            if self.kind == "while":
                test, body, more = (build(p, given, memo) for p in self.parts)
                while more:
                    state = tuple(body(*state))
                    more = test(*state)
            else:
                iterable, extra_test, body, python_range = (build(p, given, memo) for p in self.parts)
                for item in (iterable.tolist() if python_range else iterable):
                    if extra_test is not None and not extra_test(*state):
                        break
                    state = tuple(body(item, *state))
        state = tuple(unviewed(s, views) for s in state)
        return state if len(state) != 1 else state[0]  # a node of one output gives the value itself
