"""Module-level helpers called from converted code (they are converted too)."""
import autograph_lite as ag


def clip_positive(x):
    if ag.reduce_sum(x) < 0:
        return -x
    return x


def count_down(n):
    steps = 0
    while n > 0:
        n = n - 1
        steps += 1
    return steps
