"""Exceptions a user can cause, and where in the user's code they come from."""
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Files whose frames are never the user's: the package itself, and code it generates.
_INTERNAL_PREFIXES = (_PACKAGE_DIR + os.sep, "<autograph_lite")


class SymbolicValueError(TypeError):
    """A symbolic Tensor was used where a concrete Python value is needed (bool, len, iter)."""


class ConversionError(ValueError):
    """Graph construction failed because of the user's code; the message names the user's line."""


def is_internal_file(filename):
    return filename.startswith(_INTERNAL_PREFIXES) or filename.startswith("<frozen ")


def user_location(depth=1):
    """`file:line` of the innermost frame outside autograph_lite, or '<unknown>'."""
    frame = sys._getframe(depth)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not is_internal_file(filename) and "threading.py" not in filename:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def short_location(location):
    """'dir/file.py:12' -> 'file.py:12' for compact printing."""
    return os.path.basename(location) if location else ""
