"""`items.append(v)` -> `items = ag__.list_append(items, v)`, so a list built in a loop is a
loop variable that graph loops can carry."""
import gast

from ..pyct import activity, templates
from .base import at_line


class _Lists(gast.NodeTransformer):
    """Only lists held in the function's own local variables are rewritten: appending to a
    list from an enclosing scope stays a plain (mutating) call."""

    def __init__(self, local_names):
        self.local_names = local_names

    def visit_FunctionDef(self, node):
        outer = self.local_names
        a = activity.of(node.body)
        self.local_names = (activity._param_names(node.args) | a.writes) - a.declared
        self.generic_visit(node)
        self.local_names = outer
        return node

    def visit_Expr(self, node):
        call = node.value
        if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr == "append" and isinstance(call.func.value, gast.Name)
                and call.func.value.id in self.local_names and len(call.args) == 1 and not call.keywords):
            target = call.func.value.id
            return at_line(templates.replace("target = ag__.list_append(target, value)",
                                             target=target, value=call.args[0]), node)
        return node


def transform(node, ctx):
    return _Lists(set()).visit(node)
