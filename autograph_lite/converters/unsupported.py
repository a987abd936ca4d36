"""Reject what cannot be converted, naming the construct and the user's line."""
import gast

from ..errors import ConversionError


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
    return node
