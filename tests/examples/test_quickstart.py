"""The quickstart example that ``make demo`` runs."""

from __future__ import annotations

import pytest

from kit.examples import quickstart


def test_quickstart_prints_its_resolved_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert quickstart.main(["items.stop=20"]) == 0
    out = capsys.readouterr().out
    assert "stop: 20" in out
    assert "env: local" in out


def test_quickstart_bad_override_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert quickstart.main(["parallel.env=lcoal"]) == 2
    assert "did you mean 'local'?" in capsys.readouterr().err
