"""Tensor loops match eager: captures of nested sub-graphs, the dtype of loop indices,
and conditions with walrus evaluated once per iteration (issue 11)."""
import numpy as np

import autograph_lite as ag
from tests.helpers import assert_same, cpu_only, run_both


# -- one capture per outer value in nested sub-graphs ------------------------------------------

def test_if_around_range_loop_with_inner_if_reads_argument_once():
    # The inner `if` captures `n` through the outer branch's placeholder and the loop body
    # captured it directly: two placeholders for one value crashed copy_graph (KeyError).
    def f(x, n):
        out = x
        if x > 0:
            for i in ag.range(n, 4, 3):
                if n < 1:
                    out = out + 1.0
                else:
                    out = out * 2.0
        return out

    for x, n in [(1.0, 1), (1.0, -2), (-1.0, 1)]:
        run_both(f, np.float32(x), np.int32(n))


def test_nested_tensor_loops_with_empty_inner_range():
    # fuzzer finding F1
    def b(y, n):
        for r in y:
            for i in ag.range(n, 0, 2):
                v = ag.where(ag.abs(n), i, i)
        return 1

    run_both(b, np.array([1., 2.], np.float32), np.array(3, np.int32))


def test_nested_tensor_loops_read_outer_value_in_inner_if():
    def f(y, n):
        total = np.float32(0)
        for r in y:
            for i in ag.range(n):
                if ag.abs(n) > i:
                    total = total + r
                else:
                    total = total - r
        return total

    run_both(f, np.array([1., 2.], np.float32), np.array(3, np.int32))


# -- loop indices are Python ints (weak, NEP 50) where eager's are --------------------------------

def _calls(fn, *args, times=4):
    """Compiled `fn` matches eager on every one of several calls (later ones may run as C)."""
    compiled = ag.function(fn)
    eager = fn(*args)
    for _ in range(times):
        assert_same(eager, compiled(*args))


def test_range_index_times_float32_stays_float32():
    def f(n, v):
        out = []
        for i in range(n):
            out.append(i * v)
        return out, i * v, v + i, -i, i // 2

    for n in (np.int32(3), np.array(4, np.int64), np.int8(2)):
        _calls(f, n, np.float32(1.5))
        _calls(f, n, np.arange(2, dtype=np.float32))


def test_range_with_tensor_start_and_step_gives_python_ints():
    def f(a, b, s, v):
        last = v
        for k in range(a, b, s):
            last = ag.where(k > a, k, v) + k * v
        return last, k * v

    _calls(f, np.int32(1), np.int32(8), np.int32(3), np.float32(0.5))
    _calls(f, np.int64(7), np.int64(-2), np.int8(-2), np.float32(0.5))


def test_range_index_with_small_int_dtypes():
    def f(n, a, b):
        out = []
        for i in range(n):
            out.append(a * i + b - i)
        return out, a ** i, i ** 2 * a, b // (i + 1), ag.where(b > 1, i, b)

    _calls(f, np.int32(4), np.int8(3), np.uint8(200))
    _calls(f, np.int32(3), np.arange(3, dtype=np.int8), np.arange(3, dtype=np.uint8))


def test_enumerate_counter_is_a_python_int():
    def f(x, v):
        out = []
        total = v
        for j, e in enumerate(x):
            out.append(j * v + e)
            total = total + j * e
        return out, total, j * v, v - j

    _calls(f, np.arange(3, dtype=np.float32), np.float32(2))
    _calls(f, np.arange(4, dtype=np.int8), np.int8(2))


def test_enumerate_with_tensor_start():
    def f(x, s, v):
        for j, e in enumerate(x, s):
            v = v + j * e
        return v, j * e

    _calls(f, np.arange(3, dtype=np.float32), np.int32(5), np.float32(1))


def test_zip_of_range_and_tensor():
    def f(n, x, v):
        out = []
        for i, e in zip(range(n), x):
            out.append(i * e)
        for k, e in zip(range(5), x):
            v = v + k * e
        return out, v, k * v

    _calls(f, np.int32(2), np.arange(3, dtype=np.float32), np.float32(1))
    _calls(f, np.int32(4), np.arange(3, dtype=np.float32), np.float32(1))


