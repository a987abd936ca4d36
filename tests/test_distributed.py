"""ag.distributed on a two-process LocalCluster: compiled blocks and data-parallel steps against
the eager (or single-process) run, a worker killed mid-step, and functions shipped without code."""
import importlib
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

_SKIP = "the distributed extra is not installed (pip install -e '.[distributed]')"
da = pytest.importorskip("dask.array", reason=_SKIP)
distributed = pytest.importorskip("distributed", reason=_SKIP)
pytest.importorskip("threadpoolctl", reason=_SKIP)

import autograph_lite as ag  # noqa: E402
from autograph_lite import distributed as agd  # noqa: E402
from examples.models import mlp_loss, mlp_step, mlp_step_inputs  # noqa: E402

PARAMS = (0, 1, 2, 3)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def scaled_tanh(x, y):
    return np.tanh(x) * y + 0.5 * x


def block_loss(x, y):
    return np.mean((np.tanh(x) - y) ** 2)


def _blocks(a):
    return [a.blocks[i].compute(scheduler="sync") for i in range(a.numblocks[0])]


def test_map_blocks_equals_the_eager_map_over_blocks(client):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((10, 3)), rng.standard_normal((10, 3))
    X, Y = da.from_array(x, chunks=(4, 3)), da.from_array(y, chunks=(4, 3))  # blocks of 4, 4 and 2 rows
    result = agd.map_blocks(scaled_tanh, X, Y)
    assert isinstance(result, da.Array) and result.chunks == X.chunks
    eager = np.concatenate([scaled_tanh(a, b) for a, b in zip(_blocks(X), _blocks(Y))])
    got = client.compute(result).result()
    assert got.dtype == eager.dtype and np.array_equal(got, eager)

    per_block = agd.map_blocks(block_loss, X, Y)   # a scalar per block: one element each
    eager_losses = [block_loss(a, b) for a, b in zip(_blocks(X), _blocks(Y))]
    assert np.array_equal(client.compute(per_block).result().ravel(), eager_losses)
    assert np.isclose(client.compute(per_block.sum()).result(), sum(eager_losses), rtol=1e-15)


def test_map_blocks_computes_on_the_current_client_where_dask_would(client):
    X = da.from_array(np.linspace(-1, 1, 12).reshape(6, 2), chunks=(4, 2))
    result = agd.map_blocks(scaled_tanh, X, X)   # no client=: dask's current Client, the fixture's
    assert getattr(client, "_ag_thread_cap", False)
    with distributed.get_task_stream(client) as stream:
        got = result.compute()                   # dask's default scheduler: that Client
    assert len([t for t in stream.data if "scaled_tanh" in str(t["key"])]) == 2
    x = X.compute(scheduler="sync")
    assert np.array_equal(got, scaled_tanh(x, x))


def scaled(x, s):
    return x * s


def test_map_blocks_passes_python_and_numpy_scalars_to_every_block_as_eagerly(client):
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    X = da.from_array(x, chunks=(2, 2))
    for s in (2.0, 3, np.float64(2.5), np.float32(0.5), True):
        got = client.compute(agd.map_blocks(scaled, X, s)).result()
        eager = np.concatenate([scaled(b, s) for b in _blocks(X)])
        assert got.dtype == eager.dtype and np.array_equal(got, eager), s  # 2.0 weak: float32 stays
    with pytest.raises(TypeError, match=r"a numpy array, a numpy scalar or a Python number .*not str"):
        agd.map_blocks(scaled, X, "2")


def transposed(x):
    return x.T


def drop_first(x):
    return x[1:]


def test_map_blocks_asks_for_chunks_where_the_result_does_not_follow_the_blocks(client):
    X = da.from_array(np.ones((10, 3)), chunks=(4, 3))   # dim 0 None in the trace (4, 4, 2), dim 1 is 3
    with pytest.raises(ValueError, match=r"transposed's result has a dim 1 .*blocks' dim 1 is 3 .*pass chunks="):
        agd.map_blocks(transposed, X)
    wrong = agd.map_blocks(drop_first, X)     # dim 0 None from None: taken as the blocks', which it is not
    with pytest.raises(ValueError, match=r"block \((\d), 0\) of drop_first's result has shape \((3|1), 3\), but "
                                         r"the result's chunks say \((4|2), 3\): pass chunks="):
        client.compute(wrong).result()
    right = agd.map_blocks(drop_first, X, chunks=((3, 3, 1), (3,)))
    assert np.array_equal(client.compute(right).result(), np.ones((7, 3)))


