"""Random small Python programs in the subset `@ag.function` claims to support.

A program is built from a stream of integer choices (`Choices.int(lo, hi)`), so the same
generator serves two drivers: Hypothesis (`HypothesisChoices`, which shrinks the choices
toward `lo`) and a plain seeded `random.Random` (`RandomChoices`, fast, and replayable from
its recorded choices for shrinking without Hypothesis). Choice 0 is always the simplest
option, so shrinking toward 0 gives a smaller program.

Types are not modelled by hand: every expression is also evaluated eagerly on *sample*
values of its variables, and the type of the sample it gives (Python int/float/bool, or a
numpy dtype and rank) is the expression's type. So NEP 50 promotion, numpy scalars vs 0-d
arrays and the ops' own result types come from numpy and the eager library themselves.
The generator uses those types to keep a program inside the contract: a variable keeps its
type across the branches and loop iterations that reassign it, returns agree on types,
conditions are scalars.
"""
import copy
import random
import re
import warnings

import numpy as np

import autograph_lite as ag

DTYPES = ["float32", "int32", "int64", "float64", "int8", "uint8", "bool"]
VEC = 4          # length of every vector argument
MAX_TRIP = 3     # every loop runs at most this many times (plus tensor ranges <= VEC)

# Constructs that diverge on today's main; off in the CI slice (see tests/fuzz/__init__.py).
KNOWN_DIVERGENT = frozenset()
ALL_FLAGS = frozenset({
    "python_print",      # print(...) of Python values only
    "alias_mutation",    # `v = x; v += ...` on an argument array (mutates the caller's array)
    "view_alias",        # `v = w[:]` / `v = w[::-1]`: a view, then updates through either name
    "arg_list_append",   # append to the caller's list argument
    "list_item_set",     # L[0] = ... (item assignment on a list)
    "dict_set",          # D['k'] = ... inside branches and loops
    "closures",          # nested functions and lambdas (reading variables rebound later)
    "loop_closure",      # lambdas defined inside loops over the loop variable
    "py_carried",        # Python scalars reassigned inside tensor-controlled blocks
    "while_counter_after",  # a while loop's Python counter read after the loop
    "int_division",      # // and % on tensors (integer division by zero is 0 in numpy)
    "true_division",     # / on tensors
    "transcendental",    # tanh / exp / numpy's math ufuncs (compared within a few ulp)
    "return_in_loop",    # return inside loops
    "return_list",       # a list or dict returned as output
    "stack_list",        # ag.stack of a list appended to in loops
    "mixed_dtypes",      # two vector arguments of different dtypes
    "numpy_scalar_aug",  # augmented assignment on numpy scalars / 0-d values
    "logical_values",    # a and b / a or b used as values (not conditions)
    "helpers",           # module-level helper functions called from the main function
    "range_step",        # ag.range(start, n, step)
    "where_nonbool",     # ag.where with a condition that is not bool
    "helper_print",      # print inside module-level helper functions
    "small_int_weak",    # Python ints meeting int8/uint8 arrays in arithmetic
    "ag_unary_on_python",  # ag.abs/square/negative/... of a Python scalar
    "outside_state",     # module globals and an object's attributes read and written, changed between calls
    "random_draws",      # np.random.random() / standard_normal(4) / randint(...): the runner seeds before each run
    "type_queries",      # isinstance / type(v) is / hasattr / callable of values (Python bools)
    "numpy_scalars",     # numpy scalar constants (np.float32(1.5)), np.float64(v), v.astype(...)
    "mixed_boxes",       # a and b / a or b whose operands differ in type (a np.bool_ and a Python bool)
    "try_finally",       # try: <if> finally: <statements> (the finally may return too)
    "numpy_api",         # numpy ufuncs and functions drawn from the tables tensors go through (NUMPY_FORMS)
    "grad_helper",       # ag.grad of a helper (which may assign into its array argument) called from f
    "item_assign",       # v[i] = e, v[i] op= e, v[a:b] = e, v[mask] = e, v[[0, 2]] = e on arguments, locals and views
    "dict_new_key",      # D['c'] = ... first set inside a tensor block (the key exists where it ran)
    "raising_branch",    # a tensor `if` branch raising a Python error on static values ([1.5][2], D['zz'])
    "dynamic_shape",     # v[v > 0].shape[0] compared with an int: a dim known only when the graph runs
    "staged_range",      # Python range loops the compiled run stages after their first iteration (the runner
                         # lowers control_flow.STAGE_AFTER_NODES and STAGE_AT_LEAST for the program)
})
TYPE_QUERIES = ["isinstance({}, np.ndarray)", "isinstance({}, np.floating)", "isinstance({}, np.integer)",
                "isinstance({}, np.generic)", "isinstance({}, float)", "isinstance({}, (int, bool))",
                "type({}) is np.ndarray", "type({}) is np.float64", "hasattr({}, 'ndim')", "callable({})"]

# the state an `outside_state` program keeps outside its arguments: its names, and sample values
OUTSIDE_READS = ["G", "K", "STATE.w", "STATE.k", "STATE.acc", "CFG.c", "CFG.v"]


# numpy's math ufuncs called on tensors (ops/numpy_api UFUNC_OPS), floats only, as transcendentals
_NUMPY_UFUNCS = ("np.sin({})", "np.cos({})", "np.arctan2({}, 1.5)", "np.log1p(ag.abs({}))", "np.floor({})")


class Choices:
    def int(self, lo, hi):
        raise NotImplementedError

    def chance(self, percent):
        """True with about `percent`% probability; shrinks to False."""
        return self.int(0, 99) >= 100 - percent

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def weighted(self, pairs):
        """`pairs` is [(weight, item)]; the first item is what shrinking prefers."""
        pairs = [(w, item) for w, item in pairs if w > 0]
        total = sum(w for w, _ in pairs)
        r = self.int(0, total - 1)
        for w, item in pairs:
            if r < w:
                return item
            r -= w
        raise AssertionError


class RandomChoices(Choices):
    """Seeded choices; `replay` replays (clamped) recorded choices, then 0s."""

    def __init__(self, seed=0, replay=None):
        self.rng = random.Random(seed)
        self.replay = replay
        self.record = []

    def int(self, lo, hi):
        if self.replay is not None:
            i = len(self.record)
            v = self.replay[i] if i < len(self.replay) else lo
            v = min(max(v, lo), hi)
        else:
            v = self.rng.randint(lo, hi)
        self.record.append(v)
        return v


class HypothesisChoices(Choices):
    def __init__(self, data):
        from hypothesis import strategies as st
        self.data, self.st = data, st

    def int(self, lo, hi):
        return self.data.draw(self.st.integers(lo, hi))


def numpy_forms():
    """[(name, [template])] for every entry of the numpy tables tensors go through (`UFUNC_OPS`,
    `ARRAY_FUNCTIONS`; a binary ufunc's `.reduce` and `.accumulate`), in name order: how an expression calls it, `{a}` and `{b}`
    vectors or scalars, `{c}` a condition. Each entry gets the plain calls `np.f({a})` and, for two
    inputs, `np.f({a}, {b})`; `NUMPY_FORMS` adds the calls a function needs beyond those."""
    from autograph_lite.ops.numpy_api import ARRAY_FUNCTIONS, CALLS, UFUNC_OPS, numpy_name
    forms = []
    for u in sorted(UFUNC_OPS, key=lambda u: u.__name__):
        forms.append((u.__name__, [f"np.{u.__name__}({{a}}" + ", {b}" * (u.nin - 1) + ")"]
                      + ([f"np.{u.__name__}.reduce({{a}})", f"np.{u.__name__}.accumulate({{a}})"]
                         if u.nin == 2 and u.nout == 1 else [])))
    for spelled in sorted(numpy_name(f) for f in CALLS if numpy_name(f)[len("np."):] in NUMPY_FORMS):
        forms.append((spelled[len("np."):], NUMPY_FORMS[spelled[len("np."):]]))  # creation calls given a tensor
    for spelled in sorted(numpy_name(f) for f in ARRAY_FUNCTIONS):
        name = spelled[len("np."):]
        plain = [f"{spelled}({{a}})", f"{spelled}({{a}}, {{b}})"] if name not in NUMPY_FORMS_ONLY else []
        forms.append((name, [*plain, *NUMPY_FORMS.get(name, ()), *NUMPY_FORMS_ONLY.get(name, ())]))
    return forms


