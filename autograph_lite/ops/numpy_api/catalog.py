"""Every numpy callable and ndarray attribute, and whether compiled code takes it on tensors.

`docs/numpy.md` is this module's output (`python -m autograph_lite.ops.numpy_api.catalog >
docs/numpy.md`); `tests/test_numpy_catalog.py` fails when the two differ. What is supported is read
from the tables themselves (`UFUNC_OPS`, `ARRAY_FUNCTIONS`, `CALLS`, the Tensor class), so an entry
added there shows up here; what is refused says why (`REASONS`, else "no graph form yet").
"""
import sys

import numpy as np

from ...runtime.graph import Tensor
from .. import generator_draws
from . import methods

# why a numpy callable has no compiled form on tensors, by group (everything else: not yet written)
REASONS = {
    "reads or writes files, or formats text: call it outside the compiled function": (
        "load save savez savez_compressed loadtxt savetxt genfromtxt fromfile fromregex fromstring "
        "frombuffer array2string array_repr array_str base_repr binary_repr format_float_positional "
        "format_float_scientific typename info"),
    "configures numpy or reports on it; inside a compiled function it would run at the trace only": (
        "set_printoptions get_printoptions printoptions seterr geterr seterrcall geterrcall setbufsize "
        "getbufsize show_config show_runtime get_include test"),
    "asks about dtypes or Python objects, not array values: call it on `x.dtype`, which compiled code "
    "knows while tracing": (
        "can_cast result_type promote_types min_scalar_type common_type mintypecode issubdtype isdtype "
        "isscalar iterable isfortran"),
    "works with memory layout or object identity, which a graph value does not have": (
        "may_share_memory shares_memory ascontiguousarray asfortranarray require from_dlpack asmatrix bmat "
        "nested_iters"),
    "datetimes have no graph dtype": "busday_count busday_offset is_busday datetime_as_string datetime_data",
    "calls a Python function per element (`frompyfunc`, `vectorize`): write the loop, which compiles": (
        "frompyfunc fromfunction fromiter apply_along_axis apply_over_axes piecewise"),
    "updates an array in place: the array-mutation work (docs/ARCHITECTURE.md, open work)": (
        "copyto fill_diagonal place put put_along_axis putmask"),
}
_REASON_OF = {name: reason for reason, names in REASONS.items() for name in names.split()}
_NOT_YET = "no graph form yet"

# ndarray attributes with no graph meaning, by why
METHOD_REASONS = {
    "memory layout, a buffer or a Python object, which a graph value does not have": (
        "base ctypes data device flags strides to_device tobytes tofile dump dumps flat "
        "getfield setfield setflags view byteswap tolist"),
    "updates the array in place: the array-mutation work (docs/ARCHITECTURE.md, open work)": (
        "fill put resize sort partition"),
}
_METHOD_REASON_OF = {name: reason for reason, names in METHOD_REASONS.items() for name in names.split()}


def _namespace(module, prefix):
    """(`np.name`, callable) for the public callables of a numpy module, in name order."""
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    for name in sorted(set(names)):
        value = getattr(module, name, None)
        if callable(value) and not isinstance(value, type):
            yield f"{prefix}.{name}", value


def _tables():
    from . import ARRAY_FUNCTIONS, CALLS, UFUNC_OPS  # function-local: the package imports no catalog
    return ARRAY_FUNCTIONS, UFUNC_OPS, CALLS