def test_map_blocks_of_an_ag_function_with_a_signature_names_the_block_that_does_not_fit():
    f = ag.function(scaled_tanh, input_signature=[ag.TensorSpec((4, 3), np.float64)] * 2)
    X = da.from_array(np.ones((10, 3)), chunks=(4, 3))
    with pytest.raises(ValueError, match=r"block \(2, 0\) of argument 0 .*dim 0 is 2, expected 4"):
        agd.map_blocks(f, X, X)


_rng = np.random.default_rng(1)


def draws(x):
    return x + _rng.random(x.shape)


def test_a_function_that_cannot_be_saved_is_refused_before_anything_is_sent():
    X = da.from_array(np.ones((4, 2)), chunks=(2, 2))
    with pytest.raises(ValueError, match=r"draws cannot be sent to workers, because it cannot be saved: .*generator"):
        agd.map_blocks(draws, X)


def _single_process_step(params, x, y, lr):
    loss, *new = ag.function(mlp_step)(*params, x, y, lr)
    return loss, new


@pytest.mark.parametrize("shards", [2, 3, "dask"])
def test_a_data_parallel_step_equals_the_single_process_step(client, shards):
    w1, b1, w2, b2, x, y, lr = mlp_step_inputs()
    params = (w1, b1, w2, b2)
    trainer = agd.DataParallel(mlp_loss, argnums=PARAMS, client=client)
    if shards == "dask":  # dask arrays: a shard per block along axis 0 (24, 24 and 16 rows)
        data = trainer.shard(da.from_array(x, chunks=(24, 500)), da.from_array(y, chunks=(24, 10)))
        assert data.rows == [24, 24, 16]
    else:
        data = trainer.shard(x, y, shards=shards)   # 3 shards: 22, 21 and 21 rows
    loss, new = trainer.step(params, data, lr=lr)
    want_loss, want = _single_process_step(params, x, y, lr)
    assert type(loss) is type(want_loss) and np.isclose(loss, want_loss, rtol=1e-13, atol=0)
    for got, expected in zip(new, want):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    again, new_again = trainer.step(params, data, lr=lr)  # the same bits run to run
    assert again == loss and all(np.array_equal(a, b) for a, b in zip(new, new_again))
    (digest,) = [shipped.digest for shipped in trainer._compiled.values()]
    loads = [done.get(digest, 0) for done in client.run(agd.loads_done).values()]
    assert set(loads) <= {0, 1} and 1 in loads  # each worker that ran a shard loaded the function once
    stats = trainer.stats[-1]
    assert stats.retries == 0 and stats.compute > 0 and stats.reduce >= 0 and stats.transfer >= 0
    assert np.isclose(stats.compute + stats.transfer + stats.reduce, stats.seconds)


def _pools():
    from threadpoolctl import threadpool_info
    return [p["num_threads"] for p in threadpool_info()]


