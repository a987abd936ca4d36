"""A fused elementwise chain as one C loop: each element is read once, computed in
registers through the whole chain, and written once.

`cpu_kernel(steps, operands)` returns `run(out, inputs, start, stop, inner=0)`, which
computes the flat range [start, stop) of `out` from C-contiguous inputs read as their
kind says: "full" (the result's shape), "row" (the result's trailing dims, `inner`
elements, as a bias is; the range is then whole rows) or "scalar" (passed by value).
It is None when a step has no C translation or no compiler is available, and
compiler.PENDING while the kernel is built on a worker thread (ask again later). ctypes
releases the GIL during the call, so callers may run disjoint ranges on threads.
"""
import ctypes

import numpy as np

from . import cexpr, compiler
from .language import C

_CTYPES_SCALAR = {
    "uint8_t": ctypes.c_uint8, "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16,
    "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "uint16_t": ctypes.c_uint16,
    "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
    "float": ctypes.c_float, "double": ctypes.c_double,
}


def as_number(value):
    """A Python number for a by-value ctypes argument (numpy scalars and 0-d arrays included)."""
    return value.item() if hasattr(value, "item") else value


def source(steps, operands, vector_math=frozenset(), language=None):
    """Source of `void kernel(n, inner, out, inputs...)` for the fused `steps`, in `language`
    (a CStyleLanguage: C for this CPU by default, `language.CUDA` for a GPU kernel), and, where
    the language has a vector type for the chain's dtype and no input is read by row, of
    `kernel_vec<w>` with the same parameters, reading and writing w elements at once (callers
    use it when every array is aligned to the vector; it does the last n % w elements singly).

    steps: (op, args, dtype) with args ("in", i) or ("t", j), as the fusion pass makes them;
    operands: (dtype, weak, kind) for each input, kind "full", "row" or "scalar".
    Raises cexpr.Unsupported.
    """
    language = language or C(vector_math)
    emitter = cexpr.Emitter(language)
    out_dtype = np.dtype(steps[-1][2])
    rows = any(kind == "row" for _, _, kind in operands)
    restrict = language.restrict
    params = ["int64_t n", "int64_t inner", f"{language.type(out_dtype)}* {restrict} out"]
    for i, (dtype, weak, kind) in enumerate(operands):
        t = language.type(dtype)
        params.append(f"{t} s{i}" if kind == "scalar" else f"const {t}* {restrict} a{i}")
    def values(element):  # each operand's expression, given its index and kind
        return [cexpr.Value(element(i, kind), np.dtype(dtype), weak) for i, (dtype, weak, kind) in enumerate(operands)]
    body = _body(emitter, steps, values(lambda i, kind: {"scalar": f"s{i}", "row": f"a{i}[j]", "full": f"a{i}[i]"}[kind]),
                 "out[i]")
    lines = [f"{language.entry_prefix}void kernel({', '.join(params)}) {{",
             *language.elementwise_loop(body, rows), "}"]
    vector = language.vector_types.get(out_dtype)
    if vector and not rows and all(kind == "scalar" or np.dtype(d) == out_dtype for d, _, kind in operands):
        name, width = vector
        lanes = "xyzw"[:width]
        loads = [f"const {name} v{i} = ((const {name}*)a{i})[i];"
                 for i, (_, _, kind) in enumerate(operands) if kind == "full"]
        vector_body = [*loads, f"{name} r;"]
        for lane in lanes:  # each lane's chain in its own block: the temporaries' names repeat
            ins = values(lambda i, kind: f"s{i}" if kind == "scalar" else f"v{i}.{lane}")
            vector_body += ["{", *("    " + line for line in _body(emitter, steps, ins, f"r.{lane}")), "}"]
        vector_body.append(f"(({name}*)out)[i] = r;")
        lines += [f"{language.entry_prefix}void kernel_vec{width}({', '.join(params)}) {{",
                  *language.elementwise_loop(vector_body, False, count=f"n / {width}"),
                  *language.elementwise_loop(body, False, start=f"n / {width} * {width}"), "}"]
    return "\n".join([emitter.prelude(), *lines, ""])


def _body(emitter, steps, inputs, target):
    """The statements computing `steps` on one element from `inputs` (a cexpr.Value per operand),
    the result stored to `target`."""
    body, temps = [], []
    for j, (op, args, dtype) in enumerate(steps):
        values = [inputs[k] if kind == "in" else temps[k] for kind, k in args]
        body.append(f"{emitter.language.type(dtype)} t{j} = {emitter.op(op, values, dtype)};")
        temps.append(cexpr.Value(f"t{j}", np.dtype(dtype), False))
    body.append(f"{target} = t{len(steps) - 1};")
    return body


def cpu_kernel(steps, operands):
    if not compiler.enabled():
        return None
    try:
        text = source(steps, operands, compiler.vector_math())
    except cexpr.Unsupported:
        return None
    fn = compiler.load(text, "kernel", wait=False)
    if fn is None or fn is compiler.PENDING:
        return fn
    fn.restype = None
    fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p] + [
        _CTYPES_SCALAR[cexpr.c_type(dtype)] if kind == "scalar" else ctypes.c_void_p
        for dtype, _, kind in operands]
    out_size = np.dtype(steps[-1][2]).itemsize
    # per input: None (by value), or the byte step of its pointer per element of `start`
    offsets = [None if kind == "scalar" else 0 if kind == "row" else np.dtype(d).itemsize
               for d, _, kind in operands]

    def run(out, inputs, start, stop, inner=0):
        args = [v if step is None else v.ctypes.data + start * step for v, step in zip(inputs, offsets)]
        fn(stop - start, inner, out.ctypes.data + start * out_size, *args)
    return run
