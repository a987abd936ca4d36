"""Constructs from TensorFlow AutoGraph's reference tests (early returns, loop-created
variables, composite names, lists) that compile to eager's results: our own cases, eager
numpy as the oracle, tensor-valued conditions (0-d arrays)."""
import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import assert_same, check, on_fresh_arguments


# --- a variable first assigned inside a tensor loop ----------------------------------------

def loop_creates_array(n):
    i = 0
    while i < n:
        v = np.zeros([1, 2, 3])
        i += 1
    return v


def loop_creates_dict(n):
    i = 0
    while i < n:
        v = {"a": np.zeros([2]), "b": np.ones([1, 2]) * i}
        i += 1
    return v["a"], v["b"]


def for_creates_scalar(n):
    for i in range(n):
        last = np.sqrt(i * 2.0)
    return last


@pytest.mark.parametrize("fn", [loop_creates_array, loop_creates_dict, for_creates_scalar])
def test_variable_created_in_loop(fn):
    check(fn, (np.array(1),), (np.array(3),), traces=1)


@pytest.mark.parametrize("fn", [loop_creates_array, loop_creates_dict, for_creates_scalar])
def test_variable_created_in_loop_that_runs_zero_times(fn):
    with pytest.raises(UnboundLocalError):
        fn(np.array(0))
    with pytest.raises(UnboundLocalError, match="ran zero times"):
        ag.function(fn)(np.array(0))


# --- an item or attribute first written inside a tensor loop -------------------------------

def new_key_in_while(b):
    y = {"b": b}
    while y["b"] <= 10:
        y["a"] = y["b"] + 1
        y["b"] = y["b"] * 2
    return y


class Box:
    pass


def new_attribute_in_for(x):
    box = Box()
    for v in x:
        box.last = v * 2.0
    return box.last


def test_item_created_in_loop():
    check(new_key_in_while, (np.array(5),), (np.array(10),), traces=1)
    check(new_attribute_in_for, (np.array([1.0, 2.0]),), (np.array([3.0, -1.0]),), traces=1)


def test_item_created_in_loop_that_runs_zero_times():
    # eagerly y has no 'a' then: the compiled dict leaves the key out on those runs
    check(new_key_in_while, (np.array(11),), (np.array(5),), (np.array(12),), traces=1)
    check(new_key_in_for, (np.array(0), 0), (np.array(2), 0), traces=1)
    # an attribute stays refused at run time
    with pytest.raises(ValueError, match=r"`box.last` is first written inside a `for` loop"):
        ag.function(new_attribute_in_for)(np.zeros(0))


def new_key_in_for(n, x):
    y = {}
    for i in ag.range(n):
        x = x - i
        y["a"] = x
    return y


def _reads_key_made_in_loop(n):
    y = {"b": n}
    for i in ag.range(n):
        y["a"] = i * 2
    return y["a"] + 1


def _returns_key_made_in_loop(n):
    y = {}
    for i in ag.range(n):
        y["a"] = i * 2
    return y["a"]


@pytest.mark.parametrize("fn", [_reads_key_made_in_loop, _returns_key_made_in_loop])
def test_using_an_item_a_loop_may_leave_unset_is_refused(fn):
    with pytest.raises(ConversionError, match=r"`y\['a'\]` is first written inside the `for` loop on a tensor at "
                                              r".*test_autograph_reference.py:\d+, so it is unset where the loop "
                                              r"runs zero times"):
        ag.function(fn)(np.array(2))


# --- try/finally around tensor control flow, `return` inside `finally` ---------------------

def return_in_try_then_finally(x):
    try:
        if x > 0:
            return x * 2
        return -x
    finally:
        x = x + 1
        print("finally", x)


def finally_return_overrides(x):
    try:
        return 2
    finally:
        if x > 0:
            return 1
        return 0


def finally_returns_on_one_branch(x):
    try:
        if x > 0:
            return x
    finally:
        if x > 2:
            return x * 10
    return x - 100


def finally_cancels_an_exception(x):
    try:
        raise KeyError("gone")
    finally:
        return x + 1


def finally_return_guarded_by_earlier_return(x, n):
    if n > 3:
        return x
    try:
        x = x + 1.0
    finally:
        if x > 2.0:
            return x * 2.0
    return x


@pytest.mark.parametrize("fn", [return_in_try_then_finally, finally_return_overrides,
                                finally_returns_on_one_branch, finally_cancels_an_exception])
def test_try_finally(fn, capsys):
    compiled = ag.function(fn)
    for x in (-1, 0, 1, 3):
        assert_same(fn(np.array(x)), compiled(np.array(x)))
    printed = capsys.readouterr().out.splitlines()  # the eager and the compiled call print in turn
    assert printed[::2] == printed[1::2]


def test_finally_return_after_an_earlier_return():
    check(finally_return_guarded_by_earlier_return, (np.float64(0.5), 1), (np.float64(1.5), 1),
          (np.float64(1.5), 5))


def finally_return_chosen_by_tensor_while_raising(x):
    try:
        raise KeyError("in flight")
    finally:
        if x > 0:
            return x


