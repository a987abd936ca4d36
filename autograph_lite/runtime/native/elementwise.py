"""A fused elementwise chain as one C loop: each element is read once, computed in
registers through the whole chain, and written once.

`cpu_kernel(steps, operands)` returns `run(out, inputs, start, stop, inner=0)`, which
computes the flat range [start, stop) of `out` from C-contiguous inputs read as their
kind says: "full" (the result's shape), "row" (the result's trailing dims, `inner`
elements, as a bias is; the range is then whole rows) or "scalar" (passed by value).
It is None when a step has no C translation or no compiler is available, and
compiler.PENDING while the kernel is built on a worker thread (ask again later). ctypes
releases the GIL during the call, so callers may run disjoint ranges on threads. A run
returns the floating-point flags the range raised (language.FLAG_BITS; none left set on the
thread): numpy's ufuncs would have warned, so the caller computes the chain with them.

`cpu_strided_kernel(steps, operands)` returns `run(out, inputs, meta, start, stop)`, the same
chain over views read through their strides (`a[1:, :]`, `a[:, ::-1]`, a column broadcast
along rows): every array input, of any kind, is read at its own strides over the result's
shape (`meta`: the shape, then each array input's strides in elements, 0 where it is
broadcast), `out` C-contiguous, [start, stop) a range of its rows (all dims but the last).
The CPU only: the GPU takes contiguous operands (`cuda.py`), others run its ops one by one.
"""
import ctypes

import numpy as np

from . import cexpr, compiler
from .language import FLAG_BITS, C

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
    kind, start, end = _flag_parts(language)
    lines = [f"{language.entry_prefix}{kind} kernel({', '.join(params)}) {{", *start,
             *language.elementwise_loop(body, rows), *end, "}"]
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
        lines += [f"{language.entry_prefix}{kind} kernel_vec{width}({', '.join(params)}) {{", *start,
                  *language.elementwise_loop(vector_body, False, count=f"n / {width}"),
                  *language.elementwise_loop(body, False, start=f"n / {width} * {width}"), *end, "}"]
    return "\n".join([emitter.prelude(), *_flag_helpers(language), *lines, ""])


def _flag_parts(language):
    """(return type, first statements, last statements) of a kernel: in a dialect with
    floating-point flags, it clears them, and returns those it raised (FLAG_BITS), cleared again
    so that numpy's next check on this thread does not see them (runtime/fused.py then computes
    the chain with numpy, whose ufuncs warn or raise as eager's)."""
    if not language.fp_flags:
        return "void", [], []
    return "int", ["    ag_clear_flags();"], ["    const int ag_raised = ag_flags();", "    ag_clear_flags();",
                                                  "    return ag_raised;"]


def _flag_helpers(language):
    return ["#include <fenv.h>", FLAG_BITS] if language.fp_flags else []


MAX_DIMS = 64  # numpy's NPY_MAXDIMS
CHUNK = 256    # elements of a row a strided kernel computes at once from contiguous copies of its inputs