def test_ag_range_items_stay_numpy_ints():
    # eager ag.range is np.arange: its items are int64 (strong), so i * float32 is float64
    def f(n, v):
        for i in ag.range(n):
            v = v + ag.cast(i, np.float32)
        return v, i * v

    _calls(f, np.int32(3), np.float32(1))


def test_index_in_nested_loops_and_tensor_if():
    def f(n, x, v):
        out = []
        for i in range(n):
            for j, e in enumerate(x):
                if e > i:
                    out.append(i * j * v)
                else:
                    out.append(v - j)
        return out

    _calls(f, np.int32(3), np.arange(3, dtype=np.float32), np.float32(0.5))


# -- `:=` in a staged while condition runs once per test, as in Python ---------------------------

def _printed_both(capsys, fn, *args):
    eager = fn(*args)
    eager_out = capsys.readouterr().out
    compiled = ag.function(fn)
    for _ in range(3):
        assert_same(eager, compiled(*args))
        assert capsys.readouterr().out == eager_out
    return eager_out


def _check(v):
    print("check", v)
    return v


def test_walrus_condition_with_print_runs_once_per_test(capsys):
    def f(x):
        i = 0
        while (v := _check(x[i])) < 3.0:
            i += 1
        return i, v

    out = _printed_both(capsys, f, np.array([1., 2., 5., 1.], np.float32))
    assert out.count("check") == 3
    _printed_both(capsys, f, np.array([4., 2.], np.float32))  # the first test fails


def test_walrus_condition_target_read_and_written_in_the_body(capsys):
    def f(x, n):
        i = 0
        total = x[0] * 0
        while (k := i * 2) < n:
            print("k", k)
            total = total + x[k % 3] * k
            i += 1
        return total, k, i

    _printed_both(capsys, f, np.arange(3, dtype=np.float32), np.int32(7))
    _printed_both(capsys, f, np.arange(3, dtype=np.float32), np.int32(0))


def test_walrus_condition_rebinds_a_python_start(capsys):
    def f(x, limit):
        i = 0
        total = x[0]
        while (i := i + 1) < limit:
            print("at", i)
            total = total + x[i % 4] * i
        return i, total

    _printed_both(capsys, f, np.array([1., 2., 5., 1.], np.float32), np.int32(6))
    _printed_both(capsys, f, np.array([1., 1., 1., 1.], np.float32), np.int32(6))


def test_walrus_condition_appends_to_a_list(capsys):
    def f(x):
        seen = []
        i = 0
        while (v := x[i]) > 0:
            seen.append(v)
            i += 1
        return seen, v

    _printed_both(capsys, f, np.array([3., 2., 0., 1.], np.float32))


# -- a tensor `if` whose branches both give the same outer value gives that value ------------------

def _effects_both(fn, *args):
    """Result and the arguments after the call (in-place updates) match eager's."""
    eager_args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    compiled_args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    assert_same(fn(*eager_args), ag.function(fn)(*compiled_args))
    for e, c in zip(eager_args, compiled_args):
        assert_same(e, c)


def test_if_that_rebinds_to_the_same_argument_keeps_the_alias():
    # fuzzer seed 5000293: `v1` is `y` on both paths, so `v1 += n` updates the caller's y
    def f(y, n):
        v1 = y
        if n:
            v1 = y
        v1 += n
        return n

    _effects_both(f, np.array([-2.5, 2.5], np.float32), np.array(2, np.int32))
    _effects_both(f, np.array([-2.5, 2.5], np.float32), np.array(0, np.int32))


def test_if_whose_branches_both_give_an_outer_value():
    def f(x, n):
        a = x * 2.0
        if n > 0:
            b = a
        else:
            b = a
        b += 1.0
        return b, n

    _effects_both(f, np.array([1.0, 2.0], np.float32), np.int32(1))


def _raises_at(fn, args, *words):
    """Compiling `fn` raises ConversionError naming `words` and the user's line of the update."""
    import inspect
    import pytest
    lines, first = inspect.getsourcelines(fn)
    line = first + next(i for i, text in enumerate(lines) if "+=" in text)
    with pytest.raises(ag.ConversionError) as info:
        ag.function(fn)(*args)
    message = str(info.value)
    assert f"{__file__}:{line}" in message, message
    for word in words:
        assert word in message, message


