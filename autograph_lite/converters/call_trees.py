"""`f(a, b=c)` -> `ag__.call(f)(a, b=c)`: the callee is converted too when it is user code.

Formatting goes through ag__ too, so a symbolic tensor is never formatted as the text
`Tensor("Sum:0", ...)`:

    print(f"x={x:.2f}")  ->  ag__.call(print)(ag__.fstring(print, 'x=', (x, -1, '.2f')))
    "%d items" % n       ->  ag__.percent_format('%d items', n)   (an argument of print: n, print)

`ag__.fstring` formats now unless the callee is the builtin print (or the message of an
`assert`) and a value is a tensor: then the text is made when the graph runs.
"""
import gast

from ..pyct import templates

_CONVERSIONS = {-1: None, 115: "s", 114: "r", 97: "a"}


class _Calls(gast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.value.id == "ag__":
            return node  # our own helpers
        if isinstance(func, gast.Name) and func.id in ("super", "locals", "globals", "vars", "eval", "exec"):
            return node  # need the caller's frame: called as they are
        if isinstance(func, gast.Name) and func.id == "print":
            callee = gast.Name(id=func.id, ctx=gast.Load(), annotation=None, type_comment=None)
            node.args = [deferred_fstring(a, callee) if isinstance(a, gast.JoinedStr) else a for a in node.args]
            for a in node.args:  # `print("%d" % t)`: formatted when the graph runs where t is a tensor
                if isinstance(a, gast.Call) and isinstance(a.func, gast.Attribute) and a.func.attr == "percent_format":
                    a.args.append(gast.Name(id="print", ctx=gast.Load(), annotation=None, type_comment=None))
        node.func = templates.replace_as_expression("ag__.call(f)", f=func)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.Mod) and _is_text(node.left):
            return templates.replace_as_expression("ag__.percent_format(text, values)",
                                                   text=node.left, values=node.right)
        return node


def _is_text(node):
    return isinstance(node, gast.JoinedStr) or (isinstance(node, gast.Constant) and isinstance(node.value, str))


def deferred_fstring(joined, callee):
    """`f"a{x:>4}"` -> `ag__.fstring(callee, 'a', (x, None, '>4'))` (`callee`: print or assert)."""
    pieces = []
    for part in joined.values:
        if isinstance(part, gast.FormattedValue):
            spec = part.format_spec
            if spec is None:
                spec = gast.Constant(value="", kind=None)
            elif all(isinstance(v, gast.Constant) for v in spec.values):
                spec = gast.Constant(value="".join(v.value for v in spec.values), kind=None)
            conversion = gast.Constant(value=_CONVERSIONS.get(part.conversion), kind=None)
            pieces.append(gast.Tuple(elts=[part.value, conversion, spec], ctx=gast.Load()))
        else:
            pieces.append(part)
    call = templates.replace_as_expression("ag__.fstring(callee)", callee=callee)
    call.args.extend(pieces)
    return call


def transform(node, ctx):
    return _Calls().visit(node)
