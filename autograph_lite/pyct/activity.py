"""Which names a piece of code reads and which it (re)binds, scope-aware.

Nested functions, lambdas and comprehensions are their own scopes: their own
parameters and locals are not visible outside, but the enclosing names they read are
reads of the enclosing scope. Names declared `global`/`nonlocal` are reported apart.
"""
import contextlib
import threading

import gast


class _Memo(threading.local):
    table = None  # while `memoized()` is open: (kind, id(statement)) -> (statement, result)


_memo = _Memo()


@contextlib.contextmanager
def memoized():
    """Inside: each statement's activity is computed once, and a statement's is the union of its
    parts' (a converter that asks about every `if` of an `elif` chain of 1,000 walks it once, not
    1,000 times). Only for a pass that asks before it rewrites: a statement changed after it was
    asked about answers as before."""
    outer, _memo.table = _memo.table, {}
    try:
        yield
    finally:
        _memo.table = outer


def _remembered(kind, node, compute):
    table = _memo.table
    if table is None or not isinstance(node, gast.stmt):
        return compute(node)
    hit = table.get((kind, id(node)))
    if hit is None:
        hit = table[(kind, id(node))] = (node, compute(node))
    return hit[1]


class Activity:
    def __init__(self):
        self.reads, self.writes, self.declared = set(), set(), set()


class _Collector(gast.NodeVisitor):
    def __init__(self):
        self.activity = Activity()

    def generic_visit(self, node):
        if _memo.table is None:
            return super().generic_visit(node)
        for child in gast.iter_child_nodes(node):  # a statement's activity: its parts' together
            if isinstance(child, gast.stmt):
                sub = of(child)
                self.activity.reads |= sub.reads
                self.activity.writes |= sub.writes
                self.activity.declared |= sub.declared
            else:
                self.visit(child)

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load):
            self.activity.reads.add(node.id)
        elif isinstance(node.ctx, (gast.Store, gast.Del)):
            self.activity.writes.add(node.id)

    def visit_AugAssign(self, node):
        if isinstance(node.target, gast.Name):
            self.activity.reads.add(node.target.id)
        self.generic_visit(node)

    def visit_Global(self, node):
        self.activity.declared.update(node.names)

    visit_Nonlocal = visit_Global

    def _scope(self, node, params, body_nodes, own_name=None):
        inner = Activity()
        for b in body_nodes:
            sub = of(b)
            inner.reads |= sub.reads
            inner.writes |= sub.writes
            inner.declared |= sub.declared
        local = (inner.writes | params) - inner.declared
        self.activity.reads |= inner.reads - local
        self.activity.writes |= inner.declared & inner.writes  # nonlocal/global rebinding leaks out
        self.activity.declared |= inner.declared
        if own_name:
            self.activity.writes.add(own_name)

    def visit_FunctionDef(self, node):
        for d in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(d)
        self._scope(node, _param_names(node.args), node.body, node.name)

    def visit_Lambda(self, node):
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(d)
        self._scope(node, _param_names(node.args), [node.body])

    def _comprehension(self, node, elements):
        self.visit(node.generators[0].iter)  # evaluated in the enclosing scope
        targets = set()
        for gen in node.generators:
            targets |= of(gen.target).writes
        parts = [g.target for g in node.generators] + [g.iter for g in node.generators[1:]]
        parts += [c for g in node.generators for c in g.ifs] + elements
        self._scope(node, targets, parts)

    def visit_ListComp(self, node):
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self._comprehension(node, [node.key, node.value])

    def visit_ClassDef(self, node):
        for b in node.bases + node.decorator_list:
            self.visit(b)
        self.activity.writes.add(node.name)


def _param_names(args):
    params = args.posonlyargs + args.args + args.kwonlyargs
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    return {p.id for p in params}


def of(node):
    """Activity of one node (statement or expression) or a list of them."""
    if isinstance(node, list) or _memo.table is None:
        collector = _Collector()
        for n in node if isinstance(node, list) else [node]:
            if _memo.table is None:
                collector.visit(n)
            else:
                sub = of(n)
                collector.activity.reads |= sub.reads
                collector.activity.writes |= sub.writes
                collector.activity.declared |= sub.declared
        return collector.activity
    a = _remembered("of", node, _collect)
    copy = Activity()
    copy.reads, copy.writes, copy.declared = set(a.reads), set(a.writes), set(a.declared)
    return copy


def _collect(node):
    collector = _Collector()
    collector.visit(node)
    return collector.activity


def reads(node):
    return of(node).reads


def writes(node):
    a = of(node)
    return a.writes - a.declared


def declared_nonlocal(node):
    """Names the code declares global/nonlocal and also rebinds."""
    a = of(node)
    return a.writes & a.declared


def composite_writes(node):
    """Item and attribute targets the code writes in this scope (`d['k'] = ...`, `o.a += ...`,
    `del l[0]`, `for o.a in ...`), outermost first; nested functions and classes are not entered."""
    found = []

    def targets(target):
        if isinstance(target, (gast.Tuple, gast.List)):
            for elt in target.elts:
                targets(elt)
        elif isinstance(target, gast.Starred):
            targets(target.value)
        elif isinstance(target, (gast.Subscript, gast.Attribute)):
            found.append(target)

    def walk(n):
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            return
        if isinstance(n, (gast.Assign, gast.Delete)):
            for t in n.targets:
                targets(t)
        elif isinstance(n, (gast.AugAssign, gast.AnnAssign, gast.For, gast.AsyncFor)):
            targets(n.target)
        elif isinstance(n, gast.withitem) and n.optional_vars is not None:
            targets(n.optional_vars)
        for child in gast.iter_child_nodes(n):
            if isinstance(child, gast.stmt) and _memo.table is not None:
                found.extend(_remembered("composite", child, composite_writes))
            else:
                walk(child)
    for n in node if isinstance(node, list) else [node]:
        if isinstance(n, gast.stmt) and _memo.table is not None and n is not node:
            found.extend(_remembered("composite", n, composite_writes))
        else:
            walk(n)
    return found


_CALLED_AT_ONCE = ("and_", "or_", "if_exp", "assert_stmt")  # ag__ operators that call their lambdas on the spot


def captured_locals(fn, rebound_only=False):
    """Locals of function `fn` that a nested function or lambda reads or rebinds: Python's cell
    variables, which every closure sees live (with `rebound_only`, those a nested function
    rebinds with `nonlocal`). Lambdas that converters pass straight to an operator that calls
    them at once (`ag__.and_(lambda: a, ...)`) do not count."""
    body = of(fn.body)
    own_declared = {name for n in _own_statements(fn) if isinstance(n, (gast.Global, gast.Nonlocal))
                    for name in n.names}
    local = (body.writes | _param_names(fn.args)) - own_declared
    free = set()

    def walk(n):
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
                and isinstance(n.func.value, gast.Name) and n.func.value.id == "ag__" \
                and n.func.attr in _CALLED_AT_ONCE:
            for arg in n.args:
                walk(arg.body if isinstance(arg, gast.Lambda) else arg)
            return
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)):
            inner = of(n)
            free.update((set() if rebound_only else inner.reads) | (inner.writes - {getattr(n, "name", None)}))
            return
        for child in gast.iter_child_nodes(n):
            walk(child)
    for stmt in fn.body:
        walk(stmt)
    return free & local


def _own_statements(fn):
    """All nodes in the body of `fn`, not inside nested functions, lambdas or classes."""
    out, stack = [], list(fn.body)
    while stack:
        n = stack.pop()
        out.append(n)
        if not isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            stack.extend(gast.iter_child_nodes(n))
    return out
