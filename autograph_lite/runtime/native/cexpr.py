"""C expressions for graph ops, with numpy's semantics.

One `Emitter` per generated source: `emitter.op(name, operands, out_dtype)` gives the C
expression of an op over operand expressions, each a `Value(expr, dtype, weak)`, and
records the helpers and libm declarations the source must start with (`prelude()`).
This module is the C renderer's table: each op's C form is a rule made by one of the rule
constructors below (`infix("+")`, `libm("tanh")`, ...), found by `rule_for(opdef)`: the op's
own entry in `RULES`, else by what it computes (`BY_COMPUTATION`, keyed by the op's `ufunc` or
`primitive` fact), and a dialect may respell any of them (`CStyleLanguage.code_for_op`); a
composite op is written from its `expansion`, so its formula exists once.
The expression syntax is shared by C and CUDA, so the CPU kernels (compiled here with
the system compiler) and a GPU ElementwiseKernel can be written from the same steps.

What numpy does and C would not, and how it is kept:
- dtypes: operands are cast to the dtype numpy computes in (NEP 50: a weak Python
  scalar takes the array's dtype), every step is stored in a typed local;
- integer overflow wraps (the source is compiled with -fwrapv); `//` and `%` floor
  toward -inf, and a zero divisor gives 0 (numpy's result) instead of a trap;
- maximum/minimum propagate NaN; no FMA contraction (-ffp-contract=off).
An op, dtype or combination not listed raises `Unsupported`, and the caller keeps its
numpy path for that kernel.
"""
import collections

import numpy as np

from ..opdef import REGISTRY, find
from .language import C, CStyleLanguage, Unsupported  # noqa: F401 (Unsupported: cexpr.Unsupported for callers)

Value = collections.namedtuple("Value", "expr dtype weak")
C_TYPES = CStyleLanguage.types  # the scalar types every C-family dialect shares

_WEAK_EXAMPLE = {"b": True, "i": 1, "u": 1, "f": 1.0}


def c_type(dtype):
    try:
        return C_TYPES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise Unsupported(f"dtype {dtype}") from None