def test_a_tensor_chosen_return_that_would_cancel_an_exception_is_refused():
    with pytest.raises(ag.ConversionError, match=r"would cancel the exception in flight on some runs only"):
        ag.function(finally_return_chosen_by_tensor_while_raising)(np.array(1))


# --- lists: pop() inside an expression, stacking a list a loop left empty -----------------

def pop_into_a_sum(n):
    items = [1, 2, 3, 4]
    s = 0
    for _ in range(n):
        s += items.pop()
    return ag.stack(items), s


def pop_in_a_branch(x):
    items = [x, x * 2.0, x * 3.0]
    total = x * 0.0
    if x > 0:
        total += items.pop()
    return total, ag.stack(items)


def fill(n):
    items = []
    for i in range(n):
        items.append(i)
    return ag.stack(items)


def test_pop_in_an_augmented_assignment():
    check(pop_into_a_sum, (np.array(0),), (np.array(2),), (np.array(3),), traces=1)


def test_pop_in_a_tensor_branch():
    check(pop_in_a_branch, (np.float64(-1.0),), (np.float64(2.0),), traces=1)


def test_stacking_a_list_a_tensor_loop_fills():
    check(fill, (np.array(3),), (np.array(1),), traces=1)


def loop_in_finally(x, n):
    try:
        if x[0] > 0:
            y = x * 2.0
    finally:
        for i in ag.range(n):
            last = i
    return n


def test_a_loop_variable_in_finally_not_read_after_it_needs_no_iteration():
    # fuzzer seed 24000079: liveness took every name read in a `try` as live after the loop
    check(loop_in_finally, (np.array([1.0]), np.array(0, np.int32)), (np.array([-1.0]), np.array(2, np.int32)))


def _refused_inside(a):
    return np.histogramdd(a)  # no compiled form: the trace raises


def try_with_return_in_finally_around_a_refusal(x, s):
    try:
        if s:
            print("p", _refused_inside(x))
    finally:
        return x


def test_return_in_finally_does_not_swallow_a_refusal():
    # fuzzer seed 124000449: eagerly the try body ran and printed; the trace's refusal was cancelled
    with pytest.raises(ConversionError, match="np.histogramdd is not supported on tensors"):
        ag.function(try_with_return_in_finally_around_a_refusal)(np.ones(2), 2)


def _raises_key_error():
    raise KeyError("k")


def _raise_caught_in_the_guard_of_a_tensor_return(c):
    if c > 0:
        return 2
    try:
        return _raises_key_error()
    except KeyError:
        pass
    return 1


def _raise_caught_in_a_tensor_branch(c):
    if c > 0:
        try:
            v = _raises_key_error()
        except KeyError:
            v = 5
        return v
    return 1


def _raise_caught_in_a_tensor_loop(c):
    i = 0
    while i < c:
        try:
            raise ValueError("v")
        except ValueError:
            i += 2
    return i


@pytest.mark.parametrize("fn", [_raise_caught_in_the_guard_of_a_tensor_return, _raise_caught_in_a_tensor_branch,
                                _raise_caught_in_a_tensor_loop])
def test_a_raise_handled_in_the_same_staged_block(fn):
    compiled = ag.function(fn)
    for c in (np.array(1), np.array(0), np.array(3)):
        assert compiled(c) == fn(c)


def _raise_leaving_a_tensor_branch(c):
    if c > 0:
        _raises_key_error()
    return 1


def test_a_raise_leaving_a_staged_block_is_still_refused():
    with pytest.raises(ConversionError, match=r"`raise KeyError` inside an `if`/`while`/`for` on a tensor is not "
                                              r"supported \(at .*test_autograph_reference.py:\d+\)"):
        ag.function(_raise_leaving_a_tensor_branch)(np.array(1))


# --- a value on some paths, None (falling off the end) on others, chosen by a tensor ----------

def return_possibly_undefined(x):
    if x > 0:
        if x < 5:
            return x
    else:
        return x * x * x


def return_float_or_none(x):
    if x.sum() > 1.0:
        return x * 2.0


def return_python_number_or_none(c):
    if c:
        return 3


def test_a_value_or_none_is_chosen_when_the_graph_runs():
    check(return_possibly_undefined, (np.array(0),), (np.array(3),), (np.array(5),), (np.int64(-2),))
    check(return_float_or_none, (np.array([0.5, 1.0]),), (np.array([0.1, 0.2]),), traces=1)
    compiled = check(return_python_number_or_none, (np.array(True),), (np.array(False),), traces=1)
    assert type(compiled(np.array(True))) is int


def _uses_possibly_none(x):
    r = return_float_or_none(x)
    if r is None:  # (r itself stays refused after the test: a tensor `if` does not narrow it)
        return x.sum()
    return x.max()


def _tests_possibly_none(x):
    r = return_float_or_none(x)
    return r is not None, r is None


def _adds_to_possibly_none(x):
    return return_float_or_none(x) + 1.0


def test_is_none_on_a_possibly_none_result():
    check(_uses_possibly_none, (np.array([0.5, 1.0]),), (np.array([0.1, 0.2]),), traces=1)
    check(_tests_possibly_none, (np.array([0.5, 1.0]),), (np.array([0.1, 0.2]),), traces=1)


