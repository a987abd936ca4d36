"""Divergences the differential fuzzer found (tests/fuzz, /work findings F8-F10 and later),
each as a differential test: the eager run is the oracle, on every call (before and after a
scalar loop runs as C, from the third call on)."""
import contextlib
import io
import warnings

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.runtime.native import compiler, loops as scalar_loop
from helpers import TEST_DEVICE, assert_same, check, cpu_only, force_native, on_fresh_arguments, to_host

CALLS = scalar_loop.TIER_UP_AFTER + 2


def outcome(fn, *args):
    """(result or (error type, message), printed text), for comparing runs exactly."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            result = fn(*args)
        except Exception as e:  # the same exception type and message as eager
            result = (type(e), str(e))
    return result, out.getvalue()


def assert_every_call_same(fn, *args, calls=CALLS):
    expected, printed = outcome(fn, *args)
    compiled = ag.function(fn)
    for _ in range(calls):
        got, got_printed = outcome(compiled, *args)
        got = to_host(got)  # on a device, a 0-d result as the numpy scalar numpy gives (a device has none)
        assert got_printed == printed
        if isinstance(expected, tuple) and expected and isinstance(expected[0], type):
            assert got == expected
        elif repr(got) != repr(expected):  # exactly equal (Python scalars stay Python scalars), or:
            assert_same(expected, got)
            assert repr(got) == repr(expected)
    return compiled


# --- F8: the right operand of `and`/`or` runs only when Python would run it -----------

def noisy(n):
    print("called", n)
    return n


def while_and(n):
    w = 0
    while w < 1 and noisy(n) > 0:
        w += 1
    return w


def while_or(n):
    w = 0
    while w < 3 and (w > 0 or noisy(n) > 0):
        w += 1
    return w


def while_tensor_and(n):
    w = 0
    while n > w and noisy(n) > 0:
        w += 1
    return w


def while_tensor_or(n):
    w = 0
    while n < w or noisy(n - w) > 0:
        w += 1
    return w


def while_ternary(n):
    w = 0
    while (noisy(n) > 0 if w < 1 else False):
        w += 1
    return w


def while_tensor_ternary(n):
    w = 0
    while (noisy(n) > w if n > w else n < 0):
        w += 1
    return w


def if_and(n):
    if n > 0 and noisy(n) > 1:
        return 1
    return 0


def if_or(n):
    if n > 0 or noisy(n) > 1:
        return 1
    return 0


def nested_or_and(n):
    k = 0
    while k < 4 and (n > k or (noisy(k) > 2 and k < 3)):
        k += 1
    return k


@pytest.mark.parametrize("fn, n", [
    (while_and, 1), (while_or, 1), (while_tensor_and, 2), (while_tensor_or, 2), (while_ternary, 1),
    (while_tensor_ternary, 3), (if_and, 1), (if_and, -1), (if_or, 1), (if_or, -1),
    (nested_or_and, 1), (nested_or_and, 5),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_short_circuit_prints_as_often_as_eager(fn, n):
    assert_every_call_same(fn, np.array(n, np.int32))


def _raises_when_indexed(k):
    if ag.maximum(k, k):          # a constant: a Python `if`, so tracing runs the failing line
        return [1.5, 2.5][2]
    return k


def _right_sides_that_raise(x, k):
    r = ag.reduce_all(x > 0) and _raises_when_indexed(k)
    t = ag.reduce_any(x > 0) or {}["k"]
    return r, t


@pytest.mark.parametrize("x", [[-1.0, 3.0], [1.0, 3.0], [0.0, -1.0]])
def test_a_right_operand_that_raises_raises_only_when_evaluated(x):
    """Fuzzer seed 1180013153: the right side of a tensor `and`/`or` raised while traced, so the
    compiled function failed on runs where eager never evaluates it; now it fails when it runs."""
    x = np.array(x, np.float32)
    expected = outcome(_right_sides_that_raise, x, 1)[0]
    got = outcome(ag.function(_right_sides_that_raise), x, 1)[0]
    if isinstance(expected, tuple) and isinstance(expected[0], type):
        assert got[0] is expected[0]
    else:
        assert_same(expected, got)
        if TEST_DEVICE == "cpu":  # a device's results are its 0-d arrays: cupy has no scalar type
            assert repr(got) == repr(expected)


# --- F9: a Python int that does not fit the array's dtype (NEP 50) --------------------

def unused_overflow(y):
    v = y[-1]
    unused = ag.cast(ag.maximum(0 - 2, v), np.float32)  # eager: OverflowError here
    return y


def used_overflow(y):
    return y + 300


def overflow_in_taken_branch(y, n):
    r = y
    if n > 0:
        r = y * 256
    return r


def floordiv_unused(y):
    q = y // -1   # fits int8: fine
    r = y % 1000  # does not
    return q


def negative_power_unused(y):
    p = y ** -1   # integers to negative integer powers: ValueError
    return y


def zero_divisor_unused(n):
    w = 0
    i = 0
    while i < n:
        w += 3
        i += 1
    q = w // 0    # Python ints: ZeroDivisionError
    return w


@pytest.mark.parametrize("fn, args", [
    (unused_overflow, (np.array([1, 200], np.uint8),)),
    (used_overflow, (np.array([1, 200], np.uint8),)),
    (overflow_in_taken_branch, (np.array([1, 2], np.uint8), np.array(1))),
    (overflow_in_taken_branch, (np.array([1, 2], np.uint8), np.array(-1))),  # not taken: no error
    (floordiv_unused, (np.array([1, -3], np.int8),)),
    (negative_power_unused, (np.array([1, 2], np.int16),)),
    (zero_divisor_unused, (np.array(2),)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_out_of_range_python_int_fails_as_eager(fn, args):
    assert_every_call_same(fn, *args)


def test_out_of_range_failure_names_the_line():
    with pytest.raises(OverflowError, match="Python integer -2 out of bounds for uint8") as info:
        ag.function(unused_overflow)(np.array([1, 200], np.uint8))
    line = unused_overflow.__code__.co_firstlineno + 2
    assert any(f"test_fuzz_regressions.py:{line}" in note for note in info.value.__notes__)


def compare_out_of_range(u, i8):
    # numpy 2 compares Python ints exactly: no error, and no wrap-around
    return (u < -1, u == -1, u != 300, -1 < u, u >= 2 ** 64, i8 == 1000, i8 > -1000,
            ag.where(u > 0, u, 300), u / 300, ag.logical_and(u, 300))


def test_comparisons_with_out_of_range_python_ints_are_exact():
    assert_every_call_same(compare_out_of_range, np.array([1, 200], np.uint8), np.array([1, -100], np.int8))


def counter_meets_uint8(y, k):
    w = 0
    while w < k:
        w += 100
    return y + w, y < w, y == w, w


@pytest.mark.parametrize("k", [50, 150, 250])
def test_python_int_loop_counter_meets_uint8(k):
    # the counter is a weak tensor: numpy raises when it does not fit, at run time
    assert_every_call_same(counter_meets_uint8, np.array([1, 200], np.uint8), np.array(k))


# --- F10 and friends: unary ops on Python scalars a scalar while loop carries ---------

def f10(x, y, n, s, lst):
    w15 = 0
    while w15 < 3 and ((n - s) * ag.abs(w15)):
        w15 += 1
    return [w15, ag.cast((n < True), np.float32)]


def test_abs_of_a_python_int_in_a_native_while_condition():
    args = (np.ones(2, np.float32), np.array([1, 2], np.uint8), np.array(0, np.int32), 2, [])
    assert_every_call_same(f10, *args)


UNARY = {
    "abs": ag.abs, "negative": ag.negative, "square": ag.square, "sqrt": ag.sqrt, "exp": ag.exp,
    "log": ag.log, "logical_not": ag.logical_not,
    "cast_int32": lambda v: ag.cast(v, np.int32), "cast_float32": lambda v: ag.cast(v, np.float32),
    "cast_uint8": lambda v: ag.cast(v, np.uint8), "cast_bool": lambda v: ag.cast(v, np.bool_),
    "builtin_abs": abs, "minus": lambda v: -v, "not": lambda v: not v,
}


def unary_loop(op):
    def loop(n, s):
        acc = op(s) * 0
        i = 0
        while i < n:
            acc = acc + op(i + s)
            i += 1
        return acc, i
    return loop


@pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")
@pytest.mark.parametrize("s", [2, -3, 0.5, 2.5, 1000, 2 ** 62])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ops_on_python_scalars_in_a_native_loop(name, s, monkeypatch):
    force_native(monkeypatch)
    if (name in ("sqrt", "log") and s < 0) or (name in ("exp", "square") and s > 100):
        pytest.skip("a floating-point warning at trace time")
    fn = unary_loop(UNARY[name])
    n = np.array(4, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no floating-point warning on either side
        compiled = assert_every_call_same(fn, n, s)
    if not (name.startswith("cast_") and isinstance(s, float) and name != "cast_float32"):
        [loop] = compiled.get_concrete_function(n, s).plan.native_loops
        assert loop.fn, f"the C loop was not built: {loop.text}"


def weak_unary_results(x, k):
    w = 3
    i = 0
    while i < k:
        i += 1
        w = w + 0
    # Python's abs/-/not of a Python int are Python ints (weak); ag's ufuncs give numpy scalars
    return x + abs(w), x + ag.abs(w), x + ag.sqrt(w), x + ag.maximum(w, 1), x + (not w), x + ag.square(w)


def test_weakness_of_unary_results_follows_eager():
    assert_every_call_same(weak_unary_results, np.ones(2, np.float32), np.array(2))


# --- Python ints known only at run time meeting small integer dtypes, in C paths too ---

def counter_into_uint8_scalar(x, n):
    i = 0
    acc = x
    while i < n:
        acc = acc + i     # i reaches 300: eager OverflowError, C would wrap
        i += 100
    return acc, i


def counter_compared_with_small_ints(x, n):
    i = 0
    c = 0
    while i < n:
        if x < i:          # exact, as numpy compares a Python int: no wrap to the small dtype
            c += 1
        if x > i - 250:
            c += 10
        i += 100
    return c, i


@pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")
@pytest.mark.parametrize("fn, x, n", [
    (counter_into_uint8_scalar, np.uint8(1), 250), (counter_into_uint8_scalar, np.uint8(1), 500),
    (counter_compared_with_small_ints, np.uint8(1), 500), (counter_compared_with_small_ints, np.int8(1), 500),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_python_int_counter_with_small_dtypes_in_a_native_loop(fn, x, n, monkeypatch):
    force_native(monkeypatch)
    compiled = assert_every_call_same(fn, x, np.array(n))
    [loop] = compiled.get_concrete_function(x, np.array(n)).plan.native_loops
    assert loop.fn, "the C loop was not built"


def counter_into_fused_uint8(x, n):
    w = 0
    while w < n:
        w += 100
    unused = x - w   # dead code: eager still raises
    return ((x + w) * 2 - 1) * (x < w), (x < w) & (x > w - 300) & (x != w)


@pytest.mark.parametrize("n", [150, 250, 500])
def test_python_int_counter_with_uint8_arrays_in_fused_kernels(n):
    x = (np.arange(100_000) % 250).astype(np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # uint8 wrap-around, on both sides
        assert_every_call_same(counter_into_fused_uint8, x, np.array(n))


# --- `not` of a tensor is a Python bool (weak), as `not` of a numpy value is ----------

def not_of_array_element(x, y, n, s):
    def pick():
        if x[0]:
            return not y[-1]
        return True
    v = pick()
    return (s * y) - (v + s), v + 1, x + (not n)


@pytest.mark.parametrize("first", [4, 0])
def test_not_of_a_tensor_is_a_python_bool(first):   # fuzzer seed 11001614
    x = np.array([first, -3], np.int32)
    assert_every_call_same(not_of_array_element, x, np.array([-4, -1], np.int32), np.array(2, np.int32), 0)


def not_in_native_loop(x, limit):
    done = False
    count = 0
    while not done:
        x = x * 0.5 + 0.25
        count += 1
        done = not (count < limit)
    return x, count, done


@pytest.mark.skipif(compiler.compiler() is None, reason="no C compiler on this machine")
def test_not_in_a_native_loop(monkeypatch):
    force_native(monkeypatch)
    compiled = assert_every_call_same(not_in_native_loop, np.float64(3.0), np.array(7))
    [loop] = compiled.get_concrete_function(np.float64(3.0), np.array(7)).plan.native_loops
    assert loop.fn, "the C loop was not built"


def _and_or_of_loop_counters(y, n):
    w = 0
    while w < 1 and y[-1]:
        w += 1
    return n * (w and 1), n * (w or 2)


@pytest.mark.parametrize("last", [0.5, 0.0])
def test_and_or_of_a_python_int_counter_and_a_python_int_stay_python_ints(last):
    # fuzzer long run seed 3000133: `w and 1` became an int64 tensor, so n * (w and 1) was int64
    y = np.array([1.0, last], np.float32)
    eager, compiled = _and_or_of_loop_counters(y, np.array(2, np.int32)), \
        to_host(ag.function(_and_or_of_loop_counters)(y, np.array(2, np.int32)))
    for e, c in zip(eager, compiled):
        assert np.asarray(c).dtype == np.asarray(e).dtype == np.int32 and c == e


def type_error_in_untaken_branch(x, flag):
    r = x
    if flag:
        r = x - (x > 0)   # bool - bool: numpy's TypeError, met only if the branch runs
    return r


def type_error_in_loop_body(x, n):
    i = 0
    while i < n:
        x = None + x      # TypeError, met only if the loop runs
        i += 1
    return x


@pytest.mark.parametrize("fn, args, block_line", [
    (type_error_in_untaken_branch, (np.array([True, False]), np.array(False)), 2),
    (type_error_in_loop_body, (np.array([1.0]), np.array(0)), 2),
], ids=lambda v: getattr(v, "__name__", ""))
def test_an_error_while_tracing_a_block_the_data_skips_names_the_block(fn, args, block_line):
    """Seed 4004624: eagerly the error comes only on runs that reach the block; a trace reaches
    both branches and every loop body, so the compiled call refuses, naming the block and the op."""
    assert outcome(fn, *args)[0] is not None and not isinstance(outcome(fn, *args)[0], tuple)
    first = fn.__code__.co_firstlineno
    with pytest.raises(ag.ConversionError, match="raised TypeError while it was traced") as info:
        ag.function(fn)(*args)
    assert f"{__file__}:{first + block_line}" in str(info.value)  # the `if` / `while`
    assert f"{__file__}:{first + block_line + 1}" in str(info.value)  # the failing op


# Seeds 4011152 and 77000740: a Python number kept in a list that a graph loop carries is read
# back as a Python number (weak, NEP 50), not as the int64/float64 item of the stacked tensor.
def weak_int_item_after_loop(x, s, n):
    L1 = [s]
    for i in ag.range(n):
        L1.append(s)
    return L1[0] - x, L1[-1] + x


def weak_items_read_inside_loop(x, n):
    L = [1]
    i = 0
    while i < n:
        L.append(L[-1] * 3)
        i += 1
    return L[-1] - x, ag.stack(L)


def weak_float_items_iterated(x, n):
    L = [1.5, 2.5]
    t = 0.0
    for v in ag.range(n):
        for w in L:
            t = t + w
    return t * x


def weak_items_popped(x, n):
    L = [2, 3]
    for i in ag.range(n):
        L.append(4)
    a = L.pop()
    b = L.pop(0)
    return a * x, b * x


def weak_bool_items_in_branch(x, c):
    L = []
    if c > 0:
        L.append(True)
    else:
        L.append(False)
    return L[0] + x


@pytest.mark.parametrize("fn, args", [
    (weak_int_item_after_loop, (np.array([1, 2, 250], np.uint8), 7, np.array(2))),
    (weak_int_item_after_loop, (np.array([1, 2, 250], np.uint8), 300, np.array(2))),  # OverflowError
    (weak_int_item_after_loop, (np.array([1, -2], np.int8), -100, np.array(0))),
    (weak_items_read_inside_loop, (np.array([1, 2], np.uint8), np.array(3))),
    (weak_float_items_iterated, (np.array([1, 2], np.float32), np.array(3))),
    (weak_items_popped, (np.array([1, 2], np.int16), np.array(2))),
    (weak_bool_items_in_branch, (np.array([1, 2], np.uint8), np.array(1))),
], ids=lambda v: getattr(v, "__name__", ""))
def test_python_numbers_in_a_carried_list_stay_python_numbers(fn, args):
    assert_every_call_same(fn, *args)


def mixed_items(x, n):
    vals = [0.0]
    for i in ag.range(n):
        vals.append(vals[-1] + x[i])
    return ag.stack(vals)


def test_reading_an_item_of_a_list_of_numbers_and_arrays_is_refused_at_the_line():
    """Eagerly vals[-1] is first the Python float 0.0 (weak: float32 + 0.0 stays float32), then a
    float32 array: one stacked tensor cannot give both, so the read is refused."""
    x = np.array([0.1, 0.2], np.float32)
    with pytest.raises(ag.ConversionError, match="holds both Python numbers and arrays") as info:
        ag.function(mixed_items)(x, np.array(3))
    assert f"{__file__}:{mixed_items.__code__.co_firstlineno + 3}" in str(info.value)


def where_of_out_of_range_python_int(x, s):
    return ag.where(False <= s, ag.negative(True), s - x), ag.where(x > 3, 300, x * 2)


def test_where_of_a_python_int_out_of_the_arrays_range_wraps_as_numpy_does():
    """Seed 5011349: np.where casts a weak -1 into uint8 (255); the in-place copyto that buffer
    reuse wrote raised OverflowError instead."""
    assert_every_call_same(where_of_out_of_range_python_int, np.array([1, 7, 8, 2], np.uint8), 3)


def alias_from_a_loop_inside_a_branch(x, y, n):
    v1 = ag.abs(y)
    if n:
        for i in ag.range(n):
            v1 = x
    v1 -= 2
    return v1 * y


def test_an_update_of_what_a_loop_inside_a_branch_may_have_made_an_argument_is_refused():
    """Seed 5006087: v1 is the caller's x on runs where the loop ran; the maybe-alias was not
    followed from the `if` into the loop inside it, so x silently stayed unchanged."""
    x, y = np.array([2.5, 1.0], np.float32), np.array([-1.0, 3.0], np.float32)
    with pytest.raises(ag.ConversionError, match="on some runs it is the array of argument 'x'") as info:
        ag.function(alias_from_a_loop_inside_a_branch)(x, y, np.array(2))
    assert f"{__file__}:{alias_from_a_loop_inside_a_branch.__code__.co_firstlineno + 5}" in str(info.value)
    np.testing.assert_array_equal(x, [2.5, 1.0])


def dict_item_set_after_a_tensor_if_that_may_return(x, y, n, s):
    D5 = {'a': ag.abs(y), 'b': x}
    if n > 5:
        w8 = 0
        while w8 < 3 and False:
            w8 += 1
            if s:
                return (-1,)
    D5['a'] = x
    return (1, D5)


def test_a_branch_returning_a_dict_it_updates_returns_the_update():
    """Seed 5012791: the code after an `if` that may return runs in a staged branch that sets
    D5['a'] and returns D5; the else branch restored D5['a'] before the branch's result was read,
    so the result held the old item."""
    args = (np.array([1., 2.]), np.array([-3., 4.]), np.array(2), 0)
    assert_every_call_same(dict_item_set_after_a_tensor_if_that_may_return, *args)


def update_of_a_loop_variable_a_nested_loop_may_rebind_to_an_argument(x, y, n):
    v21 = y
    w27 = 0
    while w27 < 3 and y[1]:
        w27 += 1
        if n:
            for r28 in x:
                v21 = y
        v21 -= 1.0
    return v21


def test_an_update_of_a_loop_variable_that_may_be_an_argument_is_refused():
    """Seed 5015137: v21 is the caller's y on some runs (the `if` inside the loop rebinds it);
    the update was applied to a copy and the caller's y stayed unchanged."""
    x, y = np.array([5, 5]), np.array([1.0, 1.5])
    with pytest.raises(ag.ConversionError, match="on some runs it is the array of argument 'y'"):
        ag.function(update_of_a_loop_variable_a_nested_loop_may_rebind_to_an_argument)(x, y, np.array(3))
    np.testing.assert_array_equal(y, [1.0, 1.5])


