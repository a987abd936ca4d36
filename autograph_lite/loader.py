"""Turn a converted AST back into a live function, with a map to the user's lines.

The converted function is unparsed with `ast.unparse`, compiled from that source
under a `<autograph_lite converted ...>` file name (registered with linecache so
tracebacks show it), and rebuilt with the original function's globals, defaults and
closure cells, so it sees the same variables the original does. Every generated
line maps back to the user's `file:line` for error messages.

Conversion is a function of the source alone, so its result (the generated source and
line map) is kept in the disk cache (`disk_cache.py`, under `converted/`), keyed by the
bytes of the function's file, its place in it, its code's names and positions, and the
size and time of every file of this package: a later process compiles it without
parsing and converting again. An entry whose checksum or key does not match is removed
and the function converted again.
"""
import ast
import copy
import functools
import hashlib
import itertools
import json
import linecache
import logging
import os
import sys
import threading
import types
import weakref

import gast

from . import converters, disk_cache, errors, operators, recursion
from .pyct import parser

log = logging.getLogger("autograph_lite")

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
    display_name = fn.__code__.co_name if fn.__code__.co_name.isidentifier() else "lambda_"
    # compiled under a private name, so calls to the function's own name (recursion) still
    # reach the module's binding rather than this definition
    name = "ag__converted_" + display_name
    key = _stored_key(fn)
    stored = _load_stored(key)
    if stored is None:
        stored = _convert(fn, name, display_name)
        _store(key, stored)
    source, line_map, inner_source = stored
    generated_file = f"<autograph_lite converted {fn.__qualname__} #{next(_ids)}>"
    linecache.cache[generated_file] = (len(source), None, source.splitlines(True), generated_file)
    errors.register_source_map(generated_file, line_map)

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
    return Converted(converted, inner_source, generated_file)


def _convert(fn, name, display_name):
    """(module source defining the converted function `name` in a factory over its free
    variables, {generated line: the user's file:line}, the converted function's own source)."""
    node, filename, _ = parser.parse_function(fn)
    # the converters, gast and `ast.unparse` recurse per level: an `elif` chain of 1,000 is 1,000 deep
    with recursion.headroom(parser.FRAMES_PER_LEVEL * parser.depth(node)):
        return _converted_source(fn, node, filename, name, display_name)


def _converted_source(fn, node, filename, name, display_name):
    taken = set(fn.__code__.co_varnames) | set(fn.__code__.co_names) | set(fn.__code__.co_freevars)
    ctx = converters.base.Context(filename, taken | converters.base.all_names(node))
    node.name = name
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
    shown = copy.copy(module_ast.body[0].body[0])
    shown.name = display_name
    return source, _line_map(module_ast, source, filename), ast.unparse(shown)


# --- converted functions in the disk cache ------------------------------------------------

@functools.lru_cache(maxsize=None)
def _converter_version():
    """A digest of this interpreter, gast and every file of the package (path, size, mtime)."""
    package = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256(f"{sys.version}\0{getattr(gast, '__version__', '')}".encode())
    for directory, subdirs, files in sorted(os.walk(package)):
        subdirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                st = os.stat(os.path.join(directory, f))
                h.update(f"{os.path.relpath(os.path.join(directory, f), package)}\0{st.st_size}\0{st.st_mtime_ns}\0"
                         .encode())
    return h.hexdigest()


def _stored_key(fn):
    """The cache key of `fn`'s conversion, or None (its file cannot be read: no caching)."""
    code = fn.__code__
    try:
        with open(code.co_filename, "rb") as f:
            file_digest = hashlib.sha256(f.read()).hexdigest()
    except (OSError, ValueError):
        return None
    identity = [_converter_version(), code.co_filename, file_digest, code.co_firstlineno, code.co_name,
                fn.__qualname__, code.co_varnames, code.co_names, code.co_freevars, list(code.co_positions())]
    return hashlib.sha256(repr(identity).encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=None)
def _directory(root):
    """The cache's `converted/` directory under `root`, or None where it is not private to us."""
    directory = os.path.join(root, "converted")
    problem = disk_cache.prepare(directory)
    if problem is not None:
        log.info("converted functions are not cached: %s %s", directory, problem)
        return None
    return directory


def _entry(key):
    directory = None if key is None else _directory(disk_cache.root())
    return None if directory is None else os.path.join(directory, f"c{key}.json")


def _load_stored(key):
    """(source, line map, inner source) stored under `key`, or None (a bad entry is removed)."""
    path = _entry(key)
    if path is None:
        return None
    try:
        digest, _, payload = disk_cache.read_private(path).partition(b"\n")
        if hashlib.sha256(payload).hexdigest().encode() != digest:
            raise disk_cache.Untrusted("its content does not match its sha256")
        stored = json.loads(payload)
        if stored["key"] != key:
            raise disk_cache.Untrusted("it was stored for another function")
        line_map = {int(line): str(where) for line, where in stored["line_map"].items()}
        return str(stored["source"]), line_map, str(stored["inner_source"])
    except FileNotFoundError:
        return None
    except (disk_cache.Untrusted, OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.info("discarding the converted-function cache entry %s (%s)", path, e)
        disk_cache.remove(path)
        return None


def _store(key, stored):
    path = _entry(key)
    if path is None:
        return
    source, line_map, inner_source = stored
    payload = json.dumps({"key": key, "source": source, "line_map": line_map, "inner_source": inner_source}).encode()
    try:
        disk_cache.write_private(path, hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)
    except OSError as e:
        log.info("could not cache the converted function in %s (%s)", path, e)


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
