"""The language the converter accepts (docs/language.md): each supported construct matches its
eager run; each refused one raises naming the construct and the user's file:line."""
import inspect

import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def where(fn, text):
    return rf"test_unsupported.py:{line_of(fn, text)}"


# --- supported: compiled equals eager -------------------------------------------------------

def for_else(x, limit):
    s = 0.0
    for i in range(ag.shape(x)[0]):
        s = s + x[i]
        if s > limit:
            break
    else:
        s = -1.0
    return s


def test_for_else_over_a_tensor_range():
    check(for_else, (f32(1, 2, 3), 2.5), (f32(1, 2, 3), 100.0))


def while_else(x):
    s = x.sum()
    while s < 10.0:
        s = s + 1.0
        if s > 8.5:
            break
    else:
        s = s * 2.0
    return s


def test_while_else_on_a_tensor_condition():
    check(while_else, (f32(1, 2),), (f32(0.25, 0.25),), (f32(20),))


def del_then_assign(x):
    y = x * 1.0
    if x.sum() > 0:
        del y
        y = x * 3.0
    return y


def test_del_of_a_variable_assigned_again_in_a_tensor_if():
    check(del_then_assign, (f32(1, 2),), (f32(-1, -2),))


def del_in_tensor_loop(x):
    s = x.sum()
    t = 1.0
    while s < 10.0:
        s = s + t
        del t
        t = 2.0
    return s, t


def test_del_of_a_loop_carried_variable_assigned_again_in_the_body():
    check(del_in_tensor_loop, (f32(1, 2),), (f32(20),))


def unpacking(x):
    a, *rest = x
    b, c = rest
    return a + b * c, [v * 2.0 for v in x], sum(v for v in x), {i: v for i, v in enumerate(list(x))}


def test_unpacking_and_comprehensions_over_a_tensor_of_known_length():
    check(unpacking, (f32(1, 2, 3),), (f32(-1, 0.5, 4),))


def rows(m):
    total = 0.0
    for row in m:  # a Python loop over rows of known number: unrolled as eager runs it
        total = total + row.max()
    return total


def test_python_iteration_over_rows():
    check(rows, (np.arange(6.0).reshape(3, 2),))


def match_python_value(x, mode):
    match mode:
        case "double":
            y = x * 2.0
        case ("scale", k):
            y = x * k
        case _:
            y = x
    return y


def test_match_on_python_values():
    check(match_python_value, (f32(1, 2), "double"), (f32(1, 2), ("scale", 3.0)), (f32(1, 2), "other"))


def local_class(x):
    class Scale:
        factor = 3.0

        def apply(self, v):
            return v * self.factor
    return Scale().apply(x)


def test_class_defined_inside_the_function():
    check(local_class, (f32(1, 2),))


def uses_eval(x):
    k = eval("2 + 1")
    exec("k2 = 5")
    return x * k


def test_eval_and_exec_run_while_tracing():
    check(uses_eval, (f32(1, 2),))


def walrus(x):
    if (s := x.sum()) > 0:
        y = s
    else:
        y = -s
    return y


def test_walrus_in_a_tensor_if():
    check(walrus, (f32(1, 2),), (f32(-1, -2),))


def raise_on_python_value(x, n):
    if n < 0:
        raise ValueError("n must be >= 0")
    return x * n


def test_raise_on_a_python_condition_is_plain_python():
    check(raise_on_python_value, (f32(1, 2), 3))
    with pytest.raises(ValueError, match="n must be >= 0"):
        ag.function(raise_on_python_value)(f32(1), -1)


def caught_raise_in_branch(x):
    if x.sum() > 0:
        try:
            raise KeyError("k")
        except KeyError:
            y = x * 2.0
    else:
        y = x
    return y


def test_raise_caught_inside_a_tensor_branch():
    check(caught_raise_in_branch, (f32(1, 2),), (f32(-1, -2),))


def copy_then_update(x):
    y = x.copy()
    y += 1.0
    return y, x


def test_copy_then_update_in_place():
    check(copy_then_update, (f32(1, 2),))


# --- refused: an error naming the construct and the user's line --------------------------------

def generator(x):
    yield x


def test_generator():
    with pytest.raises(ag.ConversionError, match=rf"generator \(`yield`\).*{where(generator, 'yield x')}"):
        ag.function(generator)(f32(1))


def delegating_generator(x):
    yield from [x]


def test_yield_from():
    with pytest.raises(ag.ConversionError, match=rf"generator \(`yield`\).*{where(delegating_generator, 'yield from')}"):
        ag.function(delegating_generator)(f32(1))


