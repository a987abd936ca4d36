"""`a and b`, `a or b`, `not a`, `a < b < c` -> ag__ calls that short-circuit on tensors too.

    a and b  ->  ag__.and_(lambda: a, lambda: b)
    not a    ->  ag__.not_(a)
    a < b < c -> ag__.and_(lambda: a < b, lambda: b < c)
"""
import gast

from ..pyct import templates


class _Logical(gast.NodeTransformer):
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        helper = "ag__.and_" if isinstance(node.op, gast.And) else "ag__.or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = templates.replace_as_expression(f"{helper}(lambda: left, lambda: right)",
                                                     left=value, right=result)
        return result

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return templates.replace_as_expression("ag__.not_(value)", value=node.operand)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(gast.Compare(left=left, ops=[op], comparators=[right]))
            left = right
        return self.visit_BoolOp(gast.BoolOp(op=gast.And(), values=parts))


def transform(node, ctx):
    return _Logical().visit(node)