# calls of numpy functions beyond `np.f(a)` and `np.f(a, b)`, for the functions that need them; every
# form must give a scalar or a vector of VEC elements (a 2-D result is indexed back to a row)
NUMPY_FORMS = {
    "reshape": ["np.reshape({a}, -1)", "np.reshape({a}, (2, 2))[1]"],
    "full_like": ["np.full_like({a}, 3)", "np.full_like({a}, 0.5)"],
    "where": ["np.where({c}, {a}, {b})", "np.where({c}, {a}, 0)"],
    "expand_dims": ["np.expand_dims({a}, 0)[0]", "np.expand_dims({a}, -1)[:, 0]"],
    "clip": ["np.clip({a}, 0, 2)", "np.clip({a}, {b}, None)"],
    "concatenate": ["np.concatenate([{a}[:2], {b}[2:]])"],
    "stack": ["np.stack([{a}, {b}])[1]", "np.stack([{a}, {b}], axis=1)[:, 0]"],
    "outer": ["np.outer({a}, {b})[1]", "np.add.outer({a}, {b})[..., 1]", "np.minimum({a}[..., None], {b})[2]"],
    "linalg.outer": ["np.linalg.outer({a}, {b})[2]"],
    "triu": ["np.triu(np.outer({a}, {b}))[1]"],
    "tril": ["np.tril(np.outer({a}, {b}), -1)[2]"],
    "transpose": ["np.transpose(np.outer({a}, {b}))[0]"],
    "squeeze": ["np.squeeze({a}[None])"],
    "shape": ["np.shape({a})[0]"],
    "var": ["np.var({a}, ddof=1)"],
    "std": ["np.std({a}, ddof=1)"],
    "sum": ["np.sum({a}, axis=0)", "np.sum(np.outer({a}, {b}), axis=-1)"],
    "mean": ["np.mean(np.outer({a}, {b}), axis=0)"],
    "bincount": ["np.bincount(np.abs({a}).astype(np.int64), minlength=4)[:4]"],
    "append": ["np.append({a}[:2], {b}[:2])"],
    "full": ["np.full(4, {a}[0])"],
    "array": ["np.array([{a}[0], {b}[1], 1, 0])"],
    "asarray": ["np.asarray({a})"],
    "asanyarray": ["np.asanyarray({b})"],
    "argwhere": ["np.argwhere({a} >= {a})[:, 0]"],
    "nonzero": ["np.nonzero({a} >= {a})[0]"],
    "array_split": ["np.array_split({a}, 1)[0]"],
    "split": ["np.split({a}, 1)[0]"],
    "atleast_2d": ["np.atleast_2d({a})[0]"],
    "atleast_3d": ["np.atleast_3d({a})[0, :, 0]"],
    "broadcast_to": ["np.broadcast_to({a}[:1], (4,))"],
    "column_stack": ["np.column_stack([{a}, {b}])[:, 1]"],
    "dstack": ["np.dstack([{a}, {b}])[0, :, 1]"],
    "vstack": ["np.vstack([{a}, {b}])[1]"],
    "delete": ["np.delete(np.append({a}, {b}[:1]), 2)"],
    "diff": ["np.diff(np.append({a}, {b}[:1]))"],
    "diag": ["np.diag(np.outer({a}, {b}))"],
    "fliplr": ["np.fliplr(np.outer({a}, {b}))[0]"],
    "rot90": ["np.rot90(np.outer({a}, {b}))[1]"],
    "moveaxis": ["np.moveaxis(np.outer({a}, {b}), 0, 1)[2]"],
    "swapaxes": ["np.swapaxes(np.outer({a}, {b}), 0, 1)[3]"],
    "linspace": ["np.linspace({a}[0], {b}[0], 4)"],
    "meshgrid": ["np.meshgrid({a}, {b})[0][1]"],
    "pad": ["np.pad({a}[:2], 1)", "np.pad({a}[:3], (0, 1), mode='edge')"],
    "repeat": ["np.repeat({a}[:2], 2)"],
    "resize": ["np.resize({a}[:3], 4)"],
    "tile": ["np.tile({a}[:2], 2)"],
    "select": ["np.select([{c}], [{a}], {b})"],
    "take": ["np.take({a}, [3, 0, 1, 1])"],
    "take_along_axis": ["np.take_along_axis({a}, np.argsort({b}), 0)"],
    "cross": ["np.cross({a}[:3], {b}[:3])[0]"],
    "linalg.cross": ["np.linalg.cross({a}[:3], {b}[:3])[1]"],
    "einsum": ["np.einsum('i,i->', {a}, {b})", "np.einsum('i,j->i', {a}, {b})"],
    "histogram": ["np.histogram({a}, bins=4)[0]"],
    "interp": ["np.interp({a}, [0.0, 1.0, 2.0, 3.0], [1.0, -1.0, 2.0, 0.5])"],
    "kron": ["np.kron({a}[:2], {b}[:2])"],
    "tensordot": ["np.tensordot({a}, {b}, 1)"],
    "linalg.tensordot": ["np.linalg.tensordot({a}, {b}, axes=1)"],
    "trace": ["np.trace(np.outer({a}, {b}))"],
    "linalg.trace": ["np.linalg.trace(np.outer({a}, {b}))"],
    "diagonal": ["np.diagonal(np.outer({a}, {b}))"],
    "linalg.diagonal": ["np.linalg.diagonal(np.outer({a}, {b}))"],
    "linalg.matrix_transpose": ["np.linalg.matrix_transpose(np.outer({a}, {b}))[0]"],
    "matrix_transpose": ["np.matrix_transpose(np.outer({a}, {b}))[1]"],
    # on a symmetric positive definite matrix made of a vector (invertible, with a Cholesky factor)
    **{name: [form.replace("SPD", "(np.outer({a}, {a}) + 4.0 * np.eye(4))")] for name, form in (
        ("linalg.cholesky", "np.linalg.cholesky(SPD)[1]"), ("linalg.cond", "np.linalg.cond(SPD)"),
        ("linalg.det", "np.linalg.det(SPD)"), ("linalg.eigh", "np.linalg.eigh(SPD)[0]"),
        ("linalg.eigvalsh", "np.linalg.eigvalsh(SPD)"), ("linalg.inv", "np.linalg.inv(SPD)[0]"),
        ("linalg.matrix_norm", "np.linalg.matrix_norm(SPD)"),
        ("linalg.matrix_power", "np.linalg.matrix_power(SPD, 2)[0]"),
        ("linalg.matrix_rank", "np.linalg.matrix_rank(SPD)"),
        ("linalg.multi_dot", "np.linalg.multi_dot([SPD, SPD, {b}])"), ("linalg.pinv", "np.linalg.pinv(SPD)[0]"),
        ("linalg.qr", "np.linalg.qr(SPD).R[0]"), ("linalg.slogdet", "np.linalg.slogdet(SPD)[1]"),
        ("linalg.solve", "np.linalg.solve(SPD, {b})"), ("linalg.svd", "np.linalg.svd(SPD)[1]"),
        ("linalg.svdvals", "np.linalg.svdvals(SPD)"))},
}


