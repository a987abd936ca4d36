"""Reject what cannot be converted, naming the construct and the user's line.

Generators and async code are refused here. `raise X` becomes `raise ag__.raise_stmt(X)`,
which refuses a raise traced inside a branch or loop body on a tensor (it would fire on
every call); a raise that a surrounding `try` may catch stays plain Python.
"""
import gast

from ..errors import ConversionError


class _Raises(gast.NodeTransformer):
    def __init__(self):
        self.caught = 0  # depth of `try` blocks with handlers around the current node

    def visit_Try(self, node):
        self.caught += bool(node.handlers)
        node.body = [self.visit(n) for n in node.body]
        self.caught -= bool(node.handlers)
        node.handlers = [self.visit(n) for n in node.handlers]
        node.orelse = [self.visit(n) for n in node.orelse]
        node.finalbody = [self.visit(n) for n in node.finalbody]
        return node

    def visit_Raise(self, node):
        if node.exc is not None and not self.caught:
            check = gast.Attribute(value=gast.Name(id="ag__", ctx=gast.Load(), annotation=None, type_comment=None),
                                   attr="raise_stmt", ctx=gast.Load())
            node.exc = gast.copy_location(gast.Call(func=check, args=[node.exc], keywords=[]), node.exc)
        return node


def transform(node, ctx):
    for n in gast.walk(node):
        what = None
        if isinstance(n, (gast.Yield, gast.YieldFrom)):
            what = "a generator (`yield`)"
        elif isinstance(n, (gast.Await, gast.AsyncFor, gast.AsyncWith)):
            what = "async code"
        if what:
            raise ConversionError(f"{what} cannot be converted to a graph (at {ctx.filename}:{n.lineno}); "
                                  f"mark the function @ag.do_not_convert to run it as plain Python")
    return _Raises().visit(node)
