"""Walks as deep as the user's code, without Python's recursion limit.

`iterate(walk)`: a walk over nested blocks written as a generator that yields each sub-walk it
would call (`outs = yield self.body(branch)`) runs on an explicit stack: depth costs memory,
not frames. `headroom(frames)` and `limit_at_least(limit)`: the recursion limit raised while inside (to
`frames` above the current depth, or to `limit`), for the walks that recurse through code not ours (gast's and `ast`'s visitors,
the user's own converted code calling `if_stmt` inside a branch it traces); the highest value
ever asked stays capped at `MAX_LIMIT`, so runaway recursion still ends in RecursionError.
"""
import contextlib
import sys
import threading

MAX_LIMIT = 60_000  # 3.11's Python-to-Python calls take no C stack; its C calls ~100-500 bytes each
_lock = threading.Lock()
_raised = []  # limits asked for by the headroom blocks now open, in any thread
_base = None  # the limit before the first open block


def iterate(walk):
    """Run generator `walk` to its return value; each value it yields is a generator run the same
    way first, its return value sent back in as the result of that `yield`."""
    stack, value = [walk], None
    while stack:
        try:
            sub = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            value = done.value
            continue
        stack.append(sub)
        value = None
    return value


def depth():
    """How many Python frames the calling thread has now (found by probing `sys._getframe`, whose
    walk is C: cheap at 10,000 frames)."""
    low, high = 1, 64
    while _has_frame(high):
        low, high = high, high * 2
    while high - low > 1:  # frame `low` exists, frame `high` does not
        middle = (low + high) // 2
        low, high = (middle, high) if _has_frame(middle) else (low, middle)
    return low


def _has_frame(n):
    try:
        sys._getframe(n)
    except ValueError:
        return False
    return True


def headroom(frames):
    """Inside: the recursion limit is at least `frames` above the current depth (at most MAX_LIMIT)."""
    return limit_at_least(depth() + frames)


def base_limit():
    """The recursion limit as it is outside every `limit_at_least` block."""
    with _lock:
        return _base if _raised else sys.getrecursionlimit()


@contextlib.contextmanager
def limit_at_least(limit):
    """Inside: the recursion limit is at least `limit` (at most MAX_LIMIT). The limit is
    process-wide: it goes back to its value once the last open block in any thread ends."""
    global _base
    wanted = min(limit, MAX_LIMIT)
    if wanted <= sys.getrecursionlimit() and not _raised:
        yield
        return
    with _lock:
        if not _raised:
            _base = sys.getrecursionlimit()
        _raised.append(wanted)
        sys.setrecursionlimit(max([_base, *_raised]))
    try:
        yield
    finally:
        with _lock:
            _raised.remove(wanted)
            sys.setrecursionlimit(max([_base, *_raised]))