# functions whose plain calls give values eager code cannot compare (uninitialized memory): these only
NUMPY_FORMS_ONLY = {
    "empty_like": ["np.empty_like({a}).size", "np.empty_like({a}, dtype=np.int8).ndim"],
}


class Reject(Exception):
    """A candidate expression or statement that does not type on the samples."""


def tkey(value):
    """The type of an eager value as the generator sees it."""
    if type(value) in (bool, int, float):
        return ("py", type(value).__name__)
    if isinstance(value, (np.ndarray, np.generic)):
        return ("t", value.dtype.name, value.ndim)
    return ("obj", type(value).__name__)


def is_scalar(k):
    return k[0] == "py" or (k[0] == "t" and k[2] == 0)


class Program:
    def __init__(self, source, dtypes, flags, inexact, inputs):
        self.source = source
        self.dtypes = dtypes
        self.flags = flags          # the constructs the program uses (subset of ALL_FLAGS)
        self.inexact = inexact      # uses transcendental functions
        self.inputs = inputs        # list of argument tuples (x, y, n, s, lst)

    def __str__(self):
        lines = [self.source.rstrip(), "", "# inputs (x, y, n, s, lst):"]
        lines += [f"#   {_inputs_repr(args)}" for args in self.inputs]
        return "\n".join(lines)


def _inputs_repr(args):
    x, y, n, s, lst = args
    return (f"np.array({x.tolist()}, np.{x.dtype.name}), np.array({y.tolist()}, np.{y.dtype.name}), "
            f"np.array({n.item()}, np.{n.dtype.name}), {s!r}, {lst!r}")


def _eval(src, env, genv=None):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return eval(src, genv or {"np": np, "ag": ag}, env)
        except Exception as e:
            raise Reject(src) from e


class Scope:
    def __init__(self, parent=None, kind="block"):
        self.parent = parent
        self.kind = kind
        self.vars = {}       # name -> sample value

    def lookup_all(self):
        out = {} if self.parent is None else self.parent.lookup_all()
        out.update(self.vars)
        return out