def strided_source(steps, operands, vector_math=frozenset()):
    """Source of `void kernel_strided(ndim, meta, start, stop, out, inputs...)`: the chain over
    the rows [start, stop) of a result of `ndim` dims, each array input read through the strides
    `meta` holds (see the module docstring), scalars by value. Each row is one loop over its
    elements, its inputs at a constant step; rows whose inputs are all contiguous get a loop
    reading them as such (the compiler vectorizes it). Raises cexpr.Unsupported."""
    language = C(vector_math)
    emitter = cexpr.Emitter(language)
    out_t = language.type(steps[-1][2])
    params = ["int64_t ndim", "const int64_t* restrict meta", "int64_t start", "int64_t stop", f"{out_t}* restrict out"]
    arrays = [i for i, (_, _, kind) in enumerate(operands) if kind != "scalar"]
    types = {}
    for i, (dtype, weak, kind) in enumerate(operands):
        types[i] = language.type(dtype)
        params.append(f"{types[i]} s{i}" if kind == "scalar" else f"const {types[i]}* a{i}")

    def body(read, target, indent):
        ins = [cexpr.Value(f"s{i}" if kind == "scalar" else read(i), np.dtype(dtype), weak)
               for i, (dtype, weak, kind) in enumerate(operands)]
        return ["    " * indent + line for line in _body(emitter, steps, ins, target)]

    def each(template):
        return [template.format(i=i, k=k + 1) for k, i in enumerate(arrays)]
    kind, start, end = _flag_parts(language)
    lines = [
        f"{kind} kernel_strided({', '.join(params)}) {{", *start,
        "    const int64_t* shape = meta;",
        "    const int64_t cols = shape[ndim - 1];",
        *each("    const int64_t* st{i} = meta + ndim * {k};"),
        *(f"    const {types[i]}* p{i} = a{i};" for i in arrays),
        f"    int64_t idx[{MAX_DIMS}];",
        "    int64_t rest = start;",
        "    for (int64_t d = ndim - 2; d >= 0; d--) {  /* the first row's index and addresses */",
        "        idx[d] = rest % shape[d];",
        "        rest /= shape[d];",
        *each("        p{i} += idx[d] * st{i}[d];"),
        "    }",
        *each("    const int64_t c{i} = st{i}[ndim - 1];"),
        f"    const int unit = {' && '.join(f'c{i} == 1' for i in arrays) or '1'};",
        "    for (int64_t r = start; r < stop; r++) {",
        f"        {out_t}* restrict o = out + r * cols;",
        *(f"        const {types[i]}* restrict q{i} = p{i};" for i in arrays),
        "        if (unit) {",
        "            for (int64_t j = 0; j < cols; j++) {",
        *body(lambda i: f"q{i}[j]", "o[j]", 4),
        "            }",
        "        } else {  /* in chunks: a strided (or stride-0) input copied into a contiguous one first */",
        f"            for (int64_t j0 = 0; j0 < cols; j0 += {CHUNK}) {{",
        f"                const int64_t m = cols - j0 < {CHUNK} ? cols - j0 : {CHUNK};",
        f"                {out_t}* restrict oo = o + j0;",
        *(line for i in arrays for line in (
            f"                {types[i]} b{i}[{CHUNK}];",
            f"                const {types[i]}* u{i} = q{i} + j0;",
            f"                if (c{i} == 0) {{ for (int64_t j = 0; j < m; j++) b{i}[j] = q{i}[0]; u{i} = b{i}; }}",
            f"                else if (c{i} != 1) {{ for (int64_t j = 0; j < m; j++) b{i}[j] = q{i}[(j0 + j) * c{i}]; u{i} = b{i}; }}")),
        "                for (int64_t j = 0; j < m; j++) {",
        *body(lambda i: f"u{i}[j]", "oo[j]", 5),
        "                }",
        "            }",
        "        }",
        "        for (int64_t d = ndim - 2; d >= 0; d--) {  /* the next row */",
        *each("            p{i} += st{i}[d];"),
        "            if (++idx[d] < shape[d]) break;",
        "            idx[d] = 0;",
        *each("            p{i} -= shape[d] * st{i}[d];"),
        "        }",
        "    }",
        *end,
        "}",
    ]
    return "\n".join([emitter.prelude(), *_flag_helpers(language), *lines, ""])


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


def _loaded(write, symbol, steps, operands, leading):
    """C function `symbol` of the source `write(steps, operands, vector_math)` gives, taking the
    ctypes `leading` then one argument per operand (a scalar by value, an array's address) and
    returning the floating-point flags it raised; or None, or compiler.PENDING while it is built."""
    if not compiler.enabled():
        return None
    try:
        text = write(steps, operands, compiler.vector_math())
    except cexpr.Unsupported:
        return None
    fn = compiler.load(text, symbol, wait=False)
    if fn is None or fn is compiler.PENDING:
        return fn
    fn.restype = ctypes.c_int
    fn.argtypes = list(leading) + [_CTYPES_SCALAR[cexpr.c_type(dtype)] if kind == "scalar" else ctypes.c_void_p
                                   for dtype, _, kind in operands]
    return fn


def cpu_kernel(steps, operands):
    fn = _loaded(source, "kernel", steps, operands, [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p])
    if fn is None or fn is compiler.PENDING:
        return fn
    out_size = np.dtype(steps[-1][2]).itemsize
    # per input: None (by value), or the byte step of its pointer per element of `start`
    offsets = [None if kind == "scalar" else 0 if kind == "row" else np.dtype(d).itemsize
               for d, _, kind in operands]

    def run(out, inputs, start, stop, inner=0):
        args = [v if step is None else v.ctypes.data + start * step for v, step in zip(inputs, offsets)]
        return fn(stop - start, inner, out.ctypes.data + start * out_size, *args)
    return run


def cpu_strided_kernel(steps, operands):
    """run(out, inputs, meta, start, stop), or None or compiler.PENDING (see the module docstring)."""
    fn = _loaded(strided_source, "kernel_strided", steps, operands,
                 [ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p])
    if fn is None or fn is compiler.PENDING:
        return fn
    scalars = [kind == "scalar" for _, _, kind in operands]
    per_dim = 1 + scalars.count(False)  # the shape's entry and each array's stride

    def run(out, inputs, meta, start, stop):
        args = [v if scalar else v.ctypes.data for v, scalar in zip(inputs, scalars)]
        return fn(len(meta) // per_dim, meta.ctypes.data, start, stop, out.ctypes.data, *args)
    return run
