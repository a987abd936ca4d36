"""`assert` and `raise` as converted code calls them."""
from .. import ops
from ..errors import ConversionError, user_location
from ..ops.logging_ops import FormattedText
from .logical import Choice
from ..runtime.graph import Tensor, current_graph


def assert_stmt(condition, message=None):
    """`assert condition, message()`: on a tensor, checked when the graph runs."""
    if isinstance(condition, Choice):
        condition = condition.truth()
    if isinstance(condition, Tensor):
        ops.assert_that(condition, message() if message is not None else "")  # text made if it fails
        return
    if not condition:
        text = message() if message is not None else None
        if isinstance(text, (Tensor, FormattedText)):
            raise AssertionError(f"assertion failed at {user_location(2)} (its message formats tensors, "
                                 f"whose values exist only when the graph runs)")
        raise AssertionError(text) if message is not None else AssertionError()


def raise_stmt(exception):
    """`raise exception`. Inside a branch or loop body of a tensor `if`/`while`/`for`, Python raises
    only on the runs that take that path but a trace would raise on every call: the exception goes
    on (an `except` in the same staged block handles it while tracing, as on every run that gets
    there), carrying the refusal that `building` raises instead if it leaves the block."""
    graph = current_graph()
    if graph is not None and graph.parent is not None:
        name = exception.__name__ if isinstance(exception, type) else type(exception).__name__
        refusal = ConversionError(
            f"`raise {name}` inside an `if`/`while`/`for` on a tensor is not supported (at {user_location()}): "
            f"whether it runs is known only when the graph runs. Check the condition with `assert`, "
            f"which the graph checks on every call")
        instance = exception() if isinstance(exception, type) else exception
        try:
            instance._ag_staged_raise = refusal
        except AttributeError:
            raise refusal from None
        return instance
    return exception
