"""Turn a converted AST back into a live function, with a map to the user's lines.

The converted function is unparsed with `ast.unparse`, compiled from that source
under a `<autograph_lite converted ...>` file name (registered with linecache so
tracebacks show it), and rebuilt with the original function's globals, defaults and
closure cells, so it sees the same variables the original does. Every generated
line maps back to the user's `file:line` for error messages.
"""
import ast
import copy
import itertools
import linecache
import threading
import types
import weakref

import gast

from . import converters, errors, operators
from .pyct import parser

_ids = itertools.count()
_cache = weakref.WeakKeyDictionary()   # original function -> Converted
_lock = threading.RLock()
_AG = "ag__"


class Converted:
    """A converted function and the source that defines it."""

    def __init__(self, function, source, filename):
        self.function, self.source, self.filename = function, source, filename


def convert(fn):
    """The converted version of user function `fn` (cached)."""
    return _converted(fn).function


def _converted(fn):
    with _lock:
        hit = _cache.get(fn)
        if hit is None:
            hit = _cache[fn] = _build(fn)
        return hit


def _build(fn):
    node, filename, _ = parser.parse_function(fn)
    taken = set(fn.__code__.co_varnames) | set(fn.__code__.co_names) | set(fn.__code__.co_freevars)
    ctx = converters.base.Context(filename, taken | converters.base.all_names(node))
    display_name = fn.__code__.co_name if fn.__code__.co_name.isidentifier() else "lambda_"
    # compiled under a private name, so calls to the function's own name (recursion) still
    # reach the module's binding rather than this definition
    name = node.name = "ag__converted_" + display_name
    node = converters.apply(node, ctx)

    freevars = [v for v in fn.__code__.co_freevars if v != _AG]
    factory = gast.FunctionDef(
        name="__ag_factory", args=gast.arguments(
            args=[gast.Name(id=v, ctx=gast.Param(), annotation=None, type_comment=None) for v in [_AG] + freevars],
            posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[node, gast.Return(value=gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None))],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.Module(body=[factory], type_ignores=[])
    module_ast = ast.fix_missing_locations(gast.gast_to_ast(module))
    ast.copy_location(module_ast.body[0], node)
    source = ast.unparse(module_ast)
    generated_file = f"<autograph_lite converted {fn.__qualname__} #{next(_ids)}>"
    linecache.cache[generated_file] = (len(source), None, source.splitlines(True), generated_file)
    errors.register_source_map(generated_file, _line_map(module_ast, source, filename))

    code = compile(source, generated_file, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner_code = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[_AG] = types.CellType(operators)
    closure = tuple(cells.get(v) or types.CellType() for v in inner_code.co_freevars)
    converted = types.FunctionType(inner_code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    converted.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
    converted.__qualname__, converted.__doc__ = fn.__qualname__, fn.__doc__
    converted.__module__ = fn.__module__
    converted.__dict__.update(getattr(fn, "__dict__", {}))
    shown = copy.copy(module_ast.body[0].body[0])
    shown.name = display_name
    inner_source = ast.unparse(shown)
    return Converted(converted, inner_source, generated_file)


def _line_map(tree, source, user_file):
    """{generated line: 'user_file:line'} by walking the tree and its re-parse side by side."""
    mapping = {}
    reparsed = ast.parse(source)
    for original, generated in zip(ast.walk(tree), ast.walk(reparsed)):
        line = getattr(original, "lineno", None)
        new_line = getattr(generated, "lineno", None)
        if line is not None and new_line is not None and new_line not in mapping:
            mapping[new_line] = f"{user_file}:{line}"
    return mapping


def to_graph(fn):
    """The converted Python function: native control flow on tensors becomes graph ops."""
    target = getattr(fn, "python_function", fn)
    if isinstance(target, types.MethodType):
        return types.MethodType(convert(target.__func__), target.__self__)
    return convert(target)


def to_code(fn):
    """The source code the compiler generated for `fn` (an ag.function or a plain function)."""
    target = getattr(fn, "python_function", fn)
    target = getattr(target, "__func__", target)
    return _converted(target).source + "\n"
