"""`a if c else b` -> `ag__.if_exp(c, lambda: a, lambda: b)` (a Cond on a tensor `c`)."""
import gast

from ..pyct import templates


class _Ternary(gast.NodeTransformer):
    def visit_IfExp(self, node):
        self.generic_visit(node)
        return templates.replace_as_expression("ag__.if_exp(test, lambda: body, lambda: orelse)",
                                               test=node.test, body=node.body, orelse=node.orelse)


def transform(node, ctx):
    return _Ternary().visit(node)