def helper_generator(v):
    yield v * 2.0


def calls_a_generator(x):
    return sum(helper_generator(x))


def test_generator_called_from_a_compiled_function():
    with pytest.raises(ag.ConversionError, match=rf"generator.*{where(helper_generator, 'yield v')}"):
        ag.function(calls_a_generator)(f32(1))


async def coroutine(x):
    return x


def test_async_def():
    with pytest.raises(ag.ConversionError, match=rf"async.*{where(coroutine, 'async def')}"):
        ag.function(coroutine)(f32(1))


def nested_await(x):
    async def inner(source):
        async with source:
            return await source
    return x


def test_await_and_async_with():
    with pytest.raises(ag.ConversionError, match=rf"async code.*{where(nested_await, 'async with')}"):
        ag.function(nested_await)(f32(1))


def nested_async_for(x):
    async def inner(source):
        async for v in source:
            return v
    return x


def test_async_for():
    with pytest.raises(ag.ConversionError, match=rf"async code.*{where(nested_async_for, 'async for')}"):
        ag.function(nested_async_for)(f32(1))


COUNTER = 0


def global_in_tensor_loop(x):
    global COUNTER
    while x.sum() < 10.0:
        x = x + 1.0
        COUNTER = COUNTER + 1
    return x


def test_global_rebound_in_a_tensor_loop():
    with pytest.raises(ag.ConversionError, match=rf"rebinds global/nonlocal COUNTER.*{where(global_in_tensor_loop, 'while')}"):
        ag.function(global_in_tensor_loop)(f32(1))


def nonlocal_in_tensor_if(x):
    y = 0.0

    def inner():
        nonlocal y
        if x.sum() > 0:
            y = 1.0
        return y
    return inner()


def test_nonlocal_rebound_in_a_tensor_if():
    with pytest.raises(ag.ConversionError, match=rf"rebinds global/nonlocal y.*{where(nonlocal_in_tensor_if, 'if x')}"):
        ag.function(nonlocal_in_tensor_if)(f32(1))


def nonlocal_through_a_call(x):
    total = x.sum()

    def bump():
        nonlocal total
        total = total + 1.0
    while total < 20.0:
        bump()
    return total


def test_nonlocal_rebound_by_a_call_inside_a_tensor_loop():
    check(nonlocal_through_a_call, (f32(1),), (f32(30),))


class Box:
    pass


BOX = Box()


def keep(v):
    BOX.value = v


def value_leaves_through_an_object(x):
    if x.sum() > 0:
        keep(x * 2.0)
    else:
        keep(x * 3.0)
    return BOX.value + 1.0


def test_value_leaving_a_tensor_if_through_an_outside_object():
    # a call inside the `if` sets an attribute of an object outside the arguments: refused at the `if`
    # (the trace would set it whatever the data), before the read of a branch's value after it
    with pytest.raises(ag.ConversionError,
                       match=rf"`BOX\.value` is set by a function called inside an `if` on a tensor \(at .*"
                             rf"{where(value_leaves_through_an_object, 'if x.sum()')}\)"):
        ag.function(value_leaves_through_an_object)(f32(1))
    assert not hasattr(BOX, "value")


def try_around_tensor_if(x):
    try:
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = x
    except ValueError:
        y = x
    return y


def test_try_around_a_tensor_if():
    with pytest.raises(ag.ConversionError, match=rf"inside a `try` block.*{where(try_around_tensor_if, 'if x')}"):
        ag.function(try_around_tensor_if)(f32(1))


def raise_in_tensor_if(x):
    if x.sum() > 100.0:
        raise ValueError("too big")
    return x


def test_raise_in_a_tensor_if():
    with pytest.raises(ag.ConversionError, match=rf"`raise ValueError` inside an `if`/`while`/`for` on a tensor.*"
                                                 rf"{where(raise_in_tensor_if, 'raise ValueError')}"):
        ag.function(raise_in_tensor_if)(f32(1))


def raise_in_tensor_loop(x):
    while x.sum() < 10.0:
        x = x * 2.0
        if x.sum() < 0.0:
            raise RuntimeError
    return x


def test_raise_in_a_tensor_loop():
    with pytest.raises(ag.ConversionError, match=rf"`raise RuntimeError`.*{where(raise_in_tensor_loop, 'raise RuntimeError')}"):
        ag.function(raise_in_tensor_loop)(f32(1))


def comprehension_over_unknown_length(x):
    return [v * 2.0 for v in x]


