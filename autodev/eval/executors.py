"""Where the runs of an eval execute. An executor takes the jobs and yields (job, outcome) as each
finishes, in any order; the driver records each as it arrives, so every executor resumes the same.

- `LocalExecutor`: N at once on this machine (threads, each waiting on its own daemon process).
- `RayExecutor`: each job a Ray task on a cluster (`ray` imported only here, only when chosen).
"""

from __future__ import annotations

import signal
import socket
import threading
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol, TypeGuard, TypeVar, cast

from autodev.errors import UsageError
from autodev.eval.rows import JobOutcome
from autodev.eval.runner import END_GRACE_S, Job, blank_result, kill_live, run_job
from autodev.eval.teams import TeamSpec, team_key_problems

T = TypeVar("T")


class Executor(Protocol):
    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, JobOutcome]]: ...

    def end(self) -> int:
        """After an interruption: end every run in flight, whole (its daemon, the participant's
        command and all below, wherever it runs); how many there were."""
        ...


def guarded(job: Job) -> JobOutcome:
    """run_job, with a bug of ours in it turned into that job's error (with its traceback), not the
    end of the whole eval."""
    try:
        return run_job(job)
    except Exception as e:  # noqa: BLE001 - recorded in the result, the eval exits 1
        return failed(job, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}")


def failed(job: Job, error: str) -> JobOutcome:
    """A job that could not be run: its blank line with the reason, no patch."""
    result = blank_result(job)
    result.error = error
    return JobOutcome(result, "")


class LocalExecutor:
    def __init__(self, parallel: int = 1):
        if parallel < 1:
            raise UsageError(f"--parallel {parallel} is not a number of runs", "use --parallel 1 or more")
        self.parallel = parallel
        self.cut = 0  # a run in this thread that the interruption cut (its daemon already ended)

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, JobOutcome]]:
        if self.parallel == 1:
            for job in jobs:
                try:
                    out = guarded(job)
                except KeyboardInterrupt:  # run_team ended its daemon on the way out
                    self.cut += 1
                    raise
                yield job, out
            return
        pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="eval")
        try:
            futures = {pool.submit(guarded, job): job for job in jobs}
            for f in completed(list(futures)):
                yield futures[f], f.result()
        finally:  # interrupted: what has not started never will (the driver ends what is running)
            pool.shutdown(wait=False, cancel_futures=True)

    def end(self) -> int:
        return kill_live() + self.cut


def completed(futures: list[Future[T]], every: float = 0.5) -> Iterator[Future[T]]:
    """The futures as they finish (in submission order when several finish together), waiting at
    most `every` seconds at a time, then running the signal handlers a worker thread left
    pending. Any thread may get a signal sent to the process; one that lands on a worker thread
    only marks the signal as tripped, and CPython 3.11 sets the flag that makes the main thread
    run the handler only from the main thread itself. A main thread blocked in `as_completed`
    (no timeout) never ran it: the eval hung until a run ended. `pthread_kill(main, 0)` sends
    nothing, but CPython checks for tripped signals right after it (PyErr_CheckSignals), in
    the main thread, where the handler raises KeyboardInterrupt."""
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=every, return_when=FIRST_COMPLETED)
        if threading.current_thread() is threading.main_thread():
            signal.pthread_kill(threading.get_ident(), 0)
        yield from (f for f in futures if f in done)


RAY_INSTALL = (
    "install Ray into the Python autodev runs from: pip install -r evals/ray-requirements.txt "
    "(ray==2.60.0; pipx: pipx inject autodev-team ray==2.60.0), or in a checkout `make real-ray` "
    "(.venv-ray), then run autodev eval from it"
)