class Generator:
    def __init__(self, choices, flags=ALL_FLAGS - KNOWN_DIVERGENT, max_depth=3):
        self.ch = choices
        self.allowed = frozenset(flags)
        self.used = set()
        self.max_depth = max_depth
        self.lines = []
        self.counter = 0
        self.inexact = False
        self.helpers = []    # (name, param sample, return sample)
        self.genv = {"np": np, "ag": ag}
        self.outside = False  # the program reads and writes module-level state (flag outside_state)

    # ---------------------------------------------------------------- small utilities
    def ev(self, src, env):
        return _eval(src, env, self.genv)

    def on(self, flag, percent):
        """Use an optional construct `flag` with `percent`% probability, if allowed."""
        if flag not in self.allowed:
            return False
        if self.ch.chance(percent):
            self.used.add(flag)
            return True
        return False

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    # ---------------------------------------------------------------- program
    def program(self):
        ch = self.ch
        d1 = ch.pick(DTYPES)
        d2 = ch.pick(DTYPES) if self.on("mixed_dtypes", 40) else d1
        self.dtypes = (d1, d2)
        self.emit(0, "import numpy as np")
        self.emit(0, "import autograph_lite as ag")
        self.emit(0, "")
        self.emit(0, "")
        if self.on("outside_state", 15):
            self.outside_state(d1)
        if "helpers" in self.allowed:
            for _ in range(ch.int(0, 2) if self.on("helpers", 40) else 0):
                self.helper()
        inputs = [self.inputs() for _ in range(4)]
        # sets 0-2 share the static arguments (s, lst) so they share one trace; set 3 retraces
        for args in inputs[1:3]:
            args[3], args[4] = inputs[0][3], list(inputs[0][4])
        self.function("f", ["x", "y", "n", "s", "lst"], self.arg_samples(), top=True)
        source = "\n".join(self.lines) + "\n"
        return Program(source, self.dtypes, frozenset(self.used), self.inexact,
                       [tuple(a) for a in inputs])

    def outside_state(self, dtype):
        """Module-level state the functions read and write; the runner calls `reset()` before the
        eager and the compiled runs and `mutate(step)` before each call, so both see the same
        changes between calls: an array changed in place and one rebound (read by reference),
        a float global and an int attribute (guarded: they retrace); a SimpleNamespace config
        `CFG` with a float and an array (an AttrDict-like holder found during the trace)."""
        self.outside = True
        g = [self.ch.int(0 if dtype == "uint8" else -3, 3) for _ in range(VEC)]
        w = [self.ch.int(-4, 4) / 2 for _ in range(VEC)]
        v = [self.ch.int(-4, 4) / 2 for _ in range(VEC)]
        for line in ["import types", "", "", "class _State:", "    def scaled(self, v):  # a bound method reading its object's state",
                     "        return v * self.k + self.w[0]", "", "", "STATE = _State()", "", "",
                     "def reset():", "    global G, K", f"    G = np.array({g}, np.{dtype})", "    K = 0.5",
                     f"    STATE.w = np.array({w}, np.float64)", "    STATE.k = 2",
                     f"    STATE.acc = np.zeros({VEC})", "    CFG.c = 1.5", f"    CFG.v = np.array({v}, np.float64)",
                     "", "",
                     "def mutate(step):", "    global K", "    if step % 4 == 1:", "        G[...] = G[::-1]",
                     "        CFG.v[0] += 1.0",
                     "    elif step % 4 == 2:", "        STATE.w = STATE.w + 1.0", "        CFG.c = CFG.c + 0.5",
                     "    elif step % 4 == 3:",
                     "        K = K + 1.0", "    elif step:", "        STATE.k = STATE.k + 1", "", "",
                     "CFG = types.SimpleNamespace()", "reset()", "", ""]:
            self.emit(0, line)
        import types
        state = types.SimpleNamespace(w=np.array(w), k=2, acc=np.zeros(VEC))
        state.scaled = lambda v: v * state.k + state.w[0]
        self.genv.update(G=np.array(g, dtype), K=0.5, STATE=state,
                         CFG=types.SimpleNamespace(c=1.5, v=np.array(v, np.float64)))

    def arg_samples(self):
        d1, d2 = self.dtypes
        return {"x": np.arange(1, VEC + 1).astype(d1), "y": np.arange(2, VEC + 2).astype(d2),
                "n": np.array(2, np.int32), "s": 2, "lst": [1, 2]}

    def inputs(self):
        ch = self.ch

        def vec(d):
            if d == "bool":
                return np.array([ch.int(0, 1) for _ in range(VEC)], bool)
            if d.startswith("float"):
                return np.array([ch.int(-8, 8) / 2 for _ in range(VEC)], d)
            if d == "uint8":
                return np.array([ch.int(0, 9) for _ in range(VEC)], d)
            return np.array([ch.int(-5, 5) for _ in range(VEC)], d)
        d1, d2 = self.dtypes
        # `n` a numpy scalar in some input sets: one compiled function meets both boxes, which eagerly
        # differ (`n += 1` rebinds or writes in place, isinstance, np.asarray(n)): each its own trace
        n = ch.int(0, VEC)
        return [vec(d1), vec(d2), np.int32(n) if ch.chance(25) else np.array(n, np.int32), ch.int(0, 3),
                [ch.int(0, 5) for _ in range(ch.int(0, 2))]]

    def helper(self):
        name = self.fresh("helper")
        d = self.ch.pick(DTYPES)
        if "grad_helper" in self.allowed and self.ch.chance(30):   # a helper ag.grad can differentiate
            d = self.ch.pick(["float32", "float64"])
            param = np.arange(1, VEC + 1).astype(d)
        else:
            param = np.arange(1, VEC + 1).astype(d) if self.ch.chance(50) else np.dtype(d).type(1)
        samples = {"a": param, "k": 2}
        ret = self.function(name, ["a", "k"], samples, top=False)
        self.helpers.append((name, param, ret))
        self.genv[name] = _Callable(param, ret)
        self.emit(0, "")
        self.emit(0, "")

    def function(self, name, params, samples, top):
        self.emit(0, f"def {name}({', '.join(params)}):")
        scope = Scope(kind="function")
        scope.vars.update(samples)
        self.fn_scope = scope
        self.params = set(params)
        self.lists, self.dicts = {}, {}
        # parameters that may be the caller's arrays (a numpy-scalar sample may be a 0-d array when
        # the program runs: seed 4003600 grew the caller's loop bound `n` in place and never ended)
        self.alias = {p for p, v in samples.items() if isinstance(v, (np.ndarray, np.generic))}
        # the return signature: 1-3 values of types drawn from the arguments' types
        n_ret = self.ch.int(1, 3)
        self.ret = [tkey(self.expr(scope, 1)[1]) for _ in range(n_ret)]
        self.ret_form = self.ch.pick(["tuple", "single", "list", "dict"]) if top else "single"
        if self.ret_form == "single":
            self.ret = self.ret[:1]
        start = len(self.lines)
        self.body(scope, 1, depth=0, in_loop=False, staged=False, n_min=2, n_max=6)
        self.emit(1, self.return_stmt(scope, final=True))
        for i in range(start, len(self.lines)):
            line = self.lines[i]
            if line.endswith("  #AUG"):
                line = line[:-len("  #AUG")]
                target, op, rhs = line.strip().split(" ", 2)
                if target in self.alias:
                    if "alias_mutation" in self.allowed:
                        self.used.add("alias_mutation")
                    else:   # not in place: a new array, so the caller's is not touched
                        line = line[:len(line) - len(line.lstrip())] + \
                            f"{target} = {target} {op[0]} ({rhs})"
                self.lines[i] = line
        return _sample_of(self.ret[0])

    def return_stmt(self, scope, final=False):
        vals = [self.typed(scope, k, 2) for k in self.ret]
        if final and "return_list" in self.allowed and self.ret_form == "tuple":
            extra = [n for n in list(self.lists) + list(self.dicts) if n in scope.lookup_all()]
            if extra and self.on("return_list", 30):
                vals.append(self.ch.pick(extra))
        if self.ret_form == "single":
            return f"return {vals[0]}"
        if self.ret_form == "list":
            return f"return [{', '.join(vals)}]"
        if self.ret_form == "dict":
            return "return {" + ", ".join(f"'r{i}': {v}" for i, v in enumerate(vals)) + "}"
        return f"return ({', '.join(vals)},)"

    # ---------------------------------------------------------------- statements
    def body(self, scope, indent, depth, in_loop, staged, n_min=1, n_max=3):
        n = self.ch.int(n_min, n_max)
        for _ in range(n):
            if self.statement(scope, indent, depth, in_loop, staged) == "returned":
                return "returned"
        return None

    def statement(self, scope, indent, depth, in_loop, staged):
        ch = self.ch
        compound = depth < self.max_depth
        kind = ch.weighted([
            (6, "assign"), (4, "reassign"), (2, "aug"), (4 if compound else 0, "if"),
            (3 if compound else 0, "while"), (4 if compound else 0, "for"),
            (2 if in_loop else 0, "break"), (2 if in_loop else 0, "continue"),
            (1, "return"), (2, "print"), (3, "list"), (2, "dict"), (2, "closure"),
            (2 if self.outside and indent == 1 else 0, "state_write"),
            (1 if compound and "try_finally" in self.allowed else 0, "try"),
            (3 if "item_assign" in self.allowed else 0, "item_assign"),
            (2 if "grad_helper" in self.allowed and "lst" in self.params else 0, "grad"),
            (1 if staged and not in_loop and "raising_branch" in self.allowed else 0, "raise_static"),
        ])
        for _ in range(4):
            mark = len(self.lines)
            saved = (dict(scope.vars), dict(self.lists), dict(self.dicts), set(self.used))
            try:
                return getattr(self, "st_" + kind)(scope, indent, depth, in_loop, staged)
            except Reject:
                del self.lines[mark:]
                scope.vars, self.lists, self.dicts, self.used = saved
                kind = "assign"
        self.emit(indent, "pass")

    def st_state_write(self, scope, indent, depth, in_loop, staged):
        """`STATE.acc = <float64 vector>`: a write to an attribute the runner compares after each call."""
        self.emit(indent, f"STATE.acc = {self.typed(scope, tkey(self.genv['STATE'].acc), 2)}")

    def assignable(self, scope, staged):
        """Variables a nested block may rebind (not arguments, not loop targets)."""
        out = {}
        s = scope
        while s is not None:
            for name, v in s.vars.items():
                if name in self.params or name.startswith(("i", "r", "e", "g", "h", "L", "D", "w", "m")):
                    continue
                out.setdefault(name, v)
            if s.kind == "function":
                break
            s = s.parent
        if staged and "py_carried" not in self.allowed:
            out = {k: v for k, v in out.items() if tkey(v)[0] != "py"}
        return out

    def st_assign(self, scope, indent, depth, in_loop, staged):
        name = self.fresh("v")
        visible = scope.lookup_all()
        vecs = sorted(n for n, v in visible.items() if isinstance(v, np.ndarray) and v.ndim == 1)
        if "x" in visible and self.on("alias_mutation", 10):
            src = self.ch.pick(["x", "y"])
            val = visible[src]
        elif vecs and self.on("view_alias", 10):
            # a view of a whole vector (same type): updates through it or through its array must be
            # seen by both names, in branches and loops too, or refused
            src = f"{self.ch.pick(vecs)}{self.ch.pick(['[:]', '[::-1]'])}"
            val = self.ev(src, visible)
        else:
            src, val = self.expr(scope, 3)
        self.emit(indent, f"{name} = {src}")
        scope.vars[name] = val
        if self.may_alias(src, val):
            self.alias.add(name)

    def st_reassign(self, scope, indent, depth, in_loop, staged):
        targets = self.assignable(scope, staged)
        if not targets:
            raise Reject("no target")
        name = self.ch.pick(sorted(targets))
        if staged and tkey(targets[name])[0] == "py":
            self.used.add("py_carried")
        src = self.typed(scope, tkey(targets[name]), 3)
        self.emit(indent, f"{name} = {src}")
        if self.may_alias(src, self.ev(src, scope.lookup_all())):
            self.alias.add(name)

    def may_alias(self, src, val):
        """Whether the value of `src` may be (a view of) an argument array: conservative."""
        if not isinstance(val, (np.ndarray, np.generic)):
            return False   # (a numpy-scalar sample may be a 0-d array when the program runs)
        if src in self.alias or any(w in src for w in (" if ", " and ", " or ", "helper")) \
                or re.search(r"\b[gh]\d+\(", src):
            return True
        params = [v for k, v in self.fn_scope.vars.items() if k in self.params]
        return isinstance(val, np.ndarray) and any(
            isinstance(p, np.ndarray) and np.shares_memory(val, p) for p in params)

    def st_aug(self, scope, indent, depth, in_loop, staged):
        targets = self.assignable(scope, staged)
        names = [n for n, v in targets.items() if tkey(v)[1] != "bool"]
        if not names:
            raise Reject("no target")
        name = self.ch.pick(sorted(names))
        old = targets[name]
        op = self.ch.pick(["+=", "-=", "*="])
        rhs, rv = self.expr(scope, 2)
        self.weak_small(old, rv)
        env = dict(scope.lookup_all())
        env[name] = copy.deepcopy(old)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                env["__rhs"] = rv
                exec(f"{name} {op} __rhs", {"np": np}, env)
            except Exception as e:
                raise Reject("aug") from e
        if tkey(env[name]) != tkey(old):
            raise Reject("aug changes type")
        if name in self.alias and np.ndim(old) == 0 and np.asarray(old).dtype.kind in "iu":
            # the only 0-d integer arguments are loop bounds (`n`, passed on to helpers): updated in
            # place they grow every loop that reads them, and eager never ends (seeds 4003600, 7003940)
            raise Reject("in-place update of a loop bound")
        if name in self.alias and isinstance(old, (np.ndarray, np.generic)):
            # an in-place update of (maybe) the caller's array
            if "alias_mutation" not in self.allowed:
                raise Reject("alias mutation")
            self.used.add("alias_mutation")
        if isinstance(old, (np.ndarray, np.generic)):
            # in place (on a 0-d array too): checked again at the end of the function, when every alias is known
            # (an alias made later in a loop body reaches this line on the next iteration)
            self.emit(indent, f"{name} {op} {rhs}  #AUG")
            return
        if isinstance(old, (np.generic,)) or (isinstance(old, np.ndarray) and old.ndim == 0):
            if "numpy_scalar_aug" not in self.allowed:
                raise Reject("numpy scalar aug")
            self.used.add("numpy_scalar_aug")
        if staged and tkey(old)[0] == "py":
            self.used.add("py_carried")
        self.emit(indent, f"{name} {op} {rhs}")

    # index forms of `item_assign`: (source, how the value is shaped: "scalar" or a source
    # template indexing a VEC-long vector to the selection's length)
    _ITEM_SLICES = ["1:3", ":2", "2:", "::2", "::-1", "1:-1", ":"]

    def st_item_assign(self, scope, indent, depth, in_loop, staged):
        """An assignment into a vector: an argument, a local made here (`np.zeros`, `.copy()`, a
        view `x[::-1]`) or a view `m = v[1:]` of one; basic, integer-list and mask indices; `op=`."""
        ch = self.ch
        if "item_assign" not in self.allowed:
            raise Reject("item assignment off")
        visible = scope.lookup_all()
        vecs = sorted(k for k, v in visible.items() if isinstance(v, np.ndarray) and v.ndim == 1
                      and not isinstance(v, (list, dict)))
        make = ch.weighted([(5, None), (2, "local"), (1, "view")]) if vecs else "local"
        if make == "local":
            name = self.fresh("v")
            d = self.ch.pick(DTYPES)
            src = ch.pick([f"np.zeros({VEC})", f"np.zeros({VEC}, np.{d})", f"np.ones({VEC}, np.{d})",
                           *(f"{v}.copy()" for v in vecs if np.shape(visible[v]) == (VEC,)),
                           *(f"{v}[::-1]" for v in vecs if np.shape(visible[v]) == (VEC,))])
            val = self.ev(src, visible)
            self.emit(indent, f"{name} = {src}")
            scope.vars[name] = val
            if self.may_alias(src, val) or re.match(r"[xya]\[", src):
                self.alias.add(name)
            visible = scope.lookup_all()
        elif make == "view":
            base = ch.pick(vecs)
            name = self.fresh("m")
            src = f"{base}[{ch.pick(['1:', ':-1', '::2', '::-1', '1:3'])}]"
            val = self.ev(src, visible)
            if val.size == 0:
                raise Reject("empty view")
            self.emit(indent, f"{name} = {src}")
            scope.vars[name] = val
            visible = scope.lookup_all()
        else:
            name = ch.pick(vecs)
        target = visible[name]
        size = target.shape[0]
        form = ch.weighted([(5, "int"), (2, "aug"), (3, "slice"), (2, "mask"), (2, "list")])
        value_kind = "scalar"
        if form in ("int", "aug"):
            loops = sorted(k for k, v in visible.items() if k.startswith("i") and not isinstance(v, list)
                           and tkey(v) in (("py", "int"), ("t", "int64", 0)))
            idx = ch.pick([str(ch.int(-size, size - 1)), f"n % {size}", f"s % {size}" if "s" in visible
                           else f"k % {size}", *(f"{i} % {size}" for i in loops), *(f"-1 - {i} % {size}" for i in loops)])
        elif form == "slice":
            idx = ch.pick(self._ITEM_SLICES)
            if size == VEC and ch.chance(50):
                value_kind = f"({{}})[{idx}]"
        elif form == "mask":
            cmp = ch.pick([">", "<", "==", ">=", "!="])
            other = self.typed(scope, ("py", "int"), 1) if ch.chance(50) else ch.pick(["0", "1", "2"])
            idx = f"{name} {cmp} {other}"
        else:
            idx = ch.pick(["[0, 2]", "[-1, 0]", "[1, 1]", "[2]"])
            if size == VEC and ch.chance(40) and idx != "[1, 1]":
                value_kind = f"({{}})[{idx}]"
        if value_kind == "scalar":
            src, v = self.expr(scope, 2)
            if not is_scalar(tkey(v)):
                if tkey(v)[0] == "t" and np.shape(v) == (VEC,) and form in ("int", "aug"):
                    src = f"{src}[{ch.int(0, VEC - 1)}]"
                else:
                    raise Reject("a vector value for a scalar selection")
        else:
            src = value_kind.format(self.typed(scope, ("t", self.ch.pick([target.dtype.name, "float64", "int64"]), 1), 2))
        op = ch.pick(["+=", "-=", "*="]) if form == "aug" else "="
        stmt = f"{name}[{idx}] {op} {src}"
        # eagerly on copies of the samples: an IndexError or a cast numpy refuses is a Reject
        env = {k: v for k, v in visible.items()}
        env[name] = target.copy()
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("error")
            try:
                exec(stmt, dict(self.genv), env)
            except Exception as e:
                raise Reject("item assignment") from e
        value = self.ev(src, visible)
        self.weak_small(target, value)
        if np.asarray(value).dtype.kind == "f" and target.dtype.kind in "iub" and \
                re.search(r"/|exp|log|tanh|sqrt|sin|cos|random|arctan", src):
            raise Reject("a float that may not be finite cast to an integer")   # undefined in numpy
        self.used.add("item_assign")
        self.emit(indent, stmt)

    def st_grad(self, scope, indent, depth, in_loop, staged):
        """`v = ag.grad(lambda z: ag.reduce_sum(ag.cast(helper(z, s), np.float64)))(<float vector>)`:
        the gradient of a helper taking a float vector (its writes into `a` differentiated)."""
        helpers = [(name, param) for name, param, _ in self.helpers
                   if isinstance(param, np.ndarray) and param.dtype.kind == "f"]
        if not helpers:
            raise Reject("no helper of a float vector")
        name, param = self.ch.pick(helpers)
        arg = self.typed(scope, tkey(param), 2)
        out = self.fresh("v")
        self.emit(indent, f"{out} = ag.grad(lambda z: ag.reduce_sum(ag.cast({name}(z, s), np.float64)))"
                          f"(ag.cast({arg}, np.{param.dtype.name}))")
        self.used.add("grad_helper")
        scope.vars[out] = np.ones(VEC, param.dtype)

    def st_if(self, scope, indent, depth, in_loop, staged):
        cond, tensor = self.cond(scope)
        self.emit(indent, f"if {cond}:")
        r1 = self.body(Scope(scope), indent + 1, depth + 1, in_loop, staged or tensor)
        r2 = None
        if self.ch.chance(50):
            self.emit(indent, "else:")
            r2 = self.body(Scope(scope), indent + 1, depth + 1, in_loop, staged or tensor)
        if r1 == "returned" and r2 == "returned":
            return "returned"

    def st_try(self, scope, indent, depth, in_loop, staged):
        # no break/continue in the finally: leaving a finally that way is refused by design
        self.used.add("try_finally")
        self.emit(indent, "try:")
        body = self.st_if(scope, indent + 1, depth + 1, in_loop, staged)
        self.emit(indent, "finally:")
        after = self.body(Scope(scope), indent + 1, depth + 1, False, staged)
        return "returned" if "returned" in (body, after) else None

    def st_while(self, scope, indent, depth, in_loop, staged):
        w = self.fresh("w")
        self.emit(indent, f"{w} = 0")
        scope.vars[w] = 0
        cond, tensor = self.cond(scope)
        bound = self.ch.int(1, MAX_TRIP)
        self.emit(indent, f"while {w} < {bound} and {cond}:")
        self.emit(indent + 1, f"{w} += 1")
        inner = Scope(scope)
        self.body(inner, indent + 1, depth + 1, True, staged or tensor)
        if tensor and not self.on("while_counter_after", 50):
            del scope.vars[w]

    def st_for(self, scope, indent, depth, in_loop, staged):
        ch = self.ch
        inner = Scope(scope)
        kind = ch.pick(["range", "ag_range", "rows", "list", "ag_range_step"])
        visible = scope.lookup_all()
        vecs = sorted(n for n, v in visible.items() if not isinstance(v, (list, dict, _Callable))
                      and tkey(v)[0] == "t" and tkey(v)[2] == 1)
        if ("n" not in visible and kind.startswith("ag_range")) or (kind == "rows" and not vecs) \
                or (kind == "list" and "lst" not in visible):
            kind = "range"
        if kind == "range":
            i = self.fresh("i")
            bound = ch.pick(["2", "s" if "s" in visible else "k", "3", "1", "0"])
            self.on("staged_range", 30)
            self.emit(indent, f"for {i} in range({bound}):")
            inner.vars[i] = 1
            tensor = False
        elif kind == "ag_range" or (kind == "ag_range_step" and not self.on("range_step", 60)):
            i = self.fresh("i")
            self.emit(indent, f"for {i} in ag.range(n):")
            inner.vars[i] = np.int64(1)
            tensor = True
        elif kind == "ag_range_step":
            i = self.fresh("i")
            start, step = ch.pick(["0", "1", "n"]), ch.pick(["2", "1", "-1", "3"])
            stop = ch.pick(["n", "4", "0", "-1"])
            self.emit(indent, f"for {i} in ag.range({start}, {stop}, {step}):")
            inner.vars[i] = np.int64(1)
            tensor = True
        elif kind == "rows":
            i = self.fresh("r")
            src = ch.pick(vecs)
            self.emit(indent, f"for {i} in {src}:")
            inner.vars[i] = visible[src][0]
            tensor = True
        else:
            i = self.fresh("e")
            self.emit(indent, f"for {i} in lst:")
            inner.vars[i] = 1
            tensor = False
        self.body(inner, indent + 1, depth + 1, True, staged or tensor)

    def st_break(self, scope, indent, depth, in_loop, staged):
        cond, _ = self.cond(scope)
        self.emit(indent, f"if {cond}:")
        self.emit(indent + 1, self.ch.pick(["break", "continue"]))

    st_continue = st_break

    def st_return(self, scope, indent, depth, in_loop, staged):
        if in_loop and not self.on("return_in_loop", 70):
            raise Reject("return in loop")
        if self.ch.chance(70) or depth == 0:
            cond, _ = self.cond(scope)
            self.emit(indent, f"if {cond}:")
            self.emit(indent + 1, self.return_stmt(scope))
            return None
        self.emit(indent, self.return_stmt(scope))
        return "returned"

    def st_print(self, scope, indent, depth, in_loop, staged):
        if "lst" not in self.params and not self.on("helper_print", 100):
            raise Reject("print in a helper")   # helpers are called inside conditions too
        args = [repr(self.fresh("p"))]
        tensor = False
        for _ in range(self.ch.int(1, 2)):
            src, v = self.expr(scope, 2)
            tensor = tensor or tkey(v)[0] == "t"
            args.append(src)
        if not tensor and not self.on("python_print", 100):
            raise Reject("python-only print")
        self.emit(indent, f"print({', '.join(args)})")

    def st_list(self, scope, indent, depth, in_loop, staged):
        ch = self.ch
        visible = scope.lookup_all()
        lists = [n for n in self.lists if n in visible]
        if depth == 0 and (not lists or ch.chance(30)):
            name = self.fresh("L")
            src, v = self.expr(scope, 2)
            self.emit(indent, f"{name} = [{src}]")
            scope.vars[name] = [v]
            self.lists[name] = v
            return
        if depth == 0 and "lst" in visible and self.on("arg_list_append", 10):
            src = self.typed(scope, ("py", "int"), 2)
            self.emit(indent, f"lst.append({src})")
            return
        if not lists:
            raise Reject("no list")
        name = ch.pick(lists)
        elem = self.lists[name]
        src = self.typed(scope, tkey(elem), 2)
        if self.on("list_item_set", 20):
            self.emit(indent, f"{name}[0] = {src}")
        else:
            self.emit(indent, f"{name}.append({src})")

    def st_dict(self, scope, indent, depth, in_loop, staged):
        visible = scope.lookup_all()
        dicts = [n for n in self.dicts if n in visible]
        if depth == 0 and (not dicts or self.ch.chance(30)):
            name = self.fresh("D")
            a, va = self.expr(scope, 2)
            b, vb = self.expr(scope, 2)
            self.emit(indent, f"{name} = {{'a': {a}, 'b': {b}}}")
            scope.vars[name] = {"a": va, "b": vb}
            self.dicts[name] = {"a": va, "b": vb}
            return
        if not dicts or not self.on("dict_set", 100):
            raise Reject("no dict")
        name = self.ch.pick(dicts)
        if staged and self.on("dict_new_key", 50):
            # a key first set inside a tensor block: the dict has it on the runs that set it
            self.emit(indent, f"{name}['c'] = {self.typed(scope, tkey(self.dicts[name]['a']), 2)}")
            return
        key = self.ch.pick(["a", "b"])
        src = self.typed(scope, tkey(self.dicts[name][key]), 2)
        self.emit(indent, f"{name}[{key!r}] = {src}")

    def st_raise_static(self, scope, indent, depth, in_loop, staged):
        """Inside a tensor `if`: a Python error on static values, raised on the runs that take the branch."""
        self.used.add("raising_branch")
        dicts = [n for n in self.dicts if n in scope.lookup_all()]
        value = f"{dicts[0]}['zz']" if dicts and self.ch.chance(50) else "[1.5, 2.5][2]"
        self.emit(indent, f"{self.fresh('v')} = {value}")

    def st_closure(self, scope, indent, depth, in_loop, staged):
        """A nested function or lambda of one parameter, called right away or later."""
        ch = self.ch
        if "closures" not in self.allowed:
            raise Reject("closures off")
        if in_loop and not self.on("loop_closure", 50):
            raise Reject("closure in loop")
        name = self.fresh(ch.pick(["g", "h"]))
        visible = scope.lookup_all()
        zname = self.fresh("z")
        param = self.pick_var(visible, lambda k: k[0] == "t") or ("x", visible["x"])
        inner = Scope(scope, kind="function")
        inner.vars[zname] = param[1]
        body, val = self.expr(inner, 2)
        if name.startswith("h"):
            self.emit(indent, f"{name} = lambda {zname}: {body}")
        else:
            self.emit(indent, f"def {name}({zname}):")
            if ch.chance(40):
                cond, _ = self.cond(inner)
                alt = self.typed(inner, tkey(val), 2)
                self.emit(indent + 1, f"if {cond}:")
                self.emit(indent + 2, f"return {alt}")
            self.emit(indent + 1, f"return {body}")
        self.used.add("closures")
        scope.vars[name] = _Callable(param[1], val)
        if ch.chance(60):
            arg = self.typed(scope, tkey(param[1]), 1)
            out = self.fresh("v")
            self.emit(indent, f"{out} = {name}({arg})")
            scope.vars[out] = val
            if isinstance(val, (np.ndarray, np.generic)):
                self.alias.add(out)

    # ---------------------------------------------------------------- expressions
    def pick_var(self, visible, pred):
        names = sorted(n for n, v in visible.items() if not isinstance(v, (list, dict, _Callable))
                       and np.shape(v) in ((), (VEC,)) and pred(tkey(v)))
        if not names:
            return None
        n = self.ch.pick(names)
        return n, visible[n]

    def cond(self, scope):
        """A scalar condition; returns (source, whether it is a tensor)."""
        if self.on("dynamic_shape", 8):
            var = self.pick_var(scope.lookup_all(), lambda k: k[0] == "t" and k[2] == 1 and k[1] != "bool")
            if var is not None:
                op = self.ch.pick(["==", "!=", "<", ">", ">="])
                return f"{var[0]}[{var[0]} > 0].shape[0] {op} {self.ch.int(0, VEC)}", True
        for _ in range(6):
            src, v = self.expr(scope, 2, want_bool=True)
            k = tkey(v)
            if is_scalar(k):
                return src, k[0] == "t"
        visible = scope.lookup_all()
        var = self.pick_var(visible, is_scalar)
        if var is None:
            return "True", False
        return var[0], tkey(var[1])[0] == "t"

    def typed(self, scope, k, depth):
        """An expression of type `k`."""
        visible = scope.lookup_all()
        var = self.pick_var(visible, lambda kk: kk == k)
        if var is not None and self.ch.chance(40):
            return var[0]
        for _ in range(3):
            src, v = self.expr(scope, depth)
            if tkey(v) == k:
                return src
        visible = scope.lookup_all()
        var = self.pick_var(visible, lambda kk: kk == k)
        if var is not None and self.ch.chance(70):
            return var[0]
        if k[0] == "py":
            return {"int": "1", "float": "0.5", "bool": "True"}[k[1]]
        src, v = self.expr(scope, depth)
        if tkey(v)[0] == "py" or tkey(v)[2] != k[2]:
            if k[2] == 0:
                src = f"ag.reduce_max({src})" if tkey(v)[0] == "t" and tkey(v)[2] else src
            else:
                src = f"{src} + ag.zeros([{VEC}], np.{k[1]})"
        out = f"ag.cast({src}, np.{k[1]})"
        v = self.ev(out, dict(visible))
        if tkey(v) != k:
            raise Reject("coerce")
        return out

    def expr(self, scope, depth, want_bool=False):
        visible = scope.lookup_all()
        src = self._expr(visible, depth, want_bool)
        return src, self.ev(src, {k: v for k, v in visible.items()})

    def _expr(self, visible, depth, want_bool=False):
        ch = self.ch
        if depth <= 0:
            return self.leaf(visible)
        kind = ch.weighted([
            (4, "leaf"), (5, "binop"), (6 if want_bool else 2, "compare"), (1, "unary"),
            (2 if want_bool else 1, "boolop"), (1, "ternary"), (2, "call"), (1, "reduce"),
            (1, "cast"), (1, "index"), (1, "container"), (1, "random"), (1, "type_query"),
            (1, "numpy"),
        ])
        for _ in range(5):
            try:
                src = getattr(self, "ex_" + kind)(visible, depth)
                self.ev(src, visible)
                return src
            except Reject:
                kind = "leaf"
        return self.leaf(visible)

    def ex_leaf(self, visible, depth):
        return self.leaf(visible)

    def leaf(self, visible):
        ch = self.ch
        if self.outside and ch.chance(15):
            if ch.chance(20):
                var = self.pick_var(visible, lambda k: True)
                if var is not None:
                    return f"STATE.scaled({var[0]})"
            return ch.pick(OUTSIDE_READS)
        r = ch.int(0, 9)
        if r < 8:
            var = self.pick_var(visible, lambda k: True)
            if var is not None:
                return var[0]
        if self.on("numpy_scalars", 30):
            return ch.pick(["np.float32(1.5)", "np.int64(2)", "np.float64(0.5)", "np.bool_(True)", "np.int32(0)"])
        return ch.pick(["1", "2", "0.5", "True", "0", "3", "1.5", "False", "-1"])

    def weak_small(self, *values):
        """A Python int meeting an int8/uint8 array: eager raises OverflowError when the int
        is out of the dtype's range (NEP 50); flag `small_int_weak`."""
        keys = [tkey(v) for v in values]
        if any(k == ("py", "int") for k in keys) and any(k[0] == "t" and k[1] in ("int8", "uint8")
                                                         for k in keys):
            if "small_int_weak" not in self.allowed:
                raise Reject("python int with a small int dtype")
            self.used.add("small_int_weak")

    def ex_random(self, visible, depth):
        """A draw from numpy's global RandomState: a Python float or int, or a vector."""
        if not self.on("random_draws", 50):
            raise Reject("random draws")
        return self.ch.pick(["np.random.random()", f"np.random.standard_normal({VEC})", "np.random.randint(5)",
                             f"np.random.random({VEC})", f"np.random.randint(0, 5, {VEC})"])

    def ex_binop(self, visible, depth):
        ops = ["+", "-", "*"]
        if self.on("true_division", 15):
            ops.append("/")
        if self.on("int_division", 15):
            ops += ["//", "%"]
        op = self.ch.pick(ops)
        a = self._expr(visible, depth - 1)
        b = self._expr(visible, depth - 1)
        va, vb = self.ev(a, visible), self.ev(b, visible)
        self.weak_small(va, vb)
        if op in ("/", "//", "%") and tkey(va)[0] == "py" and tkey(vb)[0] == "py":
            raise Reject("python division")
        if op == "*" and tkey(va)[0] == "py" and tkey(vb)[0] == "py" and not _small(b):
            raise Reject("python ints grow")
        return f"({a} {op} {b})"

    def ex_compare(self, visible, depth):
        op = self.ch.pick([">", "<", "==", ">=", "<=", "!="])
        a = self._expr(visible, depth - 1)
        b = self._expr(visible, depth - 1)
        return f"({a} {op} {b})"

    def ex_unary(self, visible, depth):
        a = self._expr(visible, depth - 1)
        form = self.ch.pick(["-{}", "ag.abs({})", "not {}", "ag.square({})", "ag.tanh({})",
                             "ag.exp({})", "ag.sqrt(ag.abs({}))", "ag.negative({})", *_NUMPY_UFUNCS])
        if form in ("ag.tanh({})", "ag.exp({})", *_NUMPY_UFUNCS):
            if not self.on("transcendental", 50):
                raise Reject("transcendental")
            if tkey(self.ev(a, visible))[1] not in ("float32", "float64"):
                raise Reject("transcendental on non-float")
            self.inexact = True
        if form.startswith("ag.") and tkey(self.ev(a, visible))[0] == "py":
            if "ag_unary_on_python" not in self.allowed:
                raise Reject("ag unary op on a Python scalar")
            self.used.add("ag_unary_on_python")
        if form == "not {}":
            return f"(not {a})"
        return form.format(a)

    def ex_boolop(self, visible, depth):
        a = self._expr(visible, depth - 1, want_bool=True)
        b = self._expr(visible, depth - 1, want_bool=True)
        op = self.ch.pick(["and", "or"])
        ka, kb = tkey(self.ev(a, visible)), tkey(self.ev(b, visible))
        if not (is_scalar(ka) and is_scalar(kb)):
            raise Reject("vector in boolop")
        if ka != kb and not (ka[1] == "bool" and kb[1] == "bool"):
            # eager gives an operand whose type depends on the values: returned as it is, refused in arithmetic
            if not self.on("mixed_boxes", 30):
                raise Reject("mixed boolop")
        if ka[1] != "bool" or kb[1] != "bool":
            self.used.add("logical_values")
        return f"({a} {op} {b})"

    def ex_ternary(self, visible, depth):
        c = self._expr(visible, depth - 1, want_bool=True)
        if not is_scalar(tkey(self.ev(c, visible))):
            raise Reject("vector condition")
        a = self._expr(visible, depth - 1)
        b = self._expr(visible, depth - 1)
        if tkey(self.ev(a, visible)) != tkey(self.ev(b, visible)):
            raise Reject("ternary types")
        return f"({a} if {c} else {b})"

    def ex_call(self, visible, depth):
        ch = self.ch
        fns = sorted(n for n, v in visible.items() if isinstance(v, _Callable))
        choices = [("fn", n) for n in fns] + [("helper", h) for h in self.helpers]
        choices += [("op", "ag.maximum"), ("op", "ag.minimum"), ("where", None)]
        kind, what = ch.pick(choices)
        if kind == "fn":
            f = visible[what]
            return f"{what}({self._typed_quick(visible, tkey(f.param), depth - 1)})"
        if kind == "helper":
            name, param, _ = what
            return f"{name}({self._typed_quick(visible, tkey(param), depth - 1)}, s)" \
                if "s" in visible else f"{name}({self._typed_quick(visible, tkey(param), depth - 1)}, k)"
        if kind == "op":
            a, b = self._expr(visible, depth - 1), self._expr(visible, depth - 1)
            self.weak_small(self.ev(a, visible), self.ev(b, visible))
            return f"{what}({a}, {b})"
        c = self._expr(visible, depth - 1, want_bool=True)
        if tkey(self.ev(c, visible))[1] != "bool":
            if "where_nonbool" not in self.allowed:
                raise Reject("where on a non-bool condition")
            self.used.add("where_nonbool")
        a, b = self._expr(visible, depth - 1), self._expr(visible, depth - 1)
        self.weak_small(self.ev(a, visible), self.ev(b, visible))
        return f"ag.where({c}, {a}, {b})"

    def ex_numpy(self, visible, depth):
        """A numpy ufunc or function from the tables tensors go through, called as numpy code calls it."""
        if not self.on("numpy_api", 40):
            raise Reject("numpy api")
        name, forms = self.ch.pick(_numpy_forms())
        form = self.ch.pick(forms)
        parts = {k: self._expr(visible, depth - 1, want_bool=k == "c") for k in ("a", "b", "c") if f"{{{k}}}" in form}
        src = form.format(**parts)
        value = self.ev(src, visible)  # a Reject where numpy does not take these
        k = tkey(value)
        if k[0] == "obj" or (k[0] == "t" and (k[1] not in DTYPES or np.shape(value) not in ((), (VEC,)))):
            raise Reject(f"np.{name} gives {k}")
        if k[1] in ("float32", "float64") or any(tkey(self.ev(v, visible))[1] in ("float32", "float64")
                                                 for v in parts.values()):
            self.inexact = True  # numpy's transcendental loops: compared within a few ulp
        return src

    def _typed_quick(self, visible, k, depth):
        for _ in range(3):
            src = self._expr(visible, depth)
            if tkey(self.ev(src, visible)) == k:
                return src
        var = self.pick_var(visible, lambda kk: kk == k)
        if var is not None:
            return var[0]
        if k[0] == "py":
            return {"int": "1", "float": "0.5", "bool": "True"}[k[1]]
        if k[2] == 0:
            return f"ag.cast(1, np.{k[1]})"
        return f"ag.ones([{VEC}], np.{k[1]})"

    def ex_reduce(self, visible, depth):
        a = self._expr(visible, depth - 1)
        if tkey(self.ev(a, visible))[0] != "t" or tkey(self.ev(a, visible))[2] == 0:
            raise Reject("reduce of scalar")
        f = self.ch.pick(["ag.reduce_sum", "ag.reduce_max", "ag.reduce_min", "ag.reduce_any",
                          "ag.reduce_all", "np.sum", "np.max", "np.any", "np.all", ".sum", ".min", ".all"])
        return f"({a}){f}()" if f.startswith(".") else f"{f}({a})"

    def ex_cast(self, visible, depth):
        a = self._expr(visible, depth - 1)
        if self.on("numpy_scalars", 40):
            # float targets only: np.uint8(-1) raises eagerly where a cast wraps
            dtype = self.ch.pick(["float32", "float64"])
            if tkey(self.ev(a, visible))[0] == "t" and self.ch.chance(50):
                return f"({a}).astype(np.{dtype})"
            return f"np.{dtype}({a})"
        return f"ag.cast({a}, np.{self.ch.pick(DTYPES)})"

    def ex_type_query(self, visible, depth):
        """A question about a value's type, a Python bool (an `isinstance` guard in an `if`)."""
        if "type_queries" not in self.allowed:
            raise Reject("type queries off")
        self.used.add("type_queries")
        return "(" + self.ch.pick(TYPE_QUERIES).format(self._expr(visible, depth - 1)) + ")"

    def ex_index(self, visible, depth):
        vecs = sorted(n for n, v in visible.items() if tkey(v)[0] == "t" and tkey(v)[2] == 1
                      and not isinstance(v, (list, dict)))
        if not vecs:
            raise Reject("no vector")
        v = self.ch.pick(vecs)
        if self.on("numpy_api", 15):  # numpy's advanced indexing: two array indices, or an int beside one
            second = self.ch.pick(["[1, 0, 0, 1]", "1", "[-1, 0, 1, -2]"])
            return f"np.reshape({v}, (2, {VEC // 2}))[[0, 1, 1, 0], {second}]"
        idx = self.ch.pick(["0", "1", "-1", "3", "loop"])
        if idx == "loop":
            loops = sorted(n for n, val in visible.items() if n.startswith("i")
                           and tkey(val)[0] in ("t", "py") and tkey(val)[1] in ("int", "int64"))
            if not loops:
                raise Reject("no loop index")
            idx = f"{self.ch.pick(loops)} % {VEC}"
        return f"{v}[{idx}]"

    def ex_container(self, visible, depth):
        lists = sorted(n for n, v in visible.items() if isinstance(v, list) and n != "lst")
        dicts = sorted(n for n, v in visible.items() if isinstance(v, dict))
        if lists and self.ch.chance(50):
            name = self.ch.pick(lists)
            if "stack_list" in self.allowed and self.ch.chance(40) and tkey(visible[name][0])[0] == "t":
                self.used.add("stack_list")
                return f"ag.reduce_sum(ag.stack({name}))"
            return f"{name}[{self.ch.pick(['0', '-1'])}]"
        if dicts:
            return f"{self.ch.pick(dicts)}[{self.ch.pick(['a', 'b'])!r}]"
        if "lst" in visible:
            return "len(lst)"
        raise Reject("no container")


def _small(src):
    return src in ("0", "1", "2", "3", "-1", "True", "False", "0.5", "1.5")


class _Callable:
    """Sample stand-in for a generated closure: its parameter and result samples."""

    def __init__(self, param, result):
        self.param, self.result = param, result

    def __call__(self, *args):
        return self.result


_FORMS = []


def _numpy_forms():
    if not _FORMS:
        _FORMS.extend(numpy_forms())
    return _FORMS


def generate(choices, flags=ALL_FLAGS - KNOWN_DIVERGENT, max_depth=3):
    # a draw that cannot be finished (no well-typed return value) starts over on the same
    # choice stream, so a replay of the recorded choices makes the same program
    for _ in range(8):
        try:
            return Generator(choices, flags, max_depth).program()
        except Reject:
            continue
    raise Reject("no program after 8 tries")


def _sample_of(k):
    if k[0] == "py":
        return {"int": 1, "float": 0.5, "bool": True}[k[1]]
    return np.ones([VEC] * k[2], k[1]) if k[2] else np.dtype(k[1]).type(1)
