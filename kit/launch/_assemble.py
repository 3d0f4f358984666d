"""Assemble a run from its request: the one place a run's parts are put together."""

from __future__ import annotations

import uuid

from kit._engine import ChunkJob, RunHandle, RunSpec
from kit._reuse import plan_of
from kit.dashboard import ReportWriter
from kit.events import EventLog, EventStream, Subscriber
from kit.launch._request import RunRequest
from kit.store._formats import RecordWriter
from kit.store._store import RunStore
from kit.tracking._exporter import Exporters


def spec_of(request: RunRequest) -> RunSpec:
    """Return the spec of ``request``'s run; nothing is contacted, nothing written."""
    task, options = request.task, request.options
    writer = request.writer or RecordWriter(options.record_format)
    output_dir = request.output_dir
    job = ChunkJob(
        run_id=uuid.uuid4().hex[:8],
        forward=task.forward,
        forward_spec=task.forward_spec,
        explicit=dict(request.forward_kwargs),
        indices=request.items,
        batch_size=options.batch_size,
        # Batching by size is the runner's, checked when it was made; options may drop it.
        batch_by=task.batch_by if options.batch_by is not None else None,
    )
    return RunSpec(
        provider=request.provider,
        job=job,
        parallel=request.parallel,
        client=request.client,
        options=options,
        store=RunStore(output_dir, writer) if output_dir is not None else None,
        runner_name=task.name,
        summarize=task.summarize,
        config=request.config,
        reuse=plan_of(task, request.provider, options, request.config, output_dir),
    )


def check_resume(
    request: RunRequest, *, resume: bool | None = None, how: str | None = None
) -> None:
    """Refuse now what the run's resume would refuse once started (another run's folder).

    Reads the request only: nothing is contacted, nothing written.
    ``resume`` replaces the runner's option (a sweep reads a finished trial
    back whatever it says); ``how`` replaces the message's advice.

    Raises
    ------
    kit.errors.StoreError
        When ``output_dir`` holds a run of other code, keywords, config or items.
    """
    spec = spec_of(request)
    if spec.store is None:
        return
    spec.store.check_resume(
        spec.store.run_manifest(**spec.manifest_request()),
        spec.config,
        spec.options.resume if resume is None else resume,
        how,
    )


def assemble(request: RunRequest, on_event: Subscriber | None = None) -> RunHandle:
    """Return the handle of ``request``'s run, not started, its views subscribed.

    Start it with ``handle.start()`` (a background thread) or
    ``handle.drive()`` (this thread). Nothing is contacted yet: no cluster,
    no output directory.

    Examples
    --------
    >>> from kit.examples.quickstart import Evaluate, ModelProvider, quickstart_config
    >>> runner = Evaluate(ModelProvider(quickstart_config(["model.work_seconds=0"])))
    >>> handle = assemble(RunRequest.of(runner, 3))
    >>> handle.drive(); handle.result().stats.ok
    3
    """
    spec = spec_of(request)
    store = spec.store
    events = EventStream()
    exporters = None
    if request.tracking is not None:
        path = store.path if store is not None else None
        exporters = Exporters(
            request.tracking.exporters(path, spec.config, resume=spec.options.resume)
        )
    if store is not None:
        # Both start writing at this run's RunStarted, i.e. once it holds the lock.
        events.subscribe(EventLog(store.files.events))
    if exporters is not None:
        # They end the run in the trackers while its report is drawn (just below),
        # then upload the report once it is written.
        events.subscribe(exporters.take)
    if store is not None and request.draws_report:
        events.subscribe(ReportWriter(store.path, request.task.report_sections))
    if exporters is not None:
        events.subscribe(exporters.finish)
    if on_event is not None:
        events.subscribe(on_event)
    return RunHandle(spec, events)