def test_in_place_update_of_an_argument_only_some_if_paths_give_is_refused():
    def f(y, n):
        v1 = y
        if n > 0:
            v1 = y
        else:
            v1 = y * 2
        v1 += n
        return v1

    _raises_at(f, (np.array([-2.5, 2.5], np.float32), np.int32(2)), "argument 'y'", "`+=`")


def test_in_place_update_of_an_argument_a_tensor_loop_may_not_rebind_is_refused():
    def f(y, n):
        acc = y
        for i in range(n):
            acc = acc * 2.0
        acc += 1.0
        return acc

    _raises_at(f, (np.array([1.0, 2.0], np.float32), np.int32(0)), "argument 'y'", "`+=`")


def test_value_an_if_may_alias_is_not_read_after_an_in_place_update():
    def f(x, n):
        a = x * 2.0
        if n > 0:
            b = a
        else:
            b = a * 3.0
        b += 1.0
        return b, a

    _raises_at(f, (np.array([1.0, 2.0], np.float32), np.int32(1)), "'b'", "`+=`")


def test_value_an_if_may_alias_is_fine_when_not_read_again():
    def f(x, n):
        a = x * 2.0
        if n > 0:
            b = a
        else:
            b = a * 3.0
        b += 1.0
        return b

    for n in (1, -1):
        _effects_both(f, np.array([1.0, 2.0], np.float32), np.int32(n))


def test_where_with_a_non_bool_condition_into_a_reused_buffer():
    # fuzzer seeds 5000057 and 7000219: buffer reuse wrote where(c, x, y) as copyto(y, x, where=c),
    # which needs a bool c
    def f(x, y, n):
        return ag.where(x, (y <= y) * (y <= y), x * n), ag.where(y * 0.5, x + 1, y * 2)

    run_both(f, np.array([-3, 0, 2], np.int32), np.array([1.0, 0.0, 2.5], np.float32), np.int32(2))


def test_range_over_unsigned_and_small_int_bounds_counts_exactly():
    # the count was computed in the bounds' dtype: 0 - uint8(5) wrapped
    def f(n, m, v):
        out = v
        for i in range(0, n, 2):
            out = out + i
        for j in range(m, -3, -2):
            out = out - j
        for k in range(n, m):
            out = out * 0.5 + k
        return out

    for n, m in [(np.uint8(5), np.int8(4)), (np.uint8(250), np.int8(127)), (np.uint8(0), np.int8(-128))]:
        _calls(f, n, m, np.float32(0))


# -- a staged while condition that prints runs once per test ----------------------------------------

def _noisy(a, k):
    i = 0
    while i < 2 and k:
        i += 1
        print("inner", k)
    return True


def test_while_condition_calling_a_function_that_prints(capsys):
    # fuzzer seed 12000377: the first test was staged before the loop and again as the loop's
    # condition, so its prints ran twice
    def f(x, s):
        w = 0
        while w < 3 and (ag.reduce_sum(x) <= _noisy(x, s)):
            w += 1
        return w

    out = _printed_both(capsys, f, np.zeros(2, np.float32), np.int32(3))
    assert out.count("inner") == 6
    _printed_both(capsys, f, np.ones(2, np.float32), np.int32(3))


def test_while_condition_with_a_tensor_print(capsys):
    def f(x):
        i = 0
        while _check(x[i]) < 3.0:
            i += 1
        return i

    out = _printed_both(capsys, f, np.array([1., 2., 5., 1.], np.float32))
    assert out.count("check") == 3


# -- an argument updated in place by a tensor loop inside a tensor `if` ----------------------------

def test_argument_updated_in_a_loop_inside_an_if_is_written_back():
    def f(x, y, n):
        if x[-1] > 0:
            for i in range(n):
                x += y
        return n, ag.reduce_sum(x)

    for last in (0, 4):
        _effects_both(f, np.array([1, 2, 3, last], np.uint8), np.array([2, 3, 1, 4], np.uint8), np.int32(2))