def test_workers_cap_their_blas_threads_inside_their_tasks(client):
    from autograph_lite.distributed import ThreadCap
    assert agd.client(client) is client
    assert all(ThreadCap.name in found for found in client.run(lambda dask_worker: list(dask_worker.plugins)).values())
    share = max(1, agd.cores() // 2)
    workers = list(client.scheduler_info(n_workers=-1)["workers"])
    inside = [client.submit(_pools, workers=[w], allow_other_workers=False, pure=False).result() for w in workers]
    assert inside and all(found and all(n <= share for n in found) for found in inside)


def test_the_thread_cap_is_registered_per_client_object(client):
    with distributed.Client(client.scheduler.address, set_as_default=False) as other:
        assert not getattr(other, "_ag_thread_cap", False)
        assert agd.client(other) is other and other._ag_thread_cap


_CONNECT = """
import json, os, sys
import dask, distributed, numpy as np, dask.array as da
from autograph_lite import distributed as agd

def f(x):
    return np.tanh(x) * 2.0

def inside():
    from threadpoolctl import threadpool_info
    return {"env": {k: os.environ.get(k) for k in agd._THREAD_VARIABLES},
            "pools": [p["num_threads"] for p in threadpool_info()]}

if __name__ == "__main__":
    # dask's own default for the workers' OMP_NUM_THREADS is 1: make it 7, to see that ours is applied
    dask.config.set({"distributed.nanny.pre-spawn-environ.OMP_NUM_THREADS": 7})
    x = np.linspace(-1, 1, 12).reshape(6, 2)
    result = agd.map_blocks(f, da.from_array(x, chunks=(4, 2)))   # no client=, no Client yet
    current = distributed.default_client()
    with distributed.get_task_stream(current) as stream:
        got = result.compute()
    workers = list(current.scheduler_info(n_workers=-1)["workers"])
    print(json.dumps({"address": current.scheduler.address, "equal": bool(np.array_equal(got, f(x))),
                      "tasks": len([t for t in stream.data if "ag-f" in str(t["key"])]),
                      "workers": len(workers), "cores": agd.cores(),
                      "inside": [current.submit(inside, workers=[w], pure=False).result() for w in workers]}))
"""


def _connect_in_a_new_process(tmp_path, scheduler=None):
    script = tmp_path / "connect.py"
    script.write_text(_CONNECT)
    env = {k: v for k, v in os.environ.items() if k not in ("AG_DASK_SCHEDULER",) + agd._THREAD_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] +
                                        [p for p in [os.environ.get("PYTHONPATH")] if p])
    if scheduler:
        env["AG_DASK_SCHEDULER"] = scheduler
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_map_blocks_with_no_client_connects_to_ag_dask_scheduler_and_computes_there(client, tmp_path):
    found, _ = _connect_in_a_new_process(tmp_path, scheduler=client.scheduler.address)
    assert found["address"] == client.scheduler.address and found["workers"] == 2
    assert found["equal"] and found["tasks"] == 2     # its two blocks ran on the cluster named


def test_map_blocks_with_no_client_starts_the_embedded_cluster_with_capped_workers(tmp_path):
    found, stderr = _connect_in_a_new_process(tmp_path)
    assert "started a local cluster of" in stderr
    assert found["equal"] and found["tasks"] == 2 and found["workers"] == found["cores"]
    for worker in found["inside"]:  # from inside a task on each worker
        assert worker["env"] == {k: "1" for k in agd._THREAD_VARIABLES}
        assert all(n == 1 for n in worker["pools"])


def test_a_shard_that_does_not_fit_is_refused_naming_it_before_any_worker_runs(client, monkeypatch):
    w1, b1, w2, b2, x, y, _ = mlp_step_inputs()
    trainer = agd.DataParallel(mlp_loss, argnums=PARAMS, client=client)
    data = trainer.shard([x[:32], x[32:].astype(np.float32)], [y[:32], y[32:]])

    def sent(*args, **kwargs):
        raise AssertionError("something was sent to the workers")
    monkeypatch.setattr(client, "submit", sent)
    monkeypatch.setattr(client, "scatter", sent)
    with pytest.raises(ValueError, match=r"shard 1, data argument 0 does not fit .*dtype float32 is not float64"):
        trainer.value_and_grad((w1, b1, w2, b2), data)


