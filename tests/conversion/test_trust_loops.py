"""Tensor loops match eager: captures of nested sub-graphs, the dtype of loop indices,
and conditions with walrus evaluated once per iteration (issue 11)."""
import numpy as np

import autograph_lite as ag
from tests.helpers import run_both


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
