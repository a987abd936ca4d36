"""`x.shape` (read) -> `ag__.shape_attr(x)`: a tensor's dims known only at run time as weak ints, so
that comparing them with numbers is decided when the graph runs, not at trace time with None."""
import gast

from ..pyct import templates


class _ShapeReads(gast.NodeTransformer):
    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr != "shape" or not isinstance(node.ctx, gast.Load):
            return node  # `x.shape = (2, 3)` and `del x.shape` stay
        return templates.replace_as_expression("ag__.shape_attr(value)", value=node.value)


def transform(node, ctx):
    return _ShapeReads().visit(node)
