/* The one C entry from Python into generated native functions (entry.py builds it).

An `Entry` stands for one generated function `int f(void* const* values)`: it takes the
call's arguments as they come (vectorcall: no tuple, no ctypes objects), checks each is in
the form the C was written for (an aligned C-contiguous array of its dtype and shape, or a
scalar of its type), points the C at them, allocates the outputs, releases the GIL once
for the whole call (and takes it back without sleeping when another thread hands it over,
below), handles PAUSED (the interpreter's signal handlers run between calls, so
Ctrl-C raises KeyboardInterrupt) and boxes the results as the Python plan would.

An array argument of its dtype and shape in another layout (a strided, transposed or offset
view) is read through a C-contiguous copy made here, as the Python caller makes one, unless the
C reads it as eager lays it out (a product's or a float reduction's operand, `exact`): then the
call goes to `fallback`, whose Python code computes on the array as it is. Any
argument in another form (another dtype, a byte-swapped array, a subclass, an int that does
not fit) is not converted here: the call goes to `fallback` (the Python caller, functions.py)
with the same arguments, which converts it as numpy does. What this file does is the fast
case only; what the results are is decided by the Python code it mirrors.

Returned: the results tuple (status DONE, no floating-point flag raised); None (INEXACT:
the caller runs its Python code); otherwise what `finish(status | flags, results)` returns
(it reports the flags, or says to run the Python code). A loop whose body never ran
(UNCHANGED) gives back its loop variables as they came.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <stddef.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#define DONE 0
#define PAUSED 1
#define INEXACT 2
#define UNCHANGED 3
#define STATUS 15
#define MAX_VALUES 256
#define BODY_NEVER_RAN 256  /* in a finishing list's status: the loop gave its inputs back */

/* an argument read; a loop variable (a copy); an output; a loop variable whose array the caller
   gives up (updated in place, no copy) */
enum role { READ = 0, UPDATE = 1, WRITE = 2, DONATE = 3 };
enum box { ARRAY = 0, AS_FLOAT, AS_INT, AS_BOOL, AS_NUMPY_SCALAR, AS_ZERO_D };

typedef int (*native_fn)(void* const*);

/* Handing the GIL between threads that call native code. A thread back from its C part
finds the GIL taken by a thread running Python; CPython's take_gil then sleeps on a condition
variable, and waking it (a futex wake, tens of microseconds on a virtual machine) takes longer
than the other thread's next C part: the woken thread finds the GIL taken again, sleeps again,
and gets it in the end only by forcing a switch after the 5 ms switch interval. A call of a
few microseconds of C then ran slower on two threads than on one.

So a thread back from C first waits, a bounded time, while `holder` says another thread that
left this module holds the GIL; that thread's next C part releases the GIL and clears
`holder`, and the waiter takes the GIL without sleeping. It waits by yielding its CPU
(sched_yield), so a runnable thread of another program gets the core meanwhile. `holder` is
a hint only (a thread holding the GIL outside this module is not in it; a stale hint costs
one bounded wait): what is correct never depends on it. One thread waits at a time, and none
on one CPU. */
#if defined(__GNUC__) && (defined(__unix__) || defined(__APPLE__))
#include <sched.h>
#include <time.h>
#define HAND_OFF_WAIT_NS 200000
static int holder __attribute__((aligned(64)));  /* alone on its cache line: polled by the waiter */
static int waiting __attribute__((aligned(64)));
static int several_cpus;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000 + t.tv_nsec;
}
static inline void hand_off_released(void) { __atomic_store_n(&holder, 0, __ATOMIC_RELEASE); }
static inline void hand_off_taken(void) { __atomic_store_n(&holder, 1, __ATOMIC_RELEASE); }
static void wait_for_hand_off(void) {
    if (!several_cpus || !__atomic_load_n(&holder, __ATOMIC_ACQUIRE)) return;
    if (__atomic_exchange_n(&waiting, 1, __ATOMIC_ACQUIRE)) return;
    long long until = now_ns() + HAND_OFF_WAIT_NS;
    while (__atomic_load_n(&holder, __ATOMIC_ACQUIRE) && now_ns() < until) sched_yield();
    __atomic_store_n(&waiting, 0, __ATOMIC_RELEASE);
}
#define SHORT_NS 1000
#else
static inline void hand_off_released(void) {}
static inline void hand_off_taken(void) {}
static inline void wait_for_hand_off(void) {}
static long long now_ns(void) { return 0; }
#define SHORT_NS 0
#endif


typedef struct {
    int role, typenum, ndim, box;  /* ndim -1: a scalar, passed as a pointer to its cell */
    int python_bit;  /* >= 0: boxed as a Python number where this bit of the state cell is set (loops.tracked_boxes) */
    int origin;      /* >= 0: state[origin], where >= 0, is the argument whose object eager holds here (loops.passed_on) */
    int exact;       /* the layout the C takes an array in as eager's: 1 C-contiguous (a product's, a float
                        reduction's operand), 2 axes in C order (what one is computed from), 0 any; one
                        that comes otherwise runs the Python code, not the C on a C-contiguous copy */
    npy_intp dims[NPY_MAXDIMS];
    npy_intp size;
} Spec;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    native_fn fn;
    PyObject* keep;      /* keeps the library of fn loaded */
    PyObject* fallback;  /* called with the same arguments when one is not in the C's form */
    PyObject* finish;    /* finish(status, results) when a flag was raised or the C did not finish */
    int loop;
    int zero_d;          /* a plain 0-d array is taken for a scalar cell (its value), as the ctypes path takes it */
    Py_ssize_t n_args, n_values, n_updated, n_donated;
    void* tables[2];     /* numpy inner-loop tables (functions, data), or NULL */
    int short_run;       /* its last run took under SHORT_NS (under the GIL; written only on a change) */
    Spec* specs;
} Entry;

/* A Python or numpy scalar `o` (or, with `zero_d`, a plain 0-d array) as the numpy item of
   `typenum` in `cell`; 0 if it is not one this converts exactly as the Python caller would (the
   caller then converts it). */
static int to_cell(PyObject* o, int typenum, npy_int64* cell, int zero_d) {
    if (PyArray_CheckExact(o)) {
        PyArrayObject* a = (PyArrayObject*)o;
        if (!zero_d || PyArray_NDIM(a) != 0 || PyArray_TYPE(a) != typenum || PyArray_ISBYTESWAPPED(a)) return 0;
        memcpy(cell, PyArray_DATA(a), PyArray_ITEMSIZE(a));
        return 1;
    }
    if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr* d = PyArray_DescrFromScalar(o);
        int same = d != NULL && d->type_num == typenum;
        Py_XDECREF(d);
        if (!same) return 0;
        PyArray_ScalarAsCtype(o, cell);
        return 1;
    }
    double f;
    long long i;
    if (PyBool_Check(o)) {
        i = o == Py_True;
        f = (double)i;
    } else if (PyLong_CheckExact(o)) {
        int overflow;
        i = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (i == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        f = (double)i;
        if (typenum == NPY_DOUBLE || typenum == NPY_FLOAT) {
            if (i > (1LL << 53) || i < -(1LL << 53)) return 0;  /* Python rounds these itself */
        }
    } else if (PyFloat_CheckExact(o)) {
        f = PyFloat_AS_DOUBLE(o);
        switch (typenum) {
            case NPY_DOUBLE: *(double*)cell = f; return 1;
            case NPY_FLOAT: *(float*)cell = (float)f; return 1;
            default: return 0;
        }
    } else {
        return 0;
    }
    switch (typenum) {  /* an int that does not fit the C type is the caller's to handle */
        case NPY_BOOL: if (i != 0 && i != 1) return 0; *(npy_bool*)cell = (npy_bool)i; return 1;
        case NPY_INT8: if (i < -128 || i > 127) return 0; *(npy_int8*)cell = (npy_int8)i; return 1;
        case NPY_INT16: if (i < -32768 || i > 32767) return 0; *(npy_int16*)cell = (npy_int16)i; return 1;
        case NPY_INT32: if (i < INT32_MIN || i > INT32_MAX) return 0; *(npy_int32*)cell = (npy_int32)i; return 1;
        case NPY_INT64: *(npy_int64*)cell = i; return 1;
        case NPY_UINT8: if (i < 0 || i > 255) return 0; *(npy_uint8*)cell = (npy_uint8)i; return 1;
        case NPY_UINT16: if (i < 0 || i > 65535) return 0; *(npy_uint16*)cell = (npy_uint16)i; return 1;
        case NPY_UINT32: if (i < 0 || i > UINT32_MAX) return 0; *(npy_uint32*)cell = (npy_uint32)i; return 1;
        case NPY_UINT64: if (i < 0) return 0; *(npy_uint64*)cell = (npy_uint64)i; return 1;
        case NPY_DOUBLE: *(double*)cell = f; return 1;
        case NPY_FLOAT: *(float*)cell = (float)f; return 1;
        default: return 0;
    }
}

