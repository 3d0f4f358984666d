"""The detached launcher: a run handed to a driver process that outlives this one."""

from __future__ import annotations

from kit._base.files import read_json
from kit.detached._run import DetachedRun, DriverIdentity, fresh, spawn_driver
from kit.launch._assemble import check_resume
from kit.launch._request import RunRequest
from kit.store._rundir import RunDir
from kit.store._store import RunStore, StoreError


def start_driver(request: RunRequest) -> DetachedRun:
    """Hand ``request``'s run to a new driver process; return a handle to it."""
    if request.output_dir is None:
        raise ValueError(
            "a detached run needs an output_dir: it is where the driver writes its "
            "results and where attach() finds them; pass Runner(..., output_dir=...)"
        )
    if request.client is not None:
        raise ValueError(
            "a detached run starts a driver process of its own, which cannot share this "
            "process's Dask client; instead of client=, pass parallel={'env': 'remote', "
            "'address': '<the scheduler address>'}"
        )
    out = request.output_dir
    # Written under the directory's lock, as every write into it: a live run, a file
    # or a place this user cannot write refuses before anything changes. The previous
    # run's result.json and status.json stay until the driver replaces them; status()
    # knows them as older than this driver.
    store = RunStore(out)
    store.lock()
    try:
        driver = read_json(RunDir(out).driver)
        result = fresh(read_json(RunDir(out).result), "finished", driver or {})
        if driver and DriverIdentity(driver).running() and result is None:
            raise StoreError(
                f"a detached driver (pid {driver['pid']}) is already running in {out}; "
                f"attach to it with kit.attach({str(out)!r}) or cancel it with "
                f"`kit cancel {out}`"
            )
        # The driver's resume checks, made here: a run it would refuse changes nothing.
        check_resume(request)
        spawn_driver(out, {"request": request}, len(request.items))
    finally:
        store.unlock()
    return DetachedRun(out)
