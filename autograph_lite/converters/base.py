"""What every converter shares: the conversion context, fresh names, source positions."""
import ast
import copy

import gast

from ..pyct import activity, anno

EXTRA_TEST = anno.EXTRA_TEST


class Context:
    """Per-function conversion state: the user's file, and names already taken."""

    def __init__(self, filename, taken):
        self.filename = filename
        self.taken = set(taken)
        self.droppable = frozenset()  # see droppable_places

    def new_name(self, base):
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def droppable_places(node):
    """Labels of the items and attributes (`y['a']`, `x['a']['b']`, `o.b`) that a tensor `if` or
    loop may leave unset on some runs (`MaybeUnset`): the dict or object holding one is the
    function's own (a dict literal, its nested dicts literals too) or an argument, and the code
    never asks which keys or attributes it has: it only reads and writes items with constant keys
    and attributes, and returns it (`return y`, `return y, x`); no `'a' in y`, `len(y)`, method
    call, `del`, or passing it on. Computed on the user's code, before any pass rewrites it."""
    parents, returned, literals, bad = {}, set(), {}, set()
    params = {a.id: id(a) for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}

    def walk(n, top):
        for child in gast.iter_child_nodes(n):
            parents[id(child)] = n
            walk(child, top and not isinstance(child, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                                                        gast.ClassDef)))
        if isinstance(n, gast.Return) and n.value is not None and top:
            stack = [n.value]
            while stack:
                v = stack.pop()
                returned.add(id(v))
                if isinstance(v, (gast.Tuple, gast.List)):
                    stack.extend(v.elts)
                elif isinstance(v, gast.Dict):
                    stack.extend(v.values)
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            bad.update(n.names)
    body = node.body if isinstance(node.body, list) else [node.body]
    for child in body:
        parents[id(child)] = node
        walk(child, True)

    def allowed(expr):
        """`expr` (a Load) is indexed with a constant key, has an attribute read or written, or is returned."""
        parent = parents.get(id(expr))
        if isinstance(parent, gast.Subscript) and parent.value is expr:
            return isinstance(parent.slice, gast.Constant) and not isinstance(parent.ctx, gast.Del)
        if isinstance(parent, gast.Attribute) and parent.value is expr:
            grand = parents.get(id(parent))
            return not isinstance(parent.ctx, gast.Del) and not (isinstance(grand, gast.Call) and grand.func is parent)
        return id(expr) in returned

    for n in gast.walk(node):
        if not isinstance(n, gast.Name) or n.id in bad:
            continue
        if isinstance(n.ctx, gast.Load):
            if not allowed(n):
                bad.add(n.id)
        elif isinstance(n.ctx, gast.Store):
            parent = parents.get(id(n))
            if isinstance(parent, gast.Assign) and parent.targets == [n] and isinstance(parent.value, gast.Dict):
                literals.setdefault(n.id, []).append(parent.value)
            else:
                bad.add(n.id)
        elif params.get(n.id) != id(n):
            bad.add(n.id)  # `del y`, a nested function's parameter
    roots = {name for name in (set(params) | set(literals)) if name not in bad and not (name in params and name in literals)}
    exprs = {}
    for n in gast.walk(node):
        if isinstance(n, (gast.Subscript, gast.Attribute)):
            exprs.setdefault(_unparse(n), []).append(n)

    def droppable(target):
        steps, n = [], target
        while isinstance(n, (gast.Subscript, gast.Attribute)):
            if isinstance(n, gast.Subscript) and not isinstance(n.slice, gast.Constant):
                return False
            steps.append(n)
            n = n.value
        if not isinstance(n, gast.Name) or n.id not in roots:
            return False
        for inner in steps[1:]:  # the containers on the way: only indexed, never rebound or passed on
            if any(not isinstance(e.ctx, gast.Load) or not allowed(e) for e in exprs[_unparse(inner)]):
                return False
        if n.id in literals:  # the function's own dict: each container on the way one of its literals
            path = [s for s in reversed(steps[1:])]
            for literal in literals[n.id]:
                for step in path:
                    if not isinstance(step, gast.Subscript):
                        return False
                    literal = next((v for k, v in zip(literal.keys, literal.values) if isinstance(k, gast.Constant)
                                    and k.value == step.slice.value), None)
                    if not isinstance(literal, gast.Dict):
                        return False
            return isinstance(target, gast.Subscript)
        return True

    return frozenset(_unparse(t) for t in activity.composite_writes(body) if droppable(t))


def _unparse(target):
    return ast.unparse(gast.gast_to_ast(copy.deepcopy(target)))


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
    """`ag__.not_(f1)`, or `ag__.and_(lambda: ag__.not_(f1), lambda: ...)` for several flags.

    Written with ag__ calls directly: it may be generated after the logical converter ran.
    """
    from ..pyct import templates
    tests = [templates.replace_as_expression("ag__.not_(flag)", flag=f) for f in flags]
    result = tests[-1]
    for test in reversed(tests[:-1]):
        result = templates.replace_as_expression("ag__.and_(lambda: a, lambda: b, truth=True)", a=test, b=result)
    return result


def always_returns(stmts):
    """Whether every path through `stmts` ends in `return` or `raise` (as far as the syntax shows)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (gast.Return, gast.Raise)):
        return True
    if isinstance(last, gast.If):
        return always_returns(last.body) and always_returns(last.orelse)
    if isinstance(last, gast.While):  # `while True:` without a break leaves only by return or raise
        from . import jumps
        forever = isinstance(last.test, gast.Constant) and last.test.value is True
        return forever and not any(jumps.contains(s, gast.Break, into_loops=False) for s in last.body)
    if isinstance(last, (gast.With, gast.AsyncWith)):
        return always_returns(last.body)
    if isinstance(last, gast.Try):
        return (always_returns(last.finalbody) or
                (always_returns(last.orelse or last.body) and all(always_returns(h.body) for h in last.handlers)))
    return False
