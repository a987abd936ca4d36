"""`ag.distributed`: compiled functions run past one process, on Dask (`pip install autograph_lite[distributed]`).

    import dask.array as da
    X = da.from_array(x, chunks=(1000, 64))
    losses = ag.distributed.map_blocks(loss_per_block, X, Y)     # a dask array, one value per block
    total = losses.sum().compute()

    trainer = ag.distributed.DataParallel(mlp_loss, argnums=(0, 1, 2, 3))
    data = trainer.shard(x, y)                                 # shards held by the workers
    loss, params = trainer.step(params, data, lr=0.05)          # the update applied once, here

A function travels as its saved bytes (`ag.saving.dumps`: the graph, never pickled Python code):
`Shipped` pickles to (sha256, bytes), and each worker process loads those bytes once into a
`LoadedFunction` it keeps, keyed by the sha256. The worker needs neither the user's source nor
a C compiler. Which cluster (`client()`, for `map_blocks` and `DataParallel` alike): the
`client=` given; else dask's current Client (the one a dask array's `.compute()` would use);
else one connected to `$AG_DASK_SCHEDULER`; else an embedded `LocalCluster` of one
single-threaded worker process per core, started once. Each worker caps its BLAS/OpenMP threads
to its share of the host's cores (threadpoolctl; the embedded cluster's workers also start with
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS set to it).
"""
import collections
import hashlib
import importlib.util
import inspect
import os
import sys
import threading
import time

import numpy as np

try:
    import dask
    import dask.array as da
    import distributed
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError as e:  # ag.distributed is an extra: say how to install it
    raise ImportError(f"ag.distributed needs dask and distributed: pip install 'autograph_lite[distributed]' ({e})") \
        from None

from .autodiff import value_and_grad
from .function import Function, function
from .saving import dumps, loads
from .tensor_spec import TensorSpec

__all__ = ["client", "dashboard", "map_blocks", "DataParallel", "PendingStep", "Shards", "StepStats", "Shipped",
           "ThreadCap"]

# ---- shipping a compiled function ----------------------------------------------------------

_loaded = collections.OrderedDict()  # sha256 -> LoadedFunction, in this process (a worker's cache)
_loaded_lock = threading.Lock()
_LOADED_MAX = 64
_loads = collections.Counter()


class Shipped:
    """A compiled function as its saved bytes. Pickles as (sha256, bytes): no code, no module
    reference; `.function` is the loaded function, loaded once per process and kept."""

    __slots__ = ("digest", "data")

    def __init__(self, data, digest=None):
        self.data = bytes(data)
        self.digest = digest or hashlib.sha256(self.data).hexdigest()

    @classmethod
    def of(cls, f):
        """`f` (an @ag.function with its traces) saved to bytes and loaded once here, so that what
        cannot be saved or loaded is refused before anything is sent: ValueError if it cannot be saved."""
        try:
            data = dumps(f)
        except (ValueError, TypeError) as e:
            raise ValueError(f"ag.distributed: {getattr(f, '__name__', f)} cannot be sent to workers, "
                             f"because it cannot be saved: {e}") from None
        shipped = cls(data)
        shipped.function  # noqa: B018 (loaded here and kept: a worker in this process finds it)
        return shipped

    def __reduce__(self):
        return (Shipped, (self.data, self.digest))

    def __dask_tokenize__(self):
        return ("autograph_lite.Shipped", self.digest)

    @property
    def function(self):
        with _loaded_lock:
            found = _loaded.get(self.digest)
            if found is not None:
                _loaded.move_to_end(self.digest)
                return found
        if hashlib.sha256(self.data).hexdigest() != self.digest:
            raise ValueError(f"ag.distributed: the function's bytes do not match their sha256 {self.digest[:12]}")
        loaded = loads(self.data)
        with _loaded_lock:
            _loaded[self.digest] = loaded
            _loads[self.digest] += 1
            while len(_loaded) > _LOADED_MAX:
                _loaded.popitem(last=False)
        return loaded


def loads_done():
    """{sha256: how many times this process loaded those bytes}: once each, unless evicted."""
    return dict(_loads)


