"""What every converter shares: the conversion context, fresh names, source positions."""
import gast

from ..pyct import anno

EXTRA_TEST = "extra_test"  # anno key on a For: flag names that must be False for another iteration


class Context:
    """Per-function conversion state: the user's file, and names already taken."""

    def __init__(self, filename, taken):
        self.filename = filename
        self.taken = set(taken)

    def new_name(self, base):
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def all_names(node):
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)} | {
        n.name for n in gast.walk(node) if isinstance(n, (gast.FunctionDef, gast.ClassDef))}


def at_line(nodes, origin):
    """Give generated `nodes` (and their children) the source line of `origin` where unset."""
    line = getattr(origin, "lineno", None) or 1
    for root in nodes if isinstance(nodes, list) else [nodes]:
        for n in gast.walk(root):
            if isinstance(n, (gast.stmt, gast.expr)) and getattr(n, "lineno", None) is None:
                n.lineno, n.col_offset = line, 0
                n.end_lineno, n.end_col_offset = line, 0
    return nodes


def add_extra_test(loop, flag):
    anno.set(loop, EXTRA_TEST, anno.get(loop, EXTRA_TEST, ()) + (flag,))


def not_flags_expr(flags):
    """`not f1 and not f2 ...` for the given flag names."""
    tests = [gast.UnaryOp(op=gast.Not(), operand=gast.Name(id=f, ctx=gast.Load(), annotation=None,
                                                             type_comment=None)) for f in flags]
    return tests[0] if len(tests) == 1 else gast.BoolOp(op=gast.And(), values=tests)