def literal(value, dtype):
    """A C literal of `value` in `dtype`."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        text = repr(float(value))
        if text in ("inf", "-inf", "nan"):
            text = {"inf": "INFINITY", "-inf": "(-INFINITY)", "nan": "NAN"}[text]
            return text if dtype == np.float32 else f"((double){text})"
        return text + ("f" if dtype == np.float32 else "")
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is not None and not info.min <= int(value) <= info.max:
        raise Unsupported(f"{value} does not fit {dtype}")  # numpy raises; the Python path will too
    return f"(({c_type(dtype)}){int(value)})"


def compute_dtype(operands):
    """The dtype numpy computes a binary or unary op of `operands` in (NEP 50)."""
    examples = [_WEAK_EXAMPLE[v.dtype.kind] if v.weak else v.dtype for v in operands]
    return np.result_type(*examples)


class Emitter:
    """Writes op expressions in one dialect (`language`, a CStyleLanguage; C by default) and
    collects what the source must start with (`prelude()`)."""

    def __init__(self, language=None):
        self.language = language or C()
        self.helpers = {}               # name -> definition
        self.declared = {}              # math function -> declaration

    def prelude(self):
        return "\n".join([*self.language.includes, *self.declared.values(), *self.helpers.values(), ""])

    def compare(self, a, symbol, b, dtype):
        """`a symbol b` in `dtype`. On floats `<` and its kin are written quietly (C99's `isless`):
        they raise no 'invalid' flag for a NaN, as numpy's comparisons warn of none, so a flag
        raised in native code means an op made a NaN (runtime/fp_errors.py reports it)."""
        if np.dtype(dtype).kind == "f" and symbol in self.language.quiet_comparisons:
            return f"{self.language.quiet_comparisons[symbol]}({a}, {b})"
        return f"({a} {symbol} {b})"

    def cast(self, value, dtype):
        dtype = np.dtype(dtype)
        if value.dtype == dtype:
            return value.expr
        if dtype == np.bool_:
            return f"({value.expr} != 0)"
        return f"(({c_type(dtype)}){value.expr})"

    def op(self, name, operands, out_dtype):
        """C expression of op `name` over `operands`, giving `out_dtype`."""
        out_dtype = np.dtype(out_dtype)
        c_type(out_dtype)
        for v in operands:
            c_type(v.dtype)
        opdef = find(name)
        rule = self.rule(opdef) if opdef is not None else None
        if rule is not None:
            return rule(self, operands, out_dtype)
        if opdef is not None and opdef.expansion is not None:
            return self._expanded(opdef.expansion, operands[0], out_dtype)
        raise Unsupported(name)

    def rule(self, opdef):
        """The C rule of `opdef` in this emitter's dialect (None: none)."""
        respelled = self.language.code_for_op.get(opdef.ufunc or opdef.primitive)
        return respelled if respelled is not None else rule_for(opdef)

    def _expanded(self, steps, x, out_dtype):
        """A composite op's steps (numpy ufuncs over x and the running value y) as one expression."""
        y = None
        for ufunc, args in steps:
            values = [x if a == "x" else y if a == "y" else Value(literal(a, out_dtype), out_dtype, True)
                      for a in args]
            y = Value(self.op(_op_of_ufunc(ufunc), values, out_dtype), out_dtype, False)
        return y.expr

    def math_function(self, name, dtype):
        fn = self.language.math_function(name, dtype)
        if fn not in self.declared:
            declaration = self.language.math_declaration(name, dtype)
            if declaration:
                self.declared[fn] = declaration
        return fn

    def int_division(self, which, dtype):
        """Helper for numpy's integer // ("floordiv") or % ("mod"): floor rounding, 0 for a zero divisor,
        which raises 'divide' as numpy's warns (and MIN // -1 'over'), where the dialect raises flags."""
        t = c_type(dtype)
        fn = f"ag_{which}_{t}"
        if fn in self.helpers:
            return fn
        if self.language.flag_raisers:
            self.helpers.setdefault("ag_raise", self.language.flag_raisers)
        zero = f"if (b == 0) {{ {self.language.raise_flag('DIVIDE')} return 0; }}"
        if dtype.kind == "u":
            body = f"{zero}\n    return a {'/' if which == 'floordiv' else '%'} b;"
        elif which == "floordiv":
            # b == -1 is negation (MIN // -1 wraps to MIN, as in numpy), never a trap
            body = (f"{zero}\n    if (b == -1) {{ if (a == {least(dtype)}) {{ {self.language.raise_flag('OVERFLOW')} }} "
                    f"return ({t})(0 - (u{t})a); }}\n"
                    f"    {t} q = a / b;\n    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;")
        else:
            body = (f"{zero}\n    if (b == -1) return 0;\n    {t} r = a % b;\n"
                    f"    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;")
        self.helpers[fn] = f"{self.language.helper_prefix} {t} {fn}({t} a, {t} b) {{\n    {body}\n}}"
        return fn


def least(dtype):
    """A C expression of signed integer `dtype`'s least value (INT64_MIN has no literal)."""
    return "INT64_MIN" if dtype == np.int64 else literal(np.iinfo(dtype).min, dtype)


def _op_of_ufunc(ufunc):
    name = next((o.name for o in REGISTRY.values() if o.ufunc == ufunc and rule_for(o) is not None), None)
    if name is None:
        raise Unsupported(f"numpy's {ufunc}")
    return name


# --- rules: each op's C form (the table, `BY_COMPUTATION`, is at the end) ------------------

# How a rule's C meets Python's semantics on Python scalars (native scalar loops), where numpy's
# wrapping and inf are wrong: `exact`, C gives Python's result (ints: once the checks pass);
# `overflow`, (builtin, x, y) templates over the operands: ints checked with
# __builtin_<builtin>_overflow(x, y, &r); `int_guard`, a C test over the operands where Python
# raises or outgrows int64; `float_guard`, "divisor" (x / 0 raises, ints beyond 2**53 round) or
# "finite" (Python raises on overflow, gives a complex for (-x) ** 0.5). Python(): none of these.
Python = collections.namedtuple("Python", "exact overflow int_guard float_guard", defaults=(False, None, None, None))
EXACT = Python(exact=True)


def python_scalars(name):
    """What op `name`'s C form needs to give Python's result on Python scalars (a `Python`)."""
    return getattr(_rule_named(name), "python", Python())


# Where numpy's scalar math (a Python operator on numpy integer scalars: np.int8(100) + np.int8(100))
# warns and its ufunc on arrays wraps silently: `overflow`, (builtin, x, y) templates over the
# operands, the result checked with __builtin_<builtin>_overflow(x, y, &r) in the result's dtype;
# `guard`, per dtype kind a C test over the operands and `{min}`, the dtype's least value
NumpyScalar = collections.namedtuple("NumpyScalar", "overflow guard", defaults=(None, {}))


def numpy_scalar(name):
    """Where op `name` on numpy integer scalars warns (a `NumpyScalar`), or None: it never does."""
    return getattr(_rule_named(name), "numpy_scalar", None)


def no_c(reason):
    """The rule of an op that has no C translation (`reason` says why): the numpy path runs."""
    def rule(emitter, operands, out_dtype):
        raise Unsupported(reason)
    return rule


def numpy_loop_only(name):
    """An op of floats that only numpy's own inner loop computes as numpy does (numpy_loops.py): a
    native region calls that loop; an expression (a fused kernel's, or of other dtypes) has no C."""
    rule = no_c(f"numpy's {name} may round differently from libm's, and its loop takes floats only")
    rule.numpy_loop = True
    return rule


def float_test(name):
    """isnan, isinf, isfinite, signbit of a float: C99's macros, exact; a bool result."""
    def rule(emitter, operands, out_dtype):
        (v,) = operands
        if v.dtype.kind != "f":
            raise Unsupported(f"{name} of {v.dtype}")
        return f"({name}({v.expr}) != 0)"
    return rule


def compare(symbol):
    """`a < b` etc. in the dtype numpy compares in; a bool result."""
    def rule(emitter, operands, out_dtype):
        dtype = compute_dtype(operands)
        if any(v.weak and v.dtype.kind in "iu" for v in operands) and dtype.kind in "iu":
            # numpy 2 compares a Python int with an integer array exactly (`uint8_x < -1` is
            # False): in int64, which holds both (a Python int is carried as int64 here)
            if any(not v.weak and v.dtype == np.uint64 for v in operands):
                raise Unsupported("a Python int compared with uint64")
            dtype = np.dtype(np.int64)
        a, b = (emitter.cast(v, dtype) for v in operands)
        return emitter.compare(a, symbol, b, dtype)
    rule.comparison, rule.python = True, EXACT
    return rule


def logical(template):
    """A logical op: `template` ("({0} && {1})") over the operands' truth values."""
    def rule(emitter, operands, out_dtype):
        return template.format(*(emitter.cast(v, np.bool_) for v in operands))
    return rule


def select(emitter, operands, out_dtype):
    """where(c, x, y)."""
    c, x, y = emitter.cast(operands[0], np.bool_), *(emitter.cast(v, out_dtype) for v in operands[1:])
    return f"({c} ? {x} : {y})"


select.python = EXACT


def cast(emitter, operands, out_dtype):
    if operands[0].dtype.kind == "f" and out_dtype.kind in "iu":
        raise Unsupported("float to integer casts")  # out-of-range values are undefined in C
    return emitter.cast(operands[0], out_dtype)


cast.python = EXACT


def arithmetic(template, floats_only=False, python=Python()):
    """An arithmetic op: `template` ("({0} + {1})") over the operands cast to the result's dtype;
    not on booleans, and with `floats_only` not on integers."""
    def rule(emitter, operands, out_dtype):
        a = _arithmetic_operands(emitter, operands, out_dtype, floats_only)
        return template.format(*a)
    rule.python = python
    return rule


def infix(symbol):
    """`a + b`, `a - b`, `a * b`: wrapping on integers (the source is compiled with -fwrapv)."""
    builtin = {"+": "add", "-": "sub", "*": "mul"}[symbol]
    rule = arithmetic(f"({{0}} {symbol} {{1}})", python=Python(exact=True, overflow=(builtin, "{0}", "{1}")))
    rule.numpy_scalar = NumpyScalar(overflow=(builtin, "{0}", "{1}"))
    return rule


def libm(name, python=Python()):
    """A libm function of float operands (`tanh`, `pow`, ...). Except for `sqrt` (correctly
    rounded everywhere) numpy computes these with its own code, which rounds some results
    differently: `rule.numpy_loop` tells a renderer to call numpy's inner loop instead."""
    def rule(emitter, operands, out_dtype):
        a = _arithmetic_operands(emitter, operands, out_dtype, floats_only=True)
        return f"{emitter.math_function(name, out_dtype)}({', '.join(a)})"
    rule.python = python
    rule.numpy_loop = name not in _CORRECTLY_ROUNDED
    return rule


# libm functions whose result is exact or correctly rounded (as numpy's): C may compute them itself
_CORRECTLY_ROUNDED = {"sqrt", "floor", "ceil", "trunc", "rint", "fabs", "copysign"}


def needs_numpy_loop(name):
    """True if op `name` (or a step of its expansion) must be computed by numpy's own loop
    for results equal to numpy's (see numpy_loops.py)."""
    opdef = find(name)
    if opdef is None:
        return False
    if rule_for(opdef) is not None:
        return getattr(rule_for(opdef), "numpy_loop", False)
    return opdef.expansion is not None and any(needs_numpy_loop(_op_of_ufunc(u)) for u, _ in opdef.expansion)


def extremum(test):
    """maximum (`test` ">") or minimum ("<"): NaN propagates, and of two equal values (-0.0 and
    0.0) the second is the result, as numpy's."""
    def rule(emitter, operands, out_dtype):
        x, y = _arithmetic_operands(emitter, operands, out_dtype)
        nan = f" || {x} != {x}" if out_dtype.kind == "f" else ""
        return f"(({emitter.compare(x, test, y, out_dtype)}{nan}) ? {x} : {y})"
    rule.python = EXACT
    return rule


def absolute(emitter, operands, out_dtype):
    (a,) = _arithmetic_operands(emitter, operands, out_dtype)
    return f"{emitter.math_function('fabs', out_dtype)}({a})" if out_dtype.kind == "f" else f"({a} < 0 ? -{a} : {a})"


absolute.python = Python(exact=True, int_guard="{0} == INT64_MIN")  # abs(MIN) outgrows int64
absolute.numpy_scalar = NumpyScalar(guard={"i": "{0} == {min}"})


def floor_division(which):
    """numpy's integer // (`which` "floordiv") or % ("mod"): floor rounding, 0 for a zero divisor."""
    def rule(emitter, operands, out_dtype):
        a = _arithmetic_operands(emitter, operands, out_dtype)
        if out_dtype.kind not in "iu":
            raise Unsupported(f"{which} on {out_dtype}")
        return f"{emitter.int_division(which, out_dtype)}({a[0]}, {a[1]})"
    # Python raises ZeroDivisionError; MIN // -1 outgrows int64
    rule.python = Python(int_guard="{1} == 0" + (" || ({1} == -1 && {0} == INT64_MIN)" if which == "floordiv" else ""))
    rule.numpy_scalar = NumpyScalar(guard={"u": "{1} == 0", "i": "{1} == 0" + (
        " || ({1} == -1 && {0} == {min})" if which == "floordiv" else "")})
    return rule


def _arithmetic_operands(emitter, operands, out_dtype, floats_only=False):
    if out_dtype == np.bool_:
        raise Unsupported("arithmetic on booleans")
    if floats_only and out_dtype.kind != "f":
        raise Unsupported(f"a float-only op on {out_dtype}")
    return [emitter.cast(v, out_dtype) for v in operands]


def bitwise(symbol):
    """`a & b`, `a | b`, `a ^ b`, `~a` on integers and bools (`~` of a bool is `!`), as numpy's."""
    def rule(emitter, operands, out_dtype):
        if out_dtype.kind not in "biu":
            raise Unsupported(f"bitwise {symbol} on {out_dtype}")
        a = [emitter.cast(v, out_dtype) for v in operands]
        if symbol == "~":
            return f"(!{a[0]})" if out_dtype == np.bool_ else f"(({c_type(out_dtype)})~{a[0]})"
        return f"(({c_type(out_dtype)})({a[0]} {symbol} {a[1]}))"
    rule.python = EXACT
    return rule


def shift(symbol):
    """numpy's `a << b` and `a >> b`: a shift by the width or more (or a negative one) gives 0, or
    -1 for a negative `a` shifted right, where C's is undefined; a left shift wraps as numpy's."""
    def rule(emitter, operands, out_dtype):
        if out_dtype.kind not in "iu":
            raise Unsupported(f"shift {symbol} on {out_dtype}")
        a, b = (emitter.cast(v, out_dtype) for v in operands)
        t, bits = c_type(out_dtype), out_dtype.itemsize * 8
        if symbol == "<<":
            unsigned = c_type(np.dtype(f"u{out_dtype.itemsize}"))
            return f"((unsigned long long)({b}) < {bits} ? ({t})(({unsigned}){a} << {b}) : ({t})0)"
        beyond = f"({a} < 0 ? ({t})-1 : ({t})0)" if out_dtype.kind == "i" else f"({t})0"
        return f"((unsigned long long)({b}) < {bits} ? ({t})({a} >> {b}) : {beyond})"
    # Python raises for a negative count; its << outgrows int64 where bits are shifted out
    rule.python = Python(exact=True, int_guard="{1} < 0" + (
        " || {1} > 62 || ((int64_t)((uint64_t)({0}) << {1}) >> {1}) != {0}" if symbol == "<<" else ""))
    return rule


def is_comparison(name):
    """True if op `name`'s C form is a comparison (scalar loops check int/float mixes for it)."""
    return getattr(_rule_named(name), "comparison", False)


def _rule_named(name):
    opdef = find(name)
    return rule_for(opdef) if opdef is not None else None


def _with_numpy_scalar(rule, numpy_scalar):
    rule.numpy_scalar = numpy_scalar
    return rule


# --- the table ------------------------------------------------------------------------------

# an op's own rule (an op the facts below do not cover: a test's, a user's), keyed by OpDef
RULES = {}

# the C form of what an op computes, keyed by its `ufunc` or `primitive` fact: an elementwise op
# with one of these facts is written as C with no entry of its own
BY_COMPUTATION = {
    "add": infix("+"),
    "subtract": infix("-"),
    "multiply": infix("*"),
    "divide": arithmetic("({0} / {1})", floats_only=True, python=Python(float_guard="divisor")),
    "floor_divide": floor_division("floordiv"),
    "remainder": floor_division("mod"),
    "power": libm("pow", python=Python(float_guard="finite")),
    "maximum": extremum(">"),
    "minimum": extremum("<"),
    "equal": compare("=="),
    "not_equal": compare("!="),
    "less": compare("<"),
    "less_equal": compare("<="),
    "greater": compare(">"),
    "greater_equal": compare(">="),
    "logical_and": logical("({0} && {1})"),
    "logical_or": logical("({0} || {1})"),
    "negative": _with_numpy_scalar(arithmetic("(-{0})", python=Python(exact=True, overflow=("sub", "0", "{0}"))),
                                   NumpyScalar(overflow=("sub", "0", "{0}"))),  # -MIN, and -u of unsigned u > 0
    "tanh": libm("tanh"),
    "exp": libm("exp"),
    "log": libm("log"),
    "sqrt": libm("sqrt"),
    "square": arithmetic("({0} * {0})", python=Python(overflow=("mul", "{0}", "{0}"), float_guard="finite")),
    "absolute": absolute,
    **{name: libm(name) for name in ("floor", "ceil", "trunc", "rint", "fabs", "copysign")},
    # numpy computes these with its own code (SIMD, or its npymath), which libm's may round
    # differently: a native region calls numpy's inner loop for them (as for tanh), a fused kernel
    # (libm only) leaves them to numpy
    **{name: numpy_loop_only(name) for name in (
        "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh",
        "exp2", "expm1", "log2", "log10", "log1p", "cbrt", "deg2rad", "rad2deg", "arctan2", "hypot",
        "logaddexp", "fmod", "reciprocal", "sign", "fmax", "fmin", "heaviside")},
    **{name: float_test(name) for name in ("isnan", "isinf", "isfinite", "signbit")},
    **{name: bitwise(symbol) for name, symbol in (("bitwise_and", "&"), ("bitwise_or", "|"),
                                                    ("bitwise_xor", "^"), ("invert", "~"))},
    "logical_xor": logical("({0} != {1})"),
    "left_shift": shift("<<"),
    "right_shift": shift(">>"),
    # numpy's own code for these
    **{name: no_c(f"{name} is not written in C yet") for name in (
        "bitwise_count", "spacing", "conjugate", "positive", "logaddexp2",
        "float_power", "ldexp", "nextafter", "gcd", "lcm")},
    "logical_not": logical("(!{0})"),
    "not": logical("(!{0})"),      # Python's `not` of a 0-d value
    "where": select,
    "astype": cast,
    "identity": cast,  # a copy: the same values (to the same dtype)
}


def rule_for(opdef):
    """The C rule of `opdef` (rule(emitter, operands, out_dtype) -> C expression), or None: no C
    form, or C from its `expansion`."""
    rule = RULES.get(opdef)
    if rule is None:
        rule = BY_COMPUTATION.get(opdef.ufunc or opdef.primitive)
    return rule
