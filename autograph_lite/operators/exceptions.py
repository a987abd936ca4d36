"""`assert` as converted code calls it."""
from .. import ops
from ..runtime.graph import Tensor


def assert_stmt(condition, message=None):
    """`assert condition, message()`: on a tensor, checked when the graph runs."""
    if isinstance(condition, Tensor):
        text = message() if message is not None else ""
        ops.assert_that(condition, text if isinstance(text, str) else str(text))
        return
    if not condition:
        raise AssertionError(message()) if message is not None else AssertionError()