/* The numpy item of `typenum` in `cell` as a Python int (or NULL with an error set). */
static PyObject* cell_int(int typenum, const void* cell) {
    switch (typenum) {
        case NPY_BOOL: return PyLong_FromLong(*(const npy_bool*)cell);
        case NPY_INT8: return PyLong_FromLong(*(const npy_int8*)cell);
        case NPY_INT16: return PyLong_FromLong(*(const npy_int16*)cell);
        case NPY_INT32: return PyLong_FromLong(*(const npy_int32*)cell);
        case NPY_INT64: return PyLong_FromLongLong(*(const npy_int64*)cell);
        case NPY_UINT8: return PyLong_FromUnsignedLong(*(const npy_uint8*)cell);
        case NPY_UINT16: return PyLong_FromUnsignedLong(*(const npy_uint16*)cell);
        case NPY_UINT32: return PyLong_FromUnsignedLong(*(const npy_uint32*)cell);
        case NPY_UINT64: return PyLong_FromUnsignedLongLong(*(const npy_uint64*)cell);
        default: PyErr_SetString(PyExc_TypeError, "autograph_lite entry: not an integer cell"); return NULL;
    }
}

/* A scalar result, boxed as its spec says (as functions.py's BOX and render.zero_d_box do); a
   Python float where the C's state cell says eager holds one there. */
static PyObject* box_cell(const Spec* s, const void* cell, npy_int64 state) {
    int box = s->python_bit >= 0 && (state >> s->python_bit) & 1 ? AS_FLOAT : s->box;
    switch (box) {
        case AS_FLOAT:
            if (s->typenum == NPY_DOUBLE) return PyFloat_FromDouble(*(const double*)cell);
            if (s->typenum == NPY_FLOAT) return PyFloat_FromDouble(*(const float*)cell);
            break;
        case AS_INT:
            return cell_int(s->typenum, cell);
        case AS_BOOL:
            if (s->typenum == NPY_BOOL) return PyBool_FromLong(*(const npy_bool*)cell);
            break;
        case AS_NUMPY_SCALAR: {
            PyArray_Descr* d = PyArray_DescrFromType(s->typenum);
            if (d == NULL) return NULL;
            PyObject* r = PyArray_Scalar((void*)cell, d, NULL);
            Py_DECREF(d);
            return r;
        }
        case AS_ZERO_D: {
            PyObject* a = PyArray_EMPTY(0, NULL, s->typenum, 0);
            if (a != NULL) memcpy(PyArray_DATA((PyArrayObject*)a), cell, PyArray_ITEMSIZE((PyArrayObject*)a));
            return a;
        }
    }
    PyErr_SetString(PyExc_TypeError, "autograph_lite entry: a result box that does not fit its dtype");
    return NULL;
}

/* An array argument in the C's form: a plain ndarray (a subclass's type is kept by numpy's
   ops, not by the C's results), aligned, C-contiguous, of the spec's dtype and shape. */
static int fits(PyObject* o, const Spec* s) {
    if (!PyArray_CheckExact(o)) return 0;
    PyArrayObject* a = (PyArrayObject*)o;
    if (PyArray_TYPE(a) != s->typenum || PyArray_NDIM(a) != s->ndim || !PyArray_ISCARRAY_RO(a)
            || PyArray_ISBYTESWAPPED(a))
        return 0;
    return memcmp(PyArray_DIMS(a), s->dims, s->ndim * sizeof(npy_intp)) == 0;
}

/* An array argument the C reads through a C-contiguous copy: a plain ndarray of the spec's
   dtype and shape in another layout (a strided or transposed view, an offset or misaligned
   buffer), copied here as the Python caller would copy it (np.array(v, order="C")). */
static int copyable(PyObject* o, const Spec* s) {
    if (!PyArray_CheckExact(o)) return 0;
    PyArrayObject* a = (PyArrayObject*)o;
    if (PyArray_TYPE(a) != s->typenum || PyArray_NDIM(a) != s->ndim || PyArray_ISBYTESWAPPED(a)) return 0;
    return memcmp(PyArray_DIMS(a), s->dims, s->ndim * sizeof(npy_intp)) == 0;
}

/* An array whose axes lie in C order (the steps of axes longer than 1 larger to the left): numpy's
   elementwise results of it are C-contiguous, as the C's of its copy (functions.c_ordered). */
static int c_ordered(PyObject* o) {
    PyArrayObject* a = (PyArrayObject*)o;
    npy_intp last = -1;
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        if (PyArray_DIM(a, d) <= 1) continue;
        npy_intp step = PyArray_STRIDE(a, d) < 0 ? -PyArray_STRIDE(a, d) : PyArray_STRIDE(a, d);
        if (last >= 0 && step >= last) return 0;
        last = step;
    }
    return 1;
}

/* Runs self's C, without the GIL unless its last run took under SHORT_NS: releasing and
taking back the GIL costs more than such a run (numpy keeps the GIL for small arrays too).
A long run is at most a budget's worth (about a millisecond) before it PAUSEs. */
static int run_native(Entry* self, void* const* pointers) {
    int status;
    long long start, took;
    if (self->short_run) {
        start = now_ns();
        status = self->fn(pointers);
        took = now_ns() - start;
    } else {
        PyThreadState* saved = PyEval_SaveThread();
        hand_off_released();
        start = now_ns();
        status = self->fn(pointers);
        took = now_ns() - start;  /* the C alone: not the wait for the GIL */
        wait_for_hand_off();
        PyEval_RestoreThread(saved);
        hand_off_taken();
    }
    if ((took < SHORT_NS) != self->short_run)  /* no write in the steady state: both threads read this line */
        self->short_run = took < SHORT_NS;
    return status;
}

/* Returned by entry_run with `strict` for a call the C did not finish cleanly (an argument not in
   its form, INEXACT, a floating-point flag raised, not built yet): the caller runs its own Python
   code instead, from the start (a loop is pure: running it again is running it once). */
static PyObject not_finished_marker;
#define NOT_FINISHED (&not_finished_marker)

static PyObject* entry_run(Entry* self, PyObject* const* args, Py_ssize_t nargs, int strict, Py_ssize_t want);

static PyObject* entry_vectorcall(PyObject* self_, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    Entry* self = (Entry*)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "autograph_lite entry: called after it was cleared");
        return NULL;
    }
    if (self->fn == NULL || kwnames != NULL || nargs != self->n_args)
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    return entry_run(self, args, nargs, 0, -1);
}

