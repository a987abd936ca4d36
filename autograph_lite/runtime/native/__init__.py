"""Native kernels: graph pieces generated as C, compiled by the system compiler, called
through ctypes. Optional: without a compiler (or with `AG_NATIVE_KERNELS=0`) every
caller keeps its numpy path, and results are the same.

- `language.py`: the dialects of the one C-style generator (`C` now; spellings only);
- `cexpr.py`: each op's element expression with numpy's semantics (the C table: `rule_for(opdef)`);
- `render.py`: a graph region (elementwise ops, reductions, rows, Cond, While) over
  scalars and small static-shape arrays as the statements of one function;
- `compiler.py`: find the compiler, build, cache on disk, load;
- `elementwise.py`: a fused elementwise chain over a large array as one C loop;
- `loops.py`: a While loop as one C function (tiered in after its third run).
"""
