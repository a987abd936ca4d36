"""The FusedElementwise op: one node computing a chain of elementwise ops (made by
runtime/passes/fusion.py), and its kernel.

The node holds a small program (steps over its inputs and earlier steps). On the CPU a
large result is computed by one generated C loop (runtime/native/elementwise.py) when a C
compiler is at hand: every element is read once and written once, the chain runs in
registers. Otherwise, or for a step C has no translation for, it is computed in
cache-sized blocks: each block runs the chain through scratch buffers (`out=`). Either
way a range of `SPLIT_MIN` elements a thread or more is split among threads (ctypes and numpy
release the GIL). Views read through their strides (`a[1:, :]`, `a[:, ::-1]`, a column
broadcast along rows: NPBench's stencils) take the C kernel's strided twin, its rows split alike. Small results, and what C
cannot take, evaluate the steps on whole arrays. On a GPU the chain is one CUDA kernel from
the same generator (runtime/native/cuda.py) where cupy can compile it and its arrays are
contiguous (strided views there run the ops one by one).
"""
import concurrent.futures
import functools
import itertools
import math
import os
import threading

import numpy as np

from . import fp_errors
from .native import cexpr, compiler
from .native import cuda as native_cuda
from .native import elementwise as native_elementwise
from .opdef import BOOL, DTYPE, INT, STR, OpDef, Record, TupleOf, lookup, register

BLOCK = 1 << 16            # elements per block: few Python steps per element, buffers near cache
BLOCKED_MIN_SIZE = 1 << 16  # below this, whole-array evaluation is cheaper
THREADS = max(1, min(8, os.cpu_count() or 1))
# elements each thread's part of a chain has at least: waking a pool thread and waiting for it costs
# tens of microseconds, about what a C kernel takes for this many (NPBench's floyd_warshall, 160,000
# elements a call, took 2.1x its one-thread time split in two)
SPLIT_MIN = 1 << 18


