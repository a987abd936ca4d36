"""numpy's own inner loops, called from generated C, for the ops whose results C's libm
would round differently (tanh, exp, log, power: numpy computes them with its own SIMD code,
chosen for this CPU when numpy starts).

Every numpy ufunc holds a table of inner loops, one per type signature ("f->f"), each a C
function `loop(char **args, npy_intp *dims, npy_intp *steps, void *data)`; `np.tanh` on a
float32 array calls its "f->f" loop once over the array. Generated code calls the same
function over the same contiguous elements, so its results are numpy's bit for bit.

The table is read through the ufunc object's C layout (numpy's `PyUFuncObject`: after the
object header, four ints, then `functions`, `data`, `ntypes`, `reserved1`, `name`, `types`).
The layout is checked against what Python sees of the ufunc (its name, its number of type
signatures, each signature's type numbers) before any pointer is used; if anything
disagrees (another numpy, a debug build of Python), `Unsupported` keeps the numpy path.
"""
import ctypes
import sys

import numpy as np

from .language import Unsupported

# typedef of a numpy inner loop, for the prelude of a source that calls one
LOOP_TYPEDEF = "typedef void (*ag_numpy_loop)(char**, const int64_t*, const int64_t*, void*);"
_HEADER = object.__basicsize__  # PyObject_HEAD: 16 bytes on a 64-bit release build
_POINTER = ctypes.sizeof(ctypes.c_void_p)


def inner_loop(ufunc_name, dtypes):
    """(function pointer, data pointer) of numpy ufunc `ufunc_name`'s loop for `dtypes`
    (inputs then output, e.g. (float32, float32) for tanh on float32); raises Unsupported."""
    ufunc = getattr(np, ufunc_name, None)
    if not isinstance(ufunc, np.ufunc) or _POINTER != 8 or hasattr(sys, "gettotalrefcount"):
        raise Unsupported(f"numpy's {ufunc_name} loop cannot be read here")
    chars = "".join(np.dtype(d).char for d in dtypes[:-1]) + "->" + np.dtype(dtypes[-1]).char
    if chars not in ufunc.types:
        raise Unsupported(f"numpy's {ufunc_name} has no {chars} loop")
    index = ufunc.types.index(chars)
    base = id(ufunc)

    def read(offset, ctype):
        return ctype.from_address(base + offset).value

    nin, nout, nargs = (read(_HEADER + 4 * i, ctypes.c_int) for i in range(3))
    functions, data = read(_HEADER + 16, ctypes.c_void_p), read(_HEADER + 24, ctypes.c_void_p)
    ntypes = read(_HEADER + 32, ctypes.c_int)
    name_ptr, types_ptr = read(_HEADER + 40, ctypes.c_void_p), read(_HEADER + 48, ctypes.c_void_p)
    if (nin, nout, nargs, ntypes) != (ufunc.nin, ufunc.nout, ufunc.nargs, ufunc.ntypes) or not functions \
            or not name_ptr or not types_ptr or ctypes.string_at(name_ptr) != ufunc.__name__.encode():
        raise Unsupported(f"numpy's ufunc layout is not the one this version reads ({ufunc_name})")
    numbers = ctypes.string_at(types_ptr + index * nargs, nargs)
    if list(numbers) != [np.dtype(d).num for d in dtypes]:
        raise Unsupported(f"numpy's {ufunc_name} loop table does not match its signatures")
    fn = ctypes.c_void_p.from_address(functions + index * _POINTER).value
    extra = ctypes.c_void_p.from_address(data + index * _POINTER).value if data else None
    if not fn:
        raise Unsupported(f"numpy's {ufunc_name} {chars} loop is not set")
    return fn, extra