def test_arithmetic_on_a_possibly_none_result_is_refused():
    with pytest.raises(ConversionError, match=r"the result of 'return_float_or_none' is a float64\[2\] or None "
                                              r".*only return it or test `is None`.*"
                                              r"test_autograph_reference.py:\d+"):
        ag.function(_adds_to_possibly_none)(np.array([0.5, 1.0]))


def _returns_tuple_or_none(x):
    if x > 0:
        return x, x


def test_a_structure_or_none_is_refused():
    with pytest.raises(ConversionError, match=r"'_returns_tuple_or_none' returns tuple .* ends without `return` "
                                              r"\(None\) on others"):
        ag.function(_returns_tuple_or_none)(np.array(1))


# --- a list of lists whose inner length the graph decides ----------------------------------

def nested_fill(m, n):
    mat = []
    for _ in ag.range(m):
        row = []
        for j in ag.range(n):
            row.append(j * 1.5)
        mat.append(ag.stack(row))
    return ag.stack(mat)


def nested_extend(m, n):
    mat = []
    for i in ag.range(m):
        mat.extend([ag.ones([n]) * i])
    return ag.stack(mat)


def test_a_list_of_rows_of_unknown_length_filled_in_a_tensor_loop():
    check(nested_fill, (np.array(5), np.array(3)), (np.array(1), np.array(4)), traces=1)
    check(nested_extend, (np.array(3), np.array(2)), (np.array(1), np.array(4)), traces=1)


# --- item assignment to a list a tensor loop carries -----------------------------------------

def read_write_loop(n):
    items = []
    items.append(1)
    items.append(1)
    for i in ag.range(2, n):
        items.append(items[i - 1] + items[i - 2])
        items[i - 2] = -items[i - 2]
    return ag.stack(items), items[0]


def update_rows_in_loop(x, n):
    rows = [x, x * 2.0]
    for i in ag.range(n):
        rows.append(x + i)
        rows[-1] *= 3.0
        rows[i % 2] = rows[i % 2] - 1.0
    return ag.stack(rows), rows[1]


def _store_other_type(n):
    items = [1, 2]
    for i in ag.range(n):
        items[i] = 0.5
    return items


def test_item_assignment_to_a_list_a_tensor_loop_carries():
    check(read_write_loop, (np.array(4),), (np.array(2),), (np.array(7),), traces=1)
    check(update_rows_in_loop, (np.array([1.0, 2.0]), np.array(3)), (np.array([0.5, -1.0]), np.array(0)), traces=1)


def test_item_assignment_of_another_type_to_a_carried_list_is_refused():
    with pytest.raises(ConversionError, match=r"the list's items are int64\[\] and the new item is float64\[\] "
                                              r"\(at .*test_autograph_reference.py:\d+\)"):
        ag.function(_store_other_type)(np.array(2))


def test_saving_a_dict_with_an_item_a_loop_may_leave_unset_is_refused(tmp_path):
    compiled = ag.function(new_key_in_for)
    compiled(np.array(2), 0)
    with pytest.raises(ValueError, match="leaves unset on some runs"):
        ag.save(compiled.get_concrete_function(np.array(2), 0), str(tmp_path / "m.agz"))


def test_saving_a_value_or_none_result(tmp_path):
    compiled = ag.function(return_float_or_none)
    compiled(np.array([0.5, 1.0]))
    ag.save(compiled.get_concrete_function(np.array([0.5, 1.0])), str(tmp_path / "m.agz"))
    loaded = ag.load(str(tmp_path / "m.agz"))
    assert_same(return_float_or_none(np.array([0.5, 1.0])), loaded(np.array([0.5, 1.0])))
    assert loaded(np.array([0.1, 0.2])) is None


def _asks_for_keys(n):
    y = {}
    for i in ag.range(n):
        y["a"] = i * 2
    return len(y), "a" in y


def _dict_argument(n, y):
    for i in ag.range(n):
        y["a"] = i * 2
    return y


def test_a_dict_whose_keys_the_function_asks_for_keeps_the_run_time_check():
    # `len(y)`, `'a' in y` are answered while tracing: the key must be there on every run
    compiled = check(_asks_for_keys, (np.array(2),))
    with pytest.raises(ValueError, match=r"`y\['a'\]` is first written inside a `for` loop on a tensor that ran zero times"):
        compiled(np.array(0))


@pytest.mark.parametrize("n", [0, 2])
def test_a_dict_argument_gets_the_key_on_the_runs_the_loop_runs(n):
    # the function only indexes it and returns it: the caller's dict gets the key or not, per run
    on_fresh_arguments(_dict_argument, lambda: np.array(n), dict)


def _tests_unset_item(n):
    y = {}
    for i in ag.range(n):
        y["a"] = i * 2
    return y["a"] is None


def test_testing_an_item_a_loop_may_leave_unset_is_refused():
    with pytest.raises(ConversionError, match=r"so it is unset where the loop runs zero times"):
        ag.function(_tests_unset_item)(np.array(2))
