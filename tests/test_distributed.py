"""ag.distributed on a two-process LocalCluster: compiled blocks and data-parallel steps against
the eager (or single-process) run, a worker killed mid-step, and functions shipped without code."""
import importlib
import os
import signal
import sys
import textwrap

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


def test_workers_cap_their_blas_threads(client):
    from autograph_lite.distributed import ThreadCap
    def pools():
        from threadpoolctl import threadpool_info
        return [p["num_threads"] for p in threadpool_info()]
    assert agd.client(client) is client
    assert all(ThreadCap.name in found for found in client.run(lambda dask_worker: list(dask_worker.plugins)).values())
    share = max(1, os.cpu_count() // 2)
    assert all(n <= share for found in client.run(pools).values() for n in found)


def test_ag_dask_scheduler_names_the_cluster(client, monkeypatch):
    monkeypatch.setenv("AG_DASK_SCHEDULER", client.scheduler.address)
    connected = agd.client()
    try:
        assert connected is not client and connected.scheduler.address == client.scheduler.address
        assert agd.client() is connected  # one connection per address
    finally:
        agd._clients.pop(client.scheduler.address).close()


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


def test_a_worker_killed_mid_step_costs_a_retry_not_a_wrong_result(client):
    w1, b1, w2, b2, x, y, lr = mlp_step_inputs(n=4096)
    params = (w1, b1, w2, b2)
    trainer = agd.DataParallel(mlp_loss, argnums=PARAMS, client=client)
    data = trainer.shard(x, y, shards=4)
    want = trainer.value_and_grad(params, data)
    pending = trainer.submit(params, data)
    holder = client.who_has(data.futures[0])[data.futures[0].key][0]
    pid = client.run(os.getpid, workers=[holder])[holder]
    os.kill(pid, signal.SIGKILL)
    loss, grads = pending.result()
    assert holder not in client.scheduler_info(n_workers=-1)["workers"]  # it died before the step's result came
    assert loss == want[0] and all(np.array_equal(a, b) for a, b in zip(grads, want[1]))
    client.wait_for_workers(2, timeout=60)  # the nanny starts a new worker process


def test_a_traced_function_runs_on_restarted_workers_without_its_module(client, tmp_path, monkeypatch):
    name = f"ag_user_module_{os.getpid()}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent("""
        import numpy as np

        def shifted_tanh(x):
            return np.tanh(x) + 1.0

        def loss(w, x, y):
            return np.mean((np.tanh(x @ w) - y) ** 2)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))  # the workers import what this process can, unless the file is gone
    module = importlib.import_module(name)
    x = np.random.default_rng(2).standard_normal((9, 4))
    X = da.from_array(x, chunks=(4, 4))
    result = agd.map_blocks(module.shifted_tanh, X)
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
