"""W5 trained data-parallel on two local Dask workers, against the same training in one process.

    python examples/distributed_training.py        # needs the distributed extra

The 64 rows are split into two shards, one per worker; each step sends the parameters to both
workers once, each worker runs the compiled value_and_grad of the loss on its 32 rows, the
gradients are summed through Dask, and the SGD update is applied here.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

import autograph_lite as ag  # noqa: E402
from examples.models import mlp_loss, mlp_step, mlp_step_inputs  # noqa: E402

STEPS = 200


def single_process(steps=STEPS):
    """The losses of `steps` compiled W5 steps on the whole batch, in this process."""
    w1, b1, w2, b2, x, y, lr = mlp_step_inputs()
    step, losses = ag.function(mlp_step), []
    for _ in range(steps):
        loss, w1, b1, w2, b2 = step(w1, b1, w2, b2, x, y, lr)
        losses.append(float(loss))
    return losses


def data_parallel(client, steps=STEPS):
    """The losses of `steps` data-parallel steps on `client`'s workers, and the trainer."""
    w1, b1, w2, b2, x, y, lr = mlp_step_inputs()
    trainer = ag.distributed.DataParallel(mlp_loss, argnums=(0, 1, 2, 3), client=client)
    data = trainer.shard(x, y)
    _, losses = trainer.fit((w1, b1, w2, b2), data, steps, lr=lr, every=steps // 5, file=sys.stdout)
    return [float(v) for v in losses], trainer


def main():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster, Client(cluster) as client:
        distributed, trainer = data_parallel(client)
    local = single_process()
    print(f"\nW5 (64x1000 -> 100 -> 10, SGD), {STEPS} steps: data-parallel on 2 workers vs one process")
    for i in (0, 1, 9, 49, 99, 149, 199):
        print(f"  step {i + 1:>3}: loss {distributed[i]:.12f}  (one process {local[i]:.12f})")
    worst = max(abs(a - b) / abs(b) for a, b in zip(distributed, local))
    print(f"  loss fell {distributed[0]:.4g} -> {distributed[-1]:.4g}; largest relative difference from the "
          f"one-process run over {STEPS} steps: {worst:.1e}")
    def median(part):
        return np.median([getattr(s, part) for s in trainer.stats[1:]]) * 1e3
    print(f"  median step {median('seconds'):.1f} ms: compute {median('compute'):.1f}, transfer and waiting "
          f"{median('transfer'):.1f}, reduce {median('reduce'):.2f}")
    assert distributed[-1] < distributed[0] and worst < 1e-9


if __name__ == "__main__":
    main()
