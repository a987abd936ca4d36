"""AST passes, one per concern, applied in the order listed here (and only here).

Each module has `transform(node, ctx) -> node`. Jumps (`return`, `break`, `continue`)
become flags first, so that control flow conversion, last, sees only structured code.
"""
from . import (asserts, break_statements, call_trees, conditional_expressions,
               continue_statements, control_flow, item_assignment, lists, logical_expressions,
               return_statements, shape_attributes, unsupported)

ORDER = (
    unsupported,             # reject yield/async before anything else
    asserts,                 # assert -> ag__.assert_stmt
    lists,                   # items.append(v) -> items = ag__.list_append(items, v)
    item_assignment,         # out[i] = v -> out = ag__.set_item(out, i, v, None, 'out')
    return_statements,       # return in control flow -> retval_/do_return
    break_statements,        # break -> flag + loop test
    continue_statements,     # continue -> flag
    shape_attributes,        # x.shape -> ag__.shape_attr(x)
    call_trees,              # f(x) -> ag__.call(f)(x)
    conditional_expressions, # a if c else b -> ag__.if_exp
    logical_expressions,     # and/or/not/chained comparisons -> ag__.and_/or_/not_
    control_flow,            # if/while/for -> ag__.if_stmt/while_stmt/for_stmt
)


def apply(node, ctx):
    from .base import droppable_places
    ctx.droppable = droppable_places(node)  # on the user's code, before any pass rewrites it
    for converter in ORDER:
        node = converter.transform(node, ctx)
    return node
