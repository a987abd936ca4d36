"""What every generated native function shares once rendered: tiering (built from its
`TIER_UP_AFTER`-th run on a worker thread, the Python code running until it is there; or
before its first run with `AG_NATIVE=always`), building through the verified
cache, the tables of numpy inner loops it calls, and the way in from Python. `loops.py` (a
While) and `graphs.py` (a straight-line graph) are the two kinds.

The way in: a plan calls `native.call(*values)`. Until the function is built that is the
Python method `call`, which runs the plan's Python code (returns None) or, once built, the C
through ctypes. When the C entry module is there (entry.py), tiering up binds an `Entry` as
`native.call`: from then on the plan calls C directly, and the Entry hands a call whose
values are not in the C's form back to the Python `call`, and a call that raised a
floating-point flag, or that the C could not finish, to `finish`.

Statuses the C returns: DONE; PAUSED (a loop spent its budget: call again, Ctrl-C is handled
in between); INEXACT (Python would compute something differently, or numpy would raise: the
caller runs its Python code from the start); UNCHANGED (a loop whose body never ran).
"""
import ctypes
import os
import threading

import numpy as np

from .. import fp_errors
from . import cexpr, compiler, entry
from .elementwise import _CTYPES_SCALAR, as_number
from .language import C, Unsupported
from .numpy_loops import inner_loop
from .render import ZeroDArray

TIER_UP_AFTER = 3
DONE, PAUSED, INEXACT, UNCHANGED = 0, 1, 2, 3
STATUS = 15  # the status's bits; above them, the floating-point flags raised (FLAG_BITS)
FLAGS = 16 | 32 | 64
_KINDS = {16: "divide", 32: "over", 64: "invalid"}


def report_flags(flags):
    """Report the floating-point errors whose FLAG_BITS are set in `flags` through numpy (its
    error state decides: warn at the op's line, raise, ignore...), as a ufunc raising them would."""
    for bit, kind in _KINDS.items():
        if flags & bit:
            fp_errors.report(kind)
BOX = {"b": bool, "i": int, "u": int, "f": float}  # a weak (Python) scalar's type by dtype kind


def subclass_among(args):
    """True if an argument is an ndarray subclass: numpy's ops give results of its type, the
    C's results would be plain arrays, so such a call runs the Python plan."""
    return any(isinstance(a, np.ndarray) and type(a) is not np.ndarray for a in args)


def address(array):
    """The address of a C-contiguous array's data (`array.ctypes.data` costs three times more)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError):  # read-only
        return array.ctypes.data


def layouts(renderer, bases):
    """Per input (its base), what layout the C takes it in as eager's: 1 C-contiguous (read as it
    lies), 2 axes in C order (computed from), 0 any (entry.c `exact`)."""
    return [1 if b in renderer.exact_layout else 2 if b in renderer.ordered_layout else 0 for b in bases]


def c_ordered(array):
    """True if `array`'s axes lie in C order (its steps, of axes longer than 1, larger to the left):
    numpy's elementwise results of it are C-contiguous."""
    steps = [abs(s) for n, s in zip(array.shape, array.strides) if n > 1]
    return all(a > b for a, b in zip(steps, steps[1:]))


def tier_up_after():
    """The run at which native code is built: TIER_UP_AFTER, or the first with AG_NATIVE=always
    (the test mode that runs everything the generator can write as C from its first call)."""
    return 1 if os.environ.get("AG_NATIVE") == "always" else TIER_UP_AFTER