/* The call of self's C on `args` (nargs == n_args, fn bound). `strict`: NOT_FINISHED (no new
   reference) where the Python caller would have to finish it (fallback, finish, INEXACT); `want`
   >= 0 (a loop's variable, with strict): that result alone, not the tuple, none other boxed. */
static PyObject* entry_run(Entry* self, PyObject* const* args, Py_ssize_t nargs, int strict, Py_ssize_t want) {
    Py_ssize_t n = self->n_values, k;
    /* state: cells the C keeps across PAUSEs and leaves for the boxing ([0]: flags; [1 + i]: origins) */
    npy_int64 cells[MAX_VALUES], state[MAX_VALUES + 1];
    state[0] = 0;
    void* pointers[MAX_VALUES + 3];
    PyObject* arrays[MAX_VALUES];  /* the arrays this call made (copies, outputs), per value */
    Py_ssize_t a = 0, made = 0;  /* arrays[:made] are set */
    for (k = 0; k < n; k++) {
        const Spec* s = &self->specs[k];
        arrays[k] = NULL;
        made = k + 1;
        PyObject* o = s->role == WRITE ? NULL : args[a++];
        if (s->ndim < 0) {
            pointers[k] = &cells[k];
            if (o != NULL && !to_cell(o, s->typenum, &cells[k], self->zero_d)) goto fallback;
        } else if (o == NULL) {
            arrays[k] = PyArray_EMPTY(s->ndim, (npy_intp*)s->dims, s->typenum, 0);
            if (arrays[k] == NULL) goto error;
            pointers[k] = PyArray_DATA((PyArrayObject*)arrays[k]);
        } else {
            int in_form = fits(o, s);
            if (!in_form && (s->role == DONATE || s->exact == 1 || !copyable(o, s) || (s->exact == 2 && !c_ordered(o))))
                goto fallback;
            if (s->role == UPDATE || !in_form) {  /* a fresh copy the loop updates in place, or a view's C-contiguous copy */
                arrays[k] = PyArray_NewCopy((PyArrayObject*)o, NPY_CORDER);
                if (arrays[k] == NULL) goto error;
                pointers[k] = PyArray_DATA((PyArrayObject*)arrays[k]);
            } else if (s->role == DONATE) {  /* the caller's own array, updated in place */
                if (!PyArray_ISWRITEABLE((PyArrayObject*)o)) goto fallback;
                Py_INCREF(o);
                arrays[k] = o;
                pointers[k] = PyArray_DATA((PyArrayObject*)o);
            } else {
                pointers[k] = PyArray_DATA((PyArrayObject*)o);
            }
        }
    }
    pointers[n] = self->tables[0];
    pointers[n + 1] = self->tables[1];
    pointers[n + 2] = state;
    int status = run_native(self, pointers), first, flags;
    first = status & STATUS;
    flags = status & ~STATUS;
    while ((status & STATUS) == PAUSED) {  /* back in the interpreter: a pending Ctrl-C raises here */
        if (PyErr_CheckSignals() < 0) goto error;
        status = run_native(self, pointers);
        flags |= status & ~STATUS;
    }
    status &= STATUS;
    for (k = 0; k < n; k++)  /* the copies of views the C read */
        if (self->specs[k].role == READ) Py_CLEAR(arrays[k]);
    if (strict && (flags != 0 || !(status == DONE || (self->loop && status == UNCHANGED)))) {
        for (k = 0; k < n; k++) Py_XDECREF(arrays[k]);
        return NOT_FINISHED;
    }
    if (want >= 0) {  /* strict: one loop variable, finished cleanly */
        PyObject* r;
        const Spec* s = &self->specs[want];
        if (first == UNCHANGED) {
            r = args[want];
            Py_INCREF(r);
        } else if (s->origin >= 0 && state[s->origin] >= 0 && state[s->origin] < nargs) {
            r = args[state[s->origin]];
            Py_INCREF(r);
        } else {
            r = s->ndim < 0 ? box_cell(s, &cells[want], state[0]) : arrays[want];
            arrays[want] = NULL;
        }
        for (k = 0; k < n; k++) Py_XDECREF(arrays[k]);
        return r;
    }
    if (status == INEXACT) {
        for (k = 0; k < n; k++) Py_XDECREF(arrays[k]);
        if (self->n_donated)  /* a given-up array may be half updated: finish says what the caller does */
            return PyObject_CallFunction(self->finish, "iO", INEXACT, Py_None);
        Py_RETURN_NONE;
    }
    PyObject* results;
    if (self->loop && first == UNCHANGED) {  /* the body never ran: the inputs as they came */
        results = PyTuple_New(self->n_updated);
        if (results == NULL) goto error;
        for (k = 0; k < self->n_updated; k++) {
            Py_INCREF(args[k]);
            PyTuple_SET_ITEM(results, k, args[k]);
        }
        for (k = 0; k < n; k++) Py_CLEAR(arrays[k]);
    } else {
        Py_ssize_t m = 0, j = 0;
        for (k = 0; k < n; k++) m += self->specs[k].role != READ;
        results = PyTuple_New(m);
        if (results == NULL) goto error;
        for (k = 0; k < n; k++) {
            const Spec* s = &self->specs[k];
            if (s->role == READ) continue;
            PyObject* r;
            if (s->origin >= 0 && state[s->origin] >= 0 && state[s->origin] < nargs) {  /* the argument as it came */
                r = args[state[s->origin]];
                Py_INCREF(r);
            } else {
                r = s->ndim < 0 ? box_cell(s, &cells[k], state[0]) : arrays[k];
            }
            arrays[k] = NULL;
            if (r == NULL) {
                Py_DECREF(results);
                goto error;
            }
            PyTuple_SET_ITEM(results, j++, r);
        }
    }
    if (status == DONE && flags == 0) return results;
    if (self->loop && status == UNCHANGED && flags == 0) return results;
    return PyObject_CallFunction(self->finish, "iN", status | flags | (first == UNCHANGED ? BODY_NEVER_RAN : 0),
                                 results);
fallback:
    for (Py_ssize_t i = 0; i < made; i++) Py_XDECREF(arrays[i]);
    if (strict) return NOT_FINISHED;
    return PyObject_Vectorcall(self->fallback, args, nargs, NULL);
error:
    for (Py_ssize_t i = 0; i < made; i++) Py_XDECREF(arrays[i]);
    return NULL;
}

static int entry_traverse(Entry* self, visitproc visit, void* arg) {
    Py_VISIT(self->keep);
    Py_VISIT(self->fallback);
    Py_VISIT(self->finish);
    return 0;
}

static int entry_clear(Entry* self) {  /* fallback and finish are methods of its owner: a cycle */
    self->fn = NULL;
    Py_CLEAR(self->keep);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->finish);
    return 0;
}

