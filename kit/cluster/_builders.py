"""Turn a ``parallel`` section into a running cluster and client."""

from __future__ import annotations

import contextlib
import importlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kit._base.errors import SchedulerUnreachableError
from kit._base.extras import install
from kit.config import ConfigError, ParallelConfig
from kit.config._backends import backend_of
from kit.config._errors import error

#: dask-jobqueue's cluster class for each job-queue ``parallel.env``.
JOB_QUEUES = {
    "slurm": "SLURMCluster",
    "pbs": "PBSCluster",
    "sge": "SGECluster",
    "lsf": "LSFCluster",
    "htcondor": "HTCondorCluster",
    "moab": "MoabCluster",
    "oar": "OARCluster",
}

#: Called with the submit command as a list (the job script's path last);
#: returns the command to run instead.
SubmitHook = Callable[[list[str]], Sequence[str]]


def _config_error(key: str, problem: str, fix: str) -> ConfigError:
    return error(problem, full_key=key, fix=fix)


def security_of(parallel: ParallelConfig) -> Any:
    """Return a ``distributed.security.Security`` for ``parallel.security``, or None."""
    if parallel.security is None:
        return None
    from distributed.security import Security

    sec = parallel.security
    return Security(  # type: ignore[no-untyped-call]
        tls_ca_file=sec.ca_file,
        tls_client_cert=sec.cert_file,
        tls_client_key=sec.key_file,
        require_encryption=sec.require_encryption,
    )


def resolve_hook(path: str | None) -> SubmitHook | None:
    """Import ``package.module.function`` named by ``parallel.submit_hook``."""
    if not path:
        return None
    module_name, _, attr = path.rpartition(".")
    try:
        hook = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise _config_error(
            "parallel.submit_hook",
            f"cannot import {path!r}: {exc}",
            "give the import path of a function, e.g. `mypkg.hooks.via_login_node`",
        ) from None
    if not callable(hook):
        raise _config_error("parallel.submit_hook", f"{path!r} is not callable", "name a function")
    return hook  # type: ignore[no-any-return]


def job_class(base: type, submit_command: str | None, hook: SubmitHook | None) -> type:
    """Return ``base`` (a dask-jobqueue Job class) with its submission customised.

    Users configure this instead of subclassing dask-jobqueue themselves. The
    class keeps what each failed submission printed in ``submit_failures``
    (a list of its own, per cluster), so a run can report a refused job at
    once instead of waiting ``parallel.startup_timeout`` for workers that
    will never come.
    """
    failures: list[str] = []
    attrs: dict[str, Any] = {"__module__": __name__, "submit_failures": failures}
    if submit_command:
        attrs["submit_command"] = submit_command

    async def _submit_job(self: Any, script_filename: str) -> Any:
        try:
            if hook is None:
                return await base._submit_job(self, script_filename)  # type: ignore[attr-defined]
            command = [*shlex.split(self.submit_command), script_filename]
            return await self._call(list(hook(command)))
        except Exception as exc:
            from distributed.core import Status

            failures.append(str(exc).strip())
            # Failed, not "created": closing the cluster asserts that no job is left
            # waiting to start.
            self.status = Status.failed
            raise

    attrs["_submit_job"] = _submit_job
    return type(f"Kit{base.__name__}", (base,), attrs)


def submit_failures(cluster: Any) -> list[str]:
    """Return what failed job submissions of a job-queue cluster Kit started printed."""
    return list(getattr(getattr(cluster, "job_cls", None), "submit_failures", ()))