def test_comprehension_over_a_tensor_of_unknown_length():
    f = ag.function(comprehension_over_unknown_length, input_signature=[ag.TensorSpec([None])])
    with pytest.raises(TypeError, match=rf"iterated over, with a length known only when the graph runs.*"
                                        rf"{where(comprehension_over_unknown_length, 'return')}"):
        f(f32(1, 2))


def comprehension_with_tensor_condition(x):
    return [i for i in range(2) if x[i] > 0]


def test_comprehension_filtered_by_a_tensor():
    with pytest.raises(TypeError, match=rf"used as a Python bool.*{where(comprehension_with_tensor_condition, 'return')}"):
        ag.function(comprehension_with_tensor_condition)(f32(1, 2))


def match_tensor_subject(x):
    match x.sum():
        case 0.0:
            y = x
        case _:
            y = x * 2.0
    return y


def test_match_on_a_tensor():
    with pytest.raises(TypeError, match=rf"used as a Python bool.*{where(match_tensor_subject, 'case 0.0')}"):
        ag.function(match_tensor_subject)(f32(1))


def numpy_array_updated_with_a_tensor(x):
    acc = np.zeros(2)
    first = acc[:1]     # a numpy view: it would miss the update (without it, `acc` becomes a tensor)
    acc += x
    return acc, first


def test_numpy_array_updated_in_place_with_a_tensor():
    with pytest.raises(TypeError, match=rf"a numpy array cannot be updated in place with a symbolic tensor \(`a \+= t`, "
                                        rf"at .*{where(numpy_array_updated_with_a_tensor, 'acc += x')}"):
        ag.function(numpy_array_updated_with_a_tensor)(f32(1, 2))


def numpy_array_with_two_names_updated_in_a_tensor_if(x):
    acc = np.zeros(4, np.int8)
    held = [acc]        # eagerly held[0] is acc: it shows the update on the runs taking the branch
    if x.max() > 0:
        acc -= x[3]
    return held[0]


def numpy_array_updated_in_a_tensor_if(x):
    acc = np.zeros(4, np.int8)
    if x.max() > 0:
        acc -= x[3]     # held by `acc` only: it becomes the branch's tensor
    return acc


def test_numpy_array_held_twice_updated_in_a_tensor_if_is_refused():
    # fuzzer seed 1191017028: each branch updates its own copy of the array, so the second holder
    # kept the old contents; now the update asks what holds the array itself
    x = np.array([-1, -3, -1, 2], np.int8)
    with pytest.raises(ag.ConversionError, match=rf"a numpy array cannot be updated in place with a symbolic tensor "
                                                 rf"\(`a -= t`, at .*{where(numpy_array_with_two_names_updated_in_a_tensor_if, 'acc -= x')}"
                                                 rf"\): the array is held by a list"):
        ag.function(numpy_array_with_two_names_updated_in_a_tensor_if)(x)
    for data in (x, -x - 9):
        np.testing.assert_array_equal(ag.function(numpy_array_updated_in_a_tensor_if)(data),
                                      numpy_array_updated_in_a_tensor_if(data))


def buffers_swapped_in_a_tensor_loop(a, b, n):
    for i in ag.range(n):
        b[1:-1] = a[2:] + a[:-2]
        a, b = b, a
    return a


def test_buffers_written_and_swapped_in_a_tensor_loop_equal_eager():
    # no longer refused (issue 26): the loop owns the arrays it swaps, and an iteration count says
    # which caller's array gets which contents (tests/conversion/test_item_assignment.py has more)
    for n in (0, 1, 2, 3):
        eager_args = [f32(1, 2, 3), f32(0, 0, 0), np.int64(n)]
        compiled_args = [f32(1, 2, 3), f32(0, 0, 0), np.int64(n)]
        np.testing.assert_array_equal(ag.function(buffers_swapped_in_a_tensor_loop)(*compiled_args),
                                      buffers_swapped_in_a_tensor_loop(*eager_args))
        for e, c in zip(eager_args, compiled_args):
            np.testing.assert_array_equal(c, e)


def tensor_as_python_int(x):
    return list(range(int(x.sum())))


def test_tensor_as_a_python_number():
    # int(t) is a Python int when the graph runs; a list of a range that long is not known while tracing
    with pytest.raises(TypeError, match=rf"iterated over, with a length known only when the graph runs.*"
                                        rf"{where(tensor_as_python_int, 'return')}"):
        ag.function(tensor_as_python_int)(f32(1, 2))
