"""A function's source as a gast tree: dedented, decorators stripped, lambdas located."""
import ast
import functools
import inspect
import textwrap

import gast

from .. import recursion
from ..errors import ConversionError


def _source_error(fn, why):
    name = getattr(fn, "__qualname__", repr(fn))
    where = ""
    code = getattr(fn, "__code__", None)
    if code is not None:
        where = f" (defined at {code.co_filename}:{code.co_firstlineno})"
    return ConversionError(
        f"cannot convert {name}{where}: {why}. Functions defined with exec/eval or typed into a "
        f"REPL have no source to read; define it in a file, or mark it @ag.do_not_convert "
        f"to call it as plain Python")


FRAMES_PER_LEVEL = 30  # Python frames a visitor (gast's, ast's, the converters') takes per level of the AST


def depth(tree):
    """How deeply nodes nest in `tree` (an `ast` or gast tree): an `elif` chain of n nests n deep."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((child, d + 1) for child in ast.iter_child_nodes(node))
    return deepest


def parse_function(fn):
    """(gast FunctionDef, file name, first line) for `fn`; a lambda becomes a FunctionDef."""
    try:
        lines, first = inspect.findsource(fn)
    except (OSError, TypeError) as e:
        raise _source_error(fn, f"its source is not available ({e})") from None
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    if fn.__code__.co_name == "<lambda>":
        return _parse_lambda(fn, lines), filename, 1
    block = inspect.getblock(lines[first:])
    source = textwrap.dedent("".join(block))
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise _source_error(fn, f"its source does not parse on its own ({e.msg})") from None
    with recursion.headroom(FRAMES_PER_LEVEL * depth(tree)):  # gast's visitor recurses
        tree = gast.ast_to_gast(tree)
    node = tree.body[0]
    if not isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
        raise _source_error(fn, "its source is not a function definition")
    if isinstance(node, gast.AsyncFunctionDef):
        raise ConversionError(f"cannot convert async function {fn.__qualname__} "
                              f"({filename}:{first + 1}): async functions are not supported")
    node.decorator_list = []
    gast.increment_lineno(node, first)  # line numbers as in the user's file
    return node, filename, 1


def _parse_lambda(fn, lines):
    """Find the lambda that compiled to `fn`: parse its whole file, match line, parameters
    and (when several lambdas share the line) the positions of its instructions."""
    line = fn.__code__.co_firstlineno
    tree = _parse_file("".join(lines))
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == line
                  and _same_params(n, fn)] if tree is not None else []
    if len(candidates) > 1:
        positions = {(ln, col) for ln, _, col, _ in fn.__code__.co_positions() if ln}
        candidates = [n for n in candidates if (n.body.lineno, n.body.col_offset) in positions] or candidates[:1]
    if not candidates:
        raise _source_error(fn, "the lambda could not be located in its source line")
    node = candidates[0]
    fdef = ast.FunctionDef(name="lambda_", args=node.args,
                           body=[ast.Return(node.body, lineno=node.lineno, col_offset=0)],
                           decorator_list=[], returns=None, type_comment=None,
                           lineno=node.lineno, col_offset=0)
    if "type_params" in ast.FunctionDef._fields:
        fdef.type_params = []
    return gast.ast_to_gast(ast.fix_missing_locations(fdef))


@functools.lru_cache(maxsize=64)
def _parse_file(source):
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _same_params(node, fn):
    code = fn.__code__
    names = [a.arg for a in node.args.posonlyargs + node.args.args]
    return names == list(code.co_varnames[:code.co_argcount])


def unparse(node):
    """Python source for a gast node."""
    return ast.unparse(ast.fix_missing_locations(gast.gast_to_ast(node)))
