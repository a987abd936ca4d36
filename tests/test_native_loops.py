"""While loops over scalars run as C once hot: the eager run is the oracle, before and
after the tier-up, including integer wrap-around and nested control flow."""
import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.runtime.native import compiler, loops as scalar_loop, render
from examples.models import bisection, collatz
from helpers import assert_identical, assert_same, force_native, native_regions, same_every_call

pytestmark = pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")


@pytest.fixture(autouse=True)
def native_on(monkeypatch):
    force_native(monkeypatch)


def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a


def fib(n):
    a, b = 0, 1
    i = 0
    while i < n:
        a, b = b, a + b
        i += 1
    return a


def newton_sqrt(x):
    guess = x / 2 + 1
    while abs(guess * guess - x) > 1e-6 * x:
        guess = 0.5 * (guess + x / guess)
    return guess


def wraps(x):
    steps = 0
    while x > 0:  # int32 overflow ends the loop, as in numpy
        x = x * 3 + 1
        steps += 1
    return x, steps


def nested(n):
    total = 0
    i = 0
    while i < n:
        j = 0
        while j < i:
            if (i + j) % 3 == 0:
                total += i * j
            else:
                total -= 1
            j += 1
        i += 1
    return total


def flags(x, limit):
    done = False
    count = 0
    while not done:
        x = ag.where(x > 1.0, x * 0.5, x + 0.25)
        count += 1
        done = (count >= limit) or (x == 1.0)
    return x, count, done


def mixed(x, k):
    acc = 0.0
    i = 0
    while i < k:
        acc = acc + ag.tanh(x) * 0.5 + ag.cast(i, np.float32)
        x = ag.maximum(x - 0.1, -1.0)
        i += 1
    return acc, x


CASES = [
    (collatz, (np.int32(27),)), (collatz, (np.int32(97),)),
    (gcd, (np.int64(1071), np.int64(462))), (gcd, (np.int32(-48), np.int32(18))),
    (fib, (np.int64(90),)),
    (newton_sqrt, (np.float64(2.0),)), (newton_sqrt, (np.float32(10.0),)),
    (wraps, (np.int32(1),)), (wraps, (np.int8(1),)),
    (nested, (np.int32(12),)),
    (flags, (np.float32(7.0), np.int32(50))),
    (mixed, (np.float32(0.3), np.int32(7))),
]


