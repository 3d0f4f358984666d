"""Fixtures of the example tests: the spoken corpus, built once for every module that decodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.examples.speech import build_shared_corpus


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_shared_corpus(tmp_path_factory)