def update_through_a_loop_variable_an_inner_loop_passes_on(x, y, n):
    v1 = x
    for r6 in x:
        for i7 in ag.range(n):
            v1 = v1
        v1 += (y <= x) + 0
    return x


def update_after_an_inner_loop_that_may_rebind(x, n, m):
    acc = x * 0
    for i in ag.range(n):
        for j in ag.range(m):
            acc = acc + 1
        acc += x
    return acc


def test_an_update_of_an_argument_an_inner_loop_may_pass_on_reaches_it():
    """Seed 6000624: v1 is x's array when the inner loop passes it on; the outer loop did not
    learn that its variable's array was updated, and the caller's x stayed unchanged. An inner loop
    handing v1 on untouched gives v1 itself now, whose update writes x's memory."""
    for n in (0, 3):
        on_fresh_arguments(update_through_a_loop_variable_an_inner_loop_passes_on, lambda: np.array([-5, -1, 5, -2]),
                           lambda: np.array([False, False, True, True]), lambda: np.array(n, np.int32))


@pytest.mark.parametrize("m", [0, 2])
def test_an_update_after_an_inner_loop_that_may_rebind_a_fresh_array_runs(m):
    assert_every_call_same(update_after_an_inner_loop_that_may_rebind, np.array([1., 2.]), np.array(3),
                           np.array(m))


