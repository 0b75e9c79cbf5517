"""Where cells run: a Dask `distributed` client on a local cluster or on the user's own scheduler.

- `--scheduler tcp://host:8786`: connect to a running scheduler whose workers the user started (Slurm
  via dask-jobqueue, Kubernetes, ssh); an address that does not answer is `SchedulerUnreachableError`.
- GPUs visible (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES, else `nvidia-smi`): one single-threaded
  worker process per GPU, pinned to it through that variable (dask-cuda's LocalCUDACluster when it is
  installed, else one Nanny per GPU with the variable in its environment).
- `--device cpu` (or no GPU): `--workers N` single-threaded worker processes.
Local clusters listen on 127.0.0.1 only. A worker process that dies is restarted by its nanny and the
scheduler re-runs the cell it held (Dask's `allowed-failures`).

One cell at a time per GPU: local GPU workers run one thread each. On an existing cluster whose every
worker declares a `GPU` resource (`dask worker --resources GPU=1`), each cell asks for one, so a worker
with several threads still times one cell at a time on its GPU; local clusters do not ask (resource
restrictions turn off the scheduler's queue, which hands each free worker the next longest cell).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kernelpilot.foundation.errors import DeviceUnavailableError, InvalidArgumentError
from kernelpilot.sweep.errors import ClusterError, SchedulerUnreachableError

WORKER_WAIT_S = 60


@dataclass
class Cluster:
    client: Any
    description: str
    workers: int
    device: str  # "gpu" or "cpu"
    resources: dict[str, float] | None = None  # what each cell asks of its worker (None: nothing)
    notes: list[str] = field(default_factory=list)


def _existing_workers(client: Any, device: str) -> tuple[dict[str, float] | None, list[str]]:
    """(resources each cell asks for, notes) for an existing cluster's workers."""
    workers = client.scheduler_info().get("workers", {})
    if workers and all((w.get("resources") or {}).get("GPU", 0) >= 1 for w in workers.values()):
        return {"GPU": 1}, []
    shared = sorted(a for a, w in workers.items() if int(w.get("nthreads", 1) or 1) > 1)
    if device != "cpu" and shared:
        return None, [
            f"{len(shared)} worker(s) run several threads and declare no GPU resource: cells may share a "
            "GPU (start them with --nthreads 1, or --resources GPU=1)"
        ]
    return None, []


def _need_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(
            "sweeps run on Dask distributed, which is not installed",
            "pip install 'kernelpilot[sweep]' (or: pip install distributed)",
        ) from exc
    return distributed


def visible_gpus() -> tuple[str, list[str]]:
    """(pinning variable, device ids) of the GPUs this process may use; ids empty when none."""
    for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        raw = os.environ.get(var)
        if raw is not None:
            ids = [x.strip() for x in raw.split(",") if x.strip() and x.strip() != "-1"]
            return var, ids
    from kernelpilot.timing.environment import query_gpus

    return "CUDA_VISIBLE_DEVICES", [str(i) for i in range(len(query_gpus()))]


def _local_gpu(distributed: Any, var: str, ids: list[str]) -> Any:
    if var == "CUDA_VISIBLE_DEVICES":
        with contextlib.suppress(ImportError):
            from dask_cuda import LocalCUDACluster  # optional: sets affinity, one worker per GPU

            return LocalCUDACluster(
                CUDA_VISIBLE_DEVICES=",".join(ids),
                threads_per_worker=1,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
    workers = {
        f"gpu{i}": {
            "cls": distributed.Nanny,
            "options": {"nthreads": 1, "env": {var: dev}, "host": "127.0.0.1", "silence_logs": logging.ERROR},
        }
        for i, dev in enumerate(ids)
    }
    scheduler = {
        "cls": distributed.Scheduler,
        "options": {"host": "127.0.0.1", "dashboard": False, "dashboard_address": None},
    }
    return distributed.SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR)


@contextlib.contextmanager
def open_cluster(
    scheduler: str | None, workers: int | None, device: str, connect_timeout_s: float = 10.0
) -> Iterator[Cluster]:
    distributed = _need_distributed()
    if scheduler is not None:
        if "://" not in scheduler:
            raise InvalidArgumentError(
                f"--scheduler {scheduler!r} is not an address", "give e.g. tcp://host:8786"
            )
        try:
            client = distributed.Client(scheduler, timeout=connect_timeout_s, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise SchedulerUnreachableError(
                f"Dask scheduler {scheduler} did not answer within {connect_timeout_s:g} s ({exc})",
                "start it (`dask scheduler`) and its workers, check host/port/firewall, or drop "
                "--scheduler for a local cluster",
            ) from exc
        try:
            n = len(client.scheduler_info().get("workers", {}))
            if n == 0:
                try:
                    client.wait_for_workers(1, timeout=WORKER_WAIT_S)
                except (TimeoutError, OSError) as exc:
                    raise ClusterError(
                        f"Dask scheduler {scheduler} has no workers after {WORKER_WAIT_S} s",
                        "start workers: `dask worker " + scheduler + " --nthreads 1`",
                    ) from exc
                n = len(client.scheduler_info().get("workers", {}))
            kind = "cpu" if device == "cpu" else "gpu"
            resources, notes = _existing_workers(client, kind)
            yield Cluster(client, f"Dask scheduler {scheduler}", n, kind, resources, notes)
        finally:
            client.close()
        return
    var, ids = ("", []) if device == "cpu" else visible_gpus()
    if device == "gpu" and not ids:
        raise DeviceUnavailableError(
            "--device gpu asked for but no GPU is visible (CUDA_VISIBLE_DEVICES / nvidia-smi)",
            "run on a GPU machine, or use --device cpu",
        )
    try:
        if ids:
            if workers is not None:
                ids = ids[:workers]
            cluster = _local_gpu(distributed, var, ids)
            desc = f"local Dask cluster, one worker per GPU ({var}={','.join(ids)})"
            kind = "gpu"
        else:
            n = workers or 1
            cluster = distributed.LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            desc = f"local Dask cluster, {n} CPU worker process(es)"
            kind = "cpu"
    except (OSError, RuntimeError, TimeoutError) as exc:
        raise ClusterError(f"could not start a local Dask cluster: {exc}", "see the message") from exc
    try:
        client = distributed.Client(cluster, set_as_default=False)
        try:
            n = len(client.scheduler_info().get("workers", {}))
            yield Cluster(client, desc, n, kind)
        finally:
            client.close()
    finally:
        cluster.close()