static void entry_dealloc(Entry* self) {
    PyObject_GC_UnTrack(self);
    entry_clear(self);
    PyMem_Free(self->specs);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

/* Entry(fallback, finish, specs, loop): specs a sequence of (role, typenum, shape or None, box[, python_bit[, origin[, exact]]]). */
static PyObject* entry_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    PyObject *fallback, *finish, *specs;
    int loop, zero_d = 0;
    if (!PyArg_ParseTuple(args, "OOOp|p", &fallback, &finish, &specs, &loop, &zero_d)) return NULL;
    PyObject* seq = PySequence_Fast(specs, "specs must be a sequence");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_VALUES) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many values for one entry");
        return NULL;
    }
    Entry* self = (Entry*)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    self->vectorcall = entry_vectorcall;
    self->specs = PyMem_Calloc(n ? n : 1, sizeof(Spec));
    Py_INCREF(fallback);
    self->fallback = fallback;
    Py_INCREF(finish);
    self->finish = finish;
    self->loop = loop;
    self->zero_d = zero_d;
    self->n_values = n;
    for (Py_ssize_t k = 0; k < n; k++) {
        Spec* s = &self->specs[k];
        PyObject* shape;
        s->python_bit = s->origin = -1;
        s->exact = 0;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, k), "iiOi|iii", &s->role, &s->typenum, &shape, &s->box,
                              &s->python_bit, &s->origin, &s->exact))
            goto error;
        s->ndim = -1;
        if (shape != Py_None) {
            s->ndim = (int)PySequence_Size(shape);
            if (s->ndim < 0 || s->ndim > NPY_MAXDIMS) {
                PyErr_SetString(PyExc_ValueError, "a bad shape");
                goto error;
            }
            for (int d = 0; d < s->ndim; d++) {
                PyObject* item = PySequence_GetItem(shape, d);
                s->dims[d] = item ? PyLong_AsSsize_t(item) : -1;
                Py_XDECREF(item);
                if (PyErr_Occurred()) goto error;
            }
        }
        if (s->role != WRITE) self->n_args++;
        if (s->role == UPDATE || s->role == DONATE) self->n_updated++;
        if (s->role == DONATE) self->n_donated++;
    }
    Py_DECREF(seq);
    return (PyObject*)self;
error:
    Py_DECREF(seq);
    Py_DECREF(self);
    return NULL;
}

/* entry.bind(address, keep, fn_table, data_table): the built function; calls run it from now on. */
static PyObject* entry_bind(Entry* self, PyObject* args) {
    unsigned long long address, fns, data;
    PyObject* keep;
    if (!PyArg_ParseTuple(args, "KOKK", &address, &keep, &fns, &data)) return NULL;
    Py_INCREF(keep);
    Py_XSETREF(self->keep, keep);
    self->tables[0] = (void*)(uintptr_t)fns;
    self->tables[1] = (void*)(uintptr_t)data;
    self->fn = (native_fn)(uintptr_t)address;
    self->short_run = 0;
    Py_RETURN_NONE;
}

static PyMethodDef entry_methods[] = {
    {"bind", (PyCFunction)entry_bind, METH_VARARGS, "bind(address, keep, fn_table, data_table)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "autograph_lite_entry.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Entry, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = entry_new,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_methods = entry_methods,
    .tp_doc = "One generated native function, called from Python (see entry.c).",
};


/* Direct(plan, sources, constants, outputs): a plan that is one native loop (lowering.Plan.direct),
called without its Python frame. Per loop input, `sources[k]` is the plan parameter it is, or -1
for `constants[k]` (the object the plan passes); per plan output, `outputs[j]` is the loop
variable it is (>= 0) or the parameter -1 - p. Until `bind(entry)` gives it the loop's Entry, and
for any call the C does not finish cleanly (NOT_FINISHED: an argument not in the C's form,
INEXACT, a floating-point flag to report at the plan's line), it calls `plan` (the plan's function
with its error reporting), which runs the loop again from the start: the loop is pure. A clean
run raised no flag, so numpy's error state is not swapped in. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *plan, *entry, *constants;
    Py_ssize_t n_args, n_values, n_outputs;
    Py_ssize_t sources[MAX_VALUES], outputs[MAX_VALUES];
} Direct;

static PyTypeObject DirectType;

/* output j of a call of `self` (a new reference), NULL with an error, or NOT_FINISHED */
static PyObject* direct_output(Direct* self, PyObject* const* args, Py_ssize_t j) {
    Py_ssize_t at = self->outputs[j];
    if (at < 0) {
        Py_INCREF(args[-1 - at]);
        return args[-1 - at];
    }
    PyObject* values[MAX_VALUES];
    for (Py_ssize_t k = 0; k < self->n_values; k++)
        values[k] = self->sources[k] >= 0 ? args[self->sources[k]] : PyTuple_GET_ITEM(self->constants, k);
    return entry_run((Entry*)self->entry, values, self->n_values, 1, at);
}

static int direct_ready(Direct* self, Py_ssize_t nargs) {
    return self->entry != NULL && ((Entry*)self->entry)->fn != NULL && ((Entry*)self->entry)->fallback != NULL
        && nargs == self->n_args;
}

static PyObject* direct_vectorcall(PyObject* self_, PyObject* const* args, size_t nargsf, PyObject* kwnames);

/* The plan's only output (FastCall's _run case): the object, not a 1-tuple */
static PyObject* direct_single(Direct* self, PyObject* const* args, Py_ssize_t nargs) {
    if (self->n_outputs == 1 && self->outputs[0] >= 0 && direct_ready(self, nargs)) {
        PyObject* r = direct_output(self, args, 0);
        if (r != NOT_FINISHED) return r;
    }
    /* (an output that is an argument: the loop runs all the same, as the plan runs it) */
    PyObject* results = self->n_outputs == 1 && self->outputs[0] < 0 ? direct_vectorcall((PyObject*)self, args, nargs, NULL)
                                                                       : PyObject_Vectorcall(self->plan, args, nargs, NULL);
    if (results == NULL) return NULL;
    PyObject* r = PySequence_GetItem(results, 0);
    Py_DECREF(results);
    return r;
}

static PyObject* direct_vectorcall(PyObject* self_, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    Direct* self = (Direct*)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && direct_ready(self, nargs) && self->n_outputs >= 1) {
        /* one run of the loop: each output that is a loop variable taken from it */
        Py_ssize_t loop_outputs = 0, j;
        for (j = 0; j < self->n_outputs; j++) loop_outputs += self->outputs[j] >= 0;
        PyObject* loop = NULL;  /* outputs other than one loop variable: the loop's variables, from one run (it runs
                                   where no output reads it, as the plan runs it) */
        if (loop_outputs != 1) {
            PyObject* values[MAX_VALUES];
            for (Py_ssize_t k = 0; k < self->n_values; k++)
                values[k] = self->sources[k] >= 0 ? args[self->sources[k]] : PyTuple_GET_ITEM(self->constants, k);
            loop = entry_run((Entry*)self->entry, values, self->n_values, 1, -1);
            if (loop == NULL) return NULL;
            if (loop == NOT_FINISHED) return PyObject_Vectorcall(self->plan, args, nargsf, kwnames);
        }
        PyObject* results = PyTuple_New(self->n_outputs);
        if (results == NULL) {
            Py_XDECREF(loop);
            return NULL;
        }
        for (j = 0; j < self->n_outputs; j++) {
            PyObject* r;
            if (loop != NULL && self->outputs[j] >= 0) {
                r = PyTuple_GET_ITEM(loop, self->outputs[j]);
                Py_INCREF(r);
            } else {
                r = direct_output(self, args, j);
            }
            if (r == NOT_FINISHED) {
                Py_DECREF(results);
                return PyObject_Vectorcall(self->plan, args, nargsf, kwnames);
            }
            if (r == NULL) {
                Py_DECREF(results);
                Py_XDECREF(loop);
                return NULL;
            }
            PyTuple_SET_ITEM(results, j, r);
        }
        Py_XDECREF(loop);
        return results;
    }
    return PyObject_Vectorcall(self->plan, args, nargsf, kwnames);
}

