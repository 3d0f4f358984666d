"""Runners: apply a static ``forward`` to items, inline or on a Dask cluster."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

from omegaconf import DictConfig, OmegaConf

from kit._engine import RunHandle
from kit._engine.chunk import BatchBy
from kit._engine.inject import ForwardSpec
from kit.cluster._session import check_client
from kit.config import ParallelConfig, RunnerConfig, parallel_section
from kit.config._errors import closest, error
from kit.config._schema import check_section
from kit.events import Subscriber
from kit.launch import RunRequest, assemble, launch, run
from kit.provider import EnvironmentProvider
from kit.result import Index, RunResult
from kit.store._formats import RecordWriter
from kit.tracking import Tracking

if TYPE_CHECKING:
    from kit.check import CheckResult
    from kit.detached._run import DetachedRun


class Runner:
    """Run ``forward`` over items with the provider's env injected by keyword name.

    Subclasses define ``forward`` as a ``@staticmethod`` taking the item
    index first and env entries by name (``**env`` takes all of them);
    with ``batch_size=k`` (or ``batch_by``) it takes a list of indices and
    returns a list of as many results. Nothing of ``self`` is sent to the workers.
    A subclass declares; Kit reads what it declares into a
    :class:`kit.task.Task` when a run is asked for. What ``kit check`` reads
    (``check_ignore``, ``check_rtol``, ``cost_by``, ``check_items``,
    ``check_summary``), what lets runs alike share forward outputs
    (``forward_keys``, ``finish``: docs/reuse.md), ``summarize`` and
    ``report_sections`` are hooks to override, each checked when the class is
    made (a hook of another shape is refused, naming it); ``run``,
    ``submit``, ``prepare``, ``check`` and ``__call__`` are Kit's, and a
    subclass that defines one is refused unless it names it in
    ``replaces=`` (``class R(Runner, replaces=("__call__",))``).

    Parameters
    ----------
    provider
        Builds the env (once on the driver inline, once per worker otherwise).
    parallel
        The ``parallel`` config section (``env``, ``n_workers``, ``address``,
        ``options``); None runs inline in this process.
    client
        A Dask client of your own to run on instead (``parallel`` is then
        ignored); Kit never closes it.
    output_dir
        Where to store the run (manifest, chunk files, errors, config); None
        keeps results in memory only.
    batch_size, batch_by, max_batch, cost_by, chunk_size, resume, on_error, max_failures
        As in the ``runner`` config section: see :class:`kit.config.RunnerConfig`.
    retries, backups, setup_timeout, max_slots, reuse, verify
        As in the ``runner`` config section.
    record_format
        ``data`` (JSON lines, Arrow for numpy values and bytes; never executed
        when read) or ``pickle``: see :class:`kit.config.RunnerConfig`.
    writer
        How records are stored in ``output_dir``; overrides ``record_format``
        (default: a :class:`kit.store.RecordWriter` for ``record_format``).
    tracking
        Export the run to TensorBoard and MLflow as it goes: a
        :class:`kit.tracking.Tracking` or the ``tracking`` config section as a
        mapping (``{"mlflow": True}``); None (the default) exports nothing.

    Examples
    --------
    >>> from omegaconf import OmegaConf
    >>> from kit import EnvironmentProvider, Runner
    >>> class Scale(EnvironmentProvider):
    ...     def build_env_local(self):
    ...         return {"factor": self.config.factor}
    ...     def make_worker_setup_fn(self):
    ...         factor = self.config.factor
    ...         return lambda: {"factor": factor}
    >>> class Times(Runner):
    ...     @staticmethod
    ...     def forward(idx, factor):
    ...         return idx * factor
    >>> result = Times(Scale(OmegaConf.create({"factor": 3}))).run(range(4))
    >>> result.records, str(result.status)
    ([0, 3, 6, 9], 'completed')
    """

    def __init_subclass__(cls, replaces: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_declarations(cls, tuple(replaces))

    #: ``forward(idx, **env)``: process one item (or a list of items with
    #: ``batch_size``). Subclasses define it as a ``@staticmethod``.
    forward: ClassVar[Callable[..., Any]]

    #: The config keys ``forward`` reads (``decoder.*`` is the whole ``decoder``
    #: section): runs alike in them, in code, env and item share forward
    #: outputs (docs/reuse.md); None (the default): its outputs are never reused.
    forward_keys: ClassVar[tuple[str, ...] | None] = None
    #: Record fields that may differ between two runs of one item (timings,
    #: worker names): ``kit check`` does not compare them. Dotted paths.
    check_ignore: ClassVar[tuple[str, ...]] = ()
    #: Numbers of two runs of one item within this relative difference are
    #: the same to ``kit check`` (0: exactly; ``--rtol`` and ``check.rtol`` override it).
    check_rtol: ClassVar[float] = 0.0
    #: The name of a ``@staticmethod cost(idx, **env) -> float`` (like
    #: ``batch_by``'s) an item's time grows with, e.g. ``duration``: ``kit
    #: check`` scales the sample's times by it to forecast the full run. The
    #: ``cost_by`` option (``runner.cost_by`` in a config) sets it for one runner.
    cost_by: str | None = None

    @staticmethod
    def finish(record: Any, config: Any) -> Any:
        """Return a reused ``record`` as this run's ``config`` makes it; override this.

        ``forward`` made ``record`` under a config alike in ``forward_keys``;
        recompute from it what the other keys decide (a score under this
        run's normaliser). The default returns it as it is.
        """
        return record

    def summarize(self, records: list[Any]) -> dict[str, Any]:
        """Aggregate the records of a completed run (e.g. corpus WER); override this."""
        return {}

    def report_sections(self) -> Sequence[Callable[[Path], str]]:
        """Return the parts this runner adds to ``report.html``; override this.

        Each is a module-level function given the run's folder that returns
        HTML (escaped: the folder's data may be anyone's); none by default.
        :class:`kit.asr.DecodeRunner` adds its scores and alignments.
        """
        return ()

    def task_forward(self) -> Callable[..., Any]:
        """Return what the workers call for each item: ``forward``, or a picklable wrapper.

        A subclass that checks every output where it is made (so a bad one
        fails its item, named) returns a ``functools.partial`` of a
        module-level function around ``type(self).forward``; the env is still
        matched to ``forward``'s own parameters.
        """
        return type(self).forward

    def check_summary(self, records: list[Any]) -> dict[str, Any]:
        """Return what ``kit check`` says of its sample's records (by default :meth:`summarize`'s).

        :class:`kit.asr.DecodeRunner` adds its WER and CER intervals.
        """
        return self.summarize(records)

    def check_items(self, indices: Sequence[Index], env: Mapping[str, Any]) -> list[str]:
        """Return what keeps items from running, one line an item; none by default.

        ``kit check`` calls it on the whole set with the env built in this
        process, so a problem anywhere in the set shows before the run
        starts. It should read headers, not data: :class:`kit.asr.DecodeRunner`
        checks every recording's rate, channels and sample width.
        """
        return []

    def __init__(
        self,
        provider: EnvironmentProvider,
        *,
        parallel: DictConfig | Mapping[str, Any] | ParallelConfig | None = None,
        output_dir: str | os.PathLike[str] | None = None,
        batch_size: int | None = None,
        batch_by: str | None = None,
        max_batch: float | None = None,
        cost_by: str | None = None,
        chunk_size: int | str = "auto",
        resume: bool = True,
        on_error: str = "record",
        max_failures: int | None = None,
        retries: int = 2,
        backups: str = "auto",
        record_format: str = "data",
        setup_timeout: float | None = None,
        max_slots: int | None = None,
        reuse: bool = True,
        verify: float = 0.01,
        writer: RecordWriter | None = None,
        client: Any = None,
        tracking: Tracking | Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(provider, EnvironmentProvider):
            raise TypeError(
                f"provider must be an EnvironmentProvider, got {type(provider).__name__}"
            )
        if not callable(getattr(type(self), "forward", None)):
            raise TypeError(f"{type(self).__qualname__} must define a @staticmethod forward")
        options = {
            "batch_size": batch_size,
            "batch_by": batch_by,
            "max_batch": max_batch,
            "cost_by": cost_by,
            "chunk_size": chunk_size,
            "resume": resume,
            "on_error": on_error,
            "max_failures": max_failures,
            "retries": retries,
            "backups": backups,
            "record_format": record_format,
            "setup_timeout": setup_timeout,
            "max_slots": max_slots,
            "reuse": reuse,
            "verify": verify,
        }
        checked = check_section(OmegaConf.create({"runner": options}), "runner", RunnerConfig)
        self.options = RunnerConfig(**OmegaConf.to_container(checked))  # type: ignore[arg-type]
        self.provider = provider
        self.parallel = (
            parallel if isinstance(parallel, ParallelConfig) else parallel_section(parallel)
        )
        # "~/runs/x" from a config or a widget means the home folder, not a folder named "~".
        self.output_dir = Path(output_dir).expanduser() if output_dir is not None else None
        self.writer = writer
        #: Where the run is exported to (:class:`kit.tracking.Tracking`), or None.
        self.tracking = Tracking.of(tracking)
        if client is not None:
            check_client(client)
        self.client = client
        self.forward_spec = ForwardSpec.of(type(self).forward, f"{type(self).__qualname__}.forward")
        self.batch_by = batch_by_of(type(self), self.options)
        if cost_by is not None:
            static_method(type(self), cost_by, "runner.cost_by", "cost")
            self.cost_by = cost_by

    # -------------------------------------------------------------- running
    def run(
        self,
        indices: int | Iterable[Index],
        *,
        on_event: Subscriber | None = None,
        **forward_kwargs: Any,
    ) -> RunResult:
        """Run ``forward`` over ``indices`` and wait for the result.

        ``indices`` is a list (or range) of item indices (ints or strings), or
        an int n for ``range(n)``. Extra keyword arguments go to every
        ``forward`` call. Ctrl-C cancels pending work and keeps what is done.

        Raises
        ------
        RunError
            When ``on_error="raise"`` or ``max_failures`` stops the run.
        """
        return run(RunRequest.of(self, indices, **forward_kwargs), on_event)

    __call__ = run

    @overload
    def submit(
        self,
        indices: int | Iterable[Index],
        *,
        detached: Literal[False] = False,
        on_event: Subscriber | None = None,
        **forward_kwargs: Any,
    ) -> RunHandle: ...

    @overload
    def submit(
        self,
        indices: int | Iterable[Index],
        *,
        detached: Literal[True],
        on_event: Subscriber | None = None,
        **forward_kwargs: Any,
    ) -> DetachedRun: ...

    def submit(
        self,
        indices: int | Iterable[Index],
        *,
        detached: bool = False,
        on_event: Subscriber | None = None,
        **forward_kwargs: Any,
    ) -> RunHandle | DetachedRun:
        """Start the run in the background and return a handle at once.

        Nothing is waited for on the calling thread: the cluster starts and
        the env is built on the run's own thread (``handle.status`` is
        ``starting`` meanwhile), so a notebook button that calls this never
        freezes the kernel. With ``detached=True`` the run is handed to a driver process that
        outlives this one (closing the notebook or restarting the kernel does
        not stop it); it needs ``output_dir``, and the returned
        :class:`kit.detached.DetachedRun` (also from ``kit.attach(output_dir)``)
        reads its progress and result from there.
        """
        request = RunRequest.of(self, indices, **forward_kwargs)
        return launch(request, detached=detached, on_event=on_event)  # type: ignore[call-overload, no-any-return]

    def prepare(
        self,
        indices: int | Iterable[Index],
        *,
        on_event: Subscriber | None = None,
        **forward_kwargs: Any,
    ) -> RunHandle:
        """Return the handle of a run over ``indices`` that has not started.

        Start it with ``handle.start()`` (a background thread) or
        ``handle.drive()`` (this thread). Nothing is contacted yet: no
        cluster, no output directory. Useful to subscribe views first, or to
        drive a run from another process (detached runs do).
        """
        return assemble(RunRequest.of(self, indices, **forward_kwargs), on_event)

    def check(
        self,
        indices: int | Iterable[Index],
        *,
        n: int = 20,
        seed: int = 0,
        rtol: float | None = None,
        ignore: Sequence[str] | None = None,
        target: DictConfig | Mapping[str, Any] | ParallelConfig | None = None,
        on_step: Callable[[str], None] | None = None,
        **forward_kwargs: Any,
    ) -> CheckResult:
        """Check the run over ``indices`` before running it in full: see :func:`kit.check.check`.

        ``n`` items spread over ``indices`` run in this process (twice), on
        the configured cluster and batched as configured; the verdict says
        whether they agree (or the likely cause), forecasts the full run on
        ``target`` (default: this runner's ``parallel``), and checks the
        whole set's items.
        """
        from kit.check import check

        if target is not None and not isinstance(target, ParallelConfig):
            target = parallel_section(target)
        return check(
            RunRequest.of(self, indices, **forward_kwargs),
            n=n,
            seed=seed,
            rtol=rtol,
            ignore=ignore,
            target=target,
            on_step=on_step,
        )


def batch_by_of(runner: type[Runner], options: RunnerConfig) -> BatchBy | None:
    """Check ``runner.batch_by``/``runner.max_batch`` on ``runner``; return how to batch by size."""
    name, budget = options.batch_by, options.max_batch
    if name is None and budget is None:
        return None
    cls = runner.__qualname__
    if name is None or budget is None:
        given, missing = ("batch_by", "max_batch")
        if name is None:
            given, missing = missing, given
        raise error(
            f"runner.{given} is set but runner.{missing} is not; batching by size needs both",
            full_key=f"runner.{missing}",
            fix="e.g. `runner.batch_by=duration runner.max_batch=60`",
        )
    function = static_method(runner, name, "runner.batch_by", "size")
    return BatchBy(function, ForwardSpec.of(function, f"{cls}.{name}"), float(budget))


def static_method(runner: type[Runner], name: str, key: str, what: str) -> Callable[..., Any]:
    """Return ``runner``'s static method ``name`` (``key`` names it), or say which there are."""
    cls = runner.__qualname__
    found = inspect.getattr_static(runner, name, None)
    if not isinstance(found, staticmethod):
        methods = [
            member
            for member, value in inspect.getmembers_static(runner)
            if isinstance(value, staticmethod) and member != "forward"
        ]
        guess = closest(name, methods)
        hint = f"; did you mean '{guess}'?" if guess else ""
        raise error(
            f"{cls} has no static method '{name}'{hint}",
            full_key=key,
            expected=f"the name of a @staticmethod {name}(idx, **env) -> {what}",
            fix=f"define it on {cls}, or set {key} to one of: "
            f"{', '.join(methods) or '(none defined)'}",
        )
    function: Callable[..., Any] = found.__func__
    return function


#: Kit's own methods: a subclass that defines one must say so (``replaces=``).
KIT_METHODS = ("run", "submit", "prepare", "check", "__call__")
#: The hooks a subclass overrides, with the arguments Kit calls them with.
HOOKS: dict[str, tuple[str, ...]] = {
    "summarize": ("self", "records"),
    "report_sections": ("self",),
    "task_forward": ("self",),
    "check_items": ("self", "indices", "env"),
    "check_summary": ("self", "records"),
    "finish": ("record", "config"),
}
STATIC = ("forward", "finish")


def check_declarations(cls: type, replaces: tuple[str, ...]) -> None:
    """Refuse, naming it, what ``cls`` defines that would take a Kit method's or hook's place.

    Examples
    --------
    >>> class Mine(Runner):
    ...     @staticmethod
    ...     def forward(idx):
    ...         return idx
    ...     def check(self, value):
    ...         return value > 0
    Traceback (most recent call last):
    ...
    TypeError: Mine.check would replace Runner.check, Kit's own (it runs kit check ...
    >>> class Sized(Runner):
    ...     def check_items(self, indices):
    ...         return []
    Traceback (most recent call last):
    ...
    TypeError: Sized.check_items is a hook Kit calls as check_items(self, indices, env): ...
    """
    own = cls.__dict__
    for name in STATIC:
        if name in own and not isinstance(own[name], staticmethod):
            raise TypeError(
                f"{cls.__qualname__}.{name} must be a @staticmethod (it runs on the workers, "
                "and nothing of the runner is pickled and sent there): add @staticmethod above it"
            )
    unknown = [name for name in replaces if name not in KIT_METHODS]
    if unknown:
        raise TypeError(
            f"{cls.__qualname__}: replaces={unknown!r} names no method of Kit's; "
            f"it may name {', '.join(KIT_METHODS)}"
        )
    for name in KIT_METHODS:
        if name in own and name not in replaces:
            what = "kit check" if name == "check" else "the run"
            raise TypeError(
                f"{cls.__qualname__}.{name} would replace Runner.{name}, Kit's own (it runs "
                f"{what} on this runner): give your method another name, or replace Kit's on "
                f"purpose with `class {cls.__name__}(..., replaces=({name!r},))`"
            )
    for name, arguments in HOOKS.items():
        if name in own and not _takes(own[name], arguments):
            raise TypeError(
                f"{cls.__qualname__}.{name} is a hook Kit calls as {name}"
                f"({', '.join(arguments)}): give it those parameters, or give your method "
                "another name"
            )
    _check_values(cls)


def _takes(member: Any, arguments: tuple[str, ...]) -> bool:
    """Whether a method defined in a class body can be called with ``arguments``."""
    function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
    if not callable(function):
        return False
    try:
        inspect.signature(function).bind(*arguments)
    except (TypeError, ValueError):
        return False
    return True


def _check_values(cls: type) -> None:
    """Refuse a declaration of the wrong type (``forward_keys = "decoder.*"``), naming it."""
    name = cls.__qualname__
    keys = getattr(cls, "forward_keys", None)
    if keys is not None and (
        isinstance(keys, str) or not all(isinstance(key, str) and key for key in keys)
    ):
        raise TypeError(
            f"{name}.forward_keys must be a tuple of config keys such as ('decoder.*',)"
        )
    ignore = getattr(cls, "check_ignore", ())
    if isinstance(ignore, str) or not all(isinstance(field, str) for field in ignore):
        raise TypeError(f"{name}.check_ignore must be a tuple of dotted record fields")
    rtol = getattr(cls, "check_rtol", 0.0)
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not rtol >= 0:
        raise TypeError(f"{name}.check_rtol must be a number >= 0, got {rtol!r}")
    cost_by = getattr(cls, "cost_by", None)
    if cost_by is not None and not isinstance(cost_by, str):
        raise TypeError(f"{name}.cost_by must be the name of a static method, or None")
