"""Ops with side effects when the graph runs: printing and assertions.

Both are stateful, so no pass folds, merges or drops them, and a Cond or While
holding one always runs.
"""
import builtins

from ..errors import user_location
from ..runtime.graph import Tensor, current_graph
from ..runtime.graph import Slot
from .core import apply, define


def _print_kernel(xp, template, sep, end):
    def print_values(*values):
        builtins.print(*[values[a.k] if isinstance(a, Slot) else a for a in template], sep=sep, end=end)
    return print_values


PRINT = define("Print", _print_kernel, lambda *inputs, **attrs: [], stateful=True)


def print(*args, sep=" ", end="\n", always=False):  # noqa: A001 - ag.print
    """Print `args` when the graph runs (every time, every loop iteration); eagerly, print now.

    Inside a trace, a print of Python values only happens while tracing unless `always`.
    """
    tensors = [a for a in args if isinstance(a, Tensor)]
    if current_graph() is None or not (tensors or always):
        builtins.print(*args, sep=sep, end=end)
        return None
    template, k = [], 0
    for a in args:
        if isinstance(a, Tensor):
            template.append(Slot(k))
            k += 1
        else:
            template.append(a)
    apply(PRINT, tensors, {"template": template, "sep": sep, "end": end})
    return None


def _assert_kernel(xp, message, location):
    def check(condition):
        if not bool(xp.all(condition)):
            raise AssertionError(f"{message} (assert at {location})" if message else f"assertion failed at {location}")
    return check


ASSERT = define("Assert", _assert_kernel, lambda cond, **attrs: [], stateful=True)


def assert_that(condition, message=""):
    """Fail with AssertionError(message) when the graph runs if any element of `condition` is false."""
    if not isinstance(condition, Tensor):
        if not condition:
            raise AssertionError(message)
        return None
    apply(ASSERT, (condition,), {"message": str(message), "location": user_location(2)})
    return None
