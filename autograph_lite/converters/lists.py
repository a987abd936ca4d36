"""List methods on local lists become assignments, so a list changed in a loop is a loop
variable that graph loops can carry:

    items.append(v)     ->  items = ag__.list_append(items, v)
    items.extend(vs)    ->  items = ag__.list_extend(items, vs)
    x = items.pop()     ->  items, x = ag__.list_pop(items)
    s += items.pop()    ->  items, item = ag__.list_pop(items); s += item
    items.pop(0)        ->  items = ag__.list_pop(items, 0)[0]
    items.insert(i, v)  ->  items = ag__.list_method(items, 'insert', i, v)   (also remove,
                            clear, reverse, sort)
    del items[i]        ->  items = ag__.list_del(items, i)

On a Python list each is the plain (mutating) method; on a list a graph loop carries (a
TensorList) append, extend and pop are graph ops, the others a ConversionError.
"""
import gast

from ..pyct import activity, templates
from .base import at_line

_OTHER_METHODS = ("insert", "remove", "clear", "reverse", "sort")


class _Lists(gast.NodeTransformer):
    """Only lists held in the function's own local variables are rewritten: a list from an
    enclosing scope stays a plain (mutating) call, refused inside graph loops at run time."""

    def __init__(self, local_names, ctx):
        self.local_names = local_names
        self.ctx = ctx

    def visit_FunctionDef(self, node):
        outer = self.local_names
        a = activity.of(node.body)
        self.local_names = (activity._param_names(node.args) | a.writes) - a.declared
        self.generic_visit(node)
        self.local_names = outer
        return node

    def _method_call(self, call):
        """(list name, method, call) if `call` is `<local name>.<method>(...)` without keywords."""
        if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and isinstance(call.func.value, gast.Name) and call.func.value.id in self.local_names
                and not call.keywords and not any(isinstance(a, gast.Starred) for a in call.args)):
            return call.func.value.id, call.func.attr
        return None, None

    def visit_Expr(self, node):
        target, method = self._method_call(node.value)
        args = node.value.args if target else []
        if method == "append" and len(args) == 1:
            new = templates.replace("target = ag__.list_append(target, value)", target=target, value=args[0])
        elif method == "extend" and len(args) == 1:
            new = templates.replace("target = ag__.list_extend(target, values)", target=target, values=args[0])
        elif method == "pop" and len(args) <= 1:
            new = templates.replace("target = ag__.list_pop(target, index)[0]", target=target,
                                    index=args[0] if args else gast.Constant(value=None, kind=None))
        elif method in _OTHER_METHODS:
            new = templates.replace(f"target = ag__.list_method(target, '{method}')", target=target)
            new[0].value.args.extend(args)
        else:
            return node
        return at_line(new, node)

    def visit_Delete(self, node):
        target = node.targets[0] if len(node.targets) == 1 else None
        if (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)
                and target.value.id in self.local_names):
            new = templates.replace("name = ag__.list_del(name, index)", name=target.value.id,
                                    index=_as_expression(target.slice))
            return at_line(new, node)
        return node

    def visit_Assign(self, node):
        target, method = self._method_call(node.value)
        if (method == "pop" and len(node.value.args) <= 1 and len(node.targets) == 1
                and isinstance(node.targets[0], gast.Name) and node.targets[0].id != target):
            args = node.value.args
            new = templates.replace("target, result = ag__.list_pop(target, index)", target=target,
                                    result=node.targets[0].id,
                                    index=args[0] if args else gast.Constant(value=None, kind=None))
            return at_line(new, node)
        return node

    def visit_AugAssign(self, node):
        target, method = self._method_call(node.value)
        if (method == "pop" and len(node.value.args) <= 1 and isinstance(node.target, gast.Name)
                and node.target.id != target):
            # the item first: evaluating a name target before it has no effect to reorder
            item = self.ctx.new_name("item")
            args = node.value.args
            new = templates.replace("target, result = ag__.list_pop(target, index)", target=target, result=item,
                                    index=args[0] if args else gast.Constant(value=None, kind=None))
            node.value = templates.name(item)
            return at_line(new, node) + [node]
        return node


def _as_expression(index):
    """A subscript's index as a value: `a:b` -> `slice(a, b, None)`."""
    if isinstance(index, gast.Slice):
        none = gast.Constant(value=None, kind=None)
        parts = [p if p is not None else none for p in (index.lower, index.upper, index.step)]
        return templates.replace_as_expression("slice(a, b, c)", a=parts[0], b=parts[1], c=parts[2])
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[_as_expression(e) for e in index.elts], ctx=gast.Load())
    return index


def transform(node, ctx):
    return _Lists(set(), ctx).visit(node)