static PyObject* direct_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    PyObject *plan, *sources, *constants, *outputs;
    if (!PyArg_ParseTuple(args, "OO!O!O!", &plan, &PyTuple_Type, &sources, &PyTuple_Type, &constants,
                          &PyTuple_Type, &outputs))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(sources), m = PyTuple_GET_SIZE(outputs);
    if (n > MAX_VALUES || m > MAX_VALUES || PyTuple_GET_SIZE(constants) != n) {
        PyErr_SetString(PyExc_ValueError, "Direct: bad sources, constants or outputs");
        return NULL;
    }
    Direct* self = (Direct*)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = direct_vectorcall;
    Py_INCREF(plan);
    self->plan = plan;
    Py_INCREF(constants);
    self->constants = constants;
    self->n_values = n;
    self->n_outputs = m;
    for (Py_ssize_t k = 0; k < n; k++) {
        self->sources[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(sources, k));
        if (self->sources[k] >= self->n_args) self->n_args = self->sources[k] + 1;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        self->outputs[j] = PyLong_AsSsize_t(PyTuple_GET_ITEM(outputs, j));
        if (self->outputs[j] < 0 && -self->outputs[j] > self->n_args) self->n_args = -self->outputs[j];
    }
    if (PyErr_Occurred()) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject*)self;
}

/* direct.bind(entry, n_args): the loop's Entry (built), the plan's number of parameters */
static PyObject* direct_bind(Direct* self, PyObject* args) {
    PyObject* entry;
    Py_ssize_t n_args;
    if (!PyArg_ParseTuple(args, "O!n", &EntryType, &entry, &n_args)) return NULL;
    Entry* e = (Entry*)entry;
    if (!e->loop || e->n_args != self->n_values || e->n_donated || n_args < self->n_args) {
        PyErr_SetString(PyExc_ValueError, "Direct.bind: not the entry of this plan's loop");
        return NULL;
    }
    for (Py_ssize_t j = 0; j < self->n_outputs; j++)
        if (self->outputs[j] >= e->n_values) {
            PyErr_SetString(PyExc_ValueError, "Direct.bind: an output past the loop's variables");
            return NULL;
        }
    self->n_args = n_args;
    Py_INCREF(entry);
    Py_XSETREF(self->entry, entry);
    Py_RETURN_NONE;
}

static int direct_traverse(Direct* self, visitproc visit, void* arg) {
    Py_VISIT(self->plan);
    Py_VISIT(self->entry);
    Py_VISIT(self->constants);
    return 0;
}

static int direct_clear(Direct* self) {
    Py_CLEAR(self->plan);
    Py_CLEAR(self->entry);
    Py_CLEAR(self->constants);
    return 0;
}

static void direct_dealloc(Direct* self) {
    PyObject_GC_UnTrack(self);
    direct_clear(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyObject* direct_bound(Direct* self, void* unused) { return PyBool_FromLong(self->entry != NULL); }

static PyMethodDef direct_methods[] = {
    {"bind", (PyCFunction)direct_bind, METH_VARARGS, "bind(entry, n_args)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef direct_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(Direct, plan), READONLY, "the plan's function it stands for"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef direct_getset[] = {
    {"bound", (getter)direct_bound, NULL, "whether the loop's Entry is bound", NULL},
    {NULL},
};

static PyTypeObject DirectType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "autograph_lite_entry.Direct",
    .tp_basicsize = sizeof(Direct),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Direct, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = direct_new,
    .tp_dealloc = (destructor)direct_dealloc,
    .tp_traverse = (traverseproc)direct_traverse,
    .tp_clear = (inquiry)direct_clear,
    .tp_methods = direct_methods,
    .tp_members = direct_members,
    .tp_getset = direct_getset,
    .tp_doc = "A plan that is one native loop, called without its Python frame (entry.c).",
};

/* Reporting(fn, state_for, var): fn(*args) run with numpy's error state `var` set to
   state_for(the caller's state) (None: left as it is), and reset after: fp_errors.Reporter.wrap
   in C. The last (caller's state, ours) pair is kept, as the Python spelling keeps it. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fn, *state_for, *var, *last_current, *last_ours;
} Reporting;

static PyObject* reporting_vectorcall(PyObject* self_, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    Reporting* self = (Reporting*)self_;
    PyObject* current;
    if (PyContextVar_Get(self->var, NULL, &current) < 0) return NULL;
    PyObject* ours;
    if (current != NULL && current == self->last_current) {
        ours = self->last_ours;
        Py_INCREF(ours);
        Py_DECREF(current);
    } else {
        ours = PyObject_CallOneArg(self->state_for, current ? current : Py_None);
        if (ours == NULL) {
            Py_XDECREF(current);
            return NULL;
        }
        Py_INCREF(ours);
        Py_XSETREF(self->last_ours, ours);
        Py_XSETREF(self->last_current, current);  /* takes our reference */
    }
    if (ours == Py_None) {
        Py_DECREF(ours);
        return PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    }
    PyObject* token = PyContextVar_Set(self->var, ours);
    Py_DECREF(ours);
    if (token == NULL) return NULL;
    PyObject* result = PyObject_Vectorcall(self->fn, args, nargsf, kwnames);
    if (result == NULL) {  /* reset with the exception kept */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        int failed = PyContextVar_Reset(self->var, token);
        Py_DECREF(token);
        if (failed < 0) {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return NULL;
        }
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    int failed = PyContextVar_Reset(self->var, token);
    Py_DECREF(token);
    if (failed < 0) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
}

static PyObject* reporting_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    PyObject *fn, *state_for, *var;
    if (!PyArg_ParseTuple(args, "OOO", &fn, &state_for, &var)) return NULL;
    if (!PyContextVar_CheckExact(var)) {
        PyErr_SetString(PyExc_TypeError, "Reporting: var must be a contextvars.ContextVar");
        return NULL;
    }
    Reporting* self = (Reporting*)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = reporting_vectorcall;
    Py_INCREF(fn);
    Py_INCREF(state_for);
    Py_INCREF(var);
    self->fn = fn;
    self->state_for = state_for;
    self->var = var;
    return (PyObject*)self;
}

static int reporting_traverse(Reporting* self, visitproc visit, void* arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->state_for);
    Py_VISIT(self->last_current);
    Py_VISIT(self->last_ours);
    return 0;
}

static int reporting_clear(Reporting* self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->state_for);
    Py_CLEAR(self->last_current);
    Py_CLEAR(self->last_ours);
    return 0;
}

static void reporting_dealloc(Reporting* self) {
    PyObject_GC_UnTrack(self);
    reporting_clear(self);
    Py_CLEAR(self->var);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyMemberDef reporting_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(Reporting, fn), READONLY, "the function it runs"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ReportingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "autograph_lite_entry.Reporting",
    .tp_basicsize = sizeof(Reporting),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_vectorcall_offset = offsetof(Reporting, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = reporting_new,
    .tp_dealloc = (destructor)reporting_dealloc,
    .tp_traverse = (traverseproc)reporting_traverse,
    .tp_clear = (inquiry)reporting_clear,
    .tp_members = reporting_members,
    .tp_doc = "fp_errors.Reporter.wrap in C (see entry.c).",
};

static PyObject* empty_tuple;  /* () */
/* numpy's bool and number scalar types and their dtypes (the builtin ones, one object each) */
#define MAX_SCALAR_KINDS 32
static PyTypeObject* scalar_types[MAX_SCALAR_KINDS];
static PyObject* scalar_descrs[MAX_SCALAR_KINDS];
static int n_scalar_kinds;

static int find_scalar_kinds(void) {
    static const int nums[] = {NPY_BOOL, NPY_BYTE, NPY_UBYTE, NPY_SHORT, NPY_USHORT, NPY_INT, NPY_UINT,
                               NPY_LONG, NPY_ULONG, NPY_LONGLONG, NPY_ULONGLONG, NPY_HALF, NPY_FLOAT,
                               NPY_DOUBLE, NPY_LONGDOUBLE, NPY_CFLOAT, NPY_CDOUBLE, NPY_CLONGDOUBLE};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0] && n_scalar_kinds < MAX_SCALAR_KINDS; k++) {
        PyArray_Descr* d = PyArray_DescrFromType(nums[k]);
        if (d == NULL) return -1;
        int seen = 0;
        for (int i = 0; i < n_scalar_kinds; i++) seen |= scalar_types[i] == d->typeobj;
        if (seen) {  /* long and longlong share a type on some platforms: the first dtype is its own */
            Py_DECREF(d);
            continue;
        }
        scalar_types[n_scalar_kinds] = d->typeobj;
        scalar_descrs[n_scalar_kinds++] = (PyObject*)d;  /* kept for good */
    }
    return 0;
}

