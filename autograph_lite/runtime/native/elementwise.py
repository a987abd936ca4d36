"""A fused elementwise chain as one C loop: each element is read once, computed in
registers through the whole chain, and written once.

`cpu_kernel(steps, operands)` returns `run(out, inputs, start, stop)`, which computes
`out[start:stop]` from flat C-contiguous array inputs (scalar inputs are passed by
value), or None when a step has no C translation or no compiler is available. ctypes
releases the GIL during the call, so callers may run disjoint ranges on threads.
"""
import ctypes

import numpy as np

from . import cexpr, compiler

_CTYPES_SCALAR = {
    "uint8_t": ctypes.c_uint8, "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16,
    "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "uint16_t": ctypes.c_uint16,
    "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
    "float": ctypes.c_float, "double": ctypes.c_double,
}


def source(steps, operands, vector_math=frozenset()):
    """C source of `void kernel(n, out, inputs...)` for the fused `steps`.

    steps: (op, args, dtype) with args ("in", i) or ("t", j), as the fusion pass makes them;
    operands: (dtype, weak, scalar) for each input. Raises cexpr.Unsupported.
    """
    emitter = cexpr.Emitter(vector_math)
    out_type = cexpr.c_type(steps[-1][2])
    params, inputs = ["int64_t n", f"{out_type}* restrict out"], []
    for i, (dtype, weak, scalar) in enumerate(operands):
        t = cexpr.c_type(dtype)
        params.append(f"{t} s{i}" if scalar else f"const {t}* restrict a{i}")
        inputs.append(cexpr.Value(f"s{i}" if scalar else f"a{i}[i]", np.dtype(dtype), weak))
    body, temps = [], []
    for j, (op, args, dtype) in enumerate(steps):
        values = [inputs[k] if kind == "in" else temps[k] for kind, k in args]
        body.append(f"        {cexpr.c_type(dtype)} t{j} = {emitter.op(op, values, dtype)};")
        temps.append(cexpr.Value(f"t{j}", np.dtype(dtype), False))
    return "\n".join([
        emitter.prelude(),
        f"void kernel({', '.join(params)}) {{",
        "    for (int64_t i = 0; i < n; i++) {",
        *body,
        f"        out[i] = t{len(steps) - 1};",
        "    }",
        "}", ""])


def cpu_kernel(steps, operands):
    if not compiler.enabled():
        return None
    try:
        text = source(steps, operands, compiler.vector_math())
    except cexpr.Unsupported:
        return None
    library = compiler.load(text)
    if library is None:
        return None
    fn = library.kernel
    fn.restype = None
    fn.argtypes = [ctypes.c_int64, ctypes.c_void_p] + [
        _CTYPES_SCALAR[cexpr.c_type(dtype)] if scalar else ctypes.c_void_p
        for dtype, _, scalar in operands]
    scalar = [s for _, _, s in operands]
    out_size = np.dtype(steps[-1][2]).itemsize
    sizes = [np.dtype(d).itemsize for d, _, _ in operands]

    def run(out, inputs, start, stop):
        args = [v if s else v.ctypes.data + start * size for v, s, size in zip(inputs, scalar, sizes)]
        fn(stop - start, out.ctypes.data + start * out_size, *args)
    return run
