"""Layers point one way: a lower layer of the package never imports a higher one.

The layers are docs/ARCHITECTURE.md's import direction. Every import counts, function-local
ones included (they are how cycles hide). A new module outside these layers is treated as
top-level: it may import anything, and nothing below may import it.
"""
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "autograph_lite"

# layer -> the layers it may import (besides itself); `util` (nest, errors, disk_cache, recursion) imports no layer
MAY_IMPORT = {
    "util": set(),
    "runtime": {"util"},
    "ops": {"util", "runtime"},
    "pyct": {"util"},
    "converters": {"util", "pyct"},         # + the name constants of operators/variables.py
    "operators": {"util", "runtime", "ops", "loader", "converters", "pyct"},
    "loader": {"util", "converters", "pyct", "operators"},  # converted code runs in operators' namespace
    "tensor_spec": {"util", "runtime"},
    "call_signature": {"util"},
    "trace_cache": {"util", "runtime", "tensor_spec"},
    "function": {"util", "runtime", "ops", "operators", "loader", "converters", "pyct", "tensor_spec",
                 "trace_cache", "call_signature"},
    "autodiff": {"util", "runtime", "ops", "operators", "loader", "converters", "pyct", "tensor_spec",
                 "trace_cache", "call_signature", "function"},
}
EXCEPTIONS = {("converters", "autograph_lite.operators.variables")}


def _layer(module):
    parts = module.split(".")[1:]
    if not parts:
        return None  # the package's __init__: the top
    head = parts[0]
    if head in ("nest", "errors", "disk_cache", "recursion"):
        return "util"
    if head in ("runtime", "ops", "pyct", "converters", "operators", "loader", "tensor_spec", "call_signature",
                "function", "autodiff"):
        return head
    if head in ("trace_cache", "effects"):
        return "trace_cache"
    return None  # not in the table: top-level


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name):
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports():
    """(importing module, imported module, line) for every import inside the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += _imports_of(_module_name(path), path.name == "__init__.py", path.read_text())
    return found


def _imports_of(module, is_package, source):
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):  # every import, function-local ones included
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [f"{target}.{a.name}" if _is_module(f"{target}.{a.name}") else target for a in node.names]
        else:
            continue
        found += [(module, t, node.lineno) for t in targets if t.split(".")[0] == "autograph_lite"]
    return found


def test_the_scanner_sees_function_local_and_relative_imports():
    source = ("import numpy\nfrom .. import nest\nfrom ..runtime.graph import Tensor\n"
              "def f():\n    from ..function import Function\n    import autograph_lite.loader\n")
    assert _imports_of("autograph_lite.ops.x", False, source) == [
        ("autograph_lite.ops.x", "autograph_lite.nest", 2),
        ("autograph_lite.ops.x", "autograph_lite.runtime.graph", 3),
        ("autograph_lite.ops.x", "autograph_lite.function", 5),
        ("autograph_lite.ops.x", "autograph_lite.loader", 6)]
    assert ("autograph_lite", "autograph_lite.function", 13) in _imports_of(
        "autograph_lite", True, "\n" * 12 + "from .function import function\n")
    edges = {(a, b) for a, b, _ in imports()}
    assert ("autograph_lite.function", "autograph_lite.trace_cache") in edges


def test_lower_layers_never_import_higher_ones():
    wrong = []
    for module, target, line in imports():
        here, there = _layer(module), _layer(target)
        if here is None or here == there or (here, target) in EXCEPTIONS:
            continue
        if there is None or there not in MAY_IMPORT[here]:
            wrong.append(f"{module} (line {line}) imports {target}: layer {here} may import "
                         f"{sorted(MAY_IMPORT[here]) or 'no layer'}")
    assert not wrong, "\n".join(wrong)


def test_ops_modules_import_each_other_one_way():
    """No cycles among the modules of ops/ (a cycle hides behind function-local imports)."""
    graph = {}
    for module, target, _ in imports():
        if module.startswith("autograph_lite.ops.") and target.startswith("autograph_lite.ops."):
            graph.setdefault(module, set()).add(target)
    cycles = []

    def visit(node, stack):
        if node in stack:
            cycles.append(" -> ".join(stack[stack.index(node):] + [node]))
            return
        for nxt in sorted(graph.get(node, ())):
            if nxt not in done:
                visit(nxt, stack + [node])
        done.add(node)
    done = set()
    for node in sorted(graph):
        visit(node, [])
    assert not cycles, "\n".join(cycles)
