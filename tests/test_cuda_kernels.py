"""The CUDA dialect without a GPU: every fused elementwise kernel the test suite's graphs make
is compiled by NVRTC to PTX for sm_90 (the options cupy uses); its C twin (the same rendering
in the CPU dialect) equals numpy on the same inputs: one generator, two spellings; and its
CUDA source itself, compiled as C++ and run thread by thread over an emulated grid smaller
than the data, equals numpy too (the grid-stride loop, the row index, the prelude's types).

The corpus is what conftest.py records over the whole run (these tests run last), plus the
graphs below, so this file alone still covers every op with a C form in every dtype."""
import concurrent.futures

import numpy as np
import pytest

import autograph_lite as ag
import cuda_corpus
import cuda_emulation
from autograph_lite.runtime.native import compiler, cuda, elementwise
from autograph_lite.runtime.native.language import C, CUDA, Unsupported
from autograph_lite.runtime.passes import fusion

NO_COMPILER = cuda.ptx_compiler() is None
needs_ptx = pytest.mark.skipif(NO_COMPILER, reason="no NVRTC library (pip install nvidia-cuda-nvrtc) "
                                                   "and no nvcc on PATH: CUDA kernels cannot be compiled here")

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]
# each chain ends in a second op so that fusion has two nodes to join
CHAINS = {
    "add": lambda x, y: (x + y) * y, "subtract": lambda x, y: (x - y) * y,
    "multiply": lambda x, y: x * y + y, "divide": lambda x, y: x / y + y,
    "floor_divide": lambda x, y: x // y + y, "remainder": lambda x, y: x % y + y,
    "power": lambda x, y: ag.abs(x) ** y + y, "maximum": lambda x, y: ag.maximum(x, y) + y,
    "minimum": lambda x, y: ag.minimum(x, y) + y, "equal": lambda x, y: ag.where(x == y, x, y),
    "not_equal": lambda x, y: ag.where(x != y, x, y), "less": lambda x, y: ag.where(x < y, x, y),
    "less_equal": lambda x, y: ag.where(x <= y, x, y), "greater": lambda x, y: ag.where(x > y, x, y),
    "greater_equal": lambda x, y: ag.where(x >= y, x, y),
    "logical": lambda x, y: ag.logical_or(ag.logical_and(x > y, y > 1), ag.logical_not(x < y)),
    "negative": lambda x, y: -x + y, "tanh": lambda x, y: ag.tanh(x) + y, "exp": lambda x, y: ag.exp(x) + y,
    "log": lambda x, y: ag.log(x) + y, "sqrt": lambda x, y: ag.sqrt(x) + y,
    "square": lambda x, y: ag.square(x) + y, "absolute": lambda x, y: ag.abs(x) + y,
    "sigmoid": lambda x, y: ag.nn.sigmoid(x) * y, "relu": lambda x, y: ag.nn.relu(x) + y,
    "cast": lambda x, y: ag.cast(x, np.float32) + 1.5, "scalar": lambda x, y: x * 3 + 1,
    "row": lambda x, y: (x + y[0]) * 2,
}


@pytest.fixture(scope="module", autouse=True)
def op_chain_graphs():
    """Trace and optimize every chain in every dtype (dims unknown, so the chains fuse): the
    fusion pass records each kernel in the corpus."""
    for name, chain in CHAINS.items():
        for dtype in DTYPES:
            spec = ag.TensorSpec([None, 64], dtype)
            f = ag.function(chain, input_signature=[spec, spec])
            try:
                f.get_concrete_function(spec, spec).optimized_graph
            except (TypeError, ValueError, ag.ConversionError):
                continue  # numpy refuses the op on this dtype: so does the tracer


def _kernels():
    return sorted(cuda_corpus.KERNELS.items(), key=repr)


def test_the_dialects_differ_in_spelling_only():
    f = ag.function(CHAINS["tanh"], input_signature=[ag.TensorSpec([None, 64], np.float32)] * 2)
    fused = [n for n in f.get_concrete_function().optimized_graph.nodes if n.op == "FusedElementwise"]
    steps, operands = fused[0].attrs["steps"], fused[0].attrs["operands"]
    c, gpu = elementwise.source(steps, operands, language=C()), cuda.elementwise_source(steps, operands)
    body = [line.strip() for line in c.splitlines() if line.strip().startswith(("float", "double", "int", "uint", "out["))
            and "kernel(" not in line and "fetestexcept" not in line]  # C's kernel returns the flags it raised
    assert body and all(line in gpu for line in body)
    assert "blockIdx.x" in gpu and "gridDim.x" in gpu and "blockIdx" not in c
    assert 'extern "C" __global__' in gpu and "__restrict__" in gpu and "__restrict__" not in c


@needs_ptx
def test_suite_kernels_compile_to_ptx():
    kernels = _kernels()
    assert len(kernels) >= len(CHAINS)

    def compile_one(item):
        (steps, operands), location = item
        try:
            source = cuda.elementwise_source(steps, operands)
        except Unsupported:
            return None
        try:
            ptx = cuda.compile_ptx(source)
        except cuda.CompileError as e:
            return f"the kernel of the graph node at {location}:\n{e}"
        assert ".target sm_90" in ptx and ".entry kernel" in ptx
        return "compiled"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(compile_one, kernels))
    failures = [r for r in results if r not in (None, "compiled")]
    compiled = results.count("compiled")
    cuda_corpus.REPORT = (f"CUDA: {compiled} fused kernels of the suite's graphs compiled to PTX for sm_90 "
                          f"({results.count(None)} without a C form) by {cuda.ptx_compiler()}")
    assert not failures, "\n\n".join(failures)
    assert compiled >= len(CHAINS)