/* The (shape, dtype) of an array argument, as operator.attrgetter("shape", "dtype") gives it; a
   Python int or bool itself, a Python float's bits as an int (entry.python_fast_key). */
static int scalar_kind(PyObject* a) {  /* index of a's type among numpy's scalar kinds, or -1 */
    for (int i = 0; i < n_scalar_kinds; i++)
        if (Py_TYPE(a) == scalar_types[i]) return i;
    return -1;
}

/* Any error reading a value's shape or dtype (a `__getattr__` raising KeyError) as the
   AttributeError that sends the call down the full path, where the value is an argument like any. */
static PyObject* no_shape(void) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_AttributeError, "shape");
    }
    return NULL;
}

static PyObject* shape_dtype(PyObject* a) {
    if (PyFloat_CheckExact(a)) {  /* a Python number: keyed by value (a trace's constant), a float by its bits */
        double f = PyFloat_AS_DOUBLE(a);
        long long bits;
        memcpy(&bits, &f, sizeof bits);
        return PyLong_FromLongLong(bits);
    }
    if (PyLong_CheckExact(a) || PyBool_Check(a)) {
        Py_INCREF(a);
        return a;
    }
    if (PyArray_CheckExact(a)) {
        PyArrayObject* array = (PyArrayObject*)a;
        int ndim = PyArray_NDIM(array);
        PyObject* shape = PyTuple_New(ndim);
        if (shape == NULL) return NULL;
        for (int d = 0; d < ndim; d++) {
            PyObject* n = PyLong_FromSsize_t(PyArray_DIM(array, d));
            if (n == NULL) {
                Py_DECREF(shape);
                return NULL;
            }
            PyTuple_SET_ITEM(shape, d, n);
        }
        PyObject* dtype = (PyObject*)PyArray_DESCR(array);
        PyObject* pair = PyTuple_Pack(2, shape, dtype);
        Py_DECREF(shape);
        return pair;
    }
    int kind = scalar_kind(a);  /* numpy's own bool and number scalars: shape () */
    if (kind >= 0) return PyTuple_Pack(2, empty_tuple, scalar_descrs[kind]);
    PyObject* shape = PyObject_GetAttrString(a, "shape");
    if (shape == NULL) return no_shape();
    PyObject* dtype = PyObject_GetAttrString(a, "dtype");
    if (dtype == NULL) {
        Py_DECREF(shape);
        return no_shape();
    }
    return Py_BuildValue("(NN)", shape, dtype);
}

/* (device, (type(a), ...), ((a.shape, a.dtype), ...)) for the n values at `items`: the key of
   function.py's fast path; raises AttributeError for a value without a shape, as Python does. */
static PyObject* make_key(PyObject* device, PyObject* const* items, Py_ssize_t n) {
    PyObject* types = PyTuple_New(n);
    PyObject* shapes = PyTuple_New(n);
    if (types == NULL || shapes == NULL) goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject* a = items[i];
        Py_INCREF(Py_TYPE(a));
        PyTuple_SET_ITEM(types, i, (PyObject*)Py_TYPE(a));
        PyObject* sd = shape_dtype(a);
        if (sd == NULL) goto error;
        PyTuple_SET_ITEM(shapes, i, sd);
    }
    PyObject* key = PyTuple_Pack(3, device, types, shapes);
    Py_DECREF(types);
    Py_DECREF(shapes);
    return key;
error:
    Py_XDECREF(types);
    Py_XDECREF(shapes);
    return NULL;
}

/* fast_key(device, args): make_key for Python (function.py's fast path before FastCall). */
static PyObject* fast_key(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "fast_key(device, args: tuple)");
        return NULL;
    }
    return make_key(args[0], &PyTuple_GET_ITEM(args[1], 0), PyTuple_GET_SIZE(args[1]));
}

/* FastCall(python_call, tracing, placement, debugging): `Function.__call__` once this module
is loaded. It is function.py's fast path written in C: positional array arguments whose key
is in the Function's `_fast_cache` run the trace's plan directly (stamping its last use, as
the LRU order needs; a failure gets the plan's note); any other call (keywords, another
signature, a call while tracing, ag.debug) goes to `python_call`, `Function._call`, the
Python method's rest. It reads the attributes the Python fast path reads, so the two cannot
disagree. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python_call, *tracing, *placement, *debugging;
} FastCall;

static PyObject *s_stack, *s_fast_path, *s_device, *s_fast_cache, *s_fast_memo, *s_clock, *s_last_use, *s_mru,
    *s_single_plain, *s_active, *s_plan, *s_note_failure, *s_run, *s_positions;

/* Memo: the last fast-cache hit of a Function (its `_fast_memo`): the device and each array
argument's type, shape and dtype object (a numpy scalar's type alone), and the trace they found. A call whose arguments
match it by pointers and sizes takes that trace without building the key tuple (no
allocations, no reference counts of shared types, dtypes and small ints written: each such
write moves a cache line between the cores of two threads calling at once). Only calls of
plain ndarrays (not subclasses) and numpy's scalars are memoized; TraceCache drops the memo when it evicts a trace. */
#define MEMO_ARGS 8
#define PYTHON_NUMBER -2  /* a Memo's ndim for a Python int, float or bool: its value is its key (held in descrs) */
static int python_number(PyObject* a) { return PyFloat_CheckExact(a) || PyLong_CheckExact(a) || PyBool_Check(a); }
typedef struct {
    PyObject_HEAD
    PyObject *device, *concrete;
    Py_ssize_t n;
    PyObject* types[MEMO_ARGS];
    PyObject* descrs[MEMO_ARGS];
    int ndims[MEMO_ARGS];
    npy_intp dims[MEMO_ARGS][NPY_MAXDIMS];
} Memo;

static PyTypeObject MemoType;

static int memo_matches(Memo* memo, PyObject* device, PyObject* const* args, Py_ssize_t n) {
    if (memo->device != device || memo->n != n) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject* a = args[i];
        if ((PyObject*)Py_TYPE(a) != memo->types[i]) return 0;
        if (memo->ndims[i] == PYTHON_NUMBER) {  /* keyed by value: a float by its bits */
            PyObject* v = memo->descrs[i];
            if (PyFloat_CheckExact(a) ? memcmp(&((PyFloatObject*)a)->ob_fval, &((PyFloatObject*)v)->ob_fval,
                                               sizeof(double)) != 0 : a != v && PyObject_RichCompareBool(a, v, Py_EQ) != 1) {
                PyErr_Clear();
                return 0;
            }
            continue;
        }
        if (memo->ndims[i] < 0) continue;  /* a numpy scalar of a builtin kind: its type is its key */
        PyArrayObject* array = (PyArrayObject*)a;
        if ((PyObject*)PyArray_DESCR(array) != memo->descrs[i] || PyArray_NDIM(array) != memo->ndims[i])
            return 0;
        for (int d = 0; d < memo->ndims[i]; d++)  /* (a 0-d array's dims pointer is not one to hand to memcmp) */
            if (PyArray_DIMS(array)[d] != memo->dims[i][d]) return 0;
    }
    return 1;
}

