"""Python lists appended to inside tensor loops, stacked or concatenated afterwards."""
import numpy as np
import pytest

import autograph_lite as ag
from helpers import check, f32, same_every_call


def collect_rows(x):
    acc = []
    for row in x:
        acc.append(row * 2.0)
    return ag.stack(acc)


def collect_in_while(x):
    acc = []
    while ag.reduce_sum(x) > 1:
        x = x * 0.5
        acc.append(x)
    return ag.stack(acc)


def conditional_append(x):
    acc = [x[0] * 0.0]
    for v in x:
        if v > 0:
            acc.append(v)
    return ag.stack(acc)


def prefilled_list(x):
    acc = [x[0], x[1]]
    for i in ag.range(2, ag.shape(x)[0]):
        acc.append(x[i] * 10.0)
    return ag.stack(acc)


def concat_after_loop(x):
    parts = []
    for row in x:
        parts.append(row[None] + 1.0)
    return ag.concat(parts, 0)


def python_loop_list(x):
    acc = []
    for i in range(3):
        acc.append(x * float(i))
    return ag.stack(acc)


def list_of_scalars_in_tensor_loop(n):
    out = []
    for i in ag.range(n):
        out.append(i * i)
    return ag.stack(out)


def two_lists(x):
    pos, neg = [], []
    for v in x:
        pos.append(ag.maximum(v, 0.0))
        neg.append(ag.minimum(v, 0.0))
    return ag.stack(pos), ag.stack(neg)


def list_read_after(x):
    acc = []
    for row in x:
        acc.append(ag.reduce_sum(row))
    stacked = ag.stack(acc)
    return stacked[-1], len(acc) if isinstance(acc, list) else ag.shape(stacked)[0]


X = np.arange(6, dtype=np.float32).reshape(3, 2) - 2


@pytest.mark.parametrize("fn, inputs", [
    (collect_rows, [(X,), (X * 3,)]),
    (collect_in_while, [(f32(4, 4),), (f32(16, 2),)]),
    (conditional_append, [(f32(1, -2, 3),), (f32(-1, -2, -3),)]),
    (prefilled_list, [(f32(1, 2, 3, 4),)]),
    (concat_after_loop, [(X,)]),
    (python_loop_list, [(f32(1, 2),)]),
    (list_of_scalars_in_tensor_loop, [(np.int64(4),), (np.int64(1),)]),
    (two_lists, [(f32(1, -2, 3),)]),
])
def test_lists(fn, inputs):
    check(fn, *inputs, traces=1)


def test_list_grows_as_a_loop_variable():
    f = ag.function(collect_rows)
    graph = f.get_concrete_function(X).graph
    while_node = next(n for n in graph.nodes if n.op == "While")
    assert any(t.shape == (None, 2) for t in while_node.outputs)


def lists_assigned_in_branches(x):
    if x[0] > 0:
        parts = [x, x[:1]]
    else:
        parts = [-x, x[1:2]]
    return parts[0] + parts[1]


def test_lists_assigned_in_tensor_branches_merge_item_by_item():
    check(lists_assigned_in_branches, (f32(1, 2),), (f32(-1, 2),), traces=1)


def append_in_one_branch(x):
    acc = [x]
    if x[0] > 0:
        acc.append(x * 2.0)
    return acc


def test_append_in_one_tensor_branch_carries_the_list_as_a_tensor_list():
    check(append_in_one_branch, (f32(1, 2),), (f32(-1, 2),), traces=1)


def numpy_of_a_list_grown_in_a_graph_loop(a, scale):
    out, rows = [], []
    for u in a:  # a loop on a tensor: `out` is a list built in a graph loop
        out.append(u * scale)
        rows.append(u.reshape(1, -1) if u.ndim else u.reshape(1))
    return np.stack(out), np.array(out), np.mean(out), np.asarray(out).sum(), np.concatenate(rows), np.vstack(out)


@pytest.mark.parametrize("a", [np.array([1.0, 2.0, 3.0]), np.arange(8.0).reshape(4, 2)])
def test_numpy_given_a_list_built_in_a_graph_loop_takes_it_as_eager_does(a, monkeypatch):  # (AG_NATIVE: not rerun)
    """A numpy user's `np.stack(out)` after a data-dependent loop: numpy iterated the list by
    __getitem__, which never ends (a hang); numpy functions now get its stack, np.stack/np.concatenate/
    np.vstack join its items, and a builtin iterating it is refused at the user's line."""
    import signal
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("hung"))
    signal.alarm(60)
    try:
        for scale in (2.0, -0.5):
            same_every_call(numpy_of_a_list_grown_in_a_graph_loop, a, scale)

        def sums(a):
            out = []
            for u in a:
                out.append(u * 2)
            return sum(out)
        with pytest.raises(ag.ConversionError, match=r"iterated outside the converted code .*test_lists.py:\d+"):
            ag.function(sums)(a)
    finally:
        signal.alarm(0)
