"""The C entry into generated native functions: one CPython extension module (entry.c), built
and cached like the kernels (compiler.py), whose `Entry` calls one generated function.

A ctypes call converts every argument through Python objects (about a microsecond per array);
an `Entry` takes the arguments as they come, checks their form in C, releases the GIL once
for the whole call and boxes the results. Each generated function gets a second symbol for
it, `<name>_values(void* const* values)`, that unpacks one array of pointers into its
parameters (`unpack`).

Where the module cannot be built (no Python headers: a bare interpreter without its
development files), `module()` is None and native functions are called through ctypes:
the same results, at the older cost.
"""
import functools
import operator
import os
import struct
import sysconfig
import threading

import numpy as np

from . import compiler

# a value's role: an argument read; a loop variable (copied); an output; a loop variable whose
# array the caller gives up (no copy: updated in place)
READ, UPDATE, WRITE, DONATE = 0, 1, 2, 3
ARRAY, AS_FLOAT, AS_INT, AS_BOOL, AS_NUMPY_SCALAR, AS_ZERO_D = range(6)  # how a result is boxed
BODY_NEVER_RAN = 256  # in a finishing status: a loop gave its loop variables back as they came
MAX_VALUES = 256


_lock = threading.Lock()
_shape_dtype = operator.attrgetter("shape", "dtype")


def python_fast_key(device, args):
    """The key of `Function.__call__`'s fast path: (device, arg types, per arg its (shape, dtype),
    or a Python number's value: an int or bool itself, a float's bits as an int); AttributeError
    for another argument without them. The module's C spelling replaces this one as `fast_key`
    once the module is loaded (the same tuple, in a third of the time)."""
    return device, tuple(map(type, args)), tuple(map(_fast_leaf, args))


def _fast_leaf(a):
    t = type(a)
    if t is float:  # by bits, as the full key (-0.0 and 0.0 are other traces)
        return struct.unpack("<q", struct.pack("<d", a))[0]
    if t is int or t is bool:
        return a
    try:
        return _shape_dtype(a)
    except AttributeError:
        raise
    except Exception:  # a `__getattr__` raising another error: the full path takes the value
        raise AttributeError("shape") from None


fast_key = python_fast_key


_module = None
_built = False  # module() has run: _module is the module, or None for good
_preloaded = False  # preload() has looked in the cache (once per process)


def module(wait=True):
    """The built extension module, or None (no compiler, no Python headers: warned once);
    `wait=False`: compiler.PENDING while it is built on a worker thread."""
    global _built
    with _lock:  # one build per process (and sysconfig's first read is not thread-safe)
        if not _built:
            found = _module or _load(build=True, wait=wait)
            if found is compiler.PENDING:
                return found
            _use(found)
            _built = True
        return _module


def loaded():
    """The module if it is loaded already, else None (never builds or loads it)."""
    return _module


def preload():
    """Load the module if this machine's cache holds it already (a native function built it in
    an earlier process), so calls take its fast key from the start; never builds it. Looks
    once per process: a module built later is loaded by `module()`."""
    global _preloaded
    if _preloaded:
        return
    with _lock:
        if _module is None and not _built and not _preloaded:
            _use(_load(build=False))
        _preloaded = True


_on_load = []  # callbacks given the module once it is loaded (function.py installs FastCall)


def on_load(callback):
    """`callback(module)` once the module is loaded: now if it is, else when it loads."""
    if _module is not None:
        callback(_module)
    else:
        _on_load.append(callback)


def _use(found):
    global _module, fast_key
    if found is not None:
        _module, fast_key = found, found.fast_key
        for callback in _on_load:
            callback(found)


def _load(build, wait=True):
    include = [_python_include(), np.get_include()]
    if include[0] is None or not compiler.enabled():
        return None
    return compiler.load_extension(_source(), "autograph_lite_entry", include, build=build, wait=wait)


@functools.lru_cache(maxsize=None)
def _source():
    """entry.c's text (read once: a pending build asks for the module on every tier-up check)."""
    with open(os.path.join(os.path.dirname(__file__), "entry.c")) as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def _python_include():
    """The directory of this interpreter's Python.h, or None (no development headers)."""
    path = sysconfig.get_paths().get("include")
    return path if path and os.path.exists(os.path.join(path, "Python.h")) else None


def unpack(symbol, params):
    """C source of `int <symbol>_values(void* const* v)` calling `symbol` with `params`, each
    a (C type, by_pointer) pair: v[i] points to the value (a scalar's cell) or is the pointer."""
    args = [f"({t}*)v[{i}]" if by_pointer else f"*({t}*)v[{i}]" for i, (t, by_pointer) in enumerate(params)]
    return f"int {symbol}_values(void* const* v) {{ return {symbol}({', '.join(args)}); }}\n"