class NativeFunction:
    """A rendered C function `symbol` in `text` over `values` (Tensors: scalars by value, arrays
    by pointer; those at `written` positions by pointer to a cell or a fresh buffer it writes:
    a loop's variables, which it updates, when `loop`, else outputs). `boxes`: how each written
    scalar is given back (a Python type, a numpy scalar type or a ZeroDArray)."""

    loop = False
    scalar_inputs = False  # a 0-d argument must come as a numpy scalar (NativeLoop: a loop variable may pass it on)

    def __init__(self, text, symbol, values, written=(), numpy_loops=(), boxes=(), donated=(), state=False,
                 exact=()):
        self.symbol, self.runs = symbol, 0
        # per value, the layout the C takes it in as eager's (`layouts`: 1 C-contiguous, 2 axes in C
        # order): one that comes otherwise (a strided or transposed view) runs the Python code, not the
        # C on a C-contiguous copy
        self.exact = dict(enumerate(exact))
        self.fn = None  # the C function once built; False when it could not be (warned)
        self.written = set(written)
        self.donated = set(donated)  # written arrays the caller gives up: updated in place, not copied
        # per value: None for a scalar, else the (dtype, shape) of its array
        self.arrays = [None if t.shape == () else (np.dtype(t.dtype), tuple(t.shape)) for t in values]
        self.scalar_types = [_CTYPES_SCALAR[cexpr.c_type(t.dtype)] for t in values]
        self.arg_types = [ctypes.c_void_p if a is not None else ctypes.POINTER(c) if i in self.written else c
                          for i, (a, c) in enumerate(zip(self.arrays, self.scalar_types))]
        self.tables = ()  # the numpy inner loops the C calls: (functions, data) pointer arrays
        params = [(C.types[np.dtype(t.dtype)], a is not None or i in self.written)
                  for i, (t, a) in enumerate(zip(values, self.arrays))]
        if numpy_loops:
            pointers = [inner_loop(ufunc, dtypes) for ufunc, dtypes in numpy_loops]
            self.tables = tuple((ctypes.c_void_p * len(pointers))(*column) for column in zip(*pointers))
        if numpy_loops or state:
            self.arg_types += [ctypes.c_void_p, ctypes.c_void_p]
            params += [("void* const", True)] * 2
        if state:  # a cell the C keeps state in across PAUSEs, and leaves for the boxing (loops.tracked_boxes)
            self.arg_types.append(ctypes.POINTER(ctypes.c_int64))
            params.append(("int64_t", True))
        self.text = text + entry.unpack(symbol, params)
        written_boxes = iter(boxes)
        role = entry.UPDATE if self.loop else entry.WRITE
        self.entry_specs = [(entry.DONATE if i in self.donated else role if i in self.written else entry.READ,
                             np.dtype(t.dtype).num,
                             None if a is None else a[1], _box_code(next(written_boxes)) if i in self.written else 0)
                            for i, (t, a) in enumerate(zip(values, self.arrays))]
        self._lock = threading.Lock()
        self.on_entry = []  # called with the Entry once it is bound (lowering.Plan's Direct)

    @classmethod
    def attempt(cls, make):
        """(make(), None), or (None, why it stays on numpy)."""
        if not compiler.enabled():
            return None, "native code is off (AG_NATIVE_KERNELS=0 or AG_NATIVE=off) or no C compiler works"
        try:
            return make(), None
        except Unsupported as e:
            return None, str(e)

    def tier_up(self):
        """The C function if it is built (building it at the run that tiers up), else None."""
        with self._lock:
            if self.fn is None:
                self.runs += 1
                if self.runs >= tier_up_after():
                    # built on a worker thread: the Python code runs until it is there
                    built = compiler.load_functions(self.text, (self.symbol, self.symbol + "_values"),
                                                    flags_read=True, wait=False)
                    module = None if built is None else entry.module(wait=False)
                    if built is compiler.PENDING or module is compiler.PENDING:
                        return None
                    fn = None
                    if built is not None:
                        fn, values = built
                        fn.restype, fn.argtypes = ctypes.c_int, self.arg_types
                        self._enter_through(module, values)
                    self.fn = fn or False
            return self.fn or None

    def _enter_through(self, module, values):
        """Bind the C entry to the built `values` function as `self.call`, if the `module` is there."""
        if module is None or any(spec[3] is None for spec in self.entry_specs) or len(self.entry_specs) > entry.MAX_VALUES:
            return
        tables = [ctypes.addressof(t) for t in self.tables] or [0, 0]
        # a 0-d array argument is a scalar cell, unless a loop may give it back as it came (its box)
        specs = [tuple(spec) + (-1,) * (6 - len(spec)) + (self.exact.get(i, 0),) for i, spec in enumerate(self.entry_specs)]
        c_entry = module.Entry(self._python_call, self.finish, specs, self.loop, not self.scalar_inputs)
        c_entry.bind(ctypes.cast(values, ctypes.c_void_p).value, (values, self.tables), *tables)
        self.call = c_entry
        for hook in self.on_entry:
            hook(c_entry)

    def call(self, *args):
        """The region's results, or None: the caller runs its Python code (see the kinds)."""
        return self._python_call(*args)

    __call__ = call

    def laid_out_otherwise(self, values):
        """True if an array the C takes as eager lays it out comes in another layout."""
        for i, level in self.exact.items():
            v = values[i]
            if level == 1 and not (type(v) is np.ndarray and v.flags.c_contiguous and v.flags.aligned):
                return True
            if level == 2 and isinstance(v, np.ndarray) and not c_ordered(v):
                return True
        return False

    def arguments(self, values, tables=True):
        """(ctypes arguments for `values`, the arrays they point to). A written array is a fresh
        copy the C updates; a read one is passed as it is when C-contiguous of its dtype."""
        cells, held = [], []
        for i, (v, array) in enumerate(zip(values, self.arrays)):
            if array is None:  # a scalar: a cell the C writes, or a value
                cells.append(self.scalar_types[i](as_number(v)) if i in self.written else as_number(v))
                continue
            dtype, shape = array
            given = i in self.donated and type(v) is np.ndarray and v.flags.writeable and v.flags.c_contiguous \
                and v.dtype == dtype
            buffer = v if given else np.array(v, dtype=dtype, order="C", copy=True if i in self.written else None)
            held.append(buffer)
            cells.append(address(buffer))
        return cells + list(self.tables) if tables else cells, held

    def results(self, cells, held, boxes):
        """The written values: a scalar cell boxed (`boxes`: its Python or numpy type), an array as its buffer."""
        out, arrays = [], iter(held)
        for box, cell, array in zip(boxes, cells, self.arrays):
            out.append(box(cell.value) if array is None else next(arrays))
        return tuple(out)


def _box_code(box):
    """How entry.c boxes a scalar result that Python boxes with `box`; None if it cannot."""
    if box is None:
        return entry.ARRAY
    if box in (float, int, bool):
        return {float: entry.AS_FLOAT, int: entry.AS_INT, bool: entry.AS_BOOL}[box]
    if isinstance(box, type) and issubclass(box, np.generic):
        return entry.AS_NUMPY_SCALAR
    if isinstance(box, ZeroDArray):
        return entry.AS_ZERO_D
    return None