def _inputs(operands, rng, rows=8, inner=64):
    values = []
    for dtype, weak, kind in operands:
        dtype = np.dtype(dtype)
        shape = {"full": (rows, inner), "row": (inner,), "scalar": ()}[kind]
        if dtype.kind == "f":
            v = (rng.standard_normal(shape) * 3).astype(dtype)
            if v.ndim:
                v.flat[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
        elif dtype.kind == "b":
            v = rng.integers(0, 2, shape).astype(dtype)
        else:
            # a weak (Python) int may meet an unsigned array: numpy refuses negative ones there
            v = rng.integers(0 if dtype.kind == "u" or weak else -20, 20, shape).astype(dtype)
        if kind == "scalar":
            v = v.item() if weak else dtype.type(v)
        values.append(v)
    return values


@pytest.mark.skipif(not compiler.enabled(), reason="native code is off (AG_NATIVE=off) or there is no C "
                                                   "compiler: the C twins cannot be built")
def test_suite_kernels_c_twin_equals_numpy(rng):
    checked = 0
    for (steps, operands), location in _kernels():
        run = elementwise.cpu_kernel(steps, operands)
        if run is None:
            continue
        inputs = _inputs(operands, rng)
        with np.errstate(all="ignore"):
            expected = np.asarray(fusion._whole_array_evaluator(np, steps)(*inputs))
        out = np.empty(expected.shape, np.dtype(steps[-1][2]))
        inner = 64 if any(kind == "row" for _, _, kind in operands) else 0
        run(out, [elementwise.as_number(v) if kind == "scalar" else v
                  for v, (_, _, kind) in zip(inputs, operands)], 0, out.size, inner)
        assert expected.dtype == out.dtype, location
        if out.dtype.kind == "f":
            eps = np.finfo(out.dtype).eps
            np.testing.assert_allclose(out, expected, rtol=16 * eps, atol=160 * eps, equal_nan=True,
                                       err_msg=f"C twin of the kernel at {location}")
        else:
            np.testing.assert_array_equal(out, expected, err_msg=f"C twin of the kernel at {location}")
        checked += 1
    assert checked >= len(CHAINS)


def test_a_kernel_of_an_unsupported_dtype_is_refused_in_both_dialects():
    steps = (("Add", (("in", 0), ("in", 0)), np.dtype(np.complex64)),)
    operands = ((np.dtype(np.complex64), False, "full"),)
    for language in (C(), CUDA()):
        with pytest.raises(Unsupported):
            elementwise.source(steps, operands, language=language)


_GRID = (3, 4)  # blocks, threads a block: 12 threads, fewer than the elements, a ragged last stride


@pytest.mark.skipif(cuda_emulation.compiler() is None, reason="no C++ compiler (g++ or clang++) to run the "
                                                             "CUDA sources on the CPU")
def test_suite_kernels_cuda_source_runs_on_the_cpu(rng):
    """Each kernel's CUDA source run thread by thread over a grid smaller than the data
    (tests/cuda_emulation.py), the float4 kernel too where there is one, equals numpy."""
    kernels = []
    for k, ((steps, operands), location) in enumerate(_kernels()):
        try:
            kernels.append((str(k), steps, operands, location, cuda.elementwise_source(steps, operands)))
        except Unsupported:
            continue
    library = cuda_emulation.build([(tag, source) for tag, _, _, _, source in kernels])
    vectorized = 0
    for tag, steps, operands, location, source in kernels:
        inputs = [_aligned(v) for v in _inputs(operands, rng, rows=7, inner=5)]  # 35 elements, 12 threads
        with np.errstate(all="ignore"):
            expected = np.asarray(fusion._whole_array_evaluator(np, steps)(*inputs))
        args = [elementwise.as_number(v) if kind == "scalar" else v.ctypes.data
                for v, (_, _, kind) in zip(inputs, operands)]
        inner = 5 if any(kind == "row" for _, _, kind in operands) else 0
        names = ["kernel"] + (["kernel_vec4"] if "kernel_vec4(" in source else [])
        vectorized += len(names) - 1
        for name in names:
            out = _aligned(np.zeros(expected.shape, np.dtype(steps[-1][2])))
            cuda_emulation.launcher(library, source, name, tag)(*_GRID, out.size, inner, out.ctypes.data, *args)
            what = f"CUDA source of {name} for the kernel at {location}, run on the CPU"
            if out.dtype.kind == "f":
                eps = np.finfo(out.dtype).eps
                np.testing.assert_allclose(out, expected, rtol=16 * eps, atol=160 * eps, equal_nan=True, err_msg=what)
            else:
                np.testing.assert_array_equal(out, expected, err_msg=what)
    assert len(kernels) >= len(CHAINS) and vectorized > 0


def _aligned(value):
    """`value` in memory aligned to 16 bytes (a scalar as it is)."""
    if not isinstance(value, np.ndarray) or not value.ndim or value.ctypes.data % 16 == 0:
        return value
    buffer = np.empty(value.nbytes + 16, np.uint8)
    offset = -buffer.ctypes.data % 16
    aligned = buffer[offset:offset + value.nbytes].view(value.dtype).reshape(value.shape)
    aligned[...] = value
    return aligned
