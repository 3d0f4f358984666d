"""The Check button's view: the check's steps as they go, then its verdict card."""

from __future__ import annotations

import html
from collections.abc import Callable
from concurrent.futures import Future

import ipywidgets as w

from kit.check import CheckResult
from kit.widgets._kernel import on_kernel_thread
from kit.widgets._sample_run import SampleRun


def check_html(verdict: CheckResult) -> str:
    """Return the check's verdict as a card: PASS or FAIL in colour, then its text, escaped.

    Examples
    --------
    >>> from kit.check import CheckResult, Parity
    >>> print(check_html(CheckResult((0,), Parity(True, None, "same"), None, None, None)))
    ... # doctest: +ELLIPSIS
    <div class='kit-check' data-ok='true' ...><b style='color:#2b8a3e'>PASS</b>...
    """
    color = "#2b8a3e" if verdict.ok else "#c92a2a"
    word = "PASS" if verdict.ok else "FAIL"
    lines = verdict.card().splitlines()
    head = lines[0].replace(f"kit check: {word} ", "", 1)
    return (
        f"<div class='kit-check' data-ok='{str(verdict.ok).lower()}' "
        f"style='border-left:4px solid {color};padding:2px 8px;margin:4px 0'>"
        f"<b style='color:{color}'>{word}</b> {html.escape(head)}"
        f"<pre style='margin:2px 0;white-space:pre-wrap'>{html.escape(chr(10).join(lines[1:]))}"
        "</pre></div>"
    )


class CheckView:
    """The Check button and the card under it: a check in the background, its verdict drawn.

    ``sample`` is the run panel's model (what to check, where); ``picked``
    returns the panel's ``(run on, seed)``; ``show_error`` shows what a check
    that could not start or run raised.
    """

    def __init__(
        self,
        sample: SampleRun,
        picked: Callable[[], tuple[int, int]],
        show_error: Callable[[BaseException], None],
    ) -> None:
        self.sample = sample
        self.picked = picked
        self.show_error = show_error
        self.button = w.Button(
            description="Check",
            icon="balance-scale",
            tooltip="before scaling out: the sample here, on the workers and batched; "
            "the same answers? what will the full run cost?",
        )
        self.box = w.HTML()
        self.box.add_class("kit-check-box")
        #: The latest check's verdict, once it is in.
        self.verdict: Future[CheckResult] | None = None

    def run(self) -> Future[CheckResult]:
        """Check on ``run on`` items spread over all (seeded): :func:`kit.check.check`."""
        if self.verdict is not None and not self.verdict.done():
            raise RuntimeError("a check is going on: wait for its verdict")
        self.button.disabled = True
        self.box.value = "<i class='kit-check-step'>checking…</i>"

        def step(text: str) -> None:
            on_kernel_thread(lambda: self._show_step(text))

        how_many, seed = self.picked()
        try:
            self.verdict = self.sample.start_check(how_many, seed, step)
        except BaseException:
            self.button.disabled = False
            self.box.value = ""
            raise
        self.verdict.add_done_callback(lambda done: on_kernel_thread(lambda: self._show(done)))
        return self.verdict

    def _show_step(self, text: str) -> None:
        if self.verdict is not None and not self.verdict.done():
            self.box.value = f"<i class='kit-check-step'>checking: {html.escape(text)}…</i>"

    def _show(self, done: Future[CheckResult]) -> None:
        # The button comes back last: whoever waits on it (a person, a test)
        # then reads the verdict, never the last step.
        error = done.exception()
        if error is not None:
            self.box.value = ""
            self.show_error(error)
        else:
            self.box.value = check_html(done.result())
        self.button.disabled = False