def test_argument_updated_in_a_loop_inside_an_if_and_returned():
    def f(x, y, n):
        v = x
        if x[-1] > 0:
            pass
        else:
            for i in ag.range(n):
                v += y
        return v * 1

    for last in (0, 4):
        _effects_both(f, np.array([1., 2., 3., last], np.float32), np.array([2., 3., 1., 4.], np.float32),
                      np.int32(2))


def test_argument_updated_in_a_loop_inside_an_if_but_not_kept_is_written_back():
    # fuzzer seed 12000357 (was a silent difference: the caller's x never changed); `v1 += y` writes
    # x's memory, which the loop and the `if` carry out
    def f(x, y, n):
        v1 = x
        if x[-1]:
            pass
        else:
            for i in ag.range(n):
                v1 += y

    for last in (0, 4):
        _effects_both(f, np.array([1, 2, 3, last], np.uint8), np.array([2, 3, 1, 4], np.uint8), np.int32(2))


def test_flat_tuple_result_with_an_argument_updated_in_place():
    # fuzzer seed 12000180: the written-back argument leaked into the returned tuple
    def helper(a, k):
        for i in range(1):
            v = a
            v += a * 0
        return k

    def f(x, s):
        return (ag.cast(helper(x, s) + ag.zeros([4], np.int32), np.int32), s * 2)

    for _ in range(2):
        _effects_both(f, np.array([2, 2, 4, 0], np.int8), np.int32(3))


@cpu_only("memory shared with a host argument: a device result is always a fresh device array")
def test_value_simplified_to_an_argument_and_returned_through_an_if_is_a_fresh_array():
    # fuzzer seed 12000060: `0 + n` became `n`, which the `if` passed through: the caller's own array
    def f(x, n, lst):
        v = len(lst) + n
        w = x * 1
        if x[0] > 0:
            return x[0] + 1, x
        return v, w

    n, x = np.array(1, np.int32), np.array([-1, 2], np.int32)
    compiled = ag.function(f)
    for _ in range(2):
        out = compiled(x, n, [])
        assert_same(f(x, n, []), out)
        assert not np.may_share_memory(out[0], n) and not np.may_share_memory(out[1], x)


def test_while_condition_that_prints_and_gives_a_float(capsys):
    def f(x):
        i = 0
        while i < 3 and _check(x[i]):
            i += 1
        return i

    _printed_both(capsys, f, np.array([1., 2., 0., 1.], np.float32))
    _printed_both(capsys, f, np.array([1., 2., 3., 1.], np.float32))


def test_numeric_error_while_tracing_a_branch_raises_when_the_branch_runs():
    # fuzzer seed 13000136: eagerly the branch never runs; compiled traces it (was a bare OverflowError,
    # then a refusal naming the `if`): the graph raises Python's OverflowError on the runs that take it
    import inspect
    import pytest

    def f(y, s):
        v = ag.cast(y, np.uint8)
        if ag.reduce_max(y) > 0:
            pass
        else:
            v = v * (ag.cast(True, np.uint8) - -s)
        return v

    lines, first = inspect.getsourcelines(f)
    compiled = ag.function(f)
    assert_same(f(np.ones(2, np.float32), 1), compiled(np.ones(2, np.float32), 1))
    with pytest.raises(OverflowError) as info:
        compiled(np.zeros(2, np.float32), 1)
    assert f"{__file__}:{first + 5}" in str(info.value), str(info.value)


def _assigned_in_outer_and_nested_loop(y, s):
    w1 = 0
    while w1 < 2 and not s:
        w1 += 1
        v = y
        w3 = 0
        while w3 < 3:
            w3 += 1
            if w3 > 1:
                v = y[0] + ag.zeros([4], np.float32)
            else:
                v = w1 + ag.zeros([4], np.float32)
            v = v * 2
    return w1


def test_a_name_an_inner_python_loop_assigns_is_its_own_local_there():
    # the inner loop body is a function of its own: `v` from the outer body is not
    # defined in it until it assigns `v` (fuzzer seed 1001766: UnboundLocalError)
    run_both(_assigned_in_outer_and_nested_loop, np.arange(4, dtype=np.float32), 0)
