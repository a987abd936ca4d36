"""Linear algebra and products computed by numpy's own functions: `np.linalg.cholesky`, `solve`,
`inv`, `det`, `qr`, `eigh`, `svd`, `norm`, and `np.dot` (beyond 2-D), `vdot`, `inner`,
`tensordot`, `einsum`, `kron`, `cross`.

Each is one op whose kernel is the numpy (or cupy) function itself (`numpy_function_op`), called
with the node's `args`/`kwargs` attrs, a Slot where an input goes: results are numpy's bit for
bit, and numpy's errors (`LinAlgError` of a singular matrix) are raised when the graph runs. The
trace learns the result's shape from the op's shape rule and its dtype from numpy, run once on
small examples (identity matrices, so a factorization always succeeds).
"""
import functools
import warnings

import numpy as np

from ..runtime.graph import Slot, Tensor, fill_slots
from ..runtime.opdef import CALL_ARGS, CALL_KWARGS, always
from . import math_ops
from .array_ops import expand_dims, reshape, shape, transpose
from .gradient_ops import broadcast_like
from .core import apply, broadcast_shapes, define, exemplar, grad_rule, normalize_axes, normalize_axis

OPS = {}  # numpy function's path ("linalg.inv") -> OpDef


def _resolve(xp, path):
    return functools.reduce(getattr, path.split("."), xp)