@pytest.mark.parametrize("fn, args", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_scalar_loops_tier_up_to_c_and_match_eager(fn, args):
    with np.errstate(over="ignore"):
        eager = fn(*args)
        compiled = ag.function(fn)
        results = [compiled(*args) for _ in range(scalar_loop.TIER_UP_AFTER + 1)]
    [loop, *_] = compiled.get_concrete_function(*args).plan.native_loops
    assert loop.fn, "the C loop was not built"
    for result in results:  # Python loop before the tier-up, C after: the same values
        assert_same(eager, result)


def test_the_python_loop_runs_until_the_loop_is_hot(monkeypatch):
    monkeypatch.delenv("AG_NATIVE", raising=False)  # the tiers, not the test mode that skips them
    f = ag.function(collatz)
    n = np.int32(27)
    f(n)
    [loop] = f.get_concrete_function(n).plan.native_loops
    for _ in range(scalar_loop.TIER_UP_AFTER - 1):
        assert loop.fn is None
        f(n)
    assert loop.fn


def _halve(x):
    while ag.reduce_sum(x) > 1:
        x = x / 2
    return x


def test_loops_over_large_arrays_keep_them_in_the_heap_block():
    # arrays beyond what a C function's locals hold (NPBench's jacobi_1d, vadv) live in its
    # `ag_scratch` block, the same room on every iteration
    f = ag.function(_halve)
    x = np.ones(1 << 15)
    for _ in range(scalar_loop.TIER_UP_AFTER + 1):
        assert_same(_halve(x), f(x))
    assert len(f.get_concrete_function(x).plan.native_loops) == 1


def test_loops_over_arrays_beyond_the_heap_block_stay_python(monkeypatch):
    monkeypatch.setattr(render, "MAX_SCRATCH_BYTES", 1 << 16)
    f = ag.function(_halve)
    x = np.ones(1 << 15)
    for _ in range(scalar_loop.TIER_UP_AFTER + 1):
        assert_same(_halve(x), f(x))
    assert f.get_concrete_function(x).plan.native_loops == []


def test_native_loops_off(monkeypatch):
    monkeypatch.setenv("AG_NATIVE_KERNELS", "0")
    f = ag.function(collatz)
    n = np.int32(27)
    for _ in range(scalar_loop.TIER_UP_AFTER + 1):
        assert f(n) == 111
    assert f.get_concrete_function(n).plan.native_loops == []


# --- exactness: a result never depends on how often the function ran (issue 11, item 13) --------

def powers(k):
    acc = 1
    i = 0
    while i < k:
        acc = acc * 3   # a Python int: exact beyond int64
        i += 1
    return acc


def negate_min(k):
    x = -(2 ** 62)
    i = 0
    while i < k:
        x = x * 2 - 1 if x > -(2 ** 63) + 1 else -x   # reaches -2**63 - 1, then abs overflow
        i += 1
    return x


def float_power(x, k):
    y = 1.5
    i = 0
    while i < k:
        y = y ** x   # Python raises OverflowError where C gives inf
        i += 1
    return y


def divide(d, k):
    x, y = 7, 1.5
    i = 0
    while i < k:
        x = x % d + x // d
        y = y / d
        i += 1
    return x, y


def big_ratio(k):
    a = 2 ** 60 + 1
    r = 0.0
    i = 0
    while i < k:
        r = a / 3   # int / int is correctly rounded in Python beyond 2**53
        i += 1
    return r


def int_float_compare(k):
    a = 2 ** 53
    count = 0
    i = 0
    while i < k:
        a = a + 1
        if a > 2.0 ** 53:   # exact in Python; a double comparison says False
            count += 1
        i += 1
    return count


def sum_mod(n):
    acc = 0
    i = 0
    while i < n:
        acc = (acc + i * i) % 1000003
        i += 1
    return acc


def outcome(fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # the same exception type and message on every call
        return type(e), str(e)


EXACT_CASES = [
    (powers, (np.int32(50),)), (powers, (np.int32(30),)),
    (negate_min, (np.int32(3),)),
    (float_power, (3.0, np.int32(10)),), (float_power, (0.5, np.int32(10))),
    (divide, (3, np.int32(4))), (divide, (0, np.int32(2))), (divide, (-2, np.int32(5))),
    (big_ratio, (np.int32(2),)), (int_float_compare, (np.int32(3),)),
]


@pytest.mark.parametrize("fn, args", EXACT_CASES, ids=lambda v: getattr(v, "__name__", None))
def test_python_scalars_stay_exact_after_the_tier_up(fn, args):
    expected = outcome(fn, *args)
    compiled = ag.function(fn)
    for _ in range(scalar_loop.TIER_UP_AFTER + 2):
        got = outcome(compiled, *args)
        assert got == expected and type(got) is type(expected)   # exact Python ints, no wrap
        if type(got) is tuple:
            assert [type(v) for v in got] == [type(v) for v in expected]


def test_an_exact_result_needs_no_python_fallback():
    f = ag.function(powers)
    for _ in range(scalar_loop.TIER_UP_AFTER):
        assert f(np.int32(20)) == 3 ** 20
    [loop] = f.get_concrete_function(np.int32(20)).plan.native_loops
    assert loop.fn and loop(1, 0, 20) == (3 ** 20, 20)      # C finished it exactly
    assert loop(1, 0, 50) is None                            # C stops: the Python loop runs


@pytest.mark.parametrize("fn, n", [(sum_mod, np.int64(3 * scalar_loop.BUDGET + 5)), (nested, np.int32(800))])
def test_a_loop_longer_than_the_budget_resumes_where_it_paused(fn, n):
    expected = fn(n)
    f = ag.function(fn)
    results = [f(n) for _ in range(scalar_loop.TIER_UP_AFTER + 1)]
    [loop, *_] = f.get_concrete_function(n).plan.native_loops
    assert loop.fn
    assert all(r == expected and type(r) is type(expected) for r in results)


def test_a_failed_build_keeps_every_call_on_the_python_loop(monkeypatch):
    monkeypatch.setattr(compiler, "load_functions", lambda source, symbols, **flags: None)
    f = ag.function(collatz)
    n = np.int32(27)
    for _ in range(scalar_loop.TIER_UP_AFTER + 3):
        assert f(n) == 111
    [loop] = f.get_concrete_function(n).plan.native_loops
    assert loop.fn is False


def test_a_loop_over_ag_range_with_its_item_boxed_stays_native():
    # the boxes work made an ag.range item a numpy scalar (a Cast, then x[()]); the C renderer must
    # still write the loop (W2 fell back to numpy and ran 2x slower)
    def f(x, n):
        acc = x
        for i in ag.range(n):
            acc = acc * 0.5 + ag.cast(i, acc.dtype)
        return acc

    compiled = ag.function(f)
    args = (np.ones(3), np.int64(5))
    for _ in range(4):
        np.testing.assert_array_equal(f(*args), compiled(*args))
    assert "native C" in str(compiled.concrete_functions[0].plan.native)


def test_a_complex_constant_leaves_its_region_to_numpy():
    # NPBench mandelbrot1: the C renderer called int() on a complex constant and crashed the call
    def f(x):
        c = np.array([0.1 + 0.2j, -0.3j, 0.25 + 0.0j])
        return (x * c) * (x * c)

    compiled = ag.function(f)
    args = (np.ones(3),)
    for _ in range(4):
        np.testing.assert_array_equal(f(*args), compiled(*args))


UFUNCS_BY_NUMPY_LOOP = ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arctanh",
                        "exp2", "expm1", "log2", "log10", "log1p", "cbrt", "deg2rad", "rad2deg", "reciprocal",
                        "sign"]
BINARY_BY_NUMPY_LOOP = ["arctan2", "hypot", "logaddexp", "fmod", "fmax", "fmin", "heaviside"]


def _unary_loop(name):
    def loop(x, k):
        i = 0
        acc = x * 0.0
        while i < k:
            acc = acc + getattr(np, name)(x * 0.25 + np.float32(i) * 0.125)
            i += 1
        return acc, np.isnan(acc), np.isfinite(x * 1e38), np.signbit(-x), np.isinf(acc * 1e308)
    return loop


def _binary_loop(name):
    def loop(x, k):
        i = 0
        acc = x * 0.0
        while i < k:
            acc = acc + getattr(np, name)(x + np.float32(i) * 0.5, x * 0.5 - 0.25)
            i += 1
        return acc
    return loop


@pytest.mark.parametrize("name", UFUNCS_BY_NUMPY_LOOP + BINARY_BY_NUMPY_LOOP)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_math_ufuncs_in_a_c_loop_call_numpy_own_loops(name, dtype):
    """numpy's math ufuncs in a native loop call numpy's inner loop: bit for bit numpy's (libm's
    sin may round differently); isnan/isfinite/signbit/isinf are C's exact tests."""
    fn = (_unary_loop if name in UFUNCS_BY_NUMPY_LOOP else _binary_loop)(name)
    args = (np.array([0.3, -0.7, 1.5, 0.0], dtype), np.int32(5))
    with np.errstate(all="ignore"):
        eager = fn(*args)
        compiled = ag.function(fn)
        results = [compiled(*args) for _ in range(scalar_loop.TIER_UP_AFTER + 1)]
    [loop, *_] = compiled.get_concrete_function(*args).plan.native_loops
    assert loop.fn, "the C loop was not built"
    for result in results:
        assert_same(eager, result)


# --- loop variables eager holds as a Python float on one path, a numpy float64 on another ------

def bisect(c):
    lo, hi = 0.0, c  # lo a Python float until the else branch first runs
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        if mid * mid - c > 0:
            hi = mid
        else:
            lo = mid
    return lo, hi


def made_numpy_late(a, n):
    y, z = 1.0, 1.0  # y is a Python float after one iteration (z was one), np.float64 after two
    i = 0
    while i < n:
        y = y * 2.0 + z
        z = z * a
        i += 1
    return y, z


def made_python_again(a, n):
    x = a
    i = 0
    while i < n:
        if i == 2:
            x = 0.5  # a Python float again
        else:
            x = x * a
        i += 1
    return x


def reset_every(a, n, period):
    x = 0.0
    i = 0
    while i < n:
        if i % period == 0:
            x = 0.0
        else:
            x = x + a
        i += 1
    return x


def tracked_loop(compiled, *args):
    (region,) = [r for r in compiled.get_concrete_function(*args).plan.native if r.native is not None]
    return region.native


@pytest.mark.parametrize("fn, calls", [
    (bisect, [(np.float64(2.0),), (np.float64(0.0),), (np.float64(1e-30),), (np.float64(7.0),)]),
    (made_numpy_late, [(np.float64(3.0), np.int64(n)) for n in (0, 1, 2, 5)]),
    (made_python_again, [(np.float64(3.0), np.int64(n)) for n in (0, 1, 3, 4)]),
    (reset_every, [(np.float64(0.25), np.int64(n), np.int64(4)) for n in (0, 1, 4, 5, 9)]),
])
@pytest.mark.parametrize("way_in", ["entry", "ctypes"])
def test_a_loop_variable_boxed_by_its_path_runs_as_c_and_keeps_eagers_box(fn, calls, way_in):
    """Each was a silent difference (np.float64 where eager holds a Python float) or a loop left to
    numpy: the C carries a flag per such variable (loops.tracked_boxes) and boxes by it."""
    compiled = ag.function(fn)
    for _ in range(scalar_loop.TIER_UP_AFTER + 1):
        compiled(*calls[0])
    loop = tracked_loop(compiled, *calls[0])
    assert loop.fn and loop.tracked
    if way_in == "ctypes":
        loop.call = loop._python_call
    for args in calls:
        assert_identical(fn(*args), compiled(*args))


def set_once(a, n, k):
    x = 0.0
    i = 0
    while i < n:
        if i == k:
            x = x + a  # np.float64 from iteration k on, passed through unchanged after it
        i += 1
    return x


def test_the_boxes_survive_a_pause(monkeypatch):
    """A loop that spends its budget PAUSEs and is called again: the boxes' flags are kept in the
    state cell across the calls (a tiny budget makes every call pause many times)."""
    monkeypatch.setattr(scalar_loop, "BUDGET", 16)
    compiled = ag.function(set_once)
    for n, k in [(200, 3), (200, 199), (200, 500), (0, 0), (1, 0)]:
        args = (np.float64(0.5), np.int64(n), np.int64(k))
        for _ in range(scalar_loop.TIER_UP_AFTER + 1):
            assert_identical(set_once(*args), compiled(*args))
    assert tracked_loop(compiled, *args).fn


def divide(a, n, switch):
    x = 1.0
    i = 0
    while i < n:
        if i == switch:
            x = x * a
        x = x / (i - 2)  # by zero at i == 2: Python raises on a Python float, numpy warns on np.float64
        i += 1
    return x


@pytest.mark.parametrize("switch", [1, 3])
def test_python_floats_raise_where_eager_raises_and_numpy_floats_warn(switch):
    args = (np.float64(3.0), np.int64(4), np.int64(switch))
    compiled = ag.function(divide)
    for _ in range(scalar_loop.TIER_UP_AFTER + 1):
        if switch == 3:
            with pytest.raises(ZeroDivisionError):
                divide(*args)
            with pytest.raises(ZeroDivisionError):
                compiled(*args)
        else:
            with pytest.warns(RuntimeWarning, match="divide by zero"):
                eager = divide(*args)
            with pytest.warns(RuntimeWarning, match="divide by zero"):
                assert_identical(eager, compiled(*args))
    assert tracked_loop(compiled, *args).fn


# --- 0-d arrays a loop may give back as they came (eager: `out is arg`) ---------------------------

def last_only(x, n):
    i = 0
    while i < n:
        if i == n - 1:
            x = x * 2.0  # a numpy float64 from the last iteration on; the argument before it
        i += 1
    return x


def back_to_other(x, y, n):
    z = x
    i = 0
    while i < n:
        if i % 2 == 0:
            z = z + 1.0
        else:
            z = y  # another argument's object
        i += 1
    return z


def swap(a, b, n):
    i = 0
    while i < n:
        a, b = b, a
        i += 1
    return a, b


def assert_eager_identity(eager, compiled, args, arrays_only=False):
    """assert_identical, and each result is the same argument object as eager's, or none
    (`arrays_only`: of the array arguments)."""
    assert_identical(eager, compiled)
    args = [a for a in args if type(a) is np.ndarray or not arrays_only]
    for e, c in zip(eager if isinstance(eager, tuple) else (eager,), compiled if isinstance(compiled, tuple) else (compiled,)):
        assert [e is a for a in args] == [c is a for a in args]


ZERO_D_CASES = [
    (bisection, [(np.array(2.0), np.array(3.0)),  # lo reassigned on some iterations
                 (np.array(3.0), np.array(4.0)),  # lo never: the argument itself
                 (np.array(2.0), np.array(2.0)),  # the body never runs
                 (np.float64(3.0), np.array(4.0)), (np.array(1.0), np.float64(4.0))]),
    (last_only, [(np.array(1.5), np.int64(n)) for n in (0, 1, 2, 5)] + [(np.float64(1.5), np.int64(3))]),
    (back_to_other, [(np.array(1.5), np.array(-2.0), np.int64(n)) for n in (0, 1, 2, 3, 4)]),
    (swap, [(np.array(1.5), np.array(-2.0), np.int64(n)) for n in (0, 1, 2, 3)]
     + [(np.array(1.5), np.float64(-2.0), np.int64(3))]),
]


def through_the_plan(compiled, args, way_in):
    """The loop of `compiled`'s trace for `args`, its calls recorded in the list returned. `way_in`:
    "direct", the plan's C Direct (entry.c; the plan's Python frame, and so loop.call, runs only
    where the C did not finish cleanly), else the plan's Python frame calling the loop's Entry
    ("entry") or its ctypes spelling ("ctypes")."""
    concrete, loop, ran = compiled.get_concrete_function(*args), tracked_loop(compiled, *args), []
    if way_in == "direct":
        assert type(concrete.plan.direct).__name__ == "Direct" and concrete.plan.direct.bound
        assert concrete._single_plain in (None, concrete.plan.direct)
    else:
        concrete._single_plain = concrete.plan.fn if concrete._single_plain is not None else None
        concrete.plan.direct = None
    call = loop._python_call if way_in == "ctypes" else loop.call
    loop.call = lambda *args: ran.append(call(*args)) or ran[-1]
    return loop, ran


@pytest.mark.parametrize("fn, calls", ZERO_D_CASES, ids=lambda v: getattr(v, "__name__", None))
@pytest.mark.parametrize("way_in", ["direct", "entry", "ctypes"])
def test_a_0d_array_a_loop_may_pass_on_runs_as_c_and_comes_back_itself(fn, calls, way_in):
    """A 0-d array argument a loop variable holds until a branch reassigns it ran the loop in Python
    (the C boxed it as a numpy scalar): the C tracks which argument each such variable holds
    (loops.passed_on) and the entry gives that object back."""
    compiled = ag.function(fn)
    for _ in range(scalar_loop.TIER_UP_AFTER + 1):
        compiled(*calls[0])
    loop, ran = through_the_plan(compiled, calls[0], way_in)
    assert loop.fn and loop.origins and not loop.scalar_inputs
    for args in calls:
        del ran[:]
        assert_eager_identity(fn(*args), compiled(*args), args)
        if list(map(type, args)) != list(map(type, calls[0])):
            continue  # a numpy scalar where calls[0] has a 0-d array: a trace of its own (trace_cache._scalar_leaves)
        if way_in == "direct":
            assert ran == []  # finished in C, without the plan's frame
        else:
            assert ran and all(r is not None for r in ran)  # the C ran: None is the Python loop's turn


def test_the_origins_survive_a_pause(monkeypatch):
    monkeypatch.setattr(scalar_loop, "BUDGET", 16)
    compiled = ag.function(back_to_other)
    for n in (0, 1, 200, 201):
        args = (np.array(1.5), np.array(-2.0), np.int64(n))
        for _ in range(scalar_loop.TIER_UP_AFTER + 1):
            assert_eager_identity(back_to_other(*args), compiled(*args), args)
    assert tracked_loop(compiled, *args).origins


def nested_pass(x, n):
    i = 0
    while i < n:
        j = i * 0  # a tensor: the inner loop is a While too
        while j < 2:
            if j == n + 5:
                x = x + 1.0
            j += 1
        i += 1
    return x


def test_a_nested_loop_passing_on_an_argument_keeps_0d_arrays_on_the_python_loop():
    """A nested loop does not track which argument it holds: the loop renders without origins and
    a 0-d array argument runs the Python loop, as before (a numpy scalar still runs as C, given
    back as an equal numpy scalar, not the same object: left as it was)."""
    compiled = ag.function(nested_pass)
    for args in [(np.float64(1.5), np.int64(3)), (np.array(1.5), np.int64(3))]:
        for _ in range(scalar_loop.TIER_UP_AFTER + 1):
            assert_eager_identity(nested_pass(*args), compiled(*args), args, arrays_only=True)
    outer, inner = [r.native for r in compiled.get_concrete_function(*args).plan.native]  # the inner: run by the Python loop
    assert outer.fn and not outer.origins and outer.scalar_inputs
    assert inner.fn and inner.origins and not inner.scalar_inputs


def _elementwise_in_place_cases(x, y, n):
    """Loops whose elementwise results may be computed in an operand's buffer, and the hazards
    that forbid it: an operand read again later in the body, read through another view of it,
    or the next value of another variable."""
    a, b, c, d = x, y, x * 0.5, y * 2.0
    for i in ag.range(n):
        a = np.where(a > 0.5, a, a * 0.25 + 1.0)  # into a's buffer: no copy back
        b, c = c, b + c                             # b + c is c's next value, b takes old c
        shifted = d * 1.5                           # d read again below: not into d
        d = np.tanh(d[::-1] - shifted) + d          # d read reversed: another view of its buffer
    return a, b, c, d


def test_elementwise_results_computed_in_an_operands_buffer_equal_eager(monkeypatch):
    # W2b's `state = np.where(i >= seq_len[:, None], state, updated)` is written into state's own
    # buffer (render.Renderer.operand_to_write) where nothing reads the old state after it
    force_native(monkeypatch)
    rng = np.random.default_rng(8)
    x, y = rng.random((6, 5)), rng.random((6, 5))
    _, found = native_regions(_elementwise_in_place_cases, x, y, np.int64(7))
    assert found and all(r.native is not None and r.native.fn for r in found), found


# --- integer ops numpy warns of: x // 0, and numpy scalar math that overflows -------------------

def int_division(x, d):
    return x // d, x % d, x[:1] // np.int8(-1)  # arrays: 'divide by zero', MIN // -1 'overflow'


def scalar_int_ops(s, t):
    return s + t, s - t, s * t, -t, abs(s), s // t, s % t  # numpy scalars: 'overflow encountered in scalar add'...


def wrapping_sum(x):
    s = np.int8(0)
    for i in range(ag.shape(x)[0]):
        s = s + x[i]  # numpy scalars: warns where it wraps
    return s


def divide_items(x, d):
    out = np.zeros(ag.shape(x)[0], np.int8)
    for i in range(ag.shape(x)[0]):
        out[i] = x[i] // d
    return out


@pytest.mark.parametrize("fn, args", [
    (int_division, (np.array([-128, 7], np.int8), np.int8(0))),
    (int_division, (np.array([-128, 7], np.int8), np.int8(3))),
    (scalar_int_ops, (np.int8(100), np.int8(100))),
    (scalar_int_ops, (np.int8(-128), np.int8(0))),
    (scalar_int_ops, (np.uint8(3), np.uint8(5))),
    (scalar_int_ops, (np.int8(5), np.int8(-1))),
    (wrapping_sum, (np.array([100, 27, 1, 5], np.int8),)),
    (wrapping_sum, (np.array([100, 27, 0, 5], np.int8),)),
    (divide_items, (np.array([100, 27, 1, 5], np.int8), np.int8(0))),
    (divide_items, (np.array([100, 27, 1, 5], np.int8), np.int8(2))),
], ids=lambda v: v.__name__ if callable(v) else "")
def test_integer_ops_warn_in_c_as_numpy(fn, args):
    """Where numpy warns of an integer op and C wraps silently (as numpy's ufunc on arrays does), the C
    raises the flag numpy reports ('divide by zero encountered in floor_divide'), or runs the Python
    code, which warns as eager ('overflow encountered in scalar add'): the warnings are eager's."""
    same_every_call(fn, *args)
    assert all(region.native for region in ag.function(fn).get_concrete_function(*args).plan.native)