def probe_head(address: str, timeout: float = 5.0) -> None:
    """Refuse, in at most `timeout` seconds, a Ray head that cannot be reached: `ray.init` would
    wait about 60 s and then raise a bare ConnectionError. The head's GCS port takes a TCP
    connection; that is all this checks. `ray://` (Ray Client) needs `ray[client]`, which autodev
    does not ship: the driver runs on a node of the cluster (docs/eval.md)."""
    where = "run autodev eval on a node of the cluster, with --address HEAD:6379 (the head's GCS port)"
    if address.startswith("ray://"):
        raise UsageError(f"--address {address}: Ray Client addresses (ray://) are not supported", where)
    if address == "auto":
        return  # ray.init finds the cluster this node is part of, or says it is not
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(
            f"--address {address} is not HOST:PORT", "give the head's address, e.g. --address 10.0.0.5:6379"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        why = "no answer" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise UsageError(
            f"--address {address}: the Ray head cannot be reached ({why} in {timeout:g} s)",
            f"start it there (ray start --head --port {port}), check the firewall, or {where}",
        ) from None


class RemoteFunction(Protocol):
    def remote(self, *args: object) -> object: ...


class RayApi(Protocol):
    """The part of `ray` (2.60.0) this executor calls: a third-party edge, typed here (Ray is not
    installed where autodev is checked). Object refs are opaque: `object`."""

    def is_initialized(self) -> bool: ...

    def init(self, *, address: str | None, log_to_driver: bool) -> object: ...

    def remote(
        self, *, num_cpus: float, max_retries: int
    ) -> Callable[[Callable[..., object]], RemoteFunction]: ...

    def get(self, ref: object) -> object: ...

    def wait(
        self, refs: list[object], *, num_returns: int, timeout: float | None = None
    ) -> tuple[list[object], list[object]]: ...

    def cancel(self, ref: object, *, force: bool) -> None: ...


class RayExecutor:
    """Each job a Ray task (one CPU each by default): the worker clones, runs the daemon and grades in
    its own folder under --out, which must be on a filesystem the workers share with the driver
    (docs/eval.md); the result and the patch come back to the driver, which records them."""

    def __init__(self, address: str | None = None, parallel: int | None = None, cpus_per_task: float = 1.0):
        try:
            import ray  # pyright: ignore[reportMissingImports]  # its own venv (make real-ray)
        except ImportError as e:
            raise UsageError(
                "--executor ray needs Ray, which is not installed in this Python", RAY_INSTALL
            ) from e
        # a third-party edge: Ray is not installed where autodev is type-checked; RayApi says
        # what of it this executor calls
        self.ray = cast(RayApi, ray)
        self.address = address
        self.parallel = parallel
        self.cpus = cpus_per_task
        self.pending: dict[object, Job] = {}  # task ref → job, of the tasks submitted and not yet recorded

    def connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return
        if self.address:
            probe_head(self.address)
        try:
            ray.init(address=self.address, log_to_driver=False)
        except ConnectionError as e:  # the probe passed, Ray's own handshake did not
            raise UsageError(
                f"--address {self.address}: Ray could not connect ({str(e).splitlines()[0][:200]})",
                "check that this node runs the cluster's Ray version and can reach every node, "
                "or run autodev eval on a node of the cluster",
            ) from None

    def key_problems(self, teams: list[TeamSpec]) -> list[str]:
        """What the teams' providers lack on a worker: checked there, in a Ray task, since each
        run reads its keys from the worker's environment (what `ray start` was given)."""
        self.connect()
        task = self.ray.remote(num_cpus=0, max_retries=0)(team_key_problems)
        got = self.ray.get(task.remote(teams))
        return [str(p) for p in got] if _is_list(got) else [f"the worker's check gave {got!r}"]

    def run(self, jobs: list[Job]) -> Iterator[tuple[Job, JobOutcome]]:
        ray = self.ray
        self.connect()
        remote = ray.remote(num_cpus=self.cpus, max_retries=0)(guarded)
        limit = self.parallel or len(jobs) or 1
        pending = self.pending
        queue = list(jobs)
        while queue or pending:
            while queue and len(pending) < limit:
                job = queue.pop(0)
                pending[remote.remote(job)] = job
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    got = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a lost worker: that job's error, recorded
                    got = failed(job, f"the Ray task failed: {type(e).__name__}: {e}"[:2000])
                yield (
                    job,
                    got if isinstance(got, JobOutcome) else failed(job, f"the Ray task gave {got!r}"[:2000]),
                )

    def end(self) -> int:
        """Cancel every task in flight: in its worker, KeyboardInterrupt, on which the run's daemon
        is ended whole (eval/runner.py: SIGTERM, then SIGKILL to it and all below it). A task
        still there after that grace is cancelled with force: its worker is killed, and the
        daemon, which ends with its parent (SIGTERM), ends its own command."""
        ray, refs = self.ray, list(self.pending)
        self.pending.clear()
        if not refs:
            return 0
        for ref in refs:
            ray.cancel(ref, force=False)
        _, left = ray.wait(refs, num_returns=len(refs), timeout=END_GRACE_S + 10)
        for ref in left:
            ray.cancel(ref, force=True)
        ray.wait(left, num_returns=len(left), timeout=10)
        return len(refs)


def _is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


def make_executor(name: str, parallel: int, address: str | None) -> Executor:
    if name == "local":
        if address:
            raise UsageError("--address is for --executor ray", "drop --address, or add --executor ray")
        return LocalExecutor(parallel)
    if name == "ray":
        return RayExecutor(address, parallel if parallel > 1 else None)
    raise UsageError(f"--executor {name!r} is not an executor", "use --executor local or --executor ray")