def _example(t, dims=lambda d: 1):
    """A small value like `t` (weak: a Python scalar): each dim `dims(d)` (1 unless told; a dim not
    known at the trace is 1), square trailing dims an identity matrix, which every factorization
    accepts."""
    if t.weak:
        return exemplar(t)
    shape = tuple(dims(d) if d is not None else 1 for d in t.shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        return np.ascontiguousarray(np.broadcast_to(np.eye(shape[-1]), shape)).astype(t.dtype)
    return np.ones(shape, t.dtype)


def numpy_function_op(name, path, shapes, example_dims=lambda d: 1, **facts):
    """An op computed by numpy's function `path` ("linalg.inv"), on numpy or cupy (`xp`).

    `shapes(*args, **kwargs)`: the result's shapes, a list (one per output), given the call's
    arguments with Tensors where inputs go; `example_dims(d)`: each dim of the small examples
    numpy's dtype is asked with. Call it with `call(OPS[path], *args, **kwargs)`."""
    def kernel(xp, args, kwargs):
        try:
            fn = _resolve(xp, path)
        except AttributeError:  # a device's array module without it (cupy has no np.linalg.svdvals)
            raise NotImplementedError(f"np.{path} has no {xp.__name__} form: run this function on the CPU "
                                      f"(with ag.device('cpu'))") from None

        def run(*inputs):
            result = fn(*fill_slots(args, inputs), **{k: fill_slots(v, inputs) for k, v in kwargs})
            if not fresh:
                return result
            # a new array, as the op's `fresh` fact says, where numpy hands an input back (histogram's
            # edges are an array `bins`, matrix_power(a, 1) is `a`): the plan may write it in place
            return tuple(_own(xp, r, inputs) for r in result) if isinstance(result, tuple) else _own(xp, result, inputs)
        return run

    def infer(*tensors, args, kwargs):
        given = fill_slots(args, tensors), {k: fill_slots(v, tensors) for k, v in kwargs}
        out_shapes = shapes(*given[0], **given[1])
        examples = [_example(t, example_dims) for t in tensors]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's warnings are the run's (a deprecation, once), not the trace's
            result = _resolve(np, path)(*fill_slots(args, examples), **{k: fill_slots(v, examples) for k, v in kwargs})
        results = tuple(result) if isinstance(result, tuple) else (result,)
        assert len(results) == len(out_shapes), f"{name}'s shape rule gives {len(out_shapes)} results, numpy {len(results)}"
        return [(tuple(s), np.asarray(r).dtype) for s, r in zip(out_shapes, results)]

    # a new array, unless numpy may give a view; numpy's function may raise for the values (a singular
    # matrix's LinAlgError, histogram's non-finite range): kept when unused, as eager raises there
    facts = {"fresh": facts.get("view") is None, "value_errors": always, **facts}
    fresh = facts["fresh"]
    OPS[path] = opdef = define(name, kernel, infer, attrs={"args": CALL_ARGS, "kwargs": CALL_KWARGS}, **facts)
    return opdef


def _own(xp, result, inputs):
    """`result`, or a copy where it may share memory with one of `inputs` (arrays of module `xp`)."""
    if any(hasattr(x, "shape") and hasattr(result, "shape") and type(x) is type(result)
           and x.size and result.size and xp.may_share_memory(x, result) for x in inputs):
        return result.copy()
    return result


def call(opdef, *args, **kwargs):
    """`opdef`'s numpy function called with these arguments: tensors and arrays become the node's
    inputs (Slots in its attrs); Python values, dtypes and tuples of them stay attrs."""
    inputs = []

    def slot(v):
        if isinstance(v, (Tensor, np.ndarray, np.generic)):
            inputs.append(v)
            return Slot(len(inputs) - 1)
        if type(v) in (tuple, list):
            return tuple(slot(x) for x in v)
        return v
    args = tuple(slot(a) for a in args)
    kwargs = tuple((k, slot(v)) for k, v in kwargs.items())
    return apply(opdef, tuple(inputs), {"args": args, "kwargs": kwargs})


# --- shape rules ----------------------------------------------------------------------------

def _shape(x):
    return x.shape if isinstance(x, Tensor) else np.shape(x)


def _same(a, b, what):
    if a is not None and b is not None and a != b:
        raise ValueError(f"{what}: {a} != {b}")
    return a if a is not None else b


def _square(a, name):
    shape = _shape(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
    if None not in shape[-2:] and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return shape


def _dot_shapes(a, b, out=None):
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return [broadcast_shapes(sa, sb)]
    _same(sa[-1], sb[-2] if len(sb) > 1 else sb[-1], "shapes not aligned")
    return [sa[:-1] + sb[:-2] + sb[-1:] if len(sb) > 1 else sa[:-1]]


def _inner_shapes(a, b):
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        return [broadcast_shapes(sa, sb)]
    _same(sa[-1], sb[-1], "shapes not aligned")
    return [sa[:-1] + sb[:-1]]


def _tensordot_axes(sa, sb, axes):
    if isinstance(axes, int):
        return tuple(range(len(sa) - axes, len(sa))), tuple(range(axes))
    a_axes, b_axes = axes
    a_axes = (a_axes,) if isinstance(a_axes, int) else tuple(a_axes)
    b_axes = (b_axes,) if isinstance(b_axes, int) else tuple(b_axes)
    if len(a_axes) != len(b_axes):
        raise ValueError("shape-mismatch for sum")
    return tuple(normalize_axis(i, len(sa)) for i in a_axes), tuple(normalize_axis(i, len(sb)) for i in b_axes)


def _tensordot_shapes(a, b, axes=2):
    sa, sb = _shape(a), _shape(b)
    a_axes, b_axes = _tensordot_axes(sa, sb, axes)
    for i, j in zip(a_axes, b_axes):
        _same(sa[i], sb[j], "shape-mismatch for sum")
    return [tuple(d for i, d in enumerate(sa) if i not in a_axes) + tuple(d for j, d in enumerate(sb) if j not in b_axes)]


def _kron_shapes(a, b):
    sa, sb = _shape(a), _shape(b)
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    return [tuple(None if None in (x, y) else x * y for x, y in zip(sa, sb))]


def _einsum_shapes(subscripts, *operands, **kwargs):
    if not isinstance(subscripts, str):
        raise TypeError("np.einsum's interleaved form (operand, sublist, ...) is not supported on tensors; "
                        "give the subscripts as a string")
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    specs = inputs.split(",")
    if len(specs) != len(operands):
        raise ValueError("more operands provided to einstein sum function than specified in the subscripts string"
                         if len(operands) > len(specs) else "fewer operands provided to einstein sum function "
                         "than specified in the subscripts string")
    sizes, ellipsis = {}, []
    for spec, x in zip(specs, operands):
        shape = _shape(x)
        letters = spec.replace("...", "")
        if "..." in spec:
            before, after = spec.split("...")
            n = len(shape) - len(letters)
            ellipsis.append(shape[len(before):len(before) + n])
            shape = shape[:len(before)] + shape[len(before) + n:]
        if len(letters) != len(shape):
            raise ValueError("operand has more dimensions than subscripts given in einstein sum, but no '...' "
                             "ellipsis provided to broadcast the extra dimensions.")
        for letter, d in zip(letters, shape):
            known = sizes.get(letter, 1)
            if d != 1 and known != 1 and d is not None and known is not None and d != known:
                raise ValueError(f"operands could not be broadcast together with remapped shapes: "
                                 f"{letter} is {known} and {d}")
            sizes[letter] = d if known == 1 else known if d == 1 else _same(known, d, "einsum")
    broadcast = broadcast_shapes(*ellipsis) if ellipsis else ()
    if not arrow:
        counts = {c: inputs.count(c) for c in inputs if c.isalpha()}
        output = ("..." if ellipsis else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    letters = output.replace("...", "")
    before = output.split("...")[0] if "..." in output else letters
    shape = tuple(sizes[c] for c in before) + (broadcast if "..." in output else ()) + tuple(
        sizes[c] for c in letters[len(before):])
    return [shape]


def _cross_shapes(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    sa, sb = _shape(a), _shape(b)
    axisa, axisb = normalize_axis(axisa, len(sa)), normalize_axis(axisb, len(sb))
    da, db = sa[axisa], sb[axisb]
    if da not in (2, 3) or db not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    rest = broadcast_shapes(sa[:axisa] + sa[axisa + 1:], sb[:axisb] + sb[axisb + 1:])
    if da == 2 and db == 2:
        return [rest]
    axisc = normalize_axis(axisc, len(rest) + 1)
    return [rest[:axisc] + (3,) + rest[axisc:]]


def _solve_shapes(a, b):
    sa, sb = _square(a, "solve"), _shape(b)
    if len(sb) == 1:
        _same(sa[-1], sb[0], "solve: input b has a mismatch in its core dimension 0")
        return [sa[:-1]]
    _same(sa[-1], sb[-2], "solve: input b has a mismatch in its core dimension 0")
    return [broadcast_shapes(sa[:-2], sb[:-2]) + sb[-2:]]


def _qr_shapes(a, mode="reduced"):
    shape = _shape(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
    m, n = shape[-2:]
    k = None if None in (m, n) else min(m, n)
    if mode == "reduced":
        return [shape[:-2] + (m, k), shape[:-2] + (k, n)]
    if mode == "complete":
        return [shape[:-2] + (m, m), shape]
    if mode == "r":
        return [shape[:-2] + (k, n)]
    raise TypeError(f"np.linalg.qr(..., mode={mode!r}) is not supported on tensors")


def _svd_shapes(a, full_matrices=True, compute_uv=True, hermitian=False):
    shape = _shape(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at least two-dimensional")
    m, n = shape[-2:]
    k = None if None in (m, n) else min(m, n)
    s = shape[:-2] + (k,)
    if not compute_uv:
        return [s]
    if full_matrices:
        return [shape[:-2] + (m, m), s, shape[:-2] + (n, n)]
    return [shape[:-2] + (m, k), s, shape[:-2] + (k, n)]


def _norm_shapes(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - numpy's name
    shape = _shape(x)
    if axis is None:
        if ord is not None and len(shape) not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        return [(1,) * len(shape) if keepdims else ()]
    axes = normalize_axes(axis, len(shape))
    if len(axes) > 2:
        raise ValueError("Improper number of dimensions to norm.")
    return [tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)]


def _eigh_shapes(a, UPLO="L"):  # noqa: N803 - numpy's name
    shape = _square(a, "eigh")
    return [shape[:-1], shape]


def _slogdet_shapes(a):
    shape = _square(a, "slogdet")
    return [shape[:-2], shape[:-2]]


# numpy function path -> (op name, shape rule, and where numpy's warning names an op of its own, that:
# "overflow encountered in dot" from np.inner, the float_errors fact)
for _path, _name, _shapes, *_warns in [
        ("vdot", "Vdot", lambda a, b: [()]),
        ("inner", "Inner", _inner_shapes, "dot"),
        ("tensordot", "TensorDot", _tensordot_shapes, "dot"),
        ("kron", "Kron", _kron_shapes, "multiply"),
        ("linalg.cholesky", "Cholesky", lambda a, upper=False: [_square(a, "cholesky")]),
        ("linalg.inv", "MatrixInverse", lambda a: [_square(a, "inv")]),
        ("linalg.pinv", "PseudoInverse", lambda a, **kw: [_shape(a)[:-2] + _shape(a)[-2:][::-1]]),
        ("linalg.solve", "Solve", _solve_shapes),
        ("linalg.det", "Det", lambda a: [_square(a, "det")[:-2]]),
        ("linalg.slogdet", "LogDet", _slogdet_shapes),
        ("linalg.matrix_power", "MatrixPower", lambda a, n: [_square(a, "matrix_power")], "matmul"),
        ("linalg.qr", "Qr", _qr_shapes),
        ("linalg.eigh", "Eigh", _eigh_shapes),
        ("linalg.eigvalsh", "EigvalsH", lambda a, UPLO="L": [_square(a, "eigvalsh")[:-1]]),
        ("linalg.svd", "Svd", _svd_shapes),
        ("linalg.norm", "Norm", _norm_shapes, "dot")]:  # (its default ord: sqrt(dot(x, x)))
    numpy_function_op(_name, _path, _shapes, **({"float_errors": _warns[0]} if _warns else {}))
# np.dot raises only where shapes differ, warns as "... encountered in dot", and is what the C renders
# as numpy computes it (runtime/native/render.py `Renderer.dot`): `primitive` names it there
numpy_function_op("Dot", "dot", _dot_shapes, value_errors=None, float_errors="dot", primitive="dot", box="scalar",
                  same_operands_matter=True)
numpy_function_op("Cross", "cross", _cross_shapes, example_dims=lambda d: min(d, 3))  # vectors of 2 or 3
# einsum of one operand may be a view of it (np.einsum("ii->i", a) is a's diagonal, "ij->ji" its transpose)
numpy_function_op("Einsum", "einsum", _einsum_shapes, view=lambda node: len(node.inputs) == 1)


def _multi_dot_shapes(arrays, *, out=None):
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    shapes = [_shape(a) for a in arrays]
    for s, t in zip(shapes, shapes[1:]):
        _same(s[-1], t[0], "shapes not aligned")
    return [tuple(shapes[0][:-1]) * (len(shapes[0]) == 2) + tuple(shapes[-1][1:]) * (len(shapes[-1]) == 2)]


def _diagonal_shapes(x, *, offset=0):
    shape = _shape(x)
    m, n = shape[-2:]
    k = None if None in (m, n) else max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    return [shape[:-2] + (k,)]


def _vecdot_shapes(x1, x2, /, *, axis=-1):
    s1, s2 = _shape(x1), _shape(x2)
    shape = broadcast_shapes(s1, s2)
    axis = normalize_axis(axis, len(shape))
    return [shape[:axis] + shape[axis + 1:]]


def _matrix_batch(x, *args, **kwargs):
    shape = _shape(x)
    return [shape[:-2] if len(shape) >= 2 else ()]


numpy_function_op("LinalgDiagonal", "linalg.diagonal", _diagonal_shapes, view=lambda node: True)  # a view, as np.diagonal
for _path, _name, _shapes in [
        ("linalg.svdvals", "SvdVals", lambda x: [_shape(x)[:-2] + (min(_shape(x)[-2:]) if None not in _shape(x)[-2:]
                                                                   else None,)]),
        ("linalg.cond", "ConditionNumber", _matrix_batch),
        ("linalg.matrix_rank", "MatrixRank", _matrix_batch),
        ("linalg.multi_dot", "MultiDot", _multi_dot_shapes),
        ("linalg.matrix_norm", "MatrixNorm", lambda x, *, keepdims=False, ord="fro": [
            _shape(x)[:-2] + (1, 1) * bool(keepdims)]),
        ("linalg.vector_norm", "VectorNorm", lambda x, *, axis=None, keepdims=False, ord=2: _norm_shapes(
            x, None, axis, keepdims) if axis is not None or not keepdims else [(1,) * len(_shape(x))]),
        ("linalg.tensordot", "LinalgTensorDot", lambda x1, x2, /, *, axes=2: _tensordot_shapes(x1, x2, axes)),
        ("linalg.outer", "LinalgOuter", lambda x1, x2, /: [_shape(x1) + _shape(x2)]),
        ("linalg.cross", "LinalgCross", lambda x1, x2, /, *, axis=-1: _cross_shapes(x1, x2, axis=axis)),
        ("linalg.trace", "LinalgTrace", lambda x, /, *, offset=0, dtype=None: [_shape(x)[:-2]]),
        ("linalg.vecdot", "VecDot", _vecdot_shapes)]:
    numpy_function_op(_name, _path, _shapes, example_dims=lambda d: min(d, 3))
for _path in ("inner", "tensordot", "einsum", "linalg.multi_dot", "linalg.tensordot"):  # through np.dot's BLAS calls
    OPS[_path].same_operands_matter = True


# --- gradients --------------------------------------------------------------------------------

def _swap(t):
    perm = list(range(t.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return transpose(t, perm)


def _to(g, x):
    return math_ops._to_input(g, x)


@grad_rule(OPS["linalg.inv"])
def _inv_grad(node, dy):  # d(A^-1) = -A^-1 dA A^-1
    inv_t = _swap(node.outputs[0])
    return [_to(math_ops.negative(math_ops.matmul(inv_t, math_ops.matmul(dy, inv_t))), node.inputs[0])]


@grad_rule(OPS["linalg.det"])
def _det_grad(node, dy):  # d det(A) = det(A) A^-T
    a, det = node.inputs[0], node.outputs[0]
    scale = expand_dims(expand_dims(math_ops.multiply(dy, det), -1), -1)
    return [_to(math_ops.multiply(scale, _swap(call(OPS["linalg.inv"], a))), a)]


@grad_rule(OPS["linalg.solve"])
def _solve_grad(node, dy):  # x = A^-1 b: db = A^-T dy, dA = -db x^T
    a, b = node.inputs
    x = node.outputs[0]
    vector = b.ndim == 1
    db = call(OPS["linalg.solve"], _swap(a), expand_dims(dy, -1) if vector else dy)
    xs = expand_dims(x, -1) if vector else x
    da = math_ops.negative(math_ops.matmul(db, _swap(xs)))
    return [_to(da, a), _to(db[..., 0] if vector else db, b)]


@grad_rule(OPS["linalg.cholesky"])
def _cholesky_grad(node, dy):
    """Murray (2016): with L the factor, P = Phi(L^T dL), dA = L^-T Phi(P) L^-1 symmetrized, where
    Phi keeps the lower triangle and halves the diagonal (a lower factor only)."""
    upper = dict(node.attrs["kwargs"]).get("upper", False)
    low = node.outputs[0]
    if upper:
        low, dy = _swap(low), _swap(dy)
    n = low.shape[-1]
    if n is None:
        raise NotImplementedError("the gradient of np.linalg.cholesky needs the matrix size known at the trace")
    phi = np.tril(np.ones((n, n))) - 0.5 * np.eye(n)
    p = math_ops.multiply(math_ops.matmul(_swap(low), dy), phi)
    low_inv = call(OPS["linalg.inv"], low)
    s = math_ops.matmul(_swap(low_inv), math_ops.matmul(p, low_inv))
    return [_to(math_ops.multiply(math_ops.add(s, _swap(s)), 0.5), node.inputs[0])]


@grad_rule(OPS["linalg.norm"])
def _norm_grad(node, dy):
    """The default norms (2-norm of a vector, Frobenius of a matrix, over the flattened array with no
    axis): x / ||x||; other `ord`s have no rule yet."""
    kwargs = dict(node.attrs["kwargs"])
    x = node.inputs[0]
    if kwargs.get("ord") not in (None, 2, "fro") or (kwargs.get("ord") == 2 and (
            kwargs.get("axis") is None and x.ndim != 1 or isinstance(kwargs.get("axis"), tuple))):
        raise NotImplementedError(f"no gradient rule for np.linalg.norm with ord={kwargs.get('ord')!r}")
    out, g = node.outputs[0], dy
    if not kwargs.get("keepdims"):
        axes = normalize_axes(kwargs.get("axis"), x.ndim)
        for i in axes:
            out, g = expand_dims(out, i), expand_dims(g, i)
    return [_to(math_ops._safe(g, math_ops.divide(x, math_ops._where_used(g, out))), x)]


# products: bilinear, each input's cotangent the product of the cotangent with the other input
@grad_rule(OPS["dot"])
def _dot_grad(node, dy):
    a, b = node.inputs
    if a.ndim == 2 and b.ndim == 2 or a.ndim <= 2 and b.ndim == 1:
        da = math_ops.matmul(dy, _swap(b)) if b.ndim == 2 else math_ops.multiply(expand_dims(dy, -1), b)
        db = math_ops.matmul(_swap(a), dy) if a.ndim == 2 else math_ops.multiply(a, dy)
        return [_to(da, a), _to(db, b)]
    # a (..., k) with b (..., k, n): tensordot over the other axes of each
    na, nb = a.ndim, b.ndim
    a_rest, b_rest = tuple(range(na - 1)), tuple(i for i in range(nb) if i != max(nb - 2, 0))
    dy_a = tuple(range(na - 1))
    dy_b = tuple(range(na - 1, dy.ndim))
    da = call(OPS["tensordot"], dy, b, axes=(dy_b, b_rest))
    db = call(OPS["tensordot"], a, dy, axes=(a_rest, dy_a))
    if nb > 1:  # tensordot puts b's contracted axis first: move it to its place (-2)
        perm = list(range(1, db.ndim))
        perm.insert(nb - 2, 0)
        db = transpose(db, perm)
    return [_to(da, a), _to(db, b)]




def _einsum_grads(specs, output, operands, dy):
    """Each operand's cotangent of `einsum(",".join(specs) + "->" + output, *operands)`: the einsum
    of the other operands with the cotangent, to the operand's letters (a letter summed in no
    other place is broadcast back; a repeated letter, a diagonal, is put back on its diagonal)."""
    grads = []
    for k, (spec, x) in enumerate(zip(specs, operands)):
        others = [(s, o) for j, (s, o) in enumerate(zip(specs, operands)) if j != k] + [(output, dy)]
        seen = set("".join(s for s, _ in others))
        kept = "".join(dict.fromkeys(c for c in spec if c in seen))
        g = call(OPS["einsum"], ",".join(s for s, _ in others) + "->" + kept, *(o for _, o in others))
        if len(set(spec)) != len(spec):
            g = _onto_diagonals(g, kept, spec, x)
        else:
            for i, c in enumerate(spec):
                if c not in seen:  # summed in this operand alone: the same slope for every index
                    g = expand_dims(g, i)
            g = broadcast_like(g, x) if kept != spec else g
        grads.append(_to(g, x))
    return grads


def _onto_diagonals(g, kept, spec, x):
    """`g` over the distinct letters `kept` as a cotangent of `x` (letters `spec`, some repeated):
    zero off each repeated letter's diagonal, ones along letters summed in `x` alone."""
    if None in x.shape:
        raise NotImplementedError("the gradient of np.einsum of a repeated subscript needs the shape known at the trace")
    size = dict(zip(spec, x.shape))
    spare = iter(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec + kept)
    renamed, factors, first = "", [], set()
    for c in spec:
        if c in first:  # a repeat: a new letter tied to the first by an identity matrix
            r = next(spare)
            renamed += r
            factors.append((c + r, np.eye(size[c])))
        else:
            first.add(c)
            renamed += c
            if c not in kept:
                factors.append((c, np.ones(size[c])))
    return call(OPS["einsum"], ",".join([kept] + [f for f, _ in factors]) + "->" + renamed, g,
                *(v.astype(x.dtype) if x.dtype.kind in "fc" else v for _, v in factors))


@grad_rule(OPS["einsum"])
def _einsum_grad(node, dy):
    args = node.attrs["args"]
    subscripts = args[0].replace(" ", "")
    if "..." in subscripts:
        raise NotImplementedError("no gradient rule for np.einsum with an ellipsis yet")
    inputs, arrow, output = subscripts.partition("->")
    if not arrow:
        output = "".join(sorted(c for c in set(inputs) if c.isalpha() and inputs.count(c) == 1))
    return _einsum_grads(inputs.split(","), output, node.inputs, dy)


@grad_rule(OPS["tensordot"], OPS["linalg.tensordot"])
def _tensordot_grad(node, dy):
    a, b = node.inputs
    a_axes, b_axes = _tensordot_axes(a.shape, b.shape, dict(node.attrs["kwargs"]).get("axes", 2))
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(a_axes, b_axes):
        sb[j] = sa[i]
    out = "".join(c for i, c in enumerate(sa) if i not in a_axes) + "".join(
        c for j, c in enumerate(sb) if j not in b_axes)
    return _einsum_grads(["".join(sa), "".join(sb)], out, node.inputs, dy)


@grad_rule(OPS["inner"])
def _inner_grad(node, dy):
    a, b = node.inputs
    sa = "abcdefghijklm"[:a.ndim - 1] + "z"
    sb = "nopqrstuvwxy"[:b.ndim - 1] + "z"
    return _einsum_grads([sa, sb], sa[:-1] + sb[:-1], node.inputs, dy)


@grad_rule(OPS["vdot"])
def _vdot_grad(node, dy):  # sum(a.ravel() * b.ravel()) of real operands: each the other, in its own shape
    a, b = node.inputs
    return [_to(reshape(math_ops.multiply(dy, b), shape(a)), a), _to(reshape(math_ops.multiply(dy, a), shape(b)), b)]


@grad_rule(OPS["linalg.slogdet"])
def _slogdet_grad(node, dsign, dlog):  # d log|det A| = A^-T; the sign is flat
    a = node.inputs[0]
    if dlog is None:
        return [None]
    scale = expand_dims(expand_dims(dlog, -1), -1)
    return [_to(math_ops.multiply(scale, _swap(call(OPS["linalg.inv"], a))), a)]


@grad_rule(OPS["linalg.matrix_power"])
def _matrix_power_grad(node, dy):
    """A^n: the sum over k of (A^T)^k dy (A^T)^(n-1-k); a negative n through A^-1."""
    a, n = node.inputs[0], node.attrs["args"][1]
    if n == 0:
        return [None]
    base = a if n > 0 else call(OPS["linalg.inv"], a)
    base_t = _swap(base)
    powers = [None] * abs(n)  # (base^T)^k for k < |n|
    for k in range(abs(n)):
        powers[k] = base_t if k == 1 else None if k == 0 else math_ops.matmul(powers[k - 1], base_t)
    total = None
    for k in range(abs(n)):
        left = dy if k == 0 else math_ops.matmul(powers[k], dy)
        term = left if abs(n) - 1 - k == 0 else math_ops.matmul(left, powers[abs(n) - 1 - k])
        total = term if total is None else math_ops.add(total, term)
    if n < 0:  # through inv: d(A^-1) = -A^-T g A^-T
        total = math_ops.negative(math_ops.matmul(base_t, math_ops.matmul(total, base_t)))
    return [_to(total, a)]


@grad_rule(OPS["kron"])
def _kron_grad(node, dy):
    """kron(a, b)[i*q + k] = a[i] b[k] along each axis: the cotangent, its axes split in (a's, b's)
    pairs, contracted with the other operand."""
    a, b = node.inputs
    nd = max(a.ndim, b.ndim)
    sa, sb = (1,) * (nd - a.ndim) + a.shape, (1,) * (nd - b.ndim) + b.shape
    if None in sa + sb:
        raise NotImplementedError("the gradient of np.kron needs the operands' shapes known at the trace")
    la, lb = "abcdefghijklm"[:nd], "nopqrstuvwxyz"[:nd]
    g = reshape(dy, tuple(d for pair in zip(sa, sb) for d in pair))
    pairs = "".join(x + y for x, y in zip(la, lb))
    da = call(OPS["einsum"], f"{pairs},{lb}->{la}", g, reshape(b, sb))
    db = call(OPS["einsum"], f"{pairs},{la}->{lb}", g, reshape(a, sa))
    return [_to(reshape(da, a.shape), a), _to(reshape(db, b.shape), b)]


@grad_rule(OPS["linalg.eigh"])
def _eigh_grad(node, dw, dv):
    """A = V diag(w) V^T: dA = V (diag(dw) + F * (V^T dV)) V^T with F_ij = 1 / (w_j - w_i) off the
    diagonal (0 where eigenvalues repeat), read back into the one triangle numpy's eigh reads."""
    a = node.inputs[0]
    w, v = node.outputs
    n = a.shape[-1]
    if n is None:
        raise NotImplementedError("the gradient of np.linalg.eigh needs the matrix size known at the trace")
    inner = 0.0
    if dw is not None:
        inner = math_ops.multiply(expand_dims(dw, -1), np.eye(n))
    if dv is not None:
        gap = math_ops.subtract(expand_dims(w, -2), expand_dims(w, -1))  # w_j - w_i
        apart = math_ops.logical_and(math_ops.not_equal(gap, 0), np.logical_not(np.eye(n, dtype=bool)))
        f = math_ops.where(apart, math_ops.divide(1.0, math_ops.where(apart, gap, 1.0)), 0.0)
        inner = math_ops.add(inner, math_ops.multiply(f, math_ops.matmul(_swap(v), dv)))
    return [_to(_one_triangle(math_ops.matmul(v, math_ops.matmul(inner, _swap(v))), node), a)]


@grad_rule(OPS["linalg.eigvalsh"])
def _eigvalsh_grad(node, dw):  # as eigh's with the eigenvectors unused
    a = node.inputs[0]
    if a.shape[-1] is None:
        raise NotImplementedError("the gradient of np.linalg.eigvalsh needs the matrix size known at the trace")
    _, v = call(OPS["linalg.eigh"], a, **dict(node.attrs["kwargs"]))
    inner = math_ops.multiply(expand_dims(dw, -1), np.eye(a.shape[-1]))
    return [_to(_one_triangle(math_ops.matmul(v, math_ops.matmul(inner, _swap(v))), node), a)]


def _one_triangle(g, node):
    """A symmetric matrix's cotangent `g` read back into the triangle numpy's eigh reads (UPLO)."""
    n = g.shape[-1]
    lower = dict(node.attrs["kwargs"]).get("UPLO", "L") == "L"
    mask = np.tril(np.ones((n, n)), -1) if lower else np.triu(np.ones((n, n)), 1)
    return math_ops.add(math_ops.multiply(math_ops.add(g, _swap(g)), mask), math_ops.multiply(g, np.eye(n)))


@grad_rule(OPS["linalg.qr"])
def _qr_grad(node, *douts):
    """A = QR with m >= n (reduced, or mode "r"): M = R dR^T - dQ^T Q, dA = (dQ + Q copyltu(M)) R^-T,
    copyltu(M) the symmetric matrix of M's lower triangle (as PyTorch's linalg_qr_backward)."""
    a = node.inputs[0]
    mode = dict(node.attrs["kwargs"]).get("mode", "reduced")
    m, n = a.shape[-2:]
    if None in (m, n) or m < n or mode == "complete" and m != n:
        raise NotImplementedError("the gradient of np.linalg.qr is written for a matrix of known shape with at "
                                  "least as many rows as columns (reduced)")
    if mode == "r":
        q, r = call(OPS["linalg.qr"], a)
        dq, dr = None, douts[0]
    else:
        (q, r), (dq, dr) = node.outputs, douts
    product = 0.0
    if dr is not None:
        product = math_ops.matmul(r, _swap(dr))
    if dq is not None:
        product = math_ops.subtract(product, math_ops.matmul(_swap(dq), q))
    below = math_ops.multiply(product, np.tril(np.ones((n, n)), -1))
    sym = math_ops.add(math_ops.add(below, _swap(below)), math_ops.multiply(product, np.eye(n)))
    left = math_ops.matmul(q, sym)
    if dq is not None:
        left = math_ops.add(dq, left)
    # left R^-T, as the solution X of X R^T = left: R X^T = left^T
    return [_to(_swap(call(OPS["linalg.solve"], r, _swap(left))), a)]


@grad_rule(OPS["linalg.svd"])
def _svd_grad(node, *douts):
    """A = U diag(s) V^T (Townsend, "Differentiating the singular value decomposition", 2016), for
    full_matrices=False or a square matrix: with F_ij = 1 / (s_j^2 - s_i^2) off the diagonal,
    dA = U [F*(U^T dU - dU^T U) S + diag(ds) + S F*(V^T dV - dV^T V)] V^T
         + (I - U U^T) dU S^-1 V^T + U S^-1 dV^T (I - V V^T)."""
    a = node.inputs[0]
    kwargs = dict(node.attrs["kwargs"])
    m, n = a.shape[-2:]
    if None in (m, n) or kwargs.get("full_matrices", True) and kwargs.get("compute_uv", True) and m != n:
        raise NotImplementedError("the gradient of np.linalg.svd is written for full_matrices=False or a square "
                                  "matrix of known shape")
    if kwargs.get("compute_uv", True):
        (u, s, vt), (du, ds, dvt) = node.outputs, douts
    else:
        (u, s, vt), (du, ds, dvt) = call(OPS["linalg.svd"], a, full_matrices=False), (None, douts[0], None)
    k = min(m, n)
    v = _swap(vt)
    eye = np.eye(k)
    inner = 0.0 if ds is None else math_ops.multiply(expand_dims(ds, -1), eye)
    s_row, s_col = expand_dims(s, -2), expand_dims(s, -1)  # s_j along rows' entries, s_i down columns
    gap = math_ops.subtract(math_ops.square(s_row), math_ops.square(s_col))
    apart = math_ops.logical_and(math_ops.not_equal(gap, 0), np.logical_not(eye.astype(bool)))
    f = math_ops.where(apart, math_ops.divide(1.0, math_ops.where(apart, gap, 1.0)), 0.0)
    extra = 0.0
    if du is not None:
        utdu = math_ops.matmul(_swap(u), du)
        inner = math_ops.add(inner, math_ops.multiply(math_ops.multiply(f, math_ops.subtract(utdu, _swap(utdu))), s_row))
        if m > k:
            rest = math_ops.subtract(du, math_ops.matmul(u, utdu))  # (I - U U^T) dU
            extra = math_ops.matmul(math_ops.divide(rest, s_row), vt)
    if dvt is not None:
        dv = _swap(dvt)
        vtdv = math_ops.matmul(vt, dv)
        inner = math_ops.add(inner, math_ops.multiply(s_col, math_ops.multiply(f, math_ops.subtract(vtdv, _swap(vtdv)))))
        if n > k:
            rest = math_ops.subtract(dv, math_ops.matmul(v, vtdv))  # (I - V V^T) dV
            extra = math_ops.add(extra, math_ops.matmul(u, _swap(math_ops.divide(rest, s_row))))
    return [_to(math_ops.add(math_ops.matmul(u, math_ops.matmul(inner, vt)), extra), a)]
