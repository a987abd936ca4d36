"""Native kernels: graph pieces generated as C, compiled by the system compiler, called
through ctypes. Optional: without a compiler (or with `AG_NATIVE_KERNELS=0`) every
caller keeps its numpy path, and results are the same.

- `cexpr.py`: C expressions for ops with numpy's semantics (shared with CUDA sources);
- `compiler.py`: find the compiler, build, cache on disk, load;
- `elementwise.py`: a fused elementwise chain as one C loop;
- `scalar_loop.py`: a While loop over scalars as one C function.
"""
