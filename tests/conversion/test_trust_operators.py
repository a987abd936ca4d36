"""Issue 11, operators: compiled equals eager (values, dtypes, printed output) or a clear error
naming the construct and the user's line. and/or/not, print, formatting, try/return, list
methods in staged loops, lists of tensors given to ops."""
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from autograph_lite.errors import ConversionError
from helpers import assert_same, check, cpu_only


def line_of(fn, text):
    """`file:line` of the first line of `fn`'s source containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(fn)}:{start + offset}"


def compare_printed(fn, args_list, capsys):
    """Each call prints (and returns) what the eager run prints, on every call."""
    compiled = ag.function(fn)
    for args in args_list:
        eager = fn(*args)
        eager_out = capsys.readouterr().out
        got = compiled(*args)
        assert capsys.readouterr().out == eager_out
        assert_same(eager, got)


# --- item 3: `and` / `or` return an operand, `not` a bool ------------------------------------

def and_operands(x, y):
    return x and y


def or_operands(x, y):
    return x or y


@pytest.mark.parametrize("fn", [and_operands, or_operands])
@pytest.mark.parametrize("x, y", [(np.int32(0), np.int32(3)), (np.int32(2), np.int32(3)),
                                  (np.array(0.0), np.array(2.5)), (np.array(1.5), np.array(0.0)),
                                  (np.array(True), np.array(False))])
def test_and_or_return_an_operand_with_its_dtype(fn, x, y):
    check(fn, (x, y))


def and_python_scalar(x):
    return x and 3


def and_python_scalar_then_arithmetic(x):
    return (x and 3) + np.uint8(1)


def test_and_or_of_a_numpy_value_and_a_python_number_returns_the_operand_eager_returns():
    """Eagerly `x and 3` is np.int32(0) or the Python int 3 by the value of x: the compiled call
    returns the same one; numpy types them apart later (`(x and 3) + np.uint8(1)` is int32 or
    uint8), so arithmetic on it is refused at the line."""
    check(lambda x: (x and np.int32(3), x or np.int32(7)), (np.int32(0),), (np.int32(2),))
    compiled = ag.function(and_python_scalar)
    with ag.device("cpu"):  # boxes are the CPU's: a device has no numpy scalars
        for x in (np.int32(0), np.int32(2), np.int32(0)):
            assert repr(compiled(x)) == repr(and_python_scalar(x))
    with pytest.raises(ag.ConversionError, match="an int32 or a Python int by the value of x") as info:
        ag.function(and_python_scalar_then_arithmetic)(np.int32(2))
    assert line_of(and_python_scalar_then_arithmetic, "return (x and 3)") in str(info.value)


def short_circuit_prints(x):
    a = x > 0 and np.bool_(print("right of and", x) is None)
    b = x > 0 or np.bool_(print("right of or", x) is None)
    print("done")
    return a, b


def test_and_or_evaluate_the_right_side_only_when_python_would(capsys):
    compare_printed(short_circuit_prints, [(np.float64(1.0),), (np.float64(-1.0),)], capsys)


def mixed_dtypes(x, y):
    return x and y


def test_and_of_different_dtypes_returns_the_operand_eager_returns():
    compiled = ag.function(mixed_dtypes)
    with ag.device("cpu"):  # boxes are the CPU's: a device has no numpy scalars
        for x, y in ((np.int32(1), np.float64(2.0)), (np.int32(0), np.float64(2.0)), (np.int32(3), np.float64(0.5))):
            assert repr(compiled(x, y)) == repr(mixed_dtypes(x, y))


def mixed_dtype_tests(x, y):
    if x > 0 and y:
        r = 1.0
    else:
        r = 2.0
    return r, (3 if x or y else 4), not (x and y)


def test_in_a_test_position_only_the_truth_matters():
    check(mixed_dtype_tests, *[(np.int32(a), np.float32(b)) for a in (0, 1) for b in (0.0, 2.0)])


def not_of_int(x):
    return not x


def test_not_returns_a_bool():
    check(not_of_int, (np.int32(0),), (np.int32(5),))


def not_of_vector(x):
    return not x


def test_not_of_a_vector_is_an_error_as_in_numpy():
    with pytest.raises(ValueError, match="ambiguous"):
        not_of_vector(np.array([1, 2]))
    with pytest.raises(ValueError, match="ambiguous") as info:
        ag.function(not_of_vector)(np.array([1, 2]))
    assert line_of(not_of_vector, "return not x") in str(info.value)


# --- item 8: print order --------------------------------------------------------------------

def interleaved_prints(x):
    print("before")
    print("x is", x)
    total = x
    i = 0
    while i < 2:
        print("step", i)
        total = total + x
        i += 1
    items = [1, 2]
    print("items", items, sep=": ", end="!\n")
    items.append(3)
    print("after", total)
    return total


def test_python_and_tensor_prints_come_out_in_eager_order_on_every_call(capsys):
    compare_printed(interleaved_prints, [(np.float64(2.0),), (np.float64(3.0),), (np.float64(4.0),)], capsys)


def print_of_list_of_tensors(x):
    print([x, x])
    return x


def test_print_of_a_list_holding_tensors_is_an_error_naming_the_line():
    with pytest.raises(TypeError, match="print of a list that holds a symbolic tensor") as info:
        ag.function(print_of_list_of_tensors)(np.float64(1.0))
    assert line_of(print_of_list_of_tensors, "print([x, x])") in str(info.value)


def test_print_nodes_survive_the_optimization_passes(capsys):
    def f(x):
        print("a")
        print("a")
        y = x * 2.0
        i = 0
        while i < 3:
            print("in loop", 1)
            y = y + 1.0
            i += 1
        return y
    compare_printed(f, [(np.float64(1.0),)] * 3, capsys)


# --- item 7: a tensor formatted into a str -----------------------------------------------------

def fstring_of_tensor(x):
    return f"total {ag.reduce_sum(x)}"


def str_format_of_tensor(x):
    return "total {}".format(x)


def percent_of_tensor(x):
    return "total %s" % (x,)


def str_of_list_of_tensors(x):
    return str([x])


@pytest.mark.parametrize("fn, construct, text", [
    (fstring_of_tensor, "formatting symbolic", 'return f"total'),
    (str_format_of_tensor, "formatting symbolic", 'return "total {}"'),
    (percent_of_tensor, "`%` formatting of symbolic", 'return "total %s"'),
    (str_of_list_of_tensors, r"str\(\) of symbolic", "return str([x])")])
def test_formatting_a_tensor_into_a_str_is_an_error_naming_the_line(fn, construct, text):
    fn(np.array([1.0, 2.0]))  # eagerly it is text
    with pytest.raises(TypeError, match=construct) as info:
        ag.function(fn)(np.array([1.0, 2.0]))
    assert line_of(fn, text) in str(info.value)


def test_formatting_python_values_still_works():
    check(lambda x, n: (x * 2.0, f"{n:03d}|{n!r}", "{}-{}".format(n, "a"), "%d%%" % n, str([n])),
          (np.float32(1.0), 7))


def fstrings_in_print(x, n):
    s = ag.reduce_sum(x)
    print(f"sum={s:.3f} n={n} {'lit'!r} x={x}")
    i = 0
    while i < n:
        print(f"step {i:>3}: {s * i}", "tail", sep=" | ")
        i += 1
    print("%d done" % 2, f"{i:04d}")
    return s


def test_fstrings_of_tensors_in_print_are_formatted_when_the_graph_runs(capsys):
    compare_printed(fstrings_in_print, [(np.array([1.0, 2.0]), np.int64(3)),
                                        (np.array([0.5, 2.0]), np.int64(1))], capsys)


def percent_formats_in_print(x, n):
    c = np.cumsum(x)
    print("%d items, last=%.2f" % (x.size, c[-1]))
    i = 0
    while i < n:
        print("step %3d: %5.1f%% of %s, %x" % (i, c[-1] * i, c, x.size), "tail", sep=" | ")
        i += 1
    print("%s" % (c[0],), "plain %d" % 3)
    return c


def test_percent_formats_of_tensors_in_print_are_formatted_when_the_graph_runs(capsys):
    """A numpy user's `print("%d items, last=%.2f" % (n, c[-1]))`: each directive is formatted
    when the graph runs, as Python formats it (it was refused as "would give the text Tensor(...)")."""
    compare_printed(percent_formats_in_print, [(np.array([1.0, 2.0]), np.int64(3)),
                                               (np.array([0.5, 2.0, 4.0]), np.int64(1))], capsys)


def percent_repr_of_tensor_in_print(x):
    print("%r" % (x.sum(),))


def test_percent_repr_of_a_tensor_in_print_is_an_error():
    with pytest.raises(TypeError, match="%r") as info:
        ag.function(percent_repr_of_tensor_in_print)(np.array([1.0]))
    assert line_of(percent_repr_of_tensor_in_print, 'print("%r"') in str(info.value)


def repr_of_tensor_in_print(x):
    print(f"{x!r}")


def test_repr_conversion_of_a_tensor_in_a_printed_fstring_is_an_error():
    with pytest.raises(TypeError, match="!r") as info:
        ag.function(repr_of_tensor_in_print)(np.array([1.0]))
    assert line_of(repr_of_tensor_in_print, 'print(f"{x!r}")') in str(info.value)


def test_repr_of_a_tensor_while_tracing_stays_the_debugging_text():
    seen = []
    note = ag.do_not_convert(lambda text: seen.append(text))  # runs while tracing only
    ag.function(lambda x: note(repr(x * 2.0)) or x)(np.float64(1.0))
    assert seen[0].startswith('Tensor("Mul')


# --- item 6: return inside try / except / finally ---------------------------------------------

def finally_overrides_an_exception(x):
    try:
        raise ValueError("swallowed by the finally's return")
    finally:
        return x * 2.0


def try_else_after_return(x):
    out = []
    try:
        out.append(1)
        return x, out
    except ValueError:
        out.append(2)
    else:
        out.append(3)
    return x, out


def finally_runs_after_return(x):
    log = []
    try:
        return x + 1.0, log
    finally:
        log.append("finally")
        x = x * 100.0


def try_else_with_returns_in_branches(x, n):
    out = [0]
    if n > 5:
        return x, out
    try:
        if n > 1:
            return x * 2.0, out
        out.append(1)
    except ValueError:
        out.append(2)
    else:
        out.append(3)
    return x, out


def return_value_that_raises(x, d):
    if d is None:
        return x
    try:
        return x + d["missing"]
    except KeyError:
        pass
    return x * 3.0


@pytest.mark.parametrize("fn, args", [
    (finally_overrides_an_exception, (np.float64(1.5),)),
    (try_else_after_return, (np.float64(1.5),)),
    (finally_runs_after_return, (np.float64(1.5),)),
    (try_else_with_returns_in_branches, (np.float64(1.5), 0)),
    (try_else_with_returns_in_branches, (np.float64(1.5), 3)),
    (try_else_with_returns_in_branches, (np.float64(1.5), 9)),
    (return_value_that_raises, (np.float64(1.5), {})),
    (return_value_that_raises, (np.float64(1.5), None))])
def test_return_in_try_behaves_as_in_python(fn, args):
    check(fn, args)


def continue_in_finally(x):
    for i in range(3):
        try:
            return x + i
        finally:
            if i < 2:
                continue
    return x


@pytest.mark.parametrize("fn, args, text", [
    (continue_in_finally, (np.float64(1.0),), "    continue")])
def test_a_jump_out_of_finally_that_flags_cannot_emulate_is_an_error(fn, args, text):
    fn(*args)
    with pytest.raises(ConversionError, match="inside `finally` cannot be converted") as info:
        ag.function(fn)(*args)
    assert line_of(fn, text) in str(info.value)


# --- refused today: lists holding tensors given to ops are packed ------------------------------

@pytest.mark.parametrize("fn, args", [
    (lambda v, i: ag.concat([v, [i]], 0), (np.array([1.0, 2.0]), np.array(3.0))),
    (lambda v, i: ag.concat([v, [i, 2]], 0), (np.array([1.0, 2.0], np.float32), np.float32(3.0))),
    (lambda a, b: ag.stack([a, b]), (np.float32(1.0), np.float32(2.0))),
    (lambda a, b: ag.reduce_sum([[a, b], [b, 1.0]]), (np.float64(1.0), np.float64(2.0))),
    (lambda a, b: ag.stack([a, [b, b]], axis=1), (np.array([1, 2], np.int32), np.int32(5)))])
def test_a_list_holding_tensors_is_packed_as_numpy_packs_it(fn, args):
    check(fn, args)


def test_gradient_flows_through_a_packed_list():
    from helpers import check_grad
    check_grad(lambda a: ag.reduce_sum(ag.concat([a, [a[0] * a[1], 2.0]], 0) * 3.0), np.array([1.0, 2.0]))


# --- refused today: ag.function of a callable instance ------------------------------------------

class Scaler:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        if x > 0:
            return x * self.k
        return x - self.k


def test_function_of_a_callable_instance_converts_its_call_method():
    scaler = Scaler(3.0)
    compiled = check(scaler, (np.float64(2.0),), (np.float64(-2.0),), traces=1)
    assert compiled.__name__ == "Scaler"
    assert "ag__.if_stmt" in ag.to_code(scaler.__call__)


def test_grad_of_a_non_scalar_function_names_the_users_line():
    def vector(x):
        return x * 2.0
    with pytest.raises(TypeError, match="float scalar") as info:
        ag.grad(vector)(np.array([1.0, 2.0]))
    assert f"{__file__}:{inspect.currentframe().f_lineno - 1}" in str(info.value)


# --- item 9: list methods in tensor loops ----------------------------------------------------

def pop_in_loop(n):
    items = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    total = 0.0
    i = 0
    while i < n:
        items.pop()
        last = items.pop(0)
        total = total + last
        i += 1
    return total, ag.stack(items)


def extend_in_loop(n):
    items = [1.0]
    i = 0
    while i < n:
        items.extend([i * 2.0, i * 3.0])
        items.append(-1.0)
        i += 1
    return items


def python_list_methods(x):
    items = [3, 1, 2]
    items.sort()
    items.insert(0, 9)
    items.remove(1)
    first = items.pop(0)
    items.extend([7, 8])
    items.reverse()
    return items, first, x


def pop_in_tensor_if(x):
    items = [1.0, 2.0]
    if x > 0:
        items.append(3.0)
        items.pop(0)
    else:
        items.append(4.0)
        items.pop()
    return items


@pytest.mark.parametrize("fn, inputs", [
    (pop_in_loop, [(np.int64(0),), (np.int64(1),), (np.int64(2),)]),
    (extend_in_loop, [(np.int64(1),), (np.int64(3),)]),
    (python_list_methods, [(np.float64(1.0),)]),
    (pop_in_tensor_if, [(np.float64(1.0),), (np.float64(-1.0),)])])
def test_list_methods_match_eager_in_every_loop_and_branch(fn, inputs):
    check(fn, *inputs, traces=1)


GLOBAL_LIST = []


def append_to_global_in_loop(n):
    i = 0
    while i < n:
        GLOBAL_LIST.append(i)
        i += 1
    return i


class Holder:
    def __init__(self):
        self.items = []


def append_to_attribute_in_loop(n):
    holder = Holder()
    i = 0
    while i < n:
        holder.items.append(i)
        i += 1
    return i


def dict_update_in_tensor_if(x):
    d = {"a": 1}
    if x > 0:
        d.update(b=2)
    return x


def pop_inside_expression_in_loop(n):
    items = [1.0, 2.0, 3.0]
    total = 0.0
    i = 0
    while i < n:
        total = total + items.pop()
        i += 1
    return total


def insert_into_carried_list(n):
    items = [1.0]
    i = 0
    while i < n:
        items.insert(0, 5.0)
        i += 1
    return items


@pytest.mark.parametrize("fn, match, text", [
    (append_to_global_in_loop, r"list.append\(\) inside", "GLOBAL_LIST.append(i)"),
    (append_to_attribute_in_loop, r"list.append\(\) inside", "holder.items.append(i)"),
    (dict_update_in_tensor_if, r"dict.update\(\) inside", "d.update(b=2)"),
    (pop_inside_expression_in_loop, r"list.pop\(\) inside", "items.pop()"),
    (insert_into_carried_list, r"list.insert\(\) on a list that a graph loop carries", "items.insert(0, 5.0)")])
def test_container_changes_a_graph_block_cannot_carry_are_errors_naming_the_line(fn, match, text):
    with pytest.raises(ConversionError, match=match) as info:
        ag.function(fn)(np.int64(2) if fn is not dict_update_in_tensor_if else np.float64(1.0))
    assert line_of(fn, text) in str(info.value)


def middle(x):
    print("middle evaluated")
    return x


def chained_comparison(a, x, c):
    r = a < middle(x) <= c
    if 0 < middle(x) < c:
        s = 1
    else:
        s = 2
    return r, s


def test_a_chained_comparison_evaluates_each_operand_once(capsys):
    compare_printed(chained_comparison, [(np.float64(0), np.float64(1), np.float64(2)),
                                         (np.float64(3), np.float64(1), np.float64(2)),
                                         (np.float64(0), np.float64(3), np.float64(2))], capsys)


def ternary_float_or_int(x, c):
    return x if c > 0 else 1


def ternary_int8_or_big(x, c):
    return x if c > 0 else 300


@cpu_only("numpy scalars and Python numbers are the CPU's boxes")
def test_a_ternary_of_a_float32_and_a_python_int_gives_the_one_its_side_picks():
    # the Cond gives the Python int where its side ran (a PythonBox), as eagerly
    compiled = ag.function(ternary_float_or_int)
    for c in (np.float32(-1.0), np.float32(1.0)):
        eager, got = ternary_float_or_int(np.float32(2.0), c), compiled(np.float32(2.0), c)
        assert repr(got) == repr(eager) and type(got) is type(eager)


@pytest.mark.parametrize("fn, args, types", [
    (ternary_int8_or_big, (np.int8(2), np.float32(-1.0)), "int8 and the Python int 300")])
def test_a_ternary_whose_result_type_depends_on_a_tensor_is_an_error(fn, args, types):
    with pytest.raises(ConversionError, match=types) as info:
        ag.function(fn)(*args)
    assert line_of(fn, "return x if c > 0") in str(info.value)


def test_a_ternary_with_a_python_number_of_the_tensors_kind_matches_eager():
    check(lambda x, c: (x if c > 0 else 1, x * 2.0 if c > 0 else 0.5),
          (np.int32(2), np.float32(-1.0)), (np.int32(2), np.float32(1.0)))


def print_list_built_in_loop(n):
    items = [0.0]
    i = 0
    while i < n:
        items.append(i * 1.0)
        print(items)
        i += 1
    return items


def test_printing_a_list_a_graph_loop_carries_is_an_error_naming_the_line():
    with pytest.raises(TypeError, match="list built in a graph loop") as info:
        ag.function(print_list_built_in_loop)(np.int64(2))
    assert line_of(print_list_built_in_loop, "print(items)") in str(info.value)


def assert_with_formatted_message(x, n):
    assert ag.reduce_min(x) >= 0, f"x must be non-negative, got {ag.reduce_min(x):.1f} (n={n})"
    assert x[0] < 100, x
    return x * 2.0


@pytest.mark.parametrize("x, text", [(np.array([-1.0, 2.0]), "x must be non-negative, got -1.0 (n=3)"),
                                     (np.array([101.0, 2.0]), str(np.array([101.0, 2.0])))])
def test_an_assert_message_holding_tensors_is_formatted_when_it_fails(x, text):
    # (pytest rewrites asserts in this module, so the eager message is spelled out)
    compiled = ag.function(assert_with_formatted_message)
    assert_same(assert_with_formatted_message(np.array([1.0, 2.0]), 3), compiled(np.array([1.0, 2.0]), 3))
    with pytest.raises(AssertionError) as got:
        compiled(x, 3)
    assert str(got.value).startswith(text + " (assert at ")


def concatenation_and_del_in_loop(n):
    items = [1.0, 2.0, 3.0, 4.0, 5.0]
    i = 0
    while i < n:
        items = items + [i * 2.0]
        items = [0.5] + items
        del items[0]
        del items[-1]
        del items[0]
        i += 1
    return items


def del_of_python_list_items(x):
    items = [1, 2, 3, 4]
    del items[1]
    del items[1:]
    d = {"a": 1, "b": 2}
    del d["a"]
    return items, d, x


def test_concatenation_and_del_on_lists_match_eager():
    check(concatenation_and_del_in_loop, (np.int64(0),), (np.int64(2),), traces=1)
    check(del_of_python_list_items, (np.float64(1.0),))


def del_middle_item_in_loop(n):
    items = [1.0, 2.0, 3.0]
    i = 0
    while i < n:
        del items[1]
        i += 1
    return items


def test_del_of_an_item_a_graph_loop_cannot_remove_is_an_error():
    with pytest.raises(ConversionError, match=r"del items\[1\]") as info:
        ag.function(del_middle_item_in_loop)(np.int64(1))
    assert line_of(del_middle_item_in_loop, "del items[1]") in str(info.value)
