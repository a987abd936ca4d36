"""`continue` -> set a flag reset at the top of each iteration; skip the rest of the body.

    while test:                        while test:
        if c:                              continue_ = False
            continue         ==>           if c:
        body                                   continue_ = True
                                           if not continue_:
                                               body
"""
import gast

from ..pyct import templates
from . import jumps
from .base import at_line


class _Continues(gast.NodeTransformer):
    def __init__(self, ctx):
        self.ctx = ctx

    def _loop(self, node):
        self.generic_visit(node)
        if not any(jumps.contains(s, gast.Continue, into_loops=False) for s in node.body):
            return node
        flag = self.ctx.new_name("continue_")
        body = jumps.rewrite_block(node.body, gast.Continue, flag,
                                   lambda _: templates.replace("flag = True", flag=flag), into_loops=False)
        node.body = at_line(templates.replace("flag = False", flag=flag), node) + body
        return node

    visit_While = visit_For = _loop


def transform(node, ctx):
    return _Continues(ctx).visit(node)
