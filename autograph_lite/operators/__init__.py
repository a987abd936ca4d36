"""The `ag__` namespace: everything converted code calls, and nothing else.

Each operator runs plain Python on Python values and builds graph ops on symbolic
Tensors.
"""
from .call import call, do_not_convert
from .control_flow import for_stmt, if_stmt, while_stmt
from .exceptions import assert_stmt, raise_stmt
from .item_assignment import set_item
from .lists import TensorList, list_append, list_del, list_extend, list_method, list_pop
from .logical import Choice, MaybeNone, MaybeUnset, and_, compare, if_exp, not_, or_
from .py_builtins import fstring, percent_format
from .shape_attributes import shape_attr
from .variables import Undefined, finally_returns, reraise_trace_failure, return_value

__all__ = ["call", "do_not_convert", "set_item", "for_stmt", "if_stmt", "while_stmt", "assert_stmt", "raise_stmt",
           "TensorList", "Choice", "list_append", "list_del", "list_extend", "list_method", "list_pop", "and_",
           "compare", "if_exp", "not_", "or_", "Undefined", "finally_returns", "reraise_trace_failure", "return_value",
           "fstring", "percent_format", "shape_attr"]