# ---- the client -----------------------------------------------------------------------------

_clients = {}  # address (None: the embedded cluster) -> the Client `client()` made for it
_clients_lock = threading.Lock()


def client(client=None):
    """The Dask client `ag.distributed` uses: `client` if given; else dask's current Client (the
    default one, where a dask array's `.compute()` runs); else one connected to
    `$AG_DASK_SCHEDULER` (`tcp://host:8786`); else an embedded `LocalCluster` with one
    single-threaded worker process per core, started once (its dashboard link printed). A Client
    made here becomes dask's default, as every new Client does. Its workers get `ThreadCap`."""
    return _connect(client)


def _connect(given):
    if given is None:
        given = _current()
    if given is None:
        address = os.environ.get("AG_DASK_SCHEDULER") or None
        with _clients_lock:
            given = _clients.get(address)
            if given is None or given.status in ("closing", "closed"):
                given = _clients[address] = distributed.Client(address) if address else _embedded()
    _cap_threads(given)
    return given


def _current():
    """dask's current distributed Client, or None."""
    try:
        found = distributed.default_client()
    except ValueError:
        return None
    return None if found.status in ("closing", "closed") else found


def _embedded():
    """A Client of a new LocalCluster: one single-threaded worker process per core, each started
    with the OpenMP/BLAS thread variables at its share of the cores (dask's rule: a variable set
    in this process's environment wins)."""
    n = cores()
    threads = str(max(1, cores() // n))
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    environ.update({name: threads for name in _THREAD_VARIABLES})
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True)
    started = distributed.Client(cluster)
    print(f"ag.distributed: started a local cluster of {n} worker processes; {dashboard(started)}", file=sys.stderr)
    return started


_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def cores():
    """The cores this process may run on (its CPU affinity where the OS tells it, else the host's)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def dashboard(client):
    """Where `client`'s cluster shows its progress, in words."""
    if importlib.util.find_spec("bokeh") is None:
        return "no dashboard (pip install bokeh to see the cluster's progress in a browser)"
    return f"dashboard: {client.dashboard_link}"


class ThreadCap(WorkerPlugin):
    """Limits each worker's BLAS/OpenMP pools to its share of its host's cores (the cores the worker
    may run on over the worker threads on that host). threadpoolctl changes the pools of libraries
    already loaded (numpy's OpenBLAS), which environment variables cannot once a worker imported
    numpy. It is applied when the worker starts and again in each task thread, the first time that
    thread runs an `ag.distributed` task (an OpenMP limit holds per thread)."""

    name = "autograph_lite.thread_cap"

    def __init__(self, threads_per_host):
        self.threads_per_host = threads_per_host

    def setup(self, worker):
        global _share
        threads = self.threads_per_host.get(_host(worker.address), worker.state.nthreads)
        _share = max(1, cores() // max(1, threads))
        _cap_this_thread()


_share = None  # in a worker: its BLAS/OpenMP threads (ThreadCap); None elsewhere
_capped = threading.local()


def _cap_this_thread():
    """Apply this worker's thread cap in the calling thread, once per thread (held while it lives)."""
    if _share is not None and getattr(_capped, "share", None) != _share:
        from threadpoolctl import threadpool_limits
        _capped.limits, _capped.share = threadpool_limits(limits=_share), _share


def _host(address):
    return address.split("://")[-1].rsplit(":", 1)[0]


def _cap_threads(client):
    """Register ThreadCap with `client`'s cluster, once per client object (a flag on the client: a
    later client that reuses a closed one's id() registers again)."""
    if getattr(client, "_ag_thread_cap", False):
        return
    with _clients_lock:
        if getattr(client, "_ag_thread_cap", False):
            return
        threads = collections.Counter()
        for address, w in client.scheduler_info(n_workers=-1)["workers"].items():
            threads[_host(address)] += w.get("nthreads", 1)
        client.register_plugin(ThreadCap(dict(threads)))
        client._ag_thread_cap = True


# ---- map over blocks ------------------------------------------------------------------------

def map_blocks(f, *args, dtype=None, chunks=None, drop_axis=None, new_axis=None, name=None, client=None):
    """`f` over the blocks of dask arrays, compiled, on the workers that hold the blocks.

    `f` is a Python function or an @ag.function returning one array. The dask arrays in `args`
    (one rank; their chunks aligned as dask aligns them) give `f` one block each per call. Other
    arguments go to every call: numpy arrays and numpy scalars as arguments of the compiled
    function; Python numbers (bool, int, float, complex) as constants of the trace, weak as they
    are eagerly (a float32 block times 2.0 stays float32). `f` is traced once, on this process,
    for a signature whose dims are None where blocks differ in size (an uneven last block shares
    the trace), saved, and sent as bytes; an @ag.function with an input_signature keeps it (all
    its arguments then pass as its signature says), and a block that does not fit it is a
    ValueError naming the block.

    Returns a dask array, computed where dask computes any dask array: on its current scheduler,
    which is the current distributed Client if there is one (`client.compute(result)` picks
    another). `client=`: the cluster to prepare (its workers get the thread cap); by default
    `ag.distributed.client()`: dask's current Client, else `$AG_DASK_SCHEDULER`, else an embedded
    `LocalCluster` started now, which becomes dask's current Client. Nothing runs until computed.

    The result's chunks: a scalar block result is one element per block, so reductions go through
    dask's own: `map_blocks(loss_per_block, X, y).sum()`. A block result of the blocks' rank has,
    on each axis, its traced size where the trace knows it, else the blocks' chunks on that axis
    where the signature's dim there is None too (of the first dask argument); any other result
    needs `chunks=` (and `drop_axis=`/`new_axis=`), as for `dask.array.map_blocks`, and a block
    whose result does not have the shape its chunks say is a ValueError naming the block.
    """
    arrays = [a for a in args if isinstance(a, da.Array)]
    if not arrays:
        raise TypeError("ag.distributed.map_blocks needs at least one dask array argument")
    ndim = arrays[0].ndim
    if any(a.ndim != ndim for a in arrays):
        raise ValueError(f"ag.distributed.map_blocks: the dask arrays have ranks {[a.ndim for a in arrays]}; "
                         f"give them one rank (reshape or add axes first)")
    index = tuple(range(ndim))
    _, aligned = da.core.unify_chunks(*[x for a in arrays for x in (a, index)])
    aligned = iter(aligned)
    args = [next(aligned) if isinstance(a, da.Array) else a for a in args]
    compiled, specs = _compiled_for_blocks(f, args)
    shipped = Shipped.of(compiled)
    output = _single_output(shipped.function, compiled.__name__)
    pad = 0
    if chunks is None and drop_axis is None and new_axis is None:
        position, reference = next((k, a) for k, a in enumerate(args) if isinstance(a, da.Array))
        block_spec = specs[position] if position < len(specs) else None
        block_shape = block_spec.shape if isinstance(block_spec, TensorSpec) else _relaxed_spec(reference).shape
        chunks, pad = _output_chunks(output.shape, block_shape, reference.chunks, compiled.__name__)
    _connect(client)  # after what can be refused here: no cluster started for a function refused
    return da.map_blocks(_run_block, *args, shipped=dask.delayed(shipped, pure=True), pad=pad,
                         function_name=compiled.__name__, dtype=dtype or output.dtype, chunks=chunks,
                         drop_axis=drop_axis, new_axis=new_axis,
                         meta=np.empty((0,) * (len(chunks) if chunks is not None else ndim), dtype or output.dtype),
                         token=name or f"ag-{compiled.__name__}")


def _run_block(*blocks, shipped, pad, function_name, block_info=None):
    _cap_this_thread()
    result = np.asarray(shipped.function(*blocks))
    if pad:
        result = result.reshape((1,) * pad)
    expected = block_info and block_info.get(None, {}).get("chunk-shape")
    if expected is not None and result.shape != tuple(expected):
        raise ValueError(f"ag.distributed.map_blocks: block {tuple(block_info[None]['chunk-location'])} of "
                         f"{function_name}'s result has shape {result.shape}, but the result's chunks say "
                         f"{tuple(expected)}: pass chunks= (the result's chunks) to map_blocks")
    return result


def _compiled_for_blocks(f, args):
    """An @ag.function of `f` traced once, for a signature every block fits, and that signature's
    specs; ValueError naming a block that does not fit."""
    name = getattr(f, "__name__", "f")
    if isinstance(f, Function) and f.input_signature is not None:
        signature = list(f.input_signature)
        if len(signature) != len(args):
            raise TypeError(f"ag.distributed.map_blocks: {name} has an input_signature of {len(signature)} "
                            f"arguments, given {len(args)}")
        for position, (spec, a) in enumerate(zip(signature, args)):
            if isinstance(a, da.Array) and isinstance(spec, TensorSpec):
                for block, shape in _block_shapes(a):
                    problem = spec.mismatch(TensorSpec(shape, a.dtype))
                    if problem:
                        raise ValueError(f"ag.distributed.map_blocks: block {block} of argument {position} does "
                                         f"not fit {name}'s input_signature ({spec}): {problem}")
        compiled = f
    else:  # Python numbers are part of the trace, as ag.function makes them: weak, as they are eagerly
        signature = [_relaxed_spec(a) if isinstance(a, da.Array) else _constant_spec(a) for a in args]
        compiled = function(f.python_function if isinstance(f, Function) else f)
    # a numpy scalar traced as itself: the trace (and the saved signature) is for a numpy scalar there
    concrete = compiled.get_concrete_function(*[a if isinstance(a, np.generic) else s for s, a in zip(signature, args)])
    return compiled, concrete.input_specs


def _block_shapes(a):
    for block in np.ndindex(*a.numblocks):
        yield block, tuple(c[i] for c, i in zip(a.chunks, block))


def _relaxed_spec(a):
    """The spec every block of dask array `a` fits: a dim None where the blocks' sizes differ."""
    return TensorSpec([c[0] if len(set(c)) == 1 else None for c in a.chunks], a.dtype)


def _constant_spec(value):
    if isinstance(value, (np.ndarray, np.generic)):
        return TensorSpec(np.shape(value), value.dtype)
    if type(value) in (bool, int, float, complex):
        return value
    raise TypeError(f"ag.distributed.map_blocks: an argument other than a dask array must be a numpy array, "
                    f"a numpy scalar or a Python number (passed to every block), not {type(value).__name__}")


def _positional(fn, count, name):
    """`fn` as a function of exactly `count` positional parameters, called `name` (what ag.function
    traces, and the saved function's name)."""
    def call(*args):
        return fn(*args)

    parameter = inspect.Parameter.POSITIONAL_ONLY
    call.__signature__ = inspect.Signature([inspect.Parameter(f"arg{i}", parameter) for i in range(count)])
    call.__name__ = call.__qualname__ = name
    return call


def _single_output(loaded, name):
    spec = loaded.signatures[0].output_specs
    if not isinstance(spec, TensorSpec):
        raise TypeError(f"ag.distributed.map_blocks: {name} must return one array per block")
    return spec


def _output_chunks(shape, block_shape, chunks, name):
    """The result's chunks for a block result of `shape`, from blocks of the traced `block_shape`
    and the dask `chunks`, and how many axes of length 1 a scalar result gets. A dim of `shape`
    that is None takes the blocks' chunks on its axis only where `block_shape` is None there too."""
    if shape == ():
        return tuple((1,) * len(c) for c in chunks), len(chunks)
    if len(shape) != len(chunks):
        raise ValueError(f"ag.distributed.map_blocks: {name} returns rank {len(shape)} from blocks of rank "
                         f"{len(chunks)}; pass chunks= (and drop_axis=/new_axis=) for such a result")
    out = []
    for axis, (d, b, c) in enumerate(zip(shape, block_shape, chunks)):
        if d is not None:
            out.append((d,) * len(c))
        elif b is None:
            out.append(c)
        else:
            raise ValueError(f"ag.distributed.map_blocks: {name}'s result has a dim {axis} that the trace does not "
                             f"know (None), while the blocks' dim {axis} is {b} in its signature, so the result's "
                             f"chunks do not follow from the blocks': pass chunks= (the result's chunks)")
    return tuple(out), 0


# ---- data-parallel training -----------------------------------------------------------------

StepStats = collections.namedtuple("StepStats", "seconds compute transfer reduce retries")
StepStats.__doc__ = """One step's time in seconds: `compute` the slowest path of shard computations (inside the
workers), `reduce` the slowest path of the gradient sums, `transfer` the rest: transfer and waiting (parameters
sent, results moved, the scheduler's latency, tasks queued, and attempts lost with a worker); `retries` how
many times a lost worker made part of the step run again (a worker removed while it computed or held one of
the step's tasks, which Dask reran elsewhere, or the whole step launched again)."""

# what a worker lost mid-step raises; the step then runs again on the workers left
_LOST = (distributed.KilledWorker, distributed.client.FutureCancelledError, distributed.comm.CommClosedError)


class Shards:
    """Training data split along axis 0, each shard a tuple of arrays held by a worker (a Dask
    future). From `DataParallel.shard`; a lost shard is recomputed by Dask from where it came."""

    def __init__(self, futures, specs, make):
        self.futures, self.specs, self._make = futures, specs, make  # specs: per shard, a TensorSpec per array
        self.rows = [s[0].shape[0] for s in specs]

    def __len__(self):
        return len(self.futures)

    def _live(self):
        if any(f.status in ("cancelled", "lost", "error") for f in self.futures):  # a restart forgot them
            self.futures = self._make()
        return self.futures


class DataParallel:
    """Data-parallel gradients of `loss_fn` on a Dask cluster, the parameters held here.

        trainer = ag.distributed.DataParallel(mlp_loss, argnums=(0, 1, 2, 3))
        data = trainer.shard(x, y)                        # split along axis 0, one shard per worker
        loss, params = trainer.step(params, data, lr=0.05)

    `loss_fn(*args)` returns a float scalar; the arguments at `argnums` (an int or a tuple of
    ints) are the parameters (arrays), the others the data, in order. Each step sends the
    parameters once to every worker (`client.scatter(..., broadcast=True)`), runs the compiled
    `ag.value_and_grad(loss_fn, argnums)` on every shard where the shard lives, and sums the
    values and gradients by a tree over the shards in shard order through Dask (in float64, or
    `sum_dtype`), so a step gives the same bits run to run for the same shards. With
    `reduction="mean"` (the default) `loss_fn` is a mean over the data's first axis and shard k is
    weighted by its rows over all rows; with `"sum"` the shards' values add. The result equals
    `ag.value_and_grad(loss_fn, argnums)` on the whole batch within float rounding.

    `client`: a `distributed.Client`; by default `ag.distributed.client()` (dask's current Client,
    else `$AG_DASK_SCHEDULER`, else an embedded local cluster). A worker lost mid-step: Dask reruns
    its tasks on the workers left (a lost shard from where it came); where that fails (a task's
    result lost for good), the step is launched again, up to `retries` times. `stats` holds a
    `StepStats` per step: compute, transfer and waiting, reduce time, and the retries.
    """

    def __init__(self, loss_fn, argnums=0, client=None, reduction="mean", sum_dtype=None, retries=3):
        if reduction not in ("mean", "sum"):
            raise ValueError(f"DataParallel: reduction is 'mean' or 'sum', not {reduction!r}")
        self.loss_fn, self.argnums, self.reduction, self.retries = loss_fn, argnums, reduction, retries
        self.sum_dtype = None if sum_dtype is None else np.dtype(sum_dtype)
        self.positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        self.client = _connect(client)
        self.stats = []
        self._compiled = {}  # (param specs, data specs) -> Shipped
        self._sent = {}      # sha256 -> the future of the Shipped, on every worker
        self._direct = True

    # -- data --

    def shard(self, *data, shards=None):
        """`data` (the loss function's data arguments, in order) split along axis 0 and held by the
        workers: numpy arrays into `shards` pieces (default: one per worker, contiguous rows per
        worker); dask arrays by their blocks along axis 0; or, per argument, a list of per-shard
        arrays. Returns `Shards`; a shard that does not fit the others (dtype, trailing shape) is
        refused when a step first uses it, before any worker runs."""
        if not data:
            raise TypeError("DataParallel.shard: give the loss function's data arguments")
        if all(isinstance(d, (list, tuple)) for d in data):
            counts = {len(d) for d in data}
            if len(counts) != 1:
                raise ValueError(f"DataParallel.shard: the arguments' shard lists differ in length {sorted(counts)}")
            return self._hold([tuple(np.asarray(d[k]) for d in data) for k in range(counts.pop())])
        if all(isinstance(d, da.Array) for d in data):
            return self._hold_dask(data)
        arrays = [np.asarray(d) for d in data]
        rows = {a.shape[0] if a.ndim else None for a in arrays}
        if len(rows) != 1 or None in rows:
            raise ValueError(f"DataParallel.shard: the data arguments must share their first dim, got shapes "
                             f"{[a.shape for a in arrays]}")
        n = shards or len(self._workers())
        parts = [np.array_split(a, n) for a in arrays]
        return self._hold([tuple(np.ascontiguousarray(p[k]) for p in parts) for k in range(n)])

    def _workers(self):
        return sorted(self.client.scheduler_info(n_workers=-1)["workers"])

    def _hold(self, pieces):
        """Shards of numpy pieces; each is a task holding its arrays, so Dask can redo a lost one."""
        def make():
            workers = self._workers()
            return [self.client.submit(_pack, *p, workers=[workers[k * len(workers) // len(pieces)]],
                                       allow_other_workers=True, pure=False) for k, p in enumerate(pieces)]
        specs = [tuple(TensorSpec(a.shape, a.dtype) for a in p) for p in pieces]
        return Shards(make(), specs, make)

    def _hold_dask(self, data):
        # the first axis aligned across the arguments; each argument's other axes its own
        indices = [("rows",) + tuple((k, axis) for axis in range(1, a.ndim)) for k, a in enumerate(data)]
        _, data = da.core.unify_chunks(*[x for a, index in zip(data, indices) for x in (a, index)])
        data = [a.rechunk({axis: -1 for axis in range(1, a.ndim)}) for a in data]
        blocks = [a.to_delayed().reshape(-1) for a in data]
        def make():
            return self.client.compute([dask.delayed(_pack)(*(b[k] for b in blocks)) for k in range(len(blocks[0]))])
        specs = [tuple(TensorSpec((rows,) + a.shape[1:], a.dtype) for a in data) for rows in data[0].chunks[0]]
        return Shards(make(), specs, make)

    # -- steps --

    def value_and_grad(self, params, data):
        """`(loss, gradients)` of `loss_fn` over all shards of `data` at `params` (the arguments at
        `argnums`: one array for an int argnums, else a tuple), as `ag.value_and_grad` gives them."""
        return self.submit(params, data).result()

    def step(self, params, data, lr=None, update=None):
        """One training step: `(loss, new params)`, the update applied once, here: `p - lr * g`
        (SGD), or `update(params, grads)` for another optimizer."""
        loss, grads = self.value_and_grad(params, data)
        if update is not None:
            return loss, update(params, grads)
        if lr is None:
            raise TypeError("DataParallel.step needs lr= (SGD) or update=")
        if isinstance(self.argnums, int):
            return loss, params - lr * grads
        return loss, tuple(p - lr * g for p, g in zip(params, grads))

    def fit(self, params, data, steps, lr=None, update=None, every=None, file=None):
        """`steps` steps from `params`; prints the loss and the step's time split every `every` steps
        (default: ten lines in all). Returns `(params, losses)`."""
        every = every or max(1, steps // 10)
        print(f"ag.distributed: training on {len(self._workers())} workers, {len(data)} shards; "
              f"{dashboard(self.client)}", file=file or sys.stderr)
        losses = []
        for k in range(steps):
            loss, params = self.step(params, data, lr=lr, update=update)
            losses.append(loss)
            if (k + 1) % every == 0 or k + 1 == steps:
                s = self.stats[-1]
                print(f"  step {k + 1}/{steps}: loss {float(loss):.6g}  ({s.seconds * 1e3:.1f} ms: compute "
                      f"{s.compute * 1e3:.1f}, transfer and waiting {s.transfer * 1e3:.1f}, reduce {s.reduce * 1e3:.1f})",
                      file=file or sys.stderr)
        return params, losses

    def submit(self, params, data):
        """Start a step (as `value_and_grad`) and return it as a `PendingStep`: `.result()` waits."""
        if not isinstance(data, Shards):
            data = self.shard(*data) if isinstance(data, (list, tuple)) else self.shard(data)
        leaves = (params,) if isinstance(self.argnums, int) else tuple(params)
        if len(leaves) != len(self.positions):
            raise TypeError(f"DataParallel: argnums {self.argnums} names {len(self.positions)} parameters, "
                            f"given {len(leaves)}")
        leaves = tuple(_param(p, k) for k, p in enumerate(leaves))
        shipped = self._shipped(leaves, data)
        return PendingStep(self, shipped, leaves, data)

    def _shipped(self, leaves, data):
        """The compiled value_and_grad for these parameters and shards; ValueError naming a shard that does not fit."""
        first = data.specs[0]
        specs = tuple(TensorSpec((None,) + s.shape[1:], s.dtype) for s in first)
        for k, shard in enumerate(data.specs):
            if len(shard) != len(specs):
                raise ValueError(f"DataParallel: shard {k} holds {len(shard)} arrays, shard 0 {len(specs)}")
            for j, (want, have) in enumerate(zip(specs, shard)):
                problem = want.mismatch(have)
                if problem:
                    raise ValueError(f"DataParallel: shard {k}, data argument {j} does not fit the compiled "
                                     f"signature {want} (from shard 0): {problem}")
        param_specs = tuple(TensorSpec(np.shape(p), p.dtype) for p in leaves)
        key = (param_specs, specs)
        shipped = self._compiled.get(key)
        if shipped is None:
            n = len(param_specs) + len(specs)
            signature = _interleave(param_specs, specs, self.positions)
            name = getattr(self.loss_fn, "__name__", "")
            vg = _positional(value_and_grad(self.loss_fn, self.positions), n,
                             f"{name if name.isidentifier() else 'loss'}_value_and_grad")
            compiled = Function(vg, input_signature=signature, autograph=False)
            # a numpy scalar parameter traced as itself (`_param` makes a float one): the box it has on the workers
            compiled.get_concrete_function(*_interleave(
                tuple(p if isinstance(p, np.generic) else s for p, s in zip(leaves, param_specs)), specs, self.positions))
            shipped = self._compiled[key] = Shipped.of(compiled)
        return shipped

    def _broadcast(self, params):
        """`params` sent to every worker once: from here straight to the workers where they can be
        reached (a third of the time through the scheduler, measured on a local cluster)."""
        if self._direct:
            try:
                return self.client.scatter([params], broadcast=True, hash=False, direct=True)[0]
            except OSError:  # the workers are not reachable from here: through the scheduler
                self._direct = False
        return self.client.scatter([params], broadcast=True, hash=False)[0]

    def _sent_function(self, shipped):
        """The future of `shipped` on every worker, sent once per trainer. Under a key of its own
        (hash=False): a key made from the bytes would be shared with another trainer's copy, which
        the workers may be deleting, as that trainer's future is released, while this one is sent."""
        future = self._sent.get(shipped.digest)
        if future is None or future.status != "finished":
            future = self._sent[shipped.digest] = self.client.scatter(shipped, broadcast=True, hash=False)
        return future


class PendingStep:
    """A step in flight (`DataParallel.submit`): `.result()` gives `(loss, gradients)`."""

    def __init__(self, trainer, shipped, params, data):
        self.trainer, self.shipped, self.params, self.data = trainer, shipped, params, data
        self.retries, self._relaunches, self._result, self._held = 0, 0, None, []
        self._start = time.perf_counter()
        self._future = self._launch()

    def _launch(self):
        t = self.trainer
        client = t.client
        function = t._sent_function(self.shipped)
        params = t._broadcast(self.params)
        total = sum(self.data.rows)
        weights = [r / total if t.reduction == "mean" else None for r in self.data.rows]
        level = [client.submit(_shard_value_and_grad, function, params, shard, t.positions, w,
                               None if t.sum_dtype is None else t.sum_dtype.str, pure=False)
                 for shard, w in zip(self.data._live(), weights)]
        self._held.extend(level)  # held until the step's retries are counted
        while len(level) > 1:  # a fixed tree over shard order: the same sums in the same order every run
            level = [client.submit(_add, level[i], level[i + 1], pure=False) if i + 1 < len(level) else level[i]
                     for i in range(0, len(level), 2)]
            self._held.extend(level)
        return level[0]

    def result(self):
        if self._result is None:
            self._result = self._wait()
        return self._result

    def _wait(self):
        t = self.trainer
        while True:
            try:
                value, grads, compute, reduce, dtypes = self._future.result()
                break
            except _LOST:
                if self._relaunches >= t.retries:
                    raise
                self._relaunches += 1
                t._sent.pop(self.shipped.digest, None)  # sent again: its copies may be what was lost
                t.client.wait_for_workers(1, timeout=120)
                self._future = self._launch()
        seconds = time.perf_counter() - self._start
        self.retries = self._relaunches + _reruns(t.client, {f.key for f in self._held})
        self._held = []
        t.stats.append(StepStats(seconds, compute, max(0.0, seconds - compute - reduce), reduce, self.retries))
        loss = np.asarray(value).astype(dtypes[0])[()]
        grads = [np.asarray(g).astype(d, copy=False) for g, d in zip(grads, dtypes[1])]
        return loss, (grads[0] if isinstance(t.argnums, int) else tuple(grads))


def _reruns(client, keys):
    """How many of `keys` (tasks the caller holds) were running or queued on a worker when it was
    lost, so that Dask ran them again elsewhere (the scheduler's `suspicious` count; one round trip)."""
    def count(dask_scheduler, keys):  # nested: sent by value, the scheduler need not import autograph_lite
        tasks = dask_scheduler.tasks
        return sum(1 for k in keys if k in tasks and tasks[k].suspicious)
    return client.run_on_scheduler(count, keys=list(keys))


def _param(p, k):
    if isinstance(p, (np.ndarray, np.generic)):
        return p
    if isinstance(p, float):
        return np.float64(p)
    raise TypeError(f"DataParallel: parameter {k} must be a numpy array or a float, not {type(p).__name__}")


def _interleave(params, data, positions):
    """The loss function's arguments: `params` at `positions`, `data` in the other places, in order."""
    count = len(params) + len(data)
    params, data = iter(params), iter(data)
    return [next(params) if i in positions else next(data) for i in range(count)]


# ---- what runs on the workers (module functions: pickled by name, autograph_lite installed there) ----

def _pack(*arrays):
    return arrays


def _shard_value_and_grad(shipped, params, shard, positions, weight, sum_dtype):
    """One shard's (value, gradients) in the summing dtype, times its rows' weight."""
    _cap_this_thread()
    start = time.perf_counter()
    value, grads = shipped.function(*_interleave(params, shard, positions))
    grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
    dtypes = (np.asarray(value).dtype.str, [np.asarray(g).dtype.str for g in grads])
    def widened(v):
        v = np.asarray(v)
        dtype = np.dtype(sum_dtype) if sum_dtype else np.result_type(v.dtype, np.float64)
        return v.astype(dtype, copy=False) if weight is None else np.multiply(v, dtype.type(weight), dtype=dtype)
    value, grads = widened(value), [widened(g) for g in grads]
    return value, grads, time.perf_counter() - start, 0.0, dtypes


def _add(a, b):
    start = time.perf_counter()
    value, grads = a[0] + b[0], [x + y for x, y in zip(a[1], b[1])]
    return value, grads, max(a[2], b[2]), max(a[3], b[3]) + time.perf_counter() - start, a[4]