def _until(condition, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _wait_for(name):
    distributed.Event(name).wait(120)


def test_a_worker_killed_mid_step_costs_a_retry_not_a_wrong_result(client):
    w1, b1, w2, b2, x, y, lr = mlp_step_inputs(n=4096)
    params = (w1, b1, w2, b2)
    trainer = agd.DataParallel(mlp_loss, argnums=PARAMS, client=client)
    data = trainer.shard(x, y, shards=4)
    want = trainer.value_and_grad(params, data)   # the fault-free step
    assert trainer.stats[-1].retries == 0
    holder = client.who_has(data.futures[0])[data.futures[0].key][0]
    # each worker's one thread sleeps, so the step's tasks wait where their shards are until the kill
    workers = list(client.scheduler_info(n_workers=-1)["workers"])
    release = distributed.Event(f"release-{os.getpid()}", client=client)
    busy = [client.submit(_wait_for, release.name, workers=[w], allow_other_workers=False, pure=False)
            for w in workers]
    _until(lambda: all(f.key in client.processing(workers=[w])[w] for f, w in zip(busy, workers)))
    pending = trainer.submit(params, data)
    _until(lambda: len(client.processing(workers=[holder])[holder]) > 1)  # a shard's task queued behind it
    pid = client.run(os.getpid, workers=[holder])[holder]
    os.kill(pid, signal.SIGKILL)
    release.set()
    loss, grads = pending.result()
    assert holder not in client.scheduler_info(n_workers=-1)["workers"]  # it died before the step's result came
    assert trainer.stats[-1].retries >= 1   # its tasks ran again on the other worker
    assert loss == want[0] and all(np.array_equal(a, b) for a, b in zip(grads, want[1]))
    client.wait_for_workers(2, timeout=60)  # the nanny starts a new worker process


def _modules_imported(data):
    """The modules unpickling `data` imports classes and functions from."""
    modules = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module, name):
            modules.add(module)
            return super().find_class(module, name)
    Recording(io.BytesIO(data)).load()
    return modules


def test_a_traced_function_runs_on_restarted_workers_without_its_module(client, tmp_path, monkeypatch):
    name = f"ag_user_module_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        import numpy as np

        def shifted_tanh(x):
            return np.tanh(x) + 1.0

        def loss(w, x, y):
            return np.mean((np.tanh(x @ w) - y) ** 2)
    """))
    # this process imports it from tmp_path; the workers, started before, do not have tmp_path on sys.path
    # (the ones restarted below inherit it from this process, and find the file gone)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    assert all(client.run(lambda: importlib.util.find_spec(name) is None).values())
    x = np.random.default_rng(2).standard_normal((9, 4))
    X = da.from_array(x, chunks=(4, 4))
    result = agd.map_blocks(module.shifted_tanh, X)
    graph = pickle.dumps(dict(result.__dask_graph__()))  # plain pickle: no function travels by reference
    assert name.encode() not in graph
    imported = _modules_imported(graph)
    assert name not in imported and {m.split(".")[0] for m in imported} <= {"autograph_lite", "dask", "numpy"}, \
        imported
    trainer = agd.DataParallel(module.loss, argnums=0, client=client)
    w, y = np.full((4, 2), 0.1), np.ones((9, 2))
    data = trainer.shard(x, y)
    before = client.compute(result).result()
    step = trainer.value_and_grad(w, data)

    os.remove(tmp_path / f"{name}.py")
    importlib.invalidate_caches()
    client.restart()
    assert all(client.run(lambda: importlib.util.find_spec(name) is None).values())  # they cannot import it
    assert np.array_equal(client.compute(result).result(), before)
    loss, grad = trainer.value_and_grad(w, data)
    assert loss == step[0] and np.array_equal(grad, step[1])
    sys.modules.pop(name, None)


def shifted_loss(w, shift, x, y):
    if isinstance(shift, np.ndarray):  # eagerly a float parameter is a numpy scalar, never a 0-d array
        shift = shift * 0.0
    err = x @ w + shift - y
    return np.mean(err * err)


def test_a_float_parameter_is_a_numpy_scalar_on_the_workers_as_in_one_process(client):
    rng = np.random.default_rng(3)
    w, x, y = rng.standard_normal(3), rng.standard_normal((8, 3)), rng.standard_normal(8)
    trainer = agd.DataParallel(shifted_loss, argnums=(0, 1), client=client)
    loss, (new_w, new_shift) = trainer.step((w, 0.5), trainer.shard(x, y, shards=2), lr=0.1)
    want_loss, (gw, gs) = ag.value_and_grad(shifted_loss, argnums=(0, 1))(w, np.float64(0.5), x, y)
    assert np.isclose(loss, want_loss, rtol=1e-13)
    np.testing.assert_allclose(new_w, w - 0.1 * gw, rtol=1e-12)
    assert np.isclose(new_shift, 0.5 - 0.1 * gs, rtol=1e-12)