def rows():
    """[(section, name, supported, how or why)] for numpy's namespace, `np.linalg`, `np.fft`,
    `np.random`'s functions and ndarray's public attributes."""
    functions, ufuncs, calls = _tables()
    out = []
    for name, f in _namespace(np, "np"):
        if isinstance(f, np.ufunc):
            if f in ufuncs:
                ways = ["call", "outer"] + (["reduce", "accumulate"] if f.nin == 2 and f.nout == 1 else []) + \
                    (["at"] if f.nout == 1 else [])
                out.append(("ufuncs", name, True, f"`{ufuncs[f].name}` op; " + ", ".join(ways)))
            else:
                out.append(("ufuncs", name, False, _REASON_OF.get(name[3:], _NOT_YET)))
        else:
            out.append(("functions", name, *_function_status(name, f, functions, calls)))
    for module, prefix in ((np.linalg, "np.linalg"), (np.fft, "np.fft")):
        for name, f in _namespace(module, prefix):
            out.append((prefix, name, *_function_status(name, f, functions, calls)))
    for name, f in _namespace(np.random, "np.random"):
        draws = name.rsplit(".", 1)[1] not in generator_draws._NOT_DRAWS and not name.endswith(
            ("default_rng", "get_bit_generator", "set_bit_generator"))
        out.append(("np.random", name, draws,
                    "a draw from numpy's global generator when the graph runs" if draws else
                    "sets or reads generator state: call it outside the compiled function"))
    for name in sorted(n for n in dir(np.ndarray) if not n.startswith("_")):
        if name in methods.REFUSED or name in _METHOD_REASON_OF:  # REFUSED: Tensor's refusing stand-ins
            out.append(("ndarray", f"x.{name}", False, methods.REFUSED.get(name) or _METHOD_REASON_OF[name]))
        else:
            has = hasattr(Tensor, name)
            out.append(("ndarray", f"x.{name}", has, "as ndarray's" if has else _NOT_YET))
    return out


def _function_status(name, f, functions, calls):
    if f in functions or f in calls:
        return True, "with tensor arguments" if f in functions else "with tensors inside its arguments"
    return False, _REASON_OF.get(name.rsplit(".", 1)[1], _NOT_YET)


SECTIONS = (("ufuncs", "numpy ufuncs (`np.sin(t)`, `a + t`, `np.add.outer`)"),
            ("functions", "numpy functions (`np.where`, `np.concatenate`, ...)"),
            ("np.linalg", "`np.linalg`"), ("np.fft", "`np.fft`"),
            ("np.random", "`np.random` (drawn from numpy's global generator when the graph runs)"),
            ("ndarray", "ndarray methods and attributes on a tensor (`t.sum()`, `t.T`)"))


def counts(table=None):
    """{section: (supported, total)}."""
    table = rows() if table is None else table
    return {key: (sum(1 for s, _, ok, _ in table if s == key and ok), sum(1 for s, *_ in table if s == key))
            for key, _ in SECTIONS}


def summary(tally=None):
    """(supported, total) over every section but `np.random`, which README and the doc state."""
    tally = counts() if tally is None else tally
    return tuple(sum(v[i] for k, v in tally.items() if k != "np.random") for i in (0, 1))


def render():
    """docs/numpy.md's text."""
    table = rows()
    tally = counts(table)
    done, total = summary(tally)
    lines = [
        "# numpy on tensors",
        "",
        "<!-- generated by `python -m autograph_lite.ops.numpy_api.catalog > docs/numpy.md`; "
        "tests/test_numpy_catalog.py checks it -->",
        "",
        f"Which of numpy {np.__version__}'s callables and ndarray's attributes compiled code takes on "
        "tensors (values that depend on the function's array arguments). Called on plain Python or numpy "
        "values, every numpy function runs as numpy at the trace, and its result is a constant of the graph. "
        "What is not supported on tensors is a ConversionError naming it and your line.",
        "",
        f"**Supported: {done} of {total}** numpy ufuncs, functions, `np.linalg`/`np.fft` functions and "
        "ndarray attributes (`np.random` counted apart).",
        "",
        "| section | supported | of |",
        "|---|---|---|",
        *(f"| {title} | {tally[key][0]} | {tally[key][1]} |" for key, title in SECTIONS),
        "",
    ]
    for key, title in SECTIONS:
        lines += [f"## {title}", "", "| name | on tensors | how, or why not |", "|---|---|---|"]
        lines += [f"| `{name}` | {'yes' if ok else 'no'} | {why} |" for s, name, ok, why in table if s == key]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
