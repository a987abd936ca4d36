"""`assert test, msg` -> `ag__.assert_stmt(test, lambda: msg)` (checked when the graph runs)."""
import gast

from ..pyct import templates
from .base import at_line


class _Asserts(gast.NodeTransformer):
    def visit_Assert(self, node):
        if isinstance(node.msg, gast.JoinedStr):  # formatted when the graph runs if it holds tensors
            from .call_trees import deferred_fstring
            callee = templates.replace_as_expression("ag__.assert_stmt")
            node.msg = deferred_fstring(node.msg, callee)
        if node.msg is None:
            new = templates.replace("ag__.assert_stmt(test)", test=node.test)
        else:
            new = templates.replace("ag__.assert_stmt(test, lambda: msg)", test=node.test, msg=node.msg)
        return at_line(new, node)


def transform(node, ctx):
    return _Asserts().visit(node)
