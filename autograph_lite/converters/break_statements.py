"""`break` -> set a flag, skip the rest of the body, and stop the loop on the flag.

    while test:                        break_ = False
        if c:                          while not break_ and test:
            break            ==>           if c:
        body                                   break_ = True
                                           if not break_:
                                               body
"""
import gast

from ..pyct import templates
from . import jumps
from .base import add_extra_test, at_line, not_flags_expr


class _Breaks(gast.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def _loop(self, node):
        self.generic_visit(node)  # inner loops first: their breaks are theirs
        if not any(jumps.contains(s, gast.Break, into_loops=False) for s in node.body):
            return node
        flag = self.ctx.new_name("break_")
        node.body = jumps.rewrite_block(node.body, gast.Break, flag,
                                        lambda _: templates.replace("flag = True", flag=flag), into_loops=False)
        if isinstance(node, gast.While):
            node.test = gast.BoolOp(op=gast.And(), values=[not_flags_expr([flag]), node.test])
        else:
            add_extra_test(node, flag)
        if node.orelse:  # `else` runs only when the loop was not broken out of
            node.orelse = templates.replace("if not flag:\n    orelse", flag=flag, orelse=node.orelse)
        return at_line(templates.replace("flag = False", flag=flag), node) + [node]

    visit_While = visit_For = _loop


def transform(node, ctx):
    return _Breaks(ctx).visit(node)
