"""Exceptions a user can cause, and where in the user's code they come from."""
import os
import sys

import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Files whose frames are never the user's: the package itself, code it generates, and numpy
# (np.sum(t) calls Tensor.sum from numpy's own file).
_INTERNAL_PREFIXES = (_PACKAGE_DIR + os.sep, "<autograph_lite", os.path.dirname(os.path.abspath(np.__file__)) + os.sep)


class SymbolicValueError(TypeError):
    """A symbolic Tensor was used where a concrete Python value is needed (bool, len, iter)."""


class LoadError(Exception):
    """`ag.load` refused a file: corrupt, truncated, not a saved graph, from a newer format
    version, or naming an op or attr this version does not know. Nothing was loaded."""


class ConversionError(Exception):
    """Graph construction failed because of the user's code; the message names the user's line.

    Not a ValueError, so a user's `except ValueError` around the code cannot swallow it.
    """


class UnknownRank(ValueError):
    """An op needs, while tracing, a rank or a length that is known only when the graph runs
    (`np.zeros(np.arange(i))`): a limit of the static graph, not an error of the program."""


class NeedsPython(ConversionError):
    """A block cannot be traced with static ranks (a loop variable changes rank, an op meets an
    `UnknownRank`, a value only a Python-run loop gives is used): a tensor loop around it runs as
    Python when the graph runs instead (operators/python_loops.py); elsewhere a refusal."""


def is_internal_file(filename):
    return filename.startswith(_INTERNAL_PREFIXES) or filename.startswith("<frozen ")


_source_maps = {}  # generated file name -> {generated line: "user_file:line"}


def register_source_map(generated_file, line_map):
    """Make frames in `generated_file` report the user's `file:line` from `line_map`."""
    _source_maps[generated_file] = line_map


def mapped_location(filename, lineno):
    """The user's `file:line` for a line of generated code, or None."""
    line_map = _source_maps.get(filename)
    return None if line_map is None else line_map.get(lineno)


def user_location(depth=1):
    """`file:line` of the innermost frame in the user's code (converted code maps back), or '<unknown>'."""
    frame = sys._getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        mapped = mapped_location(filename, frame.f_lineno)
        if mapped:
            return mapped
        if not is_internal_file(filename) and "threading.py" not in filename:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def traceback_location(tb):
    """The user's `file:line` of the innermost user frame in traceback `tb`, or None."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        mapped = mapped_location(code.co_filename, tb.tb_lineno)
        if mapped:
            found = mapped
        elif not is_internal_file(code.co_filename):
            found = f"{code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def short_location(location):
    """'dir/file.py:12' -> 'file.py:12' for compact printing (control characters escaped)."""
    return printable(os.path.basename(location)) if location else ""


def printable(text):
    """`text` on one line: newlines and other control characters written as escapes (`\\n`)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