def static_shape_item(x):
    return ag.shape(x)[0], x.shape[1] * 2, ag.shape(x)


def test_an_item_of_a_static_shape_is_a_numpy_scalar_as_eagerly():
    """Folding `ag.shape(x)[0]` gave a 0-d array where eager numpy gives np.int64 (found by the
    save/load work): a silent type difference (a 0-d array is mutable, hashes apart, prints apart)."""
    assert_every_call_same(static_shape_item, np.ones((3, 2)))


def appends_to_a_list_argument_after_nested_tensor_ifs(x, n, lst):
    if n > 0:
        if n > 1:
            return x * 2
    if n > 2:
        return x * 3
    lst.append(1)
    return x


def test_a_list_argument_changed_in_a_block_nested_in_a_staged_branch_is_refused():
    """Seed 7008171: the code after the `if`s runs in a staged branch nested in another; the inner
    branch appended to the outer branch's copy of the list, which no longer counted as the
    argument, so the caller's list silently stayed unchanged."""
    lst = [5]
    with pytest.raises(ag.ConversionError, match="list argument 'lst' is changed inside an `if`") as info:
        ag.function(appends_to_a_list_argument_after_nested_tensor_ifs)(np.ones(2), np.array(0), lst)
    assert f"{__file__}:{appends_to_a_list_argument_after_nested_tensor_ifs.__code__.co_firstlineno + 6}" \
        in str(info.value)
    assert lst == [5]


def python_int_arithmetic_in_a_loop_that_does_not_run(x, y, lst):
    w1 = 0
    while w1 < 1 and len(lst):
        w1 += 1
    w5 = 0
    while w5 < 2 and y[-1]:
        w5 += 1
        v8 = (ag.cast(w5, np.bool) + x) - (x - (False - w1))
    return x


def test_python_int_arithmetic_is_not_hoisted_out_of_a_loop_that_may_not_run():
    """Seed 7011806: `x - (-1)` with uint8 x raises OverflowError (NEP 50); hoisted out of the loop
    it ran, and raised, on calls where eagerly the loop runs zero times."""
    x, y = np.array([2, 0, 2, 0], np.uint8), np.array([-2.5, -2.5, 2.5, 0.0], np.float32)
    assert_every_call_same(python_int_arithmetic_in_a_loop_that_does_not_run, x, y, [2, 5])
    assert_every_call_same(python_int_arithmetic_in_a_loop_that_does_not_run, x, -y, [2, 5])


def appends_then_updates_in_place(y, n, s):
    L1 = [ag.cast(0, np.float32)]
    v6 = ag.cast(s, np.float32)
    for r7 in y:
        L1.append(v6)
        v6 -= n
    return L1


def test_updating_in_place_an_array_a_carried_list_holds_is_refused():
    """Seed 7014487: eagerly the list holds v6's array itself, so every item shows the final
    value; the stacked list held copies, silently different."""
    with pytest.raises(ag.ConversionError, match="a list holding it"):
        ag.function(appends_then_updates_in_place)(np.array([-4, -4, 4, 3], np.int32), np.array(2, np.int32), 0)


def item_and_variable_a_loop_gives_the_same_array(x, y, n, s):
    D1 = {'a': ag.maximum(x <= s, 1), 'b': s}
    v6 = (ag.where(n, s, y) - 1) - y
    for i11 in ag.range(n):
        if s:
            v6 = v6
            D1['a'] = v6
    if ag.cast(n, np.int8):
        v6 -= D1['a']
    return ag.cast(D1['a'], np.int32)


def test_an_update_of_a_loop_output_another_output_may_share_is_refused():
    """Seed 8017096: after the loop D1['a'] and v6 are one array when the loop ran; `v6 -=` changed
    both eagerly (D1['a'] became 0) while the compiled D1['a'] kept its value."""
    args = (np.array([True, False, True, False]), np.array([True, False, True, True]), np.array(4, np.int32), 3)
    with pytest.raises(ag.ConversionError, match="through another name"):
        ag.function(item_and_variable_a_loop_gives_the_same_array)(*args)


def view_from_a_loop_then_update(x, n):
    y = x * 1.0
    row = y[1] * 0
    for i in ag.range(n):
        row = y[0]
    y += 1
    return row


def view_from_a_branch_then_update(x, n):
    row = x[1] * 0
    if n > 0:
        row = x[0]
    x += 1
    return row * 2


@pytest.mark.parametrize("fn", [view_from_a_loop_then_update, view_from_a_branch_then_update])
def test_a_view_a_loop_or_branch_gives_out_is_stale_after_its_array_is_updated(fn):
    """Eagerly `row` is a view of y's array on the runs where the loop ran (or the branch was
    taken), so `y += 1` changes it; the compiled row kept the old values."""
    with pytest.raises(ag.ConversionError, match="this value is a slice or view of it"):
        ag.function(fn)(np.zeros((2, 3)), np.array(1))


def update_of_a_maybe_view_of_an_argument_in_a_loop(y, n, s):
    v6 = y[:]
    if n:
        v6 = ag.cast(ag.zeros([4], np.int32) + 1, np.int32)
    w = 0
    while w < 3 and ag.cast(s, np.int64):
        w += 1
        v6 *= 2
    return y * 2


def update_of_a_view_an_inner_loop_passes_on(x, y, n):
    for i12 in ag.range(1, n, 3):
        for r13 in x:
            v14 = y[::-1]
            w15 = 0
            while w15 < 1 and v14[3] > 0:
                w15 += 1
                v14 = v14
            v14 -= i12


def test_an_update_of_what_may_be_a_view_of_an_argument_is_refused():
    """Seeds 10001816, 10003202: v6 / v14 is a view of the caller's y on some runs (a tensor `if`
    kept it, or a loop passed it on); eagerly the update changes y, compiled it silently did not."""
    args = (np.array([4, 2, 2, -3], np.int32), np.array(0), 3)
    with pytest.raises(ag.ConversionError, match="a slice or view of argument 'y'"):
        ag.function(update_of_a_maybe_view_of_an_argument_in_a_loop)(*args)
    np.testing.assert_array_equal(args[0], [4, 2, 2, -3])


def test_an_update_of_a_view_an_inner_loop_hands_on_untouched_reaches_the_argument():
    # seed 10003202: the inner loop gives v14 itself (it hands it on untouched), a view of y
    on_fresh_arguments(update_of_a_view_an_inner_loop_passes_on, lambda: np.array([1, 2]),
                       lambda: np.array([4, 2, 2, 5], np.int8), lambda: np.array(4))


def many_nested_branches_and_loops(x, y, n, s, lst):
    w1 = 0
    while w1 < 3 and s:
        w1 += 1
        if ag.cast((s + s), np.int8):
            if n:
                if 2:
                    break
            v2 = (s < x)
        if (ag.minimum(s, -1) > (s > w1)):
            return {'r0': x, 'r1': n}
        for r3 in x:
            if r3:
                break
    D4 = {'a': ag.reduce_max((2 + y)), 'b': (y[3] >= x)}
    if n:
        h5 = lambda z6: ag.maximum(y, x[0])
        v7 = h5(x)
        v8 = (((s * v7) + (n + w1)) * (n + (v7 > True)))
    if (y[3] - (s != n)):
        return {'r0': x, 'r1': n}
    for i9 in ag.range(1, 4, 1):
        v10 = (y - ((i9 + x) * (1 % i9)))
        for i11 in range(3):
            if w1:
                return {'r0': (x + (w1 > y)), 'r1': n}
        v12 = D4['b']


def test_alias_questions_on_deeply_nested_blocks_stay_fast():
    """Seed 10004698: asking what a Cond/While output may alias recursed into every sibling at
    every level (exponential: the trace did not end in 60 s); the answers are cached per node.
    The function may return None, so the compiled call refuses, naming the function."""
    args = (np.array([True, True, False, False]), np.array([4, 2, 2, -3], np.int32), np.array(0, np.int32), 2, [3, 4])
    with pytest.raises(ag.ConversionError, match="ends without `return`"):
        ag.function(many_nested_branches_and_loops)(*args)


def update_of_an_argument_both_branches_give(x, y, n):
    for i5 in ag.range(n):
        if i5:
            v3 = x
        else:
            v3 = x
        v3 += y
    return v3, x