static PyObject* memo_new(PyObject* device, PyObject* const* args, Py_ssize_t n, PyObject* concrete) {
    /* a Memo of this hit, or NULL with no error when the arguments are not all plain ndarrays */
    if (n > MEMO_ARGS) return NULL;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyArray_CheckExact(args[i]) && scalar_kind(args[i]) < 0 && !python_number(args[i])) return NULL;
    Memo* memo = PyObject_GC_New(Memo, &MemoType);
    if (memo == NULL) return NULL;
    Py_INCREF(device);
    Py_INCREF(concrete);
    memo->device = device;
    memo->concrete = concrete;
    memo->n = n;
    for (Py_ssize_t i = 0; i < n; i++) {
        int kind = scalar_kind(args[i]), number = python_number(args[i]);
        memo->types[i] = (PyObject*)Py_TYPE(args[i]);
        memo->descrs[i] = number ? args[i] : kind >= 0 ? scalar_descrs[kind] : (PyObject*)PyArray_DESCR((PyArrayObject*)args[i]);
        Py_INCREF(memo->types[i]);
        Py_INCREF(memo->descrs[i]);
        memo->ndims[i] = number ? PYTHON_NUMBER : kind >= 0 ? -1 : PyArray_NDIM((PyArrayObject*)args[i]);
        if (kind < 0 && !number) memcpy(memo->dims[i], PyArray_DIMS((PyArrayObject*)args[i]), memo->ndims[i] * sizeof(npy_intp));
    }
    PyObject_GC_Track(memo);
    return (PyObject*)memo;
}

static int memo_traverse(Memo* memo, visitproc visit, void* arg) {
    Py_VISIT(memo->device);
    Py_VISIT(memo->concrete);
    for (Py_ssize_t i = 0; i < memo->n; i++) {
        Py_VISIT(memo->types[i]);
        Py_VISIT(memo->descrs[i]);
    }
    return 0;
}

static int memo_clear(Memo* memo) {
    Py_CLEAR(memo->device);
    Py_CLEAR(memo->concrete);
    for (Py_ssize_t i = 0; i < memo->n; i++) {
        Py_CLEAR(memo->types[i]);
        Py_CLEAR(memo->descrs[i]);
    }
    memo->n = 0;
    return 0;
}

static void memo_dealloc(Memo* memo) {
    PyObject_GC_UnTrack(memo);
    memo_clear(memo);
    PyObject_GC_Del(memo);
}

static PyTypeObject MemoType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "autograph_lite_entry.Memo",
    .tp_basicsize = sizeof(Memo),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)memo_traverse,
    .tp_clear = (inquiry)memo_clear,
    .tp_dealloc = (destructor)memo_dealloc,
    .tp_doc = "the last fast-cache hit of a Function (entry.c)",
};

static int modules_hold(PyObject* guards) {
    /* _fast_path as a tuple of (globals dict, name, module): 1 when each name still holds its
       module (a trace's module globals, function.py's _modules_hold), else 0 (the Python path) */
    if (!PyTuple_CheckExact(guards)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(guards); i++) {
        PyObject* guard = PyTuple_GET_ITEM(guards, i);
        if (!PyTuple_CheckExact(guard) || PyTuple_GET_SIZE(guard) != 3 || !PyDict_Check(PyTuple_GET_ITEM(guard, 0)))
            return 0;
        PyObject* now = PyDict_GetItemWithError(PyTuple_GET_ITEM(guard, 0), PyTuple_GET_ITEM(guard, 1));
        if (now != PyTuple_GET_ITEM(guard, 2)) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

static PyObject* hit_of(FastCall* self, PyObject* function, PyObject* const* args, Py_ssize_t n) {
    /* the ConcreteFunction of this call's fast key (a new reference), NULL with no error for
       a call the Python path takes, NULL with an error for an error the Python path raises */
    PyObject* stack = PyObject_GetAttr(self->tracing, s_stack);
    if (stack == NULL) return NULL;
    int tracing = PyObject_IsTrue(stack);
    Py_DECREF(stack);
    if (tracing != 0) return NULL;
    PyObject* fast = PyObject_GetAttr(function, s_fast_path);
    if (fast == NULL) return NULL;
    int holds = fast == Py_True || modules_hold(fast);
    Py_DECREF(fast);
    if (holds <= 0) return NULL;  /* an error (< 0) is the Python path's to raise again */
    PyObject* device = PyObject_GetAttr(self->placement, s_device);
    if (device == NULL) return NULL;
    PyObject* memo = PyObject_GetAttr(function, s_fast_memo);
    if (memo == NULL) {
        Py_DECREF(device);
        return NULL;
    }
    if (Py_TYPE(memo) == &MemoType && memo_matches((Memo*)memo, device, args, n)) {
        PyObject* concrete = ((Memo*)memo)->concrete;
        Py_INCREF(concrete);
        Py_DECREF(memo);
        Py_DECREF(device);
        return concrete;
    }
    Py_DECREF(memo);
    PyObject* key = make_key(device, args, n);
    if (key == NULL) {
        Py_DECREF(device);
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
        return NULL;
    }
    PyObject* cache = PyObject_GetAttr(function, s_fast_cache);
    PyObject* concrete = cache == NULL ? NULL : PyDict_GetItemWithError(cache, key);
    Py_XINCREF(concrete);
    Py_XDECREF(cache);
    Py_DECREF(key);
    if (concrete != NULL) {
        memo = memo_new(device, args, n, concrete);
        if (memo != NULL) {
            int failed = PyObject_SetAttr(function, s_fast_memo, memo);
            Py_DECREF(memo);
            if (failed < 0) Py_CLEAR(concrete);
        } else if (PyErr_Occurred()) {
            Py_CLEAR(concrete);
        }
    }
    Py_DECREF(device);
    return concrete;
}

/* TraceCache._stamp in C: the LRU stamp, written only when `concrete` is not the most recent
   trace already (it has the newest stamp then; not writing keeps the line unshared). */
static int stamp(PyObject* function, PyObject* concrete) {
    PyObject* mru = PyObject_GetAttr(function, s_mru);
    if (mru == NULL) return -1;
    Py_DECREF(mru);
    if (mru == concrete) return 0;
    PyObject* clock = PyObject_GetAttr(function, s_clock);
    PyObject* now = clock == NULL ? NULL : PyIter_Next(clock);
    Py_XDECREF(clock);
    if (now == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "autograph_lite FastCall: the clock stopped");
        return -1;
    }
    int failed = PyObject_SetAttr(concrete, s_last_use, now) < 0 || PyObject_SetAttr(function, s_mru, concrete) < 0;
    Py_DECREF(now);
    return failed ? -1 : 0;
}

static PyObject* fastcall_vectorcall(PyObject* self_, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    FastCall* self = (FastCall*)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->python_call == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "autograph_lite FastCall: called after it was cleared");
        return NULL;
    }
    if (nargs < 1 || kwnames != NULL)  /* args[0]: the Function (called unbound, as a method) */
        return PyObject_Vectorcall(self->python_call, args, nargsf, kwnames);
    PyObject* concrete = hit_of(self, args[0], args + 1, nargs - 1);
    if (concrete == NULL)
        return PyErr_Occurred() ? NULL : PyObject_Vectorcall(self->python_call, args, nargsf, kwnames);
    PyObject* result = NULL;
    if (stamp(args[0], concrete) < 0) {
        Py_DECREF(concrete);
        return NULL;
    }
    PyObject* fn = PyObject_GetAttr(concrete, s_single_plain);
    PyObject* active = fn == NULL ? NULL : PyObject_GetAttr(self->debugging, s_active);
    int debugging = active == NULL ? -1 : PyObject_IsTrue(active);
    Py_XDECREF(active);
    /* the positions of the arguments that are graph inputs, where some are not (Python numbers:
       the trace's constants), else None */
    PyObject* positions = debugging < 0 ? NULL : PyObject_GetAttr(concrete, s_positions);
    if (positions == NULL || (positions != Py_None && (!PyTuple_CheckExact(positions)
                                                       || PyTuple_GET_SIZE(positions) > MAX_VALUES))) {
        if (positions != NULL) PyErr_SetString(PyExc_TypeError, "autograph_lite FastCall: bad _positions");
        Py_XDECREF(positions);
        Py_XDECREF(fn);
        Py_DECREF(concrete);
        return NULL;
    }
    PyObject* picked[MAX_VALUES];
    PyObject* const* inputs = args + 1;
    Py_ssize_t n_inputs = nargs - 1;
    if (positions != Py_None) {
        n_inputs = PyTuple_GET_SIZE(positions);
        for (Py_ssize_t i = 0; i < n_inputs; i++) {
            Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(positions, i));
            if (at < 0 || at >= nargs - 1) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "autograph_lite FastCall: bad _positions");
                Py_DECREF(positions);
                Py_DECREF(fn);
                Py_DECREF(concrete);
                return NULL;
            }
            picked[i] = args[1 + at];
        }
        inputs = picked;
    }
    if (fn != Py_None && !debugging) {  /* _run's commonest case */
        if (Py_TYPE(fn) == &DirectType) {  /* a plan that is one native loop: its output itself */
            result = direct_single((Direct*)fn, inputs, n_inputs);
        } else {
            PyObject* results = PyObject_Vectorcall(fn, inputs, n_inputs, NULL);
            if (results != NULL) {
                result = PySequence_GetItem(results, 0);
                Py_DECREF(results);
            }
        }
        if (result == NULL && PyErr_ExceptionMatches(PyExc_Exception)) {  /* name the failing node, re-raise */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (tb != NULL) PyException_SetTraceback(value, tb);
            PyObject* plan = PyObject_GetAttr(concrete, s_plan);
            PyObject* noted = plan == NULL ? NULL : PyObject_CallMethodObjArgs(concrete, s_note_failure, plan, value, NULL);
            Py_XDECREF(plan);
            if (noted != NULL) {
                Py_DECREF(noted);
                PyErr_Restore(type, value, tb);
            } else {
                Py_XDECREF(type);
                Py_XDECREF(value);
                Py_XDECREF(tb);
            }
        }
    } else if (fn != NULL) {
        PyObject* values = PyTuple_New(nargs - 1);
        PyObject* arrays = positions == Py_None || values == NULL ? NULL : PyTuple_New(n_inputs);
        if (values != NULL && (positions == Py_None || arrays != NULL)) {
            for (Py_ssize_t i = 1; i < nargs; i++) {
                Py_INCREF(args[i]);
                PyTuple_SET_ITEM(values, i - 1, args[i]);
            }
            if (arrays == NULL) {
                result = PyObject_CallMethodOneArg(concrete, s_run, values);
            } else {
                for (Py_ssize_t i = 0; i < n_inputs; i++) {
                    Py_INCREF(inputs[i]);
                    PyTuple_SET_ITEM(arrays, i, inputs[i]);
                }
                result = PyObject_CallMethodObjArgs(concrete, s_run, arrays, values, NULL);
            }
        }
        Py_XDECREF(values);
        Py_XDECREF(arrays);
    }
    Py_DECREF(positions);
    Py_XDECREF(fn);
    Py_DECREF(concrete);
    return result;
}

