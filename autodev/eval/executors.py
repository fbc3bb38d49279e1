"""Where the runs of an eval execute. An executor takes the jobs and yields (job, outcome) as each
finishes, in any order; the driver records each as it arrives, so every executor resumes the same.

- `LocalExecutor`: N at once on this machine (threads, each waiting on its own daemon process).
- `RayExecutor`: each job a Ray task on a cluster (`ray` imported only here, only when chosen).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Protocol

from autodev.errors import UsageError
from autodev.eval.runner import Job, blank_result, run_job


class Executor(Protocol):
    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, dict]]: ...


def guarded(job: Job) -> dict:
    """run_job, with a bug of ours in it turned into that job's error (with its traceback), not the
    end of the whole eval."""
    try:
        return run_job(job)
    except Exception as e:  # noqa: BLE001 - recorded in the result, the eval exits 1
        result = blank_result(job)
        result["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"
        return {"result": result, "patch": ""}


class LocalExecutor:
    def __init__(self, parallel: int = 1):
        if parallel < 1:
            raise UsageError(f"--parallel {parallel} is not a number of runs", "use --parallel 1 or more")
        self.parallel = parallel

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, dict]]:
        if self.parallel == 1:
            for job in jobs:
                yield job, guarded(job)
            return
        pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="eval")
        try:
            futures = {pool.submit(guarded, job): job for job in jobs}
            for f in as_completed(futures):
                yield futures[f], f.result()
        finally:  # interrupted: what has not started never will (the driver ends what is running)
            pool.shutdown(wait=False, cancel_futures=True)


class RayExecutor:
    """Each job a Ray task (one CPU each by default): the worker clones, runs the daemon and grades in
    its own folder under --out, which must be on a filesystem the workers share with the driver
    (docs/eval.md); the result and the patch come back to the driver, which records them."""

    def __init__(self, address: str | None = None, parallel: int | None = None, cpus_per_task: float = 1.0):
        try:
            import ray  # pyright: ignore[reportMissingImports]  # its own venv (make real-ray)
        except ImportError as e:
            raise UsageError(
                "--executor ray needs Ray, which is not installed in this Python",
                "make ray-venv (or pip install 'ray==2.60.0') and run autodev from that venv",
            ) from e
        self.ray = ray
        self.address = address
        self.parallel = parallel
        self.cpus = cpus_per_task

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, dict]]:
        ray = self.ray
        if not ray.is_initialized():
            ray.init(address=self.address, log_to_driver=False)
        remote = ray.remote(num_cpus=self.cpus, max_retries=0)(guarded)
        limit = self.parallel or len(jobs) or 1
        pending: dict = {}
        queue = list(jobs)
        while queue or pending:
            while queue and len(pending) < limit:
                job = queue.pop(0)
                pending[remote.remote(job)] = job
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    out = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a lost worker: that job's error, recorded
                    result = blank_result(job)
                    result["error"] = f"the Ray task failed: {type(e).__name__}: {e}"[:2000]
                    out = {"result": result, "patch": ""}
                yield job, out


def make_executor(name: str, parallel: int, address: str | None) -> Executor:
    if name == "local":
        if address:
            raise UsageError("--address is for --executor ray", "drop --address, or add --executor ray")
        return LocalExecutor(parallel)
    if name == "ray":
        return RayExecutor(address, parallel if parallel > 1 else None)
    raise UsageError(f"--executor {name!r} is not an executor", "use --executor local or --executor ray")