def job_states(cluster: Any) -> str:
    """Say what the job queue says of the worker jobs of ``cluster`` (``""`` if nothing).

    For SLURM each job's state and reason (``179 PENDING (Resources)``), so a
    run that waits for workers says why; for other queues the job ids.
    """
    ids = [
        str(job.job_id)
        for job in getattr(cluster, "workers", {}).values()
        if getattr(job, "job_id", None)
    ]
    if not ids:
        return ""
    if type(cluster).__name__ == "SLURMCluster" and shutil.which("squeue"):
        try:
            listing = subprocess.run(
                ["squeue", "-h", "-j", ",".join(ids), "-o", "%i %T %R"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            listing = ""
        if listing:
            return "; ".join(listing.splitlines())
    return "jobs " + ", ".join(ids)


_IMPORT_LOCK = threading.Lock()


def import_dask_jobqueue() -> Any:
    """Import dask-jobqueue from any thread, leaving the SIGINT handler alone.

    dask-jobqueue 0.9.0 (the newest release) sets ``SIGINT`` to ``sys.exit`` when
    imported, for its batch runners, which Kit does not use (dask/dask-jobqueue#696,
    fixed upstream after that release). Imported on a run's thread that raises
    ``ValueError: signal only works in main thread``; imported on the main thread
    it turns Ctrl-C into ``SystemExit``, so Kit's own Ctrl-C handling (cancel the run,
    keep what finished) never sees a ``KeyboardInterrupt``. So the import runs with
    ``signal.signal`` ignoring SIGINT requests.
    """
    loaded = sys.modules.get("dask_jobqueue")
    if loaded is not None:
        return loaded
    with _IMPORT_LOCK:
        real = signal.signal

        def leave_sigint(signum: Any, handler: Any) -> Any:
            if signum == signal.SIGINT:
                return signal.getsignal(signum)
            return real(signum, handler)

        signal.signal = leave_sigint  # type: ignore[assignment]
        try:
            return importlib.import_module("dask_jobqueue")
        finally:
            signal.signal = real


def job_queue_cluster(parallel: ParallelConfig, hook: SubmitHook | None = None) -> Any:
    """Build (not scale) the dask-jobqueue cluster for ``parallel``."""
    try:
        dask_jobqueue = import_dask_jobqueue()
    except ImportError:
        raise ImportError(
            f"parallel.env: {parallel.env!r} needs dask-jobqueue; install it with "
            f"`{install('jobqueue')}` (or `pip install dask-jobqueue`)"
        ) from None
    cls = getattr(dask_jobqueue, JOB_QUEUES[parallel.env])
    options = dict(parallel.options)
    # dask-jobqueue reads a job's defaults from jobqueue.<config_name>: the one the
    # options name (a site's `slurm-gpu` section), else the queue's own.
    config_name = options.get("config_name") or getattr(cls.job_cls, "config_name", parallel.env)
    _check_job_resources(parallel.env, str(config_name), options)
    scheduler_options = dict(options.pop("scheduler_options", None) or {})
    # Kit's dashboards listen on 127.0.0.1 unless the config says otherwise.
    scheduler_options.setdefault("dashboard_address", "127.0.0.1:0")
    scheduler_options.setdefault("allowed_failures", ALLOWED_FAILURES)
    hook = hook or resolve_hook(parallel.submit_hook)
    job_cls = job_class(cls.job_cls, parallel.submit_command, hook)
    if "security" not in options and parallel.security is not None:
        options["security"] = security_of(parallel)
    return cls(job_cls=job_cls, scheduler_options=scheduler_options, **options)


#: What every job must be told (dask-jobqueue refuses to build one without them).
JOB_RESOURCES = {"cores": "1", "memory": "2GB"}
#: More that some queues require.
EXTRA_RESOURCES = {"htcondor": {"disk": "1GB"}}


def _check_job_resources(env: str, config_name: str, options: dict[str, Any]) -> None:
    """Raise a ConfigError naming the ``parallel.options`` keys a job script needs."""
    import dask.config

    needed = {**JOB_RESOURCES, **EXTRA_RESOURCES.get(env, {})}
    missing = [
        key
        for key in needed
        if options.get(key) is None
        and dask.config.get(f"jobqueue.{config_name}.{key}", None) is None
    ]
    if missing:
        keys = ", ".join(f"parallel.options.{k}" for k in missing)
        example = " ".join(f"+parallel.options.{k}={needed[k]}" for k in missing)
        raise _config_error(
            f"parallel.options.{missing[0]}",
            f"a {env} job needs {keys} (the resources each worker job asks for), "
            "and the config gives none",
            f"set them in the config or on the command line, e.g. `{example}` (add "
            "walltime and queue as your site wants), or in dask's jobqueue.yaml",
        )


def job_log_directory(parallel: ParallelConfig, run_logs: str | None = None) -> str:
    """Where a job-queue cluster's jobs write their output files (``slurm-*.out``).

    In order: ``parallel.options.log_directory``; dask's ``jobqueue.<queue>.log_directory``;
    ``run_logs`` (a run passes ``<output_dir>/job-logs``); else a folder per cluster
    under ``$XDG_CACHE_HOME/kit/job-logs`` (``~/.cache`` by default: the home folder is
    shared with the compute nodes on most clusters, which the job's folder must be).
    Never the folder the notebook runs in, which job queues use when told nothing.
    """
    import dask.config

    given = parallel.options.get("log_directory")
    if given:
        return str(given)
    configured = dask.config.get(f"jobqueue.{parallel.env}.log_directory", None)
    if configured:
        return str(configured)
    if run_logs:
        return str(Path(run_logs).resolve())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return str(cache / "kit" / "job-logs" / time.strftime("%Y%m%d-%H%M%S"))


def job_script(parallel: ParallelConfig | Any) -> str:
    """Return the job script a job-queue ``parallel`` section would submit (submits nothing).

    Examples
    --------
    >>> script = job_script({"env": "slurm", "options": {"cores": 1, "memory": "1GB"}})
    >>> "#SBATCH" in script
    True
    """
    if not isinstance(parallel, ParallelConfig):
        from kit.config import parallel_section

        parallel = parallel_section(parallel)
    if parallel.env not in JOB_QUEUES:
        raise _config_error(
            "parallel.env",
            f"{parallel.env!r} submits no job script",
            f"use one of the job queues: {', '.join(JOB_QUEUES)}",
        )
    cluster = job_queue_cluster(parallel)
    try:
        script: str = cluster.job_script()
    finally:
        cluster.close()
    return script


def quiet_distributed() -> None:
    """Show only distributed's warnings and errors in this process, not its INFO chatter.

    A cluster Kit starts in a notebook runs its scheduler in the kernel, whose
    INFO lines (workers joining, comms closing) would land, in red, under
    whatever cell runs when they are logged. A level the user set below INFO
    (DEBUG, to look into something) is left alone.
    """
    import logging

    from kit.cluster._knocks import quiet_knocks

    # The logger's level, not its handlers' (all LocalCluster's own silence_logs sets,
    # for its lifetime only): the closing chatter comes after that. Its worker
    # processes keep LocalCluster's silence_logs.
    logger = logging.getLogger("distributed")
    if logger.level in (logging.NOTSET, logging.INFO):
        logger.setLevel(logging.WARNING)
    scheduler = logging.getLogger("distributed.scheduler")
    if not any(isinstance(f, KitTaskDeaths) for f in scheduler.filters):
        scheduler.addFilter(KitTaskDeaths())
    quiet_knocks()  # a stranger refused by a Kit cluster's TLS listener in this process


class KitTaskDeaths:
    """Drop the scheduler's ERROR for a Kit task whose worker died: Kit handles it.

    With ``allowed_failures: 0`` the scheduler logs "Task kit-... marked as
    failed because 1 workers died" at every death; Kit runs the chunk's items
    again and reports an item only once it has failed for good.

    Examples
    --------
    >>> import logging
    >>> record = logging.LogRecord(
    ...     "distributed.scheduler", logging.ERROR, "", 0,
    ...     "Task %s marked as failed because %d workers died while trying to run it",
    ...     ("kit-1a2b-0-5-0-0", 1), None)
    >>> KitTaskDeaths().filter(record)
    False
    """

    def filter(self, record: Any) -> bool:
        message = str(record.msg)
        args = record.args if isinstance(record.args, tuple) else ()
        ours = bool(args) and str(args[0]).startswith("kit-")
        return not (ours and message.startswith("Task %s marked as failed because"))


def local_tls() -> dict[str, Any]:
    """Return LocalCluster keywords that close its scheduler and workers to other users.

    Dask's local clusters listen on 127.0.0.1 without authentication, so any
    user of the machine (a shared login node) could connect and run code as
    you. Kit's use TLS with credentials made for this cluster and kept in
    memory (``Security.temporary()``): only this process and its workers hold
    them. Measured cost on this machine: none at start, about 5% per task.
    Set ``parallel.options.protocol: tcp://`` to turn it off.
    """
    from distributed.security import Security

    try:
        security = Security.temporary()  # type: ignore[no-untyped-call]
    except ImportError:
        raise ImportError(
            "Kit's local clusters use TLS, which needs the cryptography package: "
            "pip install cryptography (or set parallel.options.protocol: tcp://)"
        ) from None
    return {"protocol": "tls://", "security": security}


def _check_address(address: str) -> None:
    """Refuse a scheduler address Dask cannot parse, at once rather than after a timeout."""
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        parse_host_port(location)
    except ValueError as exc:
        raise _config_error(
            "parallel.address",
            f"{address!r} is not a scheduler address ({exc})",
            "write it as tcp://HOST:PORT, e.g. `parallel.address=tcp://127.0.0.1:8786`",
        ) from None
    if scheme not in ("tcp", "tls", "inproc", "ucx", "ws", "wss"):
        raise _config_error(
            "parallel.address",
            f"{address!r} names the protocol {scheme!r}, which Dask does not speak",
            "use tcp:// (or tls:// with parallel.security)",
        )


#: Worker deaths the schedulers Kit starts allow a task before failing it. Dask's
#: default (3) sends a task that kills its worker to three more workers; Kit
#: instead takes a lost chunk back at once, sends it again in pieces, and runs the
#: items of a piece lost again alone (see kit._engine.dask), so a killing item
#: costs at most ``retries + 3`` worker deaths, not four times as many. Set
#: ``allowed_failures`` in the scheduler options to change it.
ALLOWED_FAILURES = 0


def _import_bokeh_first() -> None:
    """Import bokeh on this thread before a scheduler here imports it on its loop's thread.

    A scheduler in this process (local, job queues) imports bokeh for its
    dashboard on the cluster's event-loop thread. A Kit dashboard made on this
    thread meanwhile imports it too, and two threads importing bokeh at once
    define its models twice ("Duplicate qualified model definition"), leaving
    broken models behind. Without bokeh installed there is nothing to import,
    and the scheduler runs without its dashboard.
    """
    with contextlib.suppress(ImportError):
        import bokeh.plotting  # noqa: F401  (imports bokeh.models and bokeh.layouts too)


def _set_allowed_failures(kwargs: dict[str, Any]) -> None:
    """Give a LocalCluster's scheduler Kit's ``allowed_failures`` unless the options set one."""
    kwargs["scheduler_kwargs"] = {
        "allowed_failures": ALLOWED_FAILURES,
        **(kwargs.get("scheduler_kwargs") or {}),
    }


def start(parallel: ParallelConfig, hook: SubmitHook | None = None) -> tuple[Any, Any]:
    """Return ``(client, cluster)`` for ``parallel``; cluster is None when only connected.

    ``parallel.env`` names the backend that starts it (see
    :mod:`kit.config._backends`: a built-in, or one an installed package adds).
    """
    env = parallel.env
    try:
        target = backend_of(env)
    except KeyError:
        target = ""
    if not target:
        raise _config_error(
            "parallel.env", f"{env!r} cannot start a cluster", "use local or remote"
        )
    module, _, function = target.partition(":")
    backend: Backend = getattr(importlib.import_module(module), function)
    if env != "remote":
        quiet_distributed()
        _import_bokeh_first()  # this process's scheduler serves its dashboard
    return backend(parallel, hook)


#: What a backend is: it starts (or connects to) the cluster of a ``parallel`` section.
Backend = Callable[[ParallelConfig, "SubmitHook | None"], tuple[Any, Any]]


def start_local(parallel: ParallelConfig, hook: SubmitHook | None = None) -> tuple[Any, Any]:
    """Start a LocalCluster of Kit's nannies on 127.0.0.1, over TLS by default."""
    from distributed import Client, LocalCluster

    from kit.cluster._nanny import KitNanny, light_sampling

    kwargs: dict[str, Any] = {
        "worker_class": KitNanny,
        "n_workers": parallel.n_workers,
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": "127.0.0.1:0",
    }
    kwargs.update(parallel.options)
    if "security" not in kwargs and "protocol" not in kwargs:
        kwargs.update(local_tls())
    _set_allowed_failures(kwargs)
    with light_sampling():  # the scheduler reads its settings as it is made
        cluster = LocalCluster(**kwargs)  # type: ignore[no-untyped-call]
    client = Client(cluster, security=kwargs.get("security"), set_as_default=False)  # type: ignore[no-untyped-call]
    return client, cluster


def start_remote(parallel: ParallelConfig, hook: SubmitHook | None = None) -> tuple[Any, None]:
    """Connect to the scheduler at ``parallel.address``; Kit never shuts it down."""
    from distributed import Client

    options = dict(parallel.options)
    if not parallel.address:
        raise _config_error(
            "parallel.address",
            "env 'remote' needs the scheduler address",
            "set it, e.g. `parallel.address=tcp://127.0.0.1:8786`",
        )
    _check_address(parallel.address)
    if parallel.security is not None:
        options.setdefault("security", security_of(parallel))
    elif parallel.address.startswith("tls://") and "security" not in options:
        raise _config_error(
            "parallel.security",
            f"the scheduler at {parallel.address} speaks TLS, and no certificates are given",
            "set parallel.security.ca_file, parallel.security.cert_file and "
            "parallel.security.key_file (files signed by the scheduler's CA)",
        )
    options.setdefault("timeout", 30)
    try:
        client = Client(parallel.address, set_as_default=False, **options)  # type: ignore[no-untyped-call]
    except OSError as exc:
        hint = (
            "check the address and that the scheduler runs"
            if parallel.security is None
            else "check the address, and that parallel.security holds certificates "
            "signed by the scheduler's CA"
        )
        raise SchedulerUnreachableError(
            f"cannot connect to the scheduler at {parallel.address}: {exc}; {hint}"
        ) from None
    return client, None


def start_job_queue(parallel: ParallelConfig, hook: SubmitHook | None = None) -> tuple[Any, Any]:
    """Start a dask-jobqueue cluster of ``parallel.n_workers`` jobs."""
    from distributed import Client

    cluster = job_queue_cluster(parallel, hook)
    cluster.scale(parallel.n_workers)
    return Client(cluster, set_as_default=False), cluster  # type: ignore[no-untyped-call]


def start_gateway(parallel: ParallelConfig, hook: SubmitHook | None = None) -> tuple[Any, Any]:
    """Start (or join by name) a dask-gateway cluster."""
    from distributed import Client

    cluster = gateway_cluster(parallel)
    # With the cluster's TLS credentials. A cluster connected to by name (the
    # class's) has shutdown_on_close off: closing its handle leaves it running.
    security = cluster.security
    return Client(cluster, security=security, set_as_default=False), cluster  # type: ignore[no-untyped-call]


def start_deployment(parallel: ParallelConfig, hook: SubmitHook | None = None) -> tuple[Any, Any]:
    """Start one of dask's other deployments (``local_gpu``, ``ssh``, ``kube``)."""
    from distributed import Client

    cluster = DEPLOYMENTS[parallel.env](parallel)
    return Client(cluster, set_as_default=False), cluster  # type: ignore[no-untyped-call]


def _missing(env: str, package: str, extra: str) -> ImportError:
    return ImportError(
        f"parallel.env: {env!r} needs {package}; install it with `{install(extra)}` "
        f"(or `pip install {package}`)"
    )


def local_gpu_cluster(parallel: ParallelConfig) -> Any:
    """Start a LocalCUDACluster (dask-cuda): one worker per GPU, each seeing only its own."""
    try:
        from dask_cuda import LocalCUDACluster
        from dask_cuda.utils import get_n_gpus
    except ImportError:
        raise _missing("local_gpu", "dask-cuda", "gpu") from None
    try:
        gpus = int(get_n_gpus())
    except Exception:  # no driver, no device
        gpus = 0
    if gpus == 0:
        raise _config_error(
            "parallel.env",
            "'local_gpu' starts one worker per GPU, and this machine has none",
            "use `parallel.env=local` here, or run on a machine with a GPU",
        )
    if parallel.n_workers > gpus:
        raise _config_error(
            "parallel.n_workers",
            f"{parallel.n_workers} workers asked for, but this machine has {gpus} GPUs",
            f"set parallel.n_workers to at most {gpus}",
        )
    kwargs: dict[str, Any] = {"n_workers": parallel.n_workers, "dashboard_address": "127.0.0.1:0"}
    kwargs.update(parallel.options)
    _set_allowed_failures(kwargs)
    return LocalCUDACluster(**kwargs)


def kube_cluster(parallel: ParallelConfig) -> Any:
    """Start a dask-kubernetes KubeCluster from ``parallel.options``, scaled to ``n_workers``."""
    try:
        from dask_kubernetes.operator import KubeCluster
    except ImportError:
        raise _missing("kube", "dask-kubernetes", "kube") from None
    cluster = KubeCluster(**dict(parallel.options))
    cluster.scale(parallel.n_workers)
    return cluster


def ssh_cluster(parallel: ParallelConfig) -> Any:
    """Start distributed's SSHCluster: ``options.hosts`` names the scheduler's host, then workers'.

    ``n_workers`` worker processes start on each worker host (``worker_options.n_workers``).
    """
    options = dict(parallel.options)
    hosts = options.pop("hosts", None)
    if not hosts or isinstance(hosts, str) or len(hosts) < 2:
        raise _config_error(
            "parallel.options.hosts",
            "env 'ssh' needs a list of hosts: the scheduler's first, then one or more workers'",
            "set e.g. `parallel.options.hosts=[login1,node1,node2]`",
        )
    try:
        import asyncssh  # noqa: F401  (SSHCluster needs it; say so before it fails deeper)
        from distributed.deploy.ssh import SSHCluster
    except ImportError:
        raise _missing("ssh", "asyncssh", "ssh") from None
    worker_options = dict(options.pop("worker_options", None) or {})
    worker_options.setdefault("n_workers", parallel.n_workers)
    worker_options.setdefault("nthreads", 1)
    return SSHCluster(list(hosts), worker_options=worker_options, **options)


#: ``parallel.options.auth.type`` -> the dask-gateway auth class it names.
GATEWAY_AUTH = {"basic": "BasicAuth", "kerberos": "KerberosAuth", "jupyterhub": "JupyterHubAuth"}


def gateway_cluster(parallel: ParallelConfig) -> Any:
    """Create a dask-gateway cluster, or connect to one running (``options.cluster_name``).

    ``parallel.address`` is the gateway's address; ``options.auth`` is an
    auth type (``basic``, ``kerberos``, ``jupyterhub``) or a mapping with a
    ``type`` and that class's arguments (``{type: basic, username: ...,
    password: ${oc.env:GATEWAY_PASSWORD}}``); the other options go to
    ``Gateway.new_cluster`` (the gateway's cluster options). A new cluster
    is scaled to ``n_workers`` and shut down with the session; a cluster
    connected to by name is left running, as a remote scheduler is.
    """
    try:
        import dask_gateway
    except ImportError:
        raise _missing("gateway", "dask-gateway", "gateway") from None
    if not parallel.address:
        raise _config_error(
            "parallel.address",
            "env 'gateway' needs the gateway's address",
            "set it, e.g. `parallel.address=https://gateway.example.org`",
        )
    options = dict(parallel.options)
    name = options.pop("cluster_name", None)
    auth = _gateway_auth(options.pop("auth", None))
    # Not closed here but dropped at the return (a cluster object keeps a gateway client
    # of its own): dask-gateway closes it again when it is collected, and a second close
    # prints an error.
    gateway = dask_gateway.Gateway(parallel.address, auth=auth)
    try:
        if name is not None:
            return gateway.connect(str(name), shutdown_on_close=False)
        cluster = gateway.new_cluster(**options)
    except Exception as exc:
        raise _gateway_refused(gateway, parallel, name, exc) from None
    cluster.scale(parallel.n_workers)
    return cluster


def close_cluster(cluster: Any) -> None:
    """Close a cluster object Kit holds (for a gateway cluster connected to by name: its handle)."""
    cluster.close()
    gateway = getattr(cluster, "gateway", None)
    if gateway is not None and type(gateway).__module__.startswith("dask_gateway"):
        # dask-gateway closes the cluster's Gateway client again when it is collected, and
        # that second close raises once their shared event loop has stopped ("Exception
        # ignored in Gateway.__del__" on stderr). It is closed: nothing is left to stop.
        with contextlib.suppress(AttributeError):
            del gateway._loop_runner


def _gateway_refused(
    gateway: Any, parallel: ParallelConfig, name: Any, exc: Exception
) -> Exception:
    """Say why the gateway gave no cluster: a name it does not have, or its own refusal."""
    if isinstance(exc, ValueError) and name is not None:
        with contextlib.suppress(Exception):
            names = ", ".join(c.name for c in gateway.list_clusters()) or "none"
            return _config_error(
                "parallel.options.cluster_name",
                f"the gateway at {parallel.address} has no cluster {name!r} of yours running",
                f"give one of: {names}; or leave cluster_name out to create one",
            )
    return SchedulerUnreachableError(
        f"the gateway at {parallel.address} refused: {type(exc).__name__}: {exc}; check the "
        "address, parallel.options.auth and the gateway's cluster options"
    )


def _gateway_auth(auth: Any) -> Any:
    """Return the dask-gateway auth ``auth`` names (None: the gateway's configured default)."""
    if auth is None or isinstance(auth, str):
        return auth
    kwargs = dict(auth)
    kind = kwargs.pop("type", None)
    if kind not in GATEWAY_AUTH:
        raise _config_error(
            "parallel.options.auth.type",
            f"unknown auth type {kind!r}",
            f"use one of: {', '.join(GATEWAY_AUTH)}",
        )
    import dask_gateway.auth

    return getattr(dask_gateway.auth, GATEWAY_AUTH[kind])(**kwargs)


#: Deployments built from the ``parallel`` section by a function (not job queues).
DEPLOYMENTS: dict[str, Callable[[ParallelConfig], Any]] = {
    "local_gpu": local_gpu_cluster,
    "kube": kube_cluster,
    "ssh": ssh_cluster,
}