static PyObject* fastcall_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    PyObject *python_call, *tracing, *placement, *debugging;
    if (!PyArg_ParseTuple(args, "OOOO:FastCall", &python_call, &tracing, &placement, &debugging)) return NULL;
    FastCall* self = (FastCall*)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = fastcall_vectorcall;
    Py_INCREF(python_call);
    Py_INCREF(tracing);
    Py_INCREF(placement);
    Py_INCREF(debugging);
    self->python_call = python_call;
    self->tracing = tracing;
    self->placement = placement;
    self->debugging = debugging;
    return (PyObject*)self;
}

static PyObject* fastcall_get(PyObject* self, PyObject* obj, PyObject* type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static int fastcall_traverse(FastCall* self, visitproc visit, void* arg) {
    Py_VISIT(self->python_call);
    Py_VISIT(self->tracing);
    Py_VISIT(self->placement);
    Py_VISIT(self->debugging);
    return 0;
}

static int fastcall_clear(FastCall* self) {
    Py_CLEAR(self->python_call);
    Py_CLEAR(self->tracing);
    Py_CLEAR(self->placement);
    Py_CLEAR(self->debugging);
    return 0;
}

static void fastcall_dealloc(FastCall* self) {
    PyObject_GC_UnTrack(self);
    fastcall_clear(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

static PyMemberDef fastcall_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(FastCall, python_call), READONLY, "the Python __call__ it stands in for"},
    {NULL},
};

static PyObject* fastcall_name(PyObject* self, void* qualified) {
    return PyUnicode_FromString(qualified ? "Function.__call__" : "__call__");
}

static PyGetSetDef fastcall_getset[] = {
    {"__name__", fastcall_name, NULL, NULL, NULL},
    {"__qualname__", fastcall_name, NULL, NULL, (void*)1},
    {NULL},
};

static PyTypeObject FastCallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "autograph_lite_entry.FastCall",
    .tp_basicsize = sizeof(FastCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(FastCall, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = fastcall_get,
    .tp_new = fastcall_new,
    .tp_traverse = (traverseproc)fastcall_traverse,
    .tp_clear = (inquiry)fastcall_clear,
    .tp_dealloc = (destructor)fastcall_dealloc,
    .tp_members = fastcall_members,
    .tp_getset = fastcall_getset,
    .tp_doc = "Function.__call__'s fast path in C (entry.c)",
};

static int intern_names(void) {
    struct { PyObject** name; const char* text; } names[] = {
        {&s_stack, "stack"}, {&s_fast_path, "_fast_path"}, {&s_device, "device"}, {&s_fast_cache, "_fast_cache"}, {&s_fast_memo, "_fast_memo"},
        {&s_clock, "_clock"}, {&s_last_use, "_last_use"}, {&s_mru, "_mru"}, {&s_single_plain, "_single_plain"}, {&s_active, "active"},
        {&s_plan, "_plan"}, {&s_note_failure, "_note_failure"}, {&s_run, "_run"}, {&s_positions, "_positions"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL) return -1;
    return 0;
}

static PyMethodDef module_methods[] = {
    {"fast_key", (PyCFunction)(void (*)(void))fast_key, METH_FASTCALL, "fast_key(device, args)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "autograph_lite_entry", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit_autograph_lite_entry(void) {
    import_array();
#if defined(HAND_OFF_WAIT_NS) && defined(_SC_NPROCESSORS_ONLN)
    several_cpus = sysconf(_SC_NPROCESSORS_ONLN) > 1;
#endif
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL || find_scalar_kinds() < 0) return NULL;
    if (PyType_Ready(&MemoType) < 0 || intern_names() < 0) return NULL;
    PyObject* m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyTypeObject* types[] = {&EntryType, &ReportingType, &FastCallType, &DirectType};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyModule_AddType(m, types[i]) < 0) {  /* readies the type; named by its tp_name's last part */
            Py_DECREF(m);
            return NULL;
        }
    return m;
}