def parts(size):
    """How many threads compute a chain of `size` elements."""
    return max(1, min(THREADS, size // SPLIT_MIN))


# --- the kernel -----------------------------------------------------------------------

def _fused_kernel(xp, steps, expr, operands):
    whole = _whole_array_evaluator(xp, steps)
    if xp is not np:
        return _device_kernel(xp, steps, operands, whole)
    out_dtype = steps[-1][2]
    on_numpy = functools.partial(_run_blocks, _block_evaluator(steps))
    native = _Native(steps, operands)

    def fused(*inputs):
        layout = native.layout(inputs) if native.run is not False else None  # False: no C kernel
        run = native.kernel() if layout is not None and layout[1] >= BLOCKED_MIN_SIZE else None
        if run is None and layout is None and native.run is not False:
            strided = native.strided_layout(inputs)
            run = native.strided_kernel() if strided is not None else None
            if run is not None:  # views read through their strides, the rows split among threads
                shape, meta, rows = strided
                out = np.empty(shape, out_dtype)
                args = [native_elementwise.as_number(a) if scalar else a
                        for a, scalar in zip(inputs, native.scalars)]
                if _in_row_chunks(run, out, args, meta, rows):
                    return whole(*inputs)  # numpy's ufuncs warn (or raise) as eager's
                return out
        if run is not None:
            shape, size, inner = layout
            out = np.empty(shape, out_dtype)
            args = [native_elementwise.as_number(a) if scalar else a
                    for a, scalar in zip(inputs, native.scalars)]
            # row-broadcast inputs: one call over whole rows
            flags = run(out, args, 0, size, inner) if inner else _in_chunks(run, out, args, size)
            return whole(*inputs) if flags else out  # a flag raised: numpy's ufuncs warn as eager's
        size = _blockable_size(inputs)
        if size < BLOCKED_MIN_SIZE:
            return whole(*inputs)
        shape = next(a.shape for a in inputs if isinstance(a, np.ndarray) and a.ndim)
        out = np.empty(shape, out_dtype)
        flat_in = [a.reshape(-1) if isinstance(a, np.ndarray) and a.ndim else a for a in inputs]
        if _in_chunks(on_numpy, out.reshape(-1), flat_in, size):
            return whole(*inputs)  # on the caller's thread, once: warned (or raised) as eagerly
        return out
    return fused


def _device_kernel(xp, steps, operands, whole):
    """On a GPU array module: the chain as one CUDA kernel (runtime/native/cuda.py), compiled
    at the first call whose inputs it can read; otherwise, and where the module has no raw
    kernels (the tests' stand-in without a C++ compiler) or the chain no CUDA form, the ops one
    by one."""
    native, out_dtype, kernel = _Native(steps, operands), steps[-1][2], []

    def fused(*inputs):
        layout = native.layout(inputs, xp.ndarray)
        if layout is None:
            return whole(*inputs)
        if not kernel:
            kernel.append(_gpu_kernel(xp, steps, operands))
        if kernel[0] is None:
            return whole(*inputs)
        shape, size, inner = layout
        out = xp.empty(shape, out_dtype)
        kernel[0](out, inputs, size, inner)
        return out
    return fused


def _gpu_kernel(xp, steps, operands):
    try:
        return native_cuda.elementwise_kernel(xp, steps, operands)
    except Exception as e:  # a kernel cupy cannot compile is our bug: say so once, run the ops
        compiler.warn_once(f"a fused CUDA kernel failed to compile ({type(e).__name__}: {e}), so its ops run "
                           f"one by one (same results)", "Please report this with the source above.")
        return None


def _in_chunks(run, out, inputs, size):
    """`run` over the chunks of [0, size) of `out`. Returns the floating-point flags the runs
    raised, or'd."""
    return _on_threads(lambda start, stop: run(out, inputs, start, stop), _chunks(size))


def _in_row_chunks(run, out, inputs, meta, rows):
    """`run` over the rows [0, rows) of `out`, in as many parts as `_chunks` would split its
    elements. Returns the flags, as `_in_chunks`."""
    step = -(-rows // parts(out.size))
    return _on_threads(lambda start, stop: run(out, inputs, meta, start, stop),
                       [(start, min(rows, start + step)) for start in range(0, rows, step)])


def _on_threads(run, ranges):
    """run(start, stop) over `ranges`: the calling thread takes the first, the pool the rest;
    their results (floating-point flags) or'd."""
    first, *rest = ranges
    others = [_pool().submit(run, *r) for r in rest]
    try:
        flags = run(*first)
    finally:  # the parts still running write into the output: wait for them, whatever happened here
        concurrent.futures.wait(others)
    for f in others:
        flags |= f.result()
    return flags


class _Native:
    """The C kernel of one fused node, built at its first large call."""

    def __init__(self, steps, operands):
        self.steps, self.operands = steps, operands
        self.kinds = [kind for _, _, kind in operands]
        self.dtypes = [np.dtype(d) for d, _, _ in operands]
        self.scalars = [kind == "scalar" for kind in self.kinds]
        self.run = self.strided = None

    def layout(self, inputs, array_type=np.ndarray):
        """(shape, size, inner) if `inputs` are what the kernel reads: C-contiguous arrays
        (of `array_type`) of its dtypes, all of one shape or (row inputs, whose size is
        `inner`) of that shape's trailing dims, and host scalars where it takes scalars (passed
        by value: a device scalar would be a copy to the host); else None."""
        shape, rows = None, None
        for a, kind, dtype in zip(inputs, self.kinds, self.dtypes):
            if kind == "scalar":
                if not (isinstance(a, (int, float, bool, np.generic)) or (type(a) is np.ndarray and not a.ndim)):
                    return None
            elif type(a) is not array_type or a.dtype != dtype or not a.flags.c_contiguous:
                return None
            elif kind == "row":
                if rows is None:
                    rows = a.shape
                elif a.shape != rows:
                    return None
            elif shape is None:
                shape = a.shape
            elif a.shape != shape:
                return None
        if not shape:
            return None
        inner = 0
        if rows is not None:
            if not 0 < len(rows) < len(shape) or shape[len(shape) - len(rows):] != rows:
                return None
            inner = math.prod(rows)
        return shape, math.prod(shape), inner

    def strided_layout(self, inputs):
        """(shape, meta, rows) if the strided kernel reads `inputs`: numpy arrays of its dtypes
        whose shapes broadcast to the result's, at least BLOCKED_MIN_SIZE elements, aligned, each
        stepping through its dims outermost first (so numpy's result is C-contiguous, as this one
        is: a transposed view keeps numpy's layout on the numpy path), and scalars where it takes
        scalars; else None. `meta` (int64): the shape, then each array's
        strides in elements (0 along broadcast dims), with dims every array steps through
        contiguously merged and dims of 1 dropped; `rows`: the product of all but its last dim."""
        arrays = []
        for a, scalar, dtype in zip(inputs, self.scalars, self.dtypes):
            if scalar:
                if not (isinstance(a, (int, float, bool, np.generic)) or (type(a) is np.ndarray and not a.ndim)):
                    return None
            elif type(a) is not np.ndarray or a.dtype != dtype or not a.flags.aligned \
                    or any(st % dtype.itemsize for st in a.strides):
                return None
            else:
                arrays.append(a)
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            return None
        size = math.prod(shape)
        if not shape or size < BLOCKED_MIN_SIZE:
            return None
        strides = [[0] * (len(shape) - a.ndim) + [st // a.itemsize if n > 1 else 0 for st, n in zip(a.strides, a.shape)]
                   for a in arrays]  # broadcast_to's strides, without making the views
        for st in strides:  # numpy's result is C-ordered (what a later sum's order depends on) only if
            steps = [abs(s) for s, n in zip(st, shape) if n > 1 and s]  # no input orders its dims otherwise
            if steps != sorted(steps, reverse=True):
                return None
        dims = []  # (length, [each array's stride]) from the last dim, merged where all allow
        for d in reversed(range(len(shape))):
            n, st = shape[d], [s[d] for s in strides]
            if n == 1:
                continue
            if dims and all(s == inner * dims[-1][0] for s, inner in zip(st, dims[-1][1])):
                dims[-1] = (dims[-1][0] * n, dims[-1][1])
            else:
                dims.append((n, st))
        dims.reverse()
        meta = np.array([n for n, _ in dims] + [st[k] for k in range(len(arrays)) for _, st in dims], np.int64)
        return shape, meta, size // dims[-1][0]

    def strided_kernel(self):
        """The C kernel over strided views, or None (as `kernel`)."""
        return self._built("strided", native_elementwise.cpu_strided_kernel)

    def kernel(self):
        """The C kernel, or None where there is none or it is still being built (the numpy path runs)."""
        return self._built("run", native_elementwise.cpu_kernel)

    def _built(self, attr, build):
        """The kernel `build` makes, kept in `attr` (False: none can be); None while it is built."""
        if getattr(self, attr) is None:
            run = build(self.steps, self.operands)
            if run is compiler.PENDING:
                return None
            setattr(self, attr, run or False)
        return getattr(self, attr) or None


def _blockable_size(inputs):
    """The common size if every array input is C-contiguous with one shape (others scalar), else 0."""
    shape = None
    for a in inputs:
        if isinstance(a, np.ndarray) and a.ndim:
            if not a.flags.c_contiguous or (shape is not None and a.shape != shape):
                return 0
            shape = a.shape
        elif not (np.isscalar(a) or isinstance(a, np.ndarray)):
            return 0
    return 0 if shape is None else int(np.prod(shape))


def _chunks(size):
    step = -(-size // parts(size))
    step = -(-step // BLOCK) * BLOCK
    return [(start, min(size, start + step)) for start in range(0, size, step)]


_scratch = threading.local()
_executor = None
_executor_lock = threading.Lock()


def _pool():
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(THREADS, thread_name_prefix="ag-fused")
        return _executor


def _run_blocks(block, out, inputs, start, stop):
    """The numpy path: the chain on each BLOCK-sized piece of [start, stop). Returns 1 where an op
    met a floating-point error (numpy's warning from here would be one per block, from a pool
    thread whose error state is not the caller's: the caller computes the chain again), else 0."""
    try:
        with np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"):
            for lo in range(start, stop, BLOCK):
                hi = min(stop, lo + BLOCK)
                block(out[lo:hi], [a[lo:hi] if isinstance(a, np.ndarray) and a.ndim else a for a in inputs], hi - lo)
    except FloatingPointError:
        return 1
    return 0


def _scratch_slots(steps):
    """A scratch-buffer number per step, reusing the buffer of a value no later step reads."""
    last_use = {}
    for j, (_, args, _) in enumerate(steps):
        for a in args:
            if a[0] == "t":
                last_use[a[1]] = j
    slots, free, next_slot = [], {}, 0
    for j, (_, args, dtype) in enumerate(steps):
        pool = free.setdefault(dtype, [])
        if pool:
            slot = pool.pop()
        else:
            slot, next_slot = next_slot, next_slot + 1
        slots.append(slot)
        for a in args:  # values last read here can be overwritten from the next step on
            if a[0] == "t" and last_use.get(a[1]) == j:
                free.setdefault(steps[a[1]][2], []).append(slots[a[1]])
    return slots


def _block_evaluator(steps):
    """fn(out_block, input_blocks, n): the chain on one block, through per-thread scratch buffers."""
    program = []
    for op, args, dtype in steps:
        opdef = lookup(op)
        if opdef.expansion is not None:
            program.append(("expand", opdef.expansion, args, dtype))
        else:
            program.append(("ufunc", getattr(np, opdef.ufunc), args, dtype))
    slots = _scratch_slots(steps)

    def run_block(out, inputs, n):
        buffers = _scratch.__dict__.setdefault("buffers", {})
        values = []
        last = len(program) - 1

        def value(arg):
            return inputs[arg[1]] if arg[0] == "in" else values[arg[1]]
        for j, (kind, fn, args, dtype) in enumerate(program):
            target = out if j == last else _buffer(buffers, slots[j], dtype, n)
            if kind == "ufunc":
                fn(*[value(a) for a in args], out=target)
            else:
                x = value(args[0])
                for name, operands in fn:
                    ops = [x if o == "x" else target if o == "y" else o for o in operands]
                    getattr(np, name)(*ops, out=target)
            values.append(target)
    return run_block


def _buffer(buffers, j, dtype, n):
    key = (j, dtype)
    buf = buffers.get(key)
    if buf is None or buf.size < n:
        buf = buffers[key] = np.empty(BLOCK, dtype)
    return buf[:n]


def _whole_array_evaluator(xp, steps):
    """fn(*inputs): the chain on whole arrays with the ops' own kernels (any device),
    generated as straight-line code. On numpy, a float step whose operand is an earlier step's
    large result that nothing after reads writes into it (`_into`): each fresh multi-megabyte
    temporary page-faults (NPBench's fdtd_2d spent 6x numpy's time allocating)."""
    n_inputs = 1 + max((a[1] for _, args, _ in steps for a in args if a[0] == "in"), default=-1)
    params = [f"a{i}" for i in range(n_inputs)]
    last_use = {}
    for j, (_, args, _) in enumerate(steps):
        for a in args:
            if a[0] == "t":
                last_use[a[1]] = j
    lines, namespace = [], {"_into": _into}
    for j, (op, args, dtype) in enumerate(steps):
        opdef = lookup(op)
        operands = ", ".join(f"a{a[1]}" if a[0] == "in" else f"t{a[1]}" for a in args)
        namespace[f"k{j}"] = opdef.kernel(xp)
        dead = [a[1] for a in args if a[0] == "t" and last_use[a[1]] == j and np.dtype(steps[a[1]][2]) == np.dtype(dtype)]
        if xp is np and dead and np.dtype(dtype).kind in "fc" and opdef.expansion is None and opdef.ufunc:
            namespace[f"u{j}"] = getattr(np, opdef.ufunc)
            lines.append(f"    t{j} = _into(u{j}, k{j}, t{dead[0]}, inputs, {operands})")
        else:
            lines.append(f"    t{j} = k{j}({operands})")
    if any("_into(" in line for line in lines):  # the inputs a temporary must not be
        lines.insert(0, f"    inputs = ({''.join(p + ', ' for p in params)})")
    lines = [f"def evaluate({', '.join(params)}):", *lines, f"    return t{len(steps) - 1}"]
    filename = f"<fused chain {next(_chains)}>"
    exec(compile("\n".join(lines), filename, "exec"), namespace)
    # the line of each step, so that numpy's warning from it names its op (fp_errors.fused_step)
    first = len(lines) - len(steps)  # (lines count from 1; the last is the return)
    fp_errors.name_steps(filename, {first + j: op for j, (op, _, _) in enumerate(steps)})
    return namespace["evaluate"]


_chains = itertools.count()


IN_PLACE_MIN_SIZE = 1 << 15  # elements: below, numpy's allocations are cheap


def _into(ufunc, kernel, target, inputs, *operands):
    """`ufunc(*operands, out=target)` where `target`, an earlier step's result that no later step
    reads, is an array of its own with the result's shape; else `kernel(*operands)`."""
    if type(target) is np.ndarray and target.size >= IN_PLACE_MIN_SIZE and target.base is None \
            and target.flags.writeable and not any(target is a for a in inputs):
        shape = target.shape
        if all(len(np.shape(o)) <= len(shape) and all(d in (1, s) for d, s in zip(reversed(np.shape(o)), reversed(shape)))
               for o in operands):
            return ufunc(*operands, out=target)
    return kernel(*operands)


def _no_infer(*args, **kwargs):
    raise TypeError("FusedElementwise nodes are made by the fusion pass, not traced")


# steps: (op, its operands as ("in", k) or ("t", step), result dtype); operands: (dtype, weak, layout)
_FUSED_ATTRS = {"steps": TupleOf(Record(STR, TupleOf(Record(STR, INT)), DTYPE)), "expr": STR,
                "operands": TupleOf(Record(DTYPE, BOOL, STR))}
FUSED = register(OpDef("FusedElementwise", _fused_kernel, _no_infer, elementwise=True, printed_attrs=("expr",),
                       attrs=_FUSED_ATTRS, fresh=True, may_raise=False))
cexpr.RULES[FUSED] = cexpr.no_c("a fused node: its steps are written as C one by one")
