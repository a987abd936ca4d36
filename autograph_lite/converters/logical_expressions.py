"""`a and b`, `a or b`, `not a`, `a < b < c` -> ag__ calls that short-circuit on tensors too.

    a and b  ->  ag__.and_(lambda: a, lambda: b)
    not a    ->  ag__.not_(a)
    a < b < c -> ag__.compare(a, ('Lt', lambda: b), ('Lt', lambda: c))   (b evaluated once)

Where only the truth of the result is used (the test of an `if`, `while`, ternary or
`assert`, the operand of `not`, an operand of `and`/`or` tested that way), the call gets `truth=True`: on tensors it may then
return a bool instead of an operand, so operands of different dtypes can be combined.
"""
import gast

from ..pyct import templates

_TRUTH_CALLS = ("if_exp", "assert_stmt")


class _Logical(gast.NodeTransformer):
    def visit_BoolOp(self, node, truth=False):
        if truth:  # `a and (b or c)` tested for truth: so is each operand
            node.values = [self._visit_test(v) for v in node.values]
        else:
            self.generic_visit(node)
        helper = "ag__.and_" if isinstance(node.op, gast.And) else "ag__.or_"
        flag = ", truth=True" if truth else ""
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = templates.replace_as_expression(f"{helper}(lambda: left, lambda: right{flag})",
                                                     left=value, right=result)
        return result

    def _visit_test(self, test):
        if isinstance(test, gast.BoolOp):
            return self.visit_BoolOp(test, truth=True)
        if isinstance(test, gast.Compare) and len(test.ops) > 1:
            return self.visit_Compare(test, truth=True)
        return self.visit(test)

    def visit_If(self, node):
        node.test = self._visit_test(node.test)
        node.body = [self.visit(s) for s in node.body]
        node.orelse = [self.visit(s) for s in node.orelse]
        return node

    visit_While = visit_If

    def visit_Call(self, node):
        func = node.func
        if (node.args and isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                and func.value.id == "ag__" and func.attr in _TRUTH_CALLS):
            node.args[0] = self._visit_test(node.args[0])
            node.args[1:] = [self.visit(a) for a in node.args[1:]]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        self.generic_visit(node)
        return node

    def visit_UnaryOp(self, node):
        if isinstance(node.op, gast.Not):
            return templates.replace_as_expression("ag__.not_(value)", value=self._visit_test(node.operand))
        self.generic_visit(node)
        return node

    def visit_Compare(self, node, truth=False):
        self.generic_visit(node)
        if len(node.ops) == 1 and not _is_none_test(node):
            return node
        # each operand evaluated once, left to right, as Python does
        steps = [gast.Tuple(elts=[gast.Constant(value=type(op).__name__, kind=None),
                                  templates.replace_as_expression("lambda: operand", operand=right)],
                            ctx=gast.Load())
                 for op, right in zip(node.ops, node.comparators)]
        call = templates.replace_as_expression("ag__.compare(left)", left=node.left)
        call.args.extend(steps)
        if truth:
            call.keywords.append(gast.keyword(arg="truth", value=gast.Constant(value=True, kind=None)))
        return call


def _is_none_test(node):
    """`r is None` / `r is not None`: through ag__.compare, which answers it on a result that is
    None on the runs a tensor picks (a function ending without `return` on some paths)."""
    none = lambda n: isinstance(n, gast.Constant) and n.value is None  # noqa: E731
    return isinstance(node.ops[0], (gast.Is, gast.IsNot)) and (none(node.left) or none(node.comparators[0]))


def transform(node, ctx):
    return _Logical().visit(node)
