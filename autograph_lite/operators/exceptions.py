"""`assert` as converted code calls it."""
from .. import ops
from ..errors import user_location
from ..ops.logging_ops import FormattedText
from ..runtime.graph import Tensor


def assert_stmt(condition, message=None):
    """`assert condition, message()`: on a tensor, checked when the graph runs."""
    if isinstance(condition, Tensor):
        ops.assert_that(condition, message() if message is not None else "")  # text made if it fails
        return
    if not condition:
        text = message() if message is not None else None
        if isinstance(text, (Tensor, FormattedText)):
            raise AssertionError(f"assertion failed at {user_location(2)} (its message formats tensors, "
                                 f"whose values exist only when the graph runs)")
        raise AssertionError(text) if message is not None else AssertionError()
