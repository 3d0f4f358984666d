"""Detached runs: a driver process that outlives the notebook, and attaching to it.

``Runner.submit(indices, detached=True)`` (and ``kit submit``) pickle the
runner, its provider and the indices by value into ``output_dir/job.pkl`` and
start ``python -m kit._driver OUTPUT_DIR`` in a new session, so closing the
notebook or restarting its kernel does not stop the work. The driver writes
``status.json`` as chunks complete; :class:`DetachedRun` (what
:func:`kit.attach` gives for a run folder) reads the directory from any
process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import cloudpickle

from kit._base.atomic import atomic_file
from kit._base.errors import DriverLostError
from kit._base.files import UnsafeFileError, open_file, open_private, read_json, write_json
from kit._base.waiting import WAIT_STEP
from kit.cluster._process import alive
from kit.detached._status import well_formed
from kit.events import EventStream
from kit.result import Index, Progress, RunError, RunResult, RunStatus
from kit.store._manifest import stored_indices
from kit.store._results import read_result, reader, within
from kit.store._rundir import RunDir, SweepDir
from kit.store._store import RunStore, StoreError

#: Seconds a new driver waits for the process that submitted it to let go of the directory.
SUBMIT_GRACE = 30.0


class Lost(StrEnum):
    """Why a run read from its folder has no status of its own to give.

    It is :attr:`DetachedStatus.lost`; the run's :class:`kit.RunStatus` is then
    ``error``, the phase a progress line shows for a run that is not going on.

    Examples
    --------
    >>> Lost("died") is Lost.DIED, Lost.DIED == "died"
    (True, True)
    """

    #: Its driver's process is gone and wrote no result (killed, crashed): run again to resume.
    DIED = "died"
    #: A run in a process of its own (no driver) ended without a result: run again to resume.
    INCOMPLETE = "incomplete"
    #: ``status.json`` says something this Kit does not know (edited, or another version).
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class DetachedStatus:
    """Where a run stands, read from its folder: what :meth:`DetachedRun.snapshot` gives.

    Examples
    --------
    >>> died = DetachedStatus(RunStatus.ERROR, Lost.DIED, done=3, total=10)
    >>> died.ended, died.describe(), str(died.progress)
    (True, 'died', 'error: 3/10 items')
    >>> DetachedStatus(RunStatus.RUNNING).ended
    False
    """

    #: The run's lifecycle; ``error`` when it has none to give (see :attr:`lost`).
    status: RunStatus
    #: Why it has no status of its own (its process died...), or ``None``.
    lost: Lost | None = None
    #: Items finished (ok or failed), failed, and in all, as last written.
    done: int = 0
    failed: int = 0
    total: int = 0
    #: The driver's throughput over its recent chunks, when it has one.
    items_per_second: float | None = None
    #: ``(index, message)`` of the latest failures.
    recent_failures: tuple[tuple[Any, str], ...] = ()
    #: The cluster the run uses: ``parallel``, ``cluster``, ``scheduler``, ``dashboard``.
    session: Mapping[str, Any] = field(default_factory=dict)
    #: The driver's identity (``pid``, ``host``, ``started``...); empty without one.
    driver: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        """Whether the run is not going on: a final status, or its process gone."""
        if self.lost is None:
            return self.status.final
        return self.lost is not Lost.UNKNOWN

    @property
    def progress(self) -> Progress:
        """The counts and the status as a :class:`kit.Progress`."""
        return Progress(self.done, self.failed, self.total, self.status)

    def describe(self) -> str:
        """Say where the run stands in a word: its status, or why it has none (``died``)."""
        return self.lost.value if self.lost is not None else self.status.value

    def lines(self, folder: object) -> list[str]:
        """Say what ``kit status`` prints of the run in ``folder``, a line a fact, as read.

        Examples
        --------
        >>> DetachedStatus(RunStatus.RUNNING, done=5, failed=1, total=20).lines("runs/a")
        ['runs/a: running', '  items:   5/20 (25%) done, 1 failed']
        """
        lines = [f"{folder}: {self.describe()}"]
        done, total, failed = self.done, self.total, self.failed
        if total and max(done, failed) > total:
            # What a status file says is data to check: this one was not written by a run.
            lines.append(
                f"  items:   the status file says {done!r} done and {failed!r} failed of "
                f"{total!r}, which no run writes: it was changed by hand or by another program"
            )
        else:
            percent = f" ({100 * done // total}%)" if total else ""
            lines.append(f"  items:   {done}/{total}{percent} done, {failed} failed")
        if self.items_per_second:
            lines.append(f"  rate:    {self.items_per_second:.1f} items/s")
        if self.session:
            parallel = self.session.get("parallel", {})
            where = self.session.get("cluster") or parallel.get("env")
            scheduler = self.session.get("scheduler")
            lines.append(f"  cluster: {where} ({parallel.get('env')}), scheduler {scheduler}")
            if self.session.get("dashboard") and not self.status.final:
                # Only while the run goes on: its cluster, and the page, end with it.
                lines.append(f"  dashboard: {self.session['dashboard']}")
        if self.driver:
            lines.append(f"  driver:  pid {self.driver.get('pid')} on {self.driver.get('host')}")
        lines += [
            f"  failed:  item {index!r}: {message}" for index, message in self.recent_failures
        ]
        return lines


_FINAL = frozenset(status.value for status in RunStatus if status.final)


def _read_status(raw: Mapping[str, Any], state: object) -> DetachedStatus:
    """Build a :class:`DetachedStatus` from a checked ``status.json`` and a state word."""
    try:
        status, lost = RunStatus(str(state)), None
    except ValueError:
        try:
            status, lost = RunStatus.ERROR, Lost(str(state))
        except ValueError:
            status, lost = RunStatus.ERROR, Lost.UNKNOWN
    rate = raw.get("items_per_second")
    return DetachedStatus(
        status,
        lost,
        done=raw["done"],
        failed=raw["failed"],
        total=raw["total"],
        items_per_second=rate,
        recent_failures=tuple((index, str(message)) for index, message in raw["recent_failures"]),
        session=raw["session"],
        driver=raw["driver"],
    )


def _start_time(pid: int) -> float | None:
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


class DriverIdentity:
    """What ``driver.json`` says of the driver, and whether a live process is that driver.

    Kit signals a process only when host, pid and start time all match what it
    recorded when it started the driver, and never pid 1 or below: a stale or
    edited ``driver.json`` must not aim ``kit cancel`` at another process.

    Examples
    --------
    >>> import os, socket
    >>> DriverIdentity({"pid": 1, "host": socket.gethostname(), "created": 0.0}).running()
    False
    >>> DriverIdentity({"pid": "-1"}).problem
    "driver.json names pid '-1', which is not a driver's"
    """

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record = dict(record)
        self.host = str(record.get("host", ""))
        pid, created = record.get("pid"), record.get("created")
        self.pid = pid if type(pid) is int and pid > 1 else None
        self.created = float(created) if isinstance(created, (int, float)) else None
        self.problem: str | None = None
        if self.pid is None:
            self.problem = f"driver.json names pid {pid!r}, which is not a driver's"
        elif self.created is None:
            self.problem = "driver.json does not record when its driver started"

    @property
    def here(self) -> bool:
        """Whether the driver runs on this host."""
        return self.host == socket.gethostname()

    def drives(self, output_dir: Path) -> bool:
        """Whether the recorded process runs ``python -m kit._driver`` on ``output_dir``."""
        import psutil

        if self.pid is None:
            return False
        try:
            process = psutil.Process(self.pid)
            command: list[str] = process.cmdline()
            if command[1:3] != ["-m", "kit._driver"] or len(command) < 4:
                return False
            return os.path.samefile(Path(process.cwd()) / command[3], output_dir)
        except (psutil.Error, OSError):
            return False

    def exiting(self) -> bool:
        """Whether the recorded process is gone or on its way out.

        A process that exits lets its memory go (its command line reads empty)
        a moment before it turns zombie: an ended driver, not another program.
        """
        import psutil

        if self.pid is None:
            return True
        try:
            return not psutil.Process(self.pid).cmdline()
        except psutil.NoSuchProcess:  # gone, or a zombie
            return True
        except psutil.AccessDenied:
            return False

    def running(self) -> bool:
        """Whether the recorded driver is alive: same host, pid and start time."""
        if self.problem is not None or not self.here or self.pid is None:
            return False
        started = _start_time(self.pid)
        # create_time is read from /proc with a clock tick's resolution.
        return (
            started is not None and abs(started - (self.created or 0.0)) < 0.05 and alive(self.pid)
        )


def signal_driver(output_dir: Path) -> bool:
    """Send SIGTERM to the folder's detached driver when Kit can prove it is; return if it did.

    Proof: ``driver.json`` is this user's and nobody else may change it, the
    process it names started when the driver did and runs Kit's driver on
    this folder, and no other process holds the folder's lock (the kernel
    says who does). Returns False when there is no driver to stop (none
    recorded, or it ended).

    Raises
    ------
    StoreError
        When the proof fails, saying why; nothing is signalled.
    """
    path = RunDir(output_dir).driver
    refused = "; nothing was signalled"
    try:
        with open_private(path, "r") as fh:
            driver = json.load(fh)
    except FileNotFoundError:
        return False
    except UnsafeFileError as exc:
        raise StoreError(f"{exc}, so it may not name the driver Kit started{refused}") from None
    except (OSError, ValueError) as exc:
        raise StoreError(f"cannot read {path}: {exc}{refused}") from None
    if not isinstance(driver, dict) or not driver:
        raise StoreError(f"{path} does not describe a driver{refused}")
    identity = DriverIdentity(driver)
    if identity.problem is not None:
        raise StoreError(f"{output_dir}: {identity.problem}{refused}")
    if not identity.here:
        raise StoreError(
            f"the driver runs on host {identity.host}, not on this one; run "
            f"`kit cancel {output_dir}` there"
        )
    if not identity.running() or identity.pid is None:
        return False  # it ended; whatever now has its pid is another process
    holder = RunStore(output_dir).lock_holder()
    # No holder: a driver still starting (it locks once its job is loaded).
    if holder is not None and holder != identity.pid:
        raise StoreError(
            f"process {identity.pid}, named by {path}, does not hold the run's lock "
            f"(process {holder} does), so Kit cannot prove it is this run's driver{refused}"
        )
    if not identity.drives(output_dir):
        if identity.exiting():
            return False  # the driver ended between the checks above and this one
        raise StoreError(
            f"process {identity.pid}, named by {path}, is not Kit's driver of {output_dir}{refused}"
        )
    os.kill(identity.pid, signal.SIGTERM)
    return True


def _wait_for_exec(proc: subprocess.Popen[Any]) -> None:
    """Return once ``proc`` runs its own program (its command line reads) or has ended.

    Popen returns while exec may still lay out the new program's arguments;
    until then the command line reads empty, as an exiting process's does. A
    ``kit cancel`` that read driver.json in that window would take the driver
    for one on its way out and signal nothing, and the run would go on.
    """
    import psutil

    try:
        process = psutil.Process(proc.pid)
        while not process.cmdline() and proc.poll() is None:
            time.sleep(0.001)
    except psutil.Error:  # ended (NoSuchProcess, or a zombie)
        return


def spawn_driver(out: Path, job: Mapping[str, Any], total: int) -> None:
    """Write the job (private), start ``python -m kit._driver out``, record it in driver.json.

    Called with ``out``'s lock held; the driver waits for it to be let go.
    """
    with atomic_file(RunDir(out).job, "wb", private=True) as fh:
        cloudpickle.dump(dict(job), fh)
    env = dict(os.environ)
    # The driver imports what this process could (user modules next to the notebook).
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.getcwd(), *sys.path] if p)
    started = time.time()
    with open_file(RunDir(out).driver_log, "a") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kit._driver", str(out)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=os.getcwd(),
            env=env,
            start_new_session=True,  # survives the kernel and its process group
        )
    _wait_for_exec(proc)
    write_json(
        RunDir(out).driver,
        {
            "pid": proc.pid,
            "host": socket.gethostname(),
            "created": _start_time(proc.pid),
            "started": started,
            "python": sys.executable,
            "total": total,  # "0/300" while the driver starts, not "0/0"
        },
        private=True,
    )


def start_sweep_driver(folder: Path, request: Any, trials: int, record: Mapping[str, Any]) -> None:
    """Hand a sweep to a new driver process: it starts ``request`` (a ``SweepRequest``).

    ``record`` (the sweep's ``sweep.json``) is written first if the folder has
    none, so that ``kit.attach`` knows the folder for a sweep from the start.
    """
    store = RunStore(folder)
    store.lock()
    try:
        driver = read_json(RunDir(folder).driver)
        if driver and DriverIdentity(driver).running():
            raise StoreError(
                f"a detached driver (pid {driver['pid']}) is already running in {folder}; "
                f"attach to it with kit.attach({str(folder)!r}) or cancel it with "
                f"`kit cancel {folder}`"
            )
        if not SweepDir(folder).record.exists():
            write_json(SweepDir(folder).record, record)
        spawn_driver(folder, {"sweep": request}, trials)
    finally:
        store.unlock()


class DetachedRun:
    """A handle on a run in an output directory, driven by another process.

    It offers what :class:`kit.RunHandle` offers: :attr:`progress`,
    :meth:`done`, :meth:`result`, :meth:`cancel`, and iteration over
    ``(index, record)``, by reading the directory.

    Examples
    --------
    >>> import tempfile
    >>> from kit.examples.toy import Env, Square
    >>> out = tempfile.mkdtemp()
    >>> _ = Square(Env({}), output_dir=out).run(range(4))
    >>> run = DetachedRun(out)  # what kit.attach(out) returns, from any process
    >>> run.done(), run.result().records
    (True, [0, 1, 4, 9])
    """

    def __init__(self, output_dir: str | os.PathLike[str], *, allow_pickle: bool = False) -> None:
        self.output_dir = Path(output_dir).expanduser()
        #: The folder's files, by what they are.
        self.files = RunDir(self.output_dir)
        self.allow_pickle = allow_pickle
        if not self.files.manifest.exists() and not self.files.driver.exists():
            raise FileNotFoundError(
                f"{self.output_dir} holds no Kit run (no manifest.json or driver.json); "
                "check the path"
            )

    # ------------------------------------------------------------ reading
    def snapshot(self) -> DetachedStatus:
        """Return where the run stands: status, progress, throughput, cluster, driver."""
        driver = read_json(self.files.driver) or {}
        status = fresh(read_json(self.files.status), "updated", driver)
        if status is None:
            status = (
                {"state": RunStatus.STARTING, "total": driver.get("total", 0)}
                if driver
                else self._directory_status()
            )
        result = fresh(read_json(self.files.result), "finished", driver)
        raw = well_formed(status)
        raw["driver"] = driver
        state: object = raw["state"]
        if result is not None:
            state = result.get("status")
        elif not driver and state == RunStatus.RUNNING and not RunStore(self.output_dir).busy():
            state = Lost.INCOMPLETE  # its process ended without writing result.json
        elif (
            driver
            and DriverIdentity(driver).here
            and not DriverIdentity(driver).running()
            and state not in _FINAL
        ):
            state = Lost.DIED
        return _read_status(raw, state)

    @property
    def status(self) -> RunStatus:
        """The run's status: ``error`` for a run whose process ended without one."""
        return self.snapshot().status

    def status_lines(self) -> list[str]:
        """Return what ``kit status`` prints: status, items, rate, cluster, driver, failures."""
        return self.snapshot().lines(self.output_dir)

    def _directory_status(self) -> dict[str, Any]:
        """Progress of a run started in a process of its own (no driver), from the ledger."""
        store = RunStore(self.output_dir)
        manifest = store.manifest() or {}
        done = sum(
            int(e.get("stop", 0)) - int(e.get("start", 0)) for e in store.ledger_entries().values()
        )
        try:
            with open_file(self.files.errors, "rb") as fh:
                failed = sum(1 for _ in fh)
        except (FileNotFoundError, UnsafeFileError):
            failed = 0
        return {
            "state": RunStatus.RUNNING,
            "total": manifest.get("n_items", 0),
            "done": done,
            "failed": failed,
        }

    @property
    def events(self) -> EventStream:
        """The run's events, read from its ``events.jsonl`` as the driver writes them.

        A dashboard follows them as it follows a run in this process:
        ``widgets.show_dashboard(kit.attach(out))``. Each access starts a new
        reader, which ends with the run (or when its driver is gone).
        """
        from kit.detached._follow import follow_events

        return follow_events(self.files.events, live=lambda: not self.done())

    @property
    def progress(self) -> Progress:
        """Items finished (ok or failed), failed, and total, as last written.

        A run whose process ended without finishing (``died`` or
        ``incomplete``) has the phase ``error``: it is not going on.
        """
        return self.snapshot().progress

    def done(self) -> bool:
        """Whether the driver has ended (or died) and let go of the directory.

        A run is done only once its driver released the directory's lock, so
        an immediate resume into the same directory is not refused.
        """
        return self.snapshot().ended and not RunStore(self.output_dir).busy()

    def cancel(self, timeout: float = 0.0) -> None:
        """Ask the driver to stop; completed chunks are kept and a later run resumes.

        Wait up to ``timeout`` seconds for the run to end, as every handle's
        ``cancel`` does; by default return at once.

        Kit signals a process only when it can prove it is this run's driver:
        ``driver.json`` is this user's and nobody else may change it, the
        process it names started when the driver did and runs Kit's driver on
        this directory, and no other process holds the directory's lock (the
        kernel says who does). Otherwise it refuses, saying why, and signals
        nothing.
        """
        if not signal_driver(self.output_dir):
            return
        deadline = time.monotonic() + timeout
        while not self.done() and time.monotonic() < deadline:
            time.sleep(WAIT_STEP)

    def result(self, timeout: float | None = None) -> RunResult:
        """Wait for the driver to end and return the run's result, read from the directory.

        Raises
        ------
        TimeoutError
            If the run has not ended within ``timeout`` seconds.
        DriverLostError
            If the driver died without finishing (see ``driver.log``); a
            ``RuntimeError``, as it was before it had a name of its own.
        RunError
            If the run stopped early (``on_error="raise"`` or ``max_failures``).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done():
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"the run in {self.output_dir} has not finished after {timeout} s"
                )
            time.sleep(WAIT_STEP)
        status = self.snapshot()
        if status.lost is Lost.INCOMPLETE:
            raise DriverLostError(
                f"the run in {self.output_dir} ended without finishing (its process was "
                "killed or crashed before writing result.json); run again to resume"
            )
        if status.lost is Lost.DIED:
            log = self.files.driver_log
            tail = log.read_text()[-3000:] if log.exists() else ""
            raise DriverLostError(
                f"the driver (pid {status.driver.get('pid')}) of {self.output_dir} ended "
                f"without finishing; run again to resume. End of driver.log:\n{tail}"
            )
        result = read_result(self.output_dir, allow_pickle=self.allow_pickle)
        if result.status is RunStatus.STOPPED:
            error = result.errors[0] if result.errors else None
            raise RunError(f"the run in {self.output_dir} stopped early", result, error)
        return result

    def __iter__(self) -> Iterator[tuple[Index, Any]]:
        """Yield ``(index, record)`` for successful items as the driver commits their chunks.

        As a :class:`kit.RunHandle` does: the records come chunk by chunk while
        the run goes on (those of a resumed run's earlier chunks first), and
        when the run did not complete the loop then raises as :meth:`result`
        does. Only chunks the ledger names, unchanged, are read.
        """
        seen: set[str] = set()
        indices: Sequence[Index] | None = None
        store: RunStore | None = None
        while True:
            ended = self.done()  # before the ledger: a chunk committed at the end is read
            if store is None:
                manifest = RunStore(self.output_dir).manifest()
                if manifest is not None:
                    store = reader(self.output_dir, manifest, allow_pickle=self.allow_pickle)
                    indices = stored_indices(manifest, self.output_dir)
            if store is not None and indices is not None:
                fresh = sorted(store.ledger_entries().items())
                read = [store.read_committed(n, e) for n, e in fresh if n not in seen]
                seen.update(name for name, _ in fresh)
                kept = [chunk for chunk in read if chunk is not None]
                for chunk in within(kept, len(indices), self.output_dir):
                    failed = {error.position for error in chunk.errors}
                    for position, record in enumerate(chunk.records, chunk.start):
                        if position not in failed:
                            yield indices[position], record
            if ended:
                break
            time.sleep(WAIT_STEP)
        self.result()  # raises as the run ended: stopped early, its driver lost...

    def __repr__(self) -> str:
        now = self.snapshot()
        return f"<DetachedRun {self.output_dir} {now.describe()}: {now.done}/{now.total} items>"


def fresh(
    data: dict[str, Any] | None, stamp: str, driver: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Return ``data`` unless it was written before the current driver started."""
    if data is None or not driver:
        return data
    return data if float(data.get(stamp) or 0) >= float(driver.get("started") or 0) else None


def load_job(path: Path) -> dict[str, Any]:
    """Unpickle a detached run's job, only if this user wrote it and nobody else can change it.

    Raises
    ------
    StoreError
        If the file belongs to another user or others may write it.
    """
    try:
        fh = open_private(path)
    except UnsafeFileError as exc:
        raise StoreError(
            f"{exc}; Kit runs only a job you submitted yourself that nobody else could "
            "have edited: submit it again with `kit submit`"
        ) from None
    with fh:
        job: dict[str, Any] = cloudpickle.load(fh)
    return job