def test_an_update_in_a_loop_of_an_argument_both_branches_give_reaches_it():
    """Seed 11016926: both branches give v3 the caller's x, so v3 is x's captured array itself;
    its in-place update inside the loop was dropped, and the caller's x stayed unchanged."""
    for n in (1, 3):
        on_fresh_arguments(update_of_an_argument_both_branches_give, lambda: np.array([2, 4, 8, 6], np.uint8),
                           lambda: np.array([9, 4, 8, 8], np.uint8), lambda: np.array(n))


# --- native regions (seed 21: the first long run with whole array loops and graphs as C) -------

def loop_reading_a_reversed_view(x, y, n, s, lst):
    w1 = 0
    while w1 < 3 and ag.abs(y[1]):
        w1 += 1
        v2 = y[::-1]
        v6 = ((1.5 // (w1 >= v2)) * ag.where((2 or s), (y - w1), n))


def max_of_signed_zeros(x, y, n, s, lst):
    v2 = y
    return ag.cast(ag.reduce_max(((y - y) * v2)), np.float64)


def max_of_a_maximum(x, y, n, s, lst):
    return [ag.cast(ag.reduce_max(ag.maximum(n, (x / y))), np.float32)]


@pytest.mark.parametrize("fn, args", [
    # 21000241: a captured view (y[::-1] is not contiguous) made the C loop's argument check raise
    (loop_reading_a_reversed_view, (np.array([3, 0, -1, 1], np.int8), np.array([3, 4, -3, 2], np.int8),
                                    np.array(3, np.int32), 3, [])),
    # 21000367: max of -0.0 and 0.0 is numpy's choice (the second of two equal values; its own
    # SIMD reduce loop, called from the C, for whole runs)
    (max_of_signed_zeros, (np.array([-4.0, 4.0, 3.5, -1.5]), np.array([-1.5, 3.0, 1.5, 1.0]),
                           np.array(1, np.int32), 0, [3])),
    # 21001058: the same in an elementwise maximum
    (max_of_a_maximum, (np.array([-5, 0, 0, 0], np.int8), np.array([3, -2, 5, -5], np.int8),
                        np.array(0, np.int32), 3, [])),
])
@cpu_only("native regions are the CPU's backend")
def test_native_regions_keep_numpys_signed_zeros_and_read_views(fn, args):
    with np.errstate(all="ignore"):
        eager = fn(*args)
        compiled = ag.function(fn)
        for _ in range(scalar_loop.TIER_UP_AFTER + 1):
            result = compiled(*args)
            for e, c in zip(ag.nest.flatten(eager), ag.nest.flatten(result)):
                assert type(c) is type(e)
                if e is not None:
                    assert np.array_equal(c, e) and np.signbit(c).tolist() == np.signbit(e).tolist()


def printed_nanmax_of_signed_zeros(x, y, n, s, lst):
    w7 = 0
    while w7 < 1 and ag.square(x[3]):
        w7 += 1
        print('p8', ag.maximum((callable(y)), n), np.nanmax((x * n)))


def nan_extremes_of_signed_zeros(x, y, n, s, lst):
    z = x * n
    return (np.nanmax(z), np.nanmin(-z), np.nanmax(ag.where(y > 0, np.nan, z)), np.nanmin(z[::-1]),
            np.nanmax(ag.reshape(z, (2, 2)), 0), np.nanmin(ag.reshape(-z, (2, 2)), 1, keepdims=True))


@pytest.mark.parametrize("fn", [printed_nanmax_of_signed_zeros, nan_extremes_of_signed_zeros])
@cpu_only("numpy's own fmax/fmin loop picks which zero; a device's reduce picks its own")
def test_nanmax_and_nanmin_pick_numpys_signed_zero(fn):
    """Seed 1190016447: np.nanmax was maximum.reduce over the NaNs made -inf, where numpy's is
    fmax.reduce: of -0.0 and 0.0 the two loops keep another one (compiled printed 0.0, eager -0.0)."""
    args = (np.array([-3.0, 1.0, 4.0, 1.0], np.float32), np.array([4, -4, -3, 0], np.int32), np.array(0, np.int32),
            1, [])
    eager_out, compiled_out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(eager_out):
        eager = fn(*args)
    compiled = ag.function(fn)
    for _ in range(scalar_loop.TIER_UP_AFTER + 1):
        compiled_out.seek(0)
        compiled_out.truncate()
        with contextlib.redirect_stdout(compiled_out):
            result = compiled(*args)
        assert compiled_out.getvalue() == eager_out.getvalue()
        for e, c in zip(ag.nest.flatten(eager), ag.nest.flatten(result)):
            assert type(c) is type(e)
            if e is not None:
                assert c.dtype == e.dtype and np.array_equal(c, e, equal_nan=True)
                assert np.signbit(c).tolist() == np.signbit(e).tolist()


def view_of_what_may_be_the_argument(x, y, n, s, lst):
    v1 = (x - (ag.maximum(1, s) < (0 // n)))
    if ag.reduce_sum((s + x)):
        v1 = x
    v3 = v1[::-1]
    if len(lst):
        v3 += 2


def appended_then_updated_by_the_next_iteration(x, y, n, s, lst):
    v1 = ag.minimum(n, x)
    L2 = [((x * n) - len(lst))]
    for i3 in ag.range(n):
        v1 += y
        L2.append(v1)
    return (True, L2,)


def test_a_view_of_what_may_be_the_argument_updated_in_place_is_refused():
    """Seed 22010576: v1 is the argument x on some runs, v3 a view of v1; `v3 += 2` changed the
    caller's x eagerly on those runs and never when compiled."""
    x = np.array([3, 9, 4, 1], np.uint8)
    with pytest.raises(ag.ConversionError, match=r"in place \(`\+=`\) at .*test_fuzz_regressions.py:\d+, and on some runs it is the array of argument 'x'"):
        ag.function(view_of_what_may_be_the_argument)(
            x, np.array([-3.5, -4.0, -2.0, -3.0], np.float32), np.array(1, np.int32), 0, [0])
    np.testing.assert_array_equal(x, [3, 9, 4, 1])


def test_an_array_appended_and_updated_by_the_next_iteration_is_refused():
    """Seed 22012065: eagerly the list holds v1's one array, so each `v1 += y` changed every item
    appended before; compiled, the items were snapshots."""
    args = (np.array([0.0, -4.0, -2.0, 0.0], np.float32), np.array([1.5, 1.0, 0.0, 1.5], np.float32),
            np.array(2, np.int32), 0, [])
    with pytest.raises(ag.ConversionError, match=r"appended to a list in a loop on a tensor .* and updated in place \(`\+=`\) at .*test_fuzz_regressions.py:\d+"):
        ag.function(appended_then_updated_by_the_next_iteration)(*args)


def max_of_a_bool_product(x, y, n, s, lst):
    return {'r0': ag.cast(ag.reduce_max(((s > x) * len(lst))), np.bool), 'r1': True}


def max_of_a_bool_maximum(x, y, n, s, lst):
    return {'r0': ag.cast(ag.reduce_max(ag.maximum(len(lst), (x < n))), np.float32), 'r1': (n + n)}


@pytest.mark.parametrize("fn, sets", [
    (max_of_a_bool_product, [(np.array([-5, -5, -3, 0]), np.array([-5, -1, 3, -2]), np.array(4, np.int32), 2, [3]),
                             (np.array([-5, 1, 4, 3]), np.array([-2, 0, 2, 2]), np.array(3, np.int32), 2, [3])]),
    (max_of_a_bool_maximum, [(np.array([1.0, -2.5, 0.5, 0.5], np.float32), np.array([-5, 1, 3, 3], np.int32),
                              np.array(1, np.int32), 2, []),
                             (np.array([-4.0, -0.5, -3.5, 1.0], np.float32), np.array([-3, -4, 0, -5], np.int32),
                              np.array(2, np.int32), 2, [])]),
])
def test_bool_reductions_in_a_native_graph_are_compiled_right(fn, sets):
    """Seeds 23001577, 23008348: GCC 12.2's SLP vectorizer (-O3, AVX2) miscompiled the max of a
    bool-to-int64 product in the native graph (False for True, -1 for 1) from the third call on;
    kernels are built with -fno-tree-slp-vectorize."""
    compiled = ag.function(fn)
    for _ in range(scalar_loop.TIER_UP_AFTER):
        for args in sets:
            assert_same(fn(*args), compiled(*args))


def iterated_array_updated_through_an_inner_loop(x, y, n, s, lst):
    v1 = ag.minimum(ag.minimum((y + False), x), s)
    for r2 in v1:
        if n:
            print('p3', r2, 1)
        w5 = 0
        while w5 < 1 and ((r2 * w5) - n):
            w5 += 1
            v1 = v1
        v1 += n


def outside_array_given_after_an_inner_loop(x, y, n, s, lst):
    v35 = ag.negative(x)
    w36 = 0
    while w36 < 2 and (ag.reduce_min(x) <= 1.5):
        w36 += 1
        w37 = 0
        while w37 < 1 and (w37 == (s < w36)):
            w37 += 1
            v35 = (w37 - x)
        v35 += (ag.minimum(y, -1) + (y * w37))
        v35 = y


def test_an_array_iterated_and_updated_through_an_inner_loop_equals_eager():
    # 23005877: `for r2 in v1` read the rows of v1 as they were; eagerly `v1 += n` changes the rows
    # still to come: the loop reads v1's memory, which the update writes
    assert_every_call_same(iterated_array_updated_through_an_inner_loop, np.array([0, 4, 1, 2]),
                           np.array([0, 4, 8, 3]), np.array(4, np.int32), 5, [])


@pytest.mark.parametrize("fn, args, message", [
    # 23007892: the body gave v35 the argument y, which the next iteration updated in place eagerly
    (outside_array_given_after_an_inner_loop, (np.array([0.5, 4.0, 2.0, -1.5]), np.array([-3.5, 0.5, -2.5, -3.0]),
                                               np.array(3, np.int32), 0, []), "an array from outside the iteration"),
])
def test_loop_variables_updated_on_some_runs_get_the_loops_checks(fn, args, message):
    with pytest.raises(ag.ConversionError, match=rf"in place \(`\+=`\) at .*test_fuzz_regressions.py:\d+ inside a "
                                                 rf"loop on a tensor, and the loop .*{message}"):
        ag.function(fn)(*args)


def list_holding_an_array_a_loop_updates(x, y, n, s, lst):
    v2 = ag.maximum(ag.cast(2, np.bool), y)
    L3 = [v2]
    w5 = 0
    while w5 < 2 and n:
        w5 += 1
        for i6 in ag.range(n):
            w7 = 0
            while w7 < 1 and ((True > n) == 0):
                w7 += 1
                v2 += i6
        w8 = 0
        while w8 < 3 and (n >= (s * n)):
            w8 += 1
            for e9 in lst:
                L3.append(ag.cast(x, np.float64))
    return (ag.cast(ag.reduce_max((ag.minimum(n, True) * y)), np.float64), L3,)


def test_a_list_carried_through_a_loop_that_updates_its_array_is_refused():
    """Seed 25002913: `L3 = [v2]` holds v2's array, and L3 is carried through the outer loop; the
    inner loop's `v2 += i6` changed L3's item eagerly, while the compiled list kept the old values."""
    args = (np.array([False, True, True, True]), np.array([2.0, 3.0, 0.5, -1.5]), np.array(4, np.int32), 3, [])
    with pytest.raises(ag.ConversionError, match=r"'v2'.* updated in place \(`\+=`\) at "
                                                 r".*test_fuzz_regressions.py:\d+"):
        ag.function(list_holding_an_array_a_loop_updates)(*args)


def _list_from_before_a_loop_that_appends_and_writes_its_item(x, y, n):
    L1 = [y]
    w = 0
    while w < 2 and n > 0:
        w += 1
        L1.append(x)
        y[:] = ag.reduce_sum(ag.stack(L1))  # the second iteration's stack has the first's y
    return L1[0]


def _stacked_list_a_later_loop_reads_while_writing_its_item(x, y, n):
    L1 = [y]
    for r in x:
        L1.append(y * r)
    w = 0
    while w < 2 and n > 0:
        w += 1
        y[:] = ag.reduce_sum(ag.stack(L1))
    return y


@pytest.mark.parametrize("fn, what", [(_list_from_before_a_loop_that_appends_and_writes_its_item, "list 'L1'"),
                                      (_stacked_list_a_later_loop_reads_while_writing_its_item,
                                       "a list the loop reads")])
def test_a_stacked_list_holding_an_array_a_later_loop_writes_is_refused(fn, what):
    """Seed 1190009388: `L1 = [y]` and a loop that appends to L1 and writes y: eagerly L1[0] is y,
    with each iteration's write; the list the loop carried held y's contents from before the loop."""
    args = (np.array([-1, 0, 3, -5], np.int8), np.array([-2, -2, 5, -2], np.int8), np.array(2, np.int32))
    with pytest.raises(ag.ConversionError, match=rf"{what} holds 'y' from before the loop on a tensor at .*, and "
                                                 rf"'y' is updated in place \(`\[\.\.\.\] =`\) at "
                                                 rf".*test_fuzz_regressions.py:\d+ inside it"):
        ag.function(fn)(*args)


def signed_zero_constants(x, y, n, s, lst):
    v21 = ag.sqrt(ag.abs(len(lst)))
    v22 = (((v21 + v21) / -s) * ((v21 - y) - (3 and s)))
    return [ag.cast((ag.reduce_max(v22) * y), np.bool), ag.negative(v22), ag.cast(n, np.int64)]


def test_constants_zero_and_minus_zero_are_not_merged():
    """Seed 26003198: CSE merged the constants 0.0 and -0.0 (equal, but another sign): the
    compiled result had 0.0 where eager has -0.0."""
    args = (np.array([0.0, -2.0, -2.5, 3.0]), np.array([-2.0, -1.5, 3.5, -0.5]), np.array(3, np.int32), 3, [])
    eager = signed_zero_constants(*args)
    compiled = ag.function(signed_zero_constants)
    for _ in range(scalar_loop.TIER_UP_AFTER + 1):
        result = compiled(*args)
        assert np.signbit(result[1]).tolist() == np.signbit(eager[1]).tolist() == [True] * 4


def _view_updated_after_an_inner_loop(y, n):
    v = y[:]
    w = 0
    while w < 1 and n:
        w += 1
        for _ in v:
            v = v
        v *= 2   # changes y eagerly: v is y's view on every run that gets here
    return ag.cast(y, np.uint8)


def _view_of_a_local_updated_after_an_inner_loop(y, n):
    z = y * 1
    v = z[:]
    w = 0
    while w < 1 and n:
        w += 1
        for _ in v:
            v = v
        v *= 2   # changes z eagerly
    return z


@pytest.mark.parametrize("fn", [_view_updated_after_an_inner_loop, _view_of_a_local_updated_after_an_inner_loop])
def test_an_update_through_a_view_carried_by_nested_loops_reaches_its_base(fn):
    # fuzzer seed 31002425: the view's base was not seen through the inner loop, so the compiled
    # function returned y (or z) unchanged where eager doubled it
    for n in (0, 2):
        on_fresh_arguments(fn, lambda: np.array([1, 4, 0, 1], np.int8), lambda: np.array(n, np.int32))


def _update_of_a_view_that_a_branch_writing_its_base_kept(y, n, s):
    v = y[::-1]
    if n:
        y[n % 4] = -y[1]   # the branch writes y: v is read back as a view of y's new contents
    else:
        v = ag.minimum(0, y)
    v -= s                 # eagerly changes the caller's y on the runs that took the first branch
    return y


def test_an_update_of_a_view_replayed_after_a_write_in_a_branch_is_refused():
    """Fuzzer seed 1141004447: the first branch's v was the view replayed on y's written contents,
    whose base was not followed back to argument y, so the compiled call left y unchanged."""
    y = np.array([3.5, 1.0, 3.5, -3.5], np.float32)
    fn = _update_of_a_view_that_a_branch_writing_its_base_kept
    with pytest.raises(ag.ConversionError, match="slice or view of argument 'y'") as info:
        ag.function(fn)(y, np.array(4, np.int32), 1)
    assert f"{__file__}:{fn.__code__.co_firstlineno + 6}" in str(info.value)
    np.testing.assert_array_equal(y, [3.5, 1.0, 3.5, -3.5])


def _printed_before_its_update(x, n):
    v = ag.ones([4], np.float32)  # a numpy array while tracing: no tensor argument made it
    for _ in range(3):
        i = 0
        while i < n:  # a tensor loop reading the array as it is now
            i += 1
            print('p', i + v)
        v -= 3        # updated in place while tracing, after the loop read it
    return v + x


def test_a_constant_is_the_array_as_it_was_when_read():
    """An array that code updates in place while tracing is read as it was at each use (fuzzer seed
    1128004174: every print showed the array's final contents)."""
    assert_every_call_same(_printed_before_its_update, np.ones(4, np.float32), np.array(2, np.int32))


def _boxes(value):
    """`value` with each leaf as (Python type, dtype, value): a box difference is a difference."""
    if isinstance(value, (tuple, list)):
        return type(value), [_boxes(v) for v in value]
    return type(value), np.asarray(value).dtype, np.asarray(value).tolist()


def assert_same_boxes_every_call(fn, *inputs):
    compiled = ag.function(fn)
    for args in inputs:
        for _ in range(CALLS):
            assert _boxes(compiled(*args)) == _boxes(fn(*args))


def _python_int_or_under_a_tensor_if(x, n, lst):
    y = x * 2
    if x.sum() > 0:
        return [y, (len(lst) or n)]   # eager: the Python int `or` picked
    return [y, n]


def _number_or_argument_returned(x, n):
    if x.sum() > 0:
        return n
    return 1


def _number_or_argument_computed_on(x, n):
    if x.sum() > 0:
        v = 0
    else:
        v = n
    return v * 2, v > 1, v + x


@cpu_only("numpy scalars and Python numbers are the CPU's boxes")
@pytest.mark.parametrize("fn, n", [(_python_int_or_under_a_tensor_if, np.float64(2.5)),
                                   (_number_or_argument_returned, np.int32(4)),
                                   (_number_or_argument_returned, np.array(4.0)),
                                   (_number_or_argument_computed_on, np.int64(4)),
                                   (_number_or_argument_computed_on, np.int32(4))])
def test_a_tensor_if_merging_a_python_number_and_a_numpy_value_returns_the_box_its_branch_made(fn, n):
    # fuzzer seeds 424016013 and 4000217: the Cond gave the numpy dtype's value (a 0-d array) where
    # eager gave the Python number of the branch that ran
    extra = ([1, 2],) if fn is _python_int_or_under_a_tensor_if else ()
    assert_same_boxes_every_call(fn, (np.ones(3), n, *extra), (-np.ones(3), n, *extra))


def _python_float_or_float32_computed_on(x, n):
    if x.sum() > 0:
        v = 0.1
    else:
        v = n
    return v * 3   # eager: a Python float (0.30000000000000004) or a float32


def test_arithmetic_on_a_python_float_or_a_float32_merged_by_a_tensor_if_is_refused():
    with pytest.raises(ag.ConversionError, match=r"`Mul` on a value that is a Python number where the "
                                                 r"tensor `if` at .*test_fuzz_regressions.py:\d+ took one branch"):
        ag.function(_python_float_or_float32_computed_on)(np.ones(3), np.float32(4))


def _zero_d_arrays_appended_in_a_loop(x, n):
    L = [n]
    for _ in x:
        L.append(n)
    return L[-1]


def _zero_d_array_item_of_a_carried_list(x, n):
    v = np.int32(0)
    L = [ag.where(ag.maximum(0, True), v, True)]   # np.where gives a 0-d array
    for _ in x:
        if v:
            v = n
            L.append(n)
    return L[-1], L[0]


@cpu_only("numpy scalars are the CPU's boxes")
@pytest.mark.parametrize("fn", [_zero_d_arrays_appended_in_a_loop, _zero_d_array_item_of_a_carried_list])
def test_an_item_of_a_list_a_tensor_loop_carries_keeps_its_0d_array_box(fn):
    # fuzzer seeds 724017349 and 6000627: the item came back a numpy scalar (its reshape to () was
    # boxed as the row's numpy scalar)
    assert_same_boxes_every_call(fn, (np.array([1, 2, 3], np.int32), np.array(3, np.int32)))


def _finally_returning_after_a_tensor_decided_return(x, y, n, s):
    if n:
        return 5
    try:
        if y[3]:
            return s
    finally:
        w = 0
        while w < 3:
            w += 1
            return w   # overrides the try's `return s`, as Python's finally does
    return s


def test_a_finally_that_returns_after_a_tensor_decided_return_overrides_the_trys_return():
    # fuzzer seed 724006345: the try sat in the guard of the earlier return as a copy, which lost the
    # finally's treatment, so its loop saw the try's return flag and never ran (2 where eager gave 1)
    x, y = np.array([2.5, 0.0, -2.0], np.float32), np.array([4.0, 2.0, -1.0, -0.5], np.float32)
    for n in (np.array(4, np.int32), np.array(0, np.int32)):
        assert_every_call_same(_finally_returning_after_a_tensor_decided_return, x, y, n, 2)


def _view_of_a_trace_time_array_updated_in_a_tensor_if(x):
    a = np.ones(4, np.float32)
    v = a[::-1]
    if x[0] > 0:
        v += v     # doubles a eagerly
    return a


def _alias_of_a_trace_time_array_updated_in_a_tensor_if(x):
    acc = np.zeros(3)
    b = acc
    if x[0] > 0:
        acc += 1
    return b


@pytest.mark.parametrize("fn, name, other", [(_view_of_a_trace_time_array_updated_in_a_tensor_if, "v", "'a'"),
                                             (_alias_of_a_trace_time_array_updated_in_a_tensor_if, "acc", "'b'")])
def test_a_trace_time_array_with_other_names_updated_in_a_tensor_if_is_refused(fn, name, other):
    # fuzzer seed 824004757: the branch updated its own copy, so `a` came back unchanged
    with pytest.raises(ag.ConversionError, match=rf"'{name}' holds an array computed while tracing .* but .*{other} "
                                                 rf"holds that array too"):
        ag.function(fn)(np.ones(4, np.float32))


def _trace_time_array_updated_in_a_tensor_if(x):
    acc = np.zeros(3)
    for _ in range(2):
        if x[0] > 0:
            acc += 1
    return acc


def test_a_trace_time_array_held_by_one_name_updated_in_a_tensor_if_still_converts():
    for x in (np.ones(4), -np.ones(4)):
        assert_every_call_same(_trace_time_array_updated_in_a_tensor_if, x)


def _list_item_updated_through_an_alias_after_a_tensor_if(x, y, n):
    L = [x]
    v = x
    if n:
        pass
    else:
        L.append(v)
    v += ((v - v) - y)   # updates x, the list's items eagerly
    return L[-1]


def test_a_list_a_tensor_if_stacked_is_stale_after_an_update_of_an_array_it_holds():
    # fuzzer seed 924003827: the Cond's list kept x's old contents where eager's list holds x itself
    with pytest.raises(ag.ConversionError, match=r"'v' \(a list holding it\) was updated in place"):
        ag.function(_list_item_updated_through_an_alias_after_a_tensor_if)(
            np.array([4, 1, -2, 0], np.int8), np.array([1, -4, 0, -5], np.int8), np.array(2, np.int32))


def _view_of_a_trace_time_array_updated_in_a_branch(x, k):
    a = np.ones(4, np.int8)
    for _ in range(3):
        if x[0] > k:
            v = a[::-1]    # a view of `a`, made inside the branch
            v += 1
    return a


def test_a_trace_time_array_updated_through_a_view_made_in_a_tensor_branch_is_refused():
    # fuzzer seed 1024003980: each trace of the branch added 1 to `a` (3 where eager's runs gave 0-3)
    with pytest.raises(ag.ConversionError, match=r"'a' holds an array computed while tracing .* an `if` on a "
                                                 r"tensor .* updates it in place"):
        ag.function(_view_of_a_trace_time_array_updated_in_a_branch)(np.ones(3), np.array(0.5))


def _alias_then_early_return_then_update(y, n):
    v1 = y
    if v1[-1]:
        for i in ag.range(n):
            return i
    v1 -= y[-1]
    return ag.cast(y, np.int32)


def _alias_then_early_return_then_update_int64(y, n):
    v1 = y
    if v1[-1]:
        for i in ag.range(n):
            return i
    v1 -= y[-1]
    return ag.cast(y[0], np.int64)


def test_an_update_through_an_alias_in_an_early_returns_guard_reaches_the_array():
    # fuzzer seeds 424015058 and 424020663 (reduced, as recorded): y's old value was returned; the
    # update writes y's memory now. As recorded the two returns' dtypes differ (int32 and the loop
    # index's int64): a tensor `if` cannot merge them, refused
    with pytest.raises(ag.ConversionError, match=r"'retval_' has dtype int32 in the true branch and int64"):
        ag.function(_alias_then_early_return_then_update)(np.array([1., 2., 3.]), np.array(2))
    for y, n in (([1., 2., 3.], 2), ([1., 2., 3.], 0), ([1., 2., 0.], 2)):
        on_fresh_arguments(_alias_then_early_return_then_update_int64, lambda: np.array(y), lambda: np.array(n))


def _number_or_argument_printed(x, n):
    if x[0] > 0:
        v = 5
    else:
        v = n
    print("v", v)
    return v


@cpu_only("numpy scalars and Python numbers are the CPU's boxes")
@pytest.mark.parametrize("n", [np.float64(2.5), np.int32(3), np.array(2.5)])
def test_a_python_number_merged_with_a_numpy_value_prints_as_its_branch_made_it(n):
    # eagerly `5` prints as `5`, where the merged float64 printed `5.0`
    for x in (np.ones(2), -np.ones(2)):
        assert_every_call_same(_number_or_argument_printed, x, n)
        assert_same_boxes_every_call(_number_or_argument_printed, (x, n))


def _number_or_argument_carried_by_a_loop(x, n):
    if x[0] > 0:
        v = 0.1
    else:
        v = n
    i = 0
    while i < x.shape[0] and x[i] > -5:
        v = v + 1    # eagerly Python floats on one path, float32 on the other
        i += 1
    return v


def test_a_python_number_merged_with_a_numpy_value_carried_by_a_tensor_loop_is_refused():
    with pytest.raises(ag.ConversionError, match=r"'v' is a Python number where the tensor `if` at "
                                                 r".*test_fuzz_regressions.py:\d+ took one branch .* a loop on a tensor"):
        ag.function(_number_or_argument_carried_by_a_loop)(np.ones(2), np.float32(2.5))


def _merge_read_in_another_tensor_if(x, n):
    v = 0 if x[0] > 0 else n
    if x[1] > 0:
        w = v + 1    # a Python int where v is one
    else:
        w = 5
    if x[2] > 0:
        return v
    return w


@cpu_only("numpy scalars and Python numbers are the CPU's boxes")
def test_a_python_number_merged_with_a_numpy_value_keeps_its_box_through_another_tensor_if():
    # the later `if` captured v without its box: w came back np.int64 where eager's was a Python int
    inputs = [(np.array(x, float), np.int64(3)) for x in
              ([1, 1, 1], [1, 1, -1], [1, -1, -1], [-1, 1, 1], [-1, 1, -1], [-1, -1, -1])]
    assert_same_boxes_every_call(_merge_read_in_another_tensor_if, *inputs)


def _merge_used_as_an_index_and_a_shape(x, n):
    v = 2 if x[0] > 0 else n
    return x[v], ag.reshape(x, [v, -1]), -v, v ** 2


@cpu_only("numpy scalars and Python numbers are the CPU's boxes")
def test_a_python_number_merged_with_a_numpy_value_as_an_index_and_a_shape():
    assert_same_boxes_every_call(_merge_used_as_an_index_and_a_shape, (np.ones(4), np.int64(2)), (-np.ones(4), np.int64(2)))


def _view_of_a_loop_variable_updated_in_a_nested_loop(x, y, n):
    v1 = y
    w = 0
    while w < 1 and n:
        w += 1
        for _ in v1:
            v4 = v1[:]
            for _ in ag.range(n):
                v4 += 1      # changes y (then x) eagerly: v4 views what v1 holds
                v1 = x
    return y


def test_a_view_of_a_loop_variable_updated_in_a_nested_loop_is_refused():
    # fuzzer seed 2024007781: the update reached v1's array only through the view made in the middle
    # loop's body, which that loop did not see, so y came back unchanged
    # (the mutation model refuses it at the loop that rebinds v1 after writing it, at the update's line)
    with pytest.raises(ag.ConversionError, match=r"('v4' \(a slice or view of this value\) is updated in place"
                                                 r"|loop variable 'v1' is written in place .*in a loop on a tensor "
                                                 r"and rebound).*test_fuzz_regressions.py:1\d\d\d"):
        ag.function(_view_of_a_loop_variable_updated_in_a_nested_loop)(
            np.array([1, 2, 3]), np.array([4, 5, 6]), np.array(2))


def _type_question_on_a_merge(x):
    v = 0 if x.sum() > 0 else np.int64(x.shape[0])
    return isinstance(v, (int, np.integer))   # true of both


def _type_question_answered_by_the_side(x):
    v = 0 if x.sum() > 0 else np.int64(x.shape[0])
    return hasattr(v, "dtype")   # a Python int has none


def test_type_questions_on_a_python_number_merged_with_a_numpy_value():
    check(_type_question_on_a_merge, (np.ones(3),), (-np.ones(3),))
    with pytest.raises(ag.ConversionError, match=r"hasattr\(\) of .* by the path a tensor `if`"):
        ag.function(_type_question_answered_by_the_side)(np.ones(3))


def _scalar_type_of_an_array_of_its_dtype_is_the_array(x, s):
    v = np.float32(x)   # x itself when x is float32 (the update changes the caller's x), else a new array
    v -= s
    return v


def test_a_numpy_scalar_type_called_on_an_array_of_its_dtype_gives_the_array_back():
    # fuzzer seed 1126003671: `v27 = np.float32(x); v27 -= ...` left the caller's x unchanged compiled
    for make in (lambda: np.arange(4, dtype=np.float32), lambda: np.arange(4.0)):
        eager_x, compiled_x = make(), make()
        assert_same(_scalar_type_of_an_array_of_its_dtype_is_the_array(eager_x, 2),
                    ag.function(_scalar_type_of_an_array_of_its_dtype_is_the_array)(compiled_x, 2))
        assert_same(eager_x, compiled_x)


def _products_of_a_0d_operand(y, x, n):
    s = n + y.min()               # -3.0 where n is 0
    return np.inner(s, np.abs(x * n)), np.dot(s, np.abs(x * n)), np.dot(np.abs(x * n), s), s * np.abs(x * n)


@cpu_only("numpy's BLAS sums onto +0.0; cupy's dot keeps -0.0")
def test_inner_and_dot_of_a_0d_operand_are_numpys_not_multiplys():
    # fuzzer seed 1126006348: numpy's inner/dot sum each product onto 0 (+0.0) where multiply gives -0.0
    args = (np.array([-1.5, 2.5, 3.0, -3.0], np.float32), np.array([True, False, False, True]), np.array(0, np.int32))
    expected, got = _products_of_a_0d_operand(*args), ag.function(_products_of_a_0d_operand)(*args)
    for e, g in zip(expected, got):
        assert repr(e) == repr(g)


def _ufuncs_of_python_numbers(n):
    w = 0
    while w < 2:      # w: a Python int the loop carries
        w += 1
        if n:
            break
    return np.bitwise_and(1, w), ag.cast(np.add(1, w), np.float64), np.multiply(0.5, w), np.maximum(w, 1)


def test_a_ufunc_of_python_numbers_gives_a_numpy_scalar():
    # fuzzer seed 1126010168: np.bitwise_and(1, w) of a loop's Python int gave a Python int (then a
    # 0-d array once cast) where numpy's ufunc gives an int64 scalar
    for n in (np.array(0, np.int32), np.array(1, np.int32)):
        assert_every_call_same(_ufuncs_of_python_numbers, n)


def _ufuncs_of_python_numbers_at_numpys_edges(y, s):
    w = 0
    while w < 1 and np.all(y > 0):   # w: a loop's Python int, 0 where the loop does not run
        w += 1
    b = w < 1                        # a Python bool
    q, r = np.divmod(w, s)
    return (np.remainder(w, s), np.floor_divide(w, 0), np.true_divide(w, s), q, r, np.add(b, True),
            np.remainder(b, True), np.add.outer(w, b), np.add(w, 1, casting="safe"),
            np.add(w, 1, dtype=np.int8, casting="safe"))   # NEP 50's loop for Python numbers


def _ufunc_of_a_negative_power(y):
    w = 0
    while w < 2 and np.all(y > 0):
        w += 1
    return np.power(w, -1)           # numpy: integers to negative integer powers raise


def _ufuncs_of_an_if_merge(y, s):
    w = 0                            # a Python int where the `if` is not taken
    if y[0] > 0:
        w = np.int64(5)
    return np.remainder(w, s), np.add(w, True)


def test_a_ufunc_of_python_numbers_computes_as_numpy_not_python():
    # fuzzer seed 1190012908: np.remainder(w, s) of Python ints ran Python's `%` (ZeroDivisionError)
    # where numpy gives 0 with a warning; np.add(True, True) gave 2, np.power(2, -1) 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's division by zero, eagerly too
        for y in (np.array([-2, -4, 2, 2]), np.array([1, 2, 3, 4])):
            for s in (0, 3):
                assert_every_call_same(_ufuncs_of_python_numbers_at_numpys_edges, y, s)
                assert_every_call_same(_ufuncs_of_an_if_merge, y, s)
            assert_every_call_same(_ufunc_of_a_negative_power, y)


def _ufunc_of_a_merge_of_other_types(y):
    w = 0                            # a Python int, or an int32 scalar
    if y[0] > 0:
        w = np.int32(5)
    return np.remainder(w, 2)        # int64 where the `if` is not taken, int32 where it is


def test_a_ufunc_of_a_merge_of_a_python_number_and_another_dtype_is_refused():
    with pytest.raises(ag.ConversionError, match=r"np.remainder on a value that is a Python int .* numpy int32") \
            as info:
        ag.function(_ufunc_of_a_merge_of_other_types)(np.array([1]))
    line = _ufunc_of_a_merge_of_other_types.__code__.co_firstlineno + 4
    assert f"test_fuzz_regressions.py:{line}" in str(info.value)


def _flips_of_python_numbers(x, n):
    w = 0
    while w < n:     # w: a Python int the tensor loop carries
        w += 1
    return np.flip(w), np.flip(np.random.randint(5)), np.flip(x[0]), np.flip(x)


def test_flip_of_a_python_number_is_numpys_scalar():
    # fuzzer seed 1130018603: np.flip of a drawn Python int indexed the int when the graph ran
    for n in (np.array(0, np.int32), np.array(3, np.int32)):
        np.random.seed(1)
        eager = _flips_of_python_numbers(np.arange(3.0), n)
        np.random.seed(1)
        assert_same(eager, ag.function(_flips_of_python_numbers)(np.arange(3.0), n))


def _stores_of_and_or(n, s, x):
    v = np.zeros(4, np.bool_)
    v[-4] = (0 - n) or (s if n else s)      # an int32 tensor or a Python int, by n
    x[1] = n or 2.5                         # into a float array
    return v, x


def test_an_and_or_result_of_mixed_types_stored_into_an_array_is_the_picked_operand():
    # fuzzer seed 1130011499: `v[-4] = (0 - n) or s` handed numpy the unresolved choice
    for n in (np.array(0, np.int32), np.array(2, np.int32)):
        assert_every_call_same(_stores_of_and_or, n, 3, np.zeros(3))


def test_an_and_or_result_with_a_python_int_stored_into_an_int_array_is_refused():
    def store(n):
        v = np.zeros(2, np.uint8)
        v[0] = n or 300          # numpy range-checks the Python int, and wraps an int32
        return v
    with pytest.raises(ag.ConversionError, match=r"x or y.*test_fuzz_regressions\.py"):
        ag.function(store)(np.array(1, np.int32))


def test_an_and_or_result_with_a_float_scalar_stored_into_an_int_array_is_refused():
    # fuzzer seed 1192012259: `y[0] = n or (2 / n)` with n == 0 stores np.float64(inf), which numpy
    # converts as int() does (OverflowError); the compiled store cast it and wrapped
    def store(y, n):
        y[n % 4] = n or (2 / n)
        return y
    with pytest.raises(ag.ConversionError, match=r"x or y.*test_fuzz_regressions\.py"):
        ag.function(store)(np.arange(4), np.array(0, np.int32))


def _unused_sum_of_unknown_length(x, y, n):
    v = np.unique(y[:n])
    unused = v + x          # (n,) + (4,): numpy raises unless n is 1 or 4
    return v


@cpu_only("it compares numpy's message word for word (cupy's differs in spacing)")
def test_an_unused_broadcast_that_can_fail_still_raises():
    # fuzzer seed 1130017049: `v1 + x` with v1 of a length known only at run time, then rebound,
    # was dropped as unused where eager raises "operands could not be broadcast"
    args = (np.arange(4.0), np.arange(4.0))
    for n in (2, 1, 4):
        assert_every_call_same(_unused_sum_of_unknown_length, *args, np.array(n, np.int32))


def _like_with_an_array_as_dtype(a, n):
    return np.ones_like(a, n)


def test_an_array_given_as_the_dtype_of_ones_like_raises_numpys_type_error():
    # fuzzer seed 1131008526: np.ones_like(a, a) took the tensor's dtype where numpy raises TypeError
    assert_every_call_same(_like_with_an_array_as_dtype, np.arange(3.0), np.array(2, np.int32))
    for like in (np.zeros_like, np.empty_like):
        with pytest.raises(TypeError, match="Cannot construct a dtype from an array"):
            ag.function(lambda a, n: like(a, n))(np.arange(3.0), np.array(2, np.int32))
    with pytest.raises(TypeError, match="Cannot construct a dtype from an array"):
        ag.function(lambda a, n: np.full_like(a, 1, n))(np.arange(3.0), np.array(2, np.int32))


def _zero_item_one(a):
    a[1] *= 0
    return a[:]


def _item_updated_by_a_right_side_that_writes_it(a, k):
    a[k % 4] -= _zero_item_one(a)[1]    # Python reads a[k % 4] before the right side zeroes it
    return a


def test_an_augmented_item_assignment_reads_the_item_before_its_right_side_runs():
    # fuzzer seed 1131017537: the right side ran first, so the item read was the one it wrote
    for k in (1, np.array(1, np.int32)):
        eager_a, compiled_a = np.arange(4.0), np.arange(4.0)
        assert_same(_item_updated_by_a_right_side_that_writes_it(eager_a, k),
                    ag.function(_item_updated_by_a_right_side_that_writes_it)(compiled_a, k))
        assert_same(eager_a, compiled_a)


def _unused_integer_power_reduce_and_accumulate(y):
    r = np.power.reduce(y)          # numpy raises for a negative integer exponent
    a = np.power.accumulate(y)
    return y + 1


@cpu_only("cupy's power.reduce of integers is not implemented (NotImplementedError)")
def test_an_unused_integer_power_reduce_or_accumulate_still_raises():
    # fuzzer seeds 1133008891 and 32001337: the unused reduce was dropped where eager raises
    for y in (np.array([2, 1, 3, -2], np.int32), np.array([2, 1, 3, 2], np.int32), np.array([2.0, -1.0])):
        assert_every_call_same(_unused_integer_power_reduce_and_accumulate, y)


def _like_with_a_numpy_scalar_as_dtype(x, n):
    return np.ones_like(np.abs(x - np.int64(2)), -n + n)   # -n + n: a numpy int32 scalar


def test_a_numpy_scalar_given_as_the_dtype_stands_for_its_dtype():
    # fuzzer seed 1135010137: numpy reads a numpy scalar's dtype where it refuses an array
    assert_every_call_same(_like_with_a_numpy_scalar_as_dtype, np.array([2, -3, -5, -4], np.int32),
                           np.array(3, np.int32))


def _view_of_an_argument_on_some_runs_then_the_argument_written(x, y, n, s):
    v2 = x[::-1]
    if n:
        v2[s % 4] -= 1            # writes x through the view
    else:
        v2 = n + y                # another array
    x[n % 4] = -s                 # on the runs v2 is x's view, v2 sees this
    return v2 + n


def _view_of_an_argument_on_some_runs_unwritten_then_the_argument_written(x, y, n, s):
    v2 = x[::-1]
    if n:
        pass                      # x's view as it is
    else:
        v2 = n + y
    v3 = v2[::-1]                 # a view of the result, unused
    x[n % 4] = -s
    return v2 + n


@pytest.mark.parametrize("fn", [_view_of_an_argument_on_some_runs_then_the_argument_written,
                                _view_of_an_argument_on_some_runs_unwritten_then_the_argument_written])
def test_an_if_result_that_views_an_argument_on_some_runs_is_refused_after_the_argument_is_written(fn):
    # fuzzer seed 1136007883: it read the contents from before the write (a silent wrong answer); the
    # second form was silent too until a write marked the `if` results that view the array on some runs
    args = (np.array([0, -2, 4, -4], np.int32), np.array([9, 8, 9, 8], np.uint8), np.array(2, np.int32), 0)
    with pytest.raises(ag.ConversionError, match=r"'x' \(.*\) was updated in place \(`\[\.\.\.\] =`\) at "
                                                 r".*test_fuzz_regressions.py:\d+"):
        ag.function(fn)(*args)


def _written_in_an_if_then_after_it(x, y, n):
    if n > 0:
        x[0] = 1
    x[1] = 2                      # moves on from the `if`'s contents of x: not another array
    y2 = y + 0
    if n > 1:
        y2[0] = 5
    y2 += 2
    return x, y2


def test_an_array_written_in_a_tensor_if_is_written_again_after_it():
    # a block's output for the memory it carried is that memory's contents, not "on some runs the
    # same array": this was refused (since 9381aab reverted 0052f74, which spared too much)
    for n in (np.int64(0), np.int64(1), np.int64(2)):
        assert_every_call_same(_written_in_an_if_then_after_it, np.arange(4.0), np.ones(4), n)


def _stores_whose_value_and_index_both_draw(x):
    v = np.zeros(4)
    v[v != np.random.randint(5)] = np.random.random()   # Python draws the value first, then the index
    x[np.random.randint(4)] = np.random.random()
    return v, x


def test_an_item_assignment_evaluates_its_value_before_its_index():
    # fuzzer seed 1137007594: the index's draw came first, so the two draws swapped
    np.random.seed(3)
    eager_x = np.zeros(4)
    expected = _stores_whose_value_and_index_both_draw(eager_x)
    np.random.seed(3)
    compiled_x = np.zeros(4)
    assert_same(expected, ag.function(_stores_whose_value_and_index_both_draw)(compiled_x))
    assert_same(eager_x, compiled_x)


def _zero_the_small(a):
    a[a < 2] = 0
    return 7


def _store_whose_value_writes_the_array_its_mask_reads(y):
    y[y == 0] = _zero_the_small(y)   # Python runs the value first: the mask sees the zeroed items
    return y


def test_a_store_whose_value_writes_the_target_builds_its_index_after_the_value():
    # fuzzer seed 1138006124: the mask was built from the array before the value's writes
    eager_y, compiled_y = np.array([0, 1, 5, 3]), np.array([0, 1, 5, 3])
    assert_same(_store_whose_value_writes_the_array_its_mask_reads(eager_y),
                ag.function(_store_whose_value_writes_the_array_its_mask_reads)(compiled_y))
    assert_same(eager_y, compiled_y)


def _finally_returning_from_a_loop(x, k):
    try:
        v = [1.5, 2.5][k]
        x = x + v
    finally:
        for i in range(2):
            w = 0
            while w < 2 and ag.maximum(w, w) <= k:
                w += 1
                return x * w   # cancels the IndexError in flight, as Python's finally does


def test_a_finally_whose_return_sits_in_a_python_loop_cancels_the_exception_in_flight():
    # fuzzer seed 1139005387: the converted `if` that returns at the end of a top-level finally
    # (written as a Python `if`) was staged as an ag__.if_stmt, whose branch function's `return`
    # left the finally normally, so the IndexError went on where eager returns
    x = np.array([1.0, -2.0], np.float32)
    for k in (2, 0, 1):
        assert_every_call_same(_finally_returning_from_a_loop, x, k)


def _finally_returning_on_a_tensor_condition(x, k):
    try:
        v = [1.5, 2.5][k]
        x = x + v
    finally:
        if x[0] > 0:
            return x


def test_a_finally_return_chosen_by_a_tensor_while_an_exception_is_in_flight_is_refused():
    x = np.array([1.0, -2.0], np.float32)
    with pytest.raises(ag.ConversionError, match=r"would cancel the exception in flight on some runs only.*"
                                                 r"test_fuzz_regressions.py:\d+"):
        ag.function(_finally_returning_on_a_tensor_condition)(x, 2)
    assert_every_call_same(_finally_returning_on_a_tensor_condition, x, 0)


def _round_of_a_loop_counter(x, n):
    w = 0
    total = x * 0
    while w < 3 and n > 1:
        w += 1
        print('p', np.round(w) * x[0])
        total = total + np.round(w, 1) + np.around(w)
    return total, np.round(w)


def test_np_round_of_a_python_int_loop_counter_is_numpys_scalar():
    # fuzzer seed 1153009497: np.round of a weak Python int indexed it with () when the graph ran
    # ("'int' object is not subscriptable"); eagerly numpy converts it and gives an int64 scalar
    x = np.array([1.5, -2.0], np.float64)
    for n in (np.array(4, np.int32), np.array(0, np.int32)):
        assert_every_call_same(_round_of_a_loop_counter, x, n)


def _copies_then_writes_the_source(x, y, n):
    x[:] = y[:]                  # the plan gives x's final contents as the view y[:]
    y[n % 4] = y[3]              # written back into the caller's y first
    return y


def _copies_then_writes_the_source_in_a_loop(x, y, n):
    x[:] = y[:]
    w = 0
    while w < 1 and n > 0:
        w += 1
        y[n % 4] = y[3]
    return y


@pytest.mark.parametrize("fn", [_copies_then_writes_the_source, _copies_then_writes_the_source_in_a_loop])
def test_an_argument_given_a_view_of_another_written_argument_keeps_its_contents(fn):
    """Fuzzer seed 1220010496 (older than the eighth session): x ended with y's final contents."""
    compiled = ag.function(fn)
    for _ in range(CALLS):
        eager_args = (np.array([1.0, 0.0, 3.5, 4.0]), np.array([4.0, 3.5, -3.0, -1.5]), np.array(4, np.int32))
        args = tuple(a.copy() for a in eager_args)
        assert_same(fn(*eager_args), compiled(*args))
        for a, b in zip(args, eager_args):
            np.testing.assert_array_equal(a, b)


def _list_grown_in_a_loop_then_its_item_written(x, y, n):
    items = [x]
    w = 0
    while w < 3 and n > 0:
        w += 1
        items.append(y)          # eagerly the list holds y itself
    y[0] = 7.0
    return items


def _length_of_a_list_grown_in_a_loop_after_its_item_is_written(x, y, n):
    items = [x]
    w = 0
    while w < 3 and n > 0:
        w += 1
        items.append(y)
    y[0] = 7.0
    return len(items)            # its length, which the write does not change


def test_a_list_a_loop_grew_is_stale_after_its_item_is_written():
    """Fuzzer seed 1222010457 (older than the eighth session): the list kept y's old contents."""
    args = (np.arange(4.0), np.ones(4), np.array(3, np.int32))
    with pytest.raises(ag.ConversionError, match=r"'y' \(a list holding it\) was updated in place"):
        ag.function(_list_grown_in_a_loop_then_its_item_written)(*args)
    assert_every_call_same(_length_of_a_list_grown_in_a_loop_after_its_item_is_written, *args)


def _a_store_in_a_graph_loop_inside_another(x, n, s):
    w = 0
    while w < 3 and s:
        w += 1
        try:
            pass
        finally:
            for i in ag.range(n, -1, 2):
                x[1:3] = (ag.cast((-i * n) + ag.zeros([4], np.int64), np.int64))[1:3]
    return x


def test_a_sub_graph_captures_what_a_pass_replaced_its_value_with():
    """Fuzzer seed 1230004319 (the ninth session's native integer checks asked `box_of` of a loop
    body's captured value): a pass replacing an outer value left the body's capture of the old,
    erased one, and `box_of` followed it into a node without inputs (IndexError)."""
    for n in (1, 3, 0):
        assert_every_call_same(_a_store_in_a_graph_loop_inside_another,
                               np.array([6, 3, 4, 8], np.uint8), np.array(n, np.int32), 3)


def _squeeze_by_a_loop_counter(n):
    w = 0
    while w < 3 and (w >= np.squeeze(n, w)):
        w += 1
    return w


def test_an_axis_known_only_when_the_graph_runs_is_refused_at_the_users_line():
    """Fuzzer seed 1234005982: the TypeError for an axis that is a tensor named no user line."""
    with pytest.raises(TypeError, match=r"axis must be a Python int .*test_fuzz_regressions.py:\d+"):
        ag.function(_squeeze_by_a_loop_counter)(np.array(2, np.int32))
