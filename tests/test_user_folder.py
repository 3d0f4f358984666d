"""A person's default runs folder on a shared ``runs/``: planted links and folders refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kit.errors import UnsafeFileError
from kit.history import user_folder


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.setenv("JPY_SESSION_NAME", "04_workshop.ipynb")
    (tmp_path / "runs").mkdir()
    return tmp_path / "runs"


def test_a_link_planted_where_a_users_runs_go_is_refused(shared: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (shared / "alice").symlink_to(elsewhere)
    with pytest.raises(UnsafeFileError, match=r"runs/alice is a symbolic link"):
        user_folder(root=shared)
    (shared / "alice").unlink()
    (shared / "alice").mkdir()
    (shared / "alice" / "04_workshop").symlink_to(elsewhere)
    with pytest.raises(UnsafeFileError, match=r"alice/04_workshop is a symbolic link"):
        user_folder(root=shared)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder another user owns needs root")
def test_a_folder_another_user_made_there_is_refused(shared: Path) -> None:
    (shared / "alice").mkdir()
    os.chown(shared / "alice", 4242, 4242)
    with pytest.raises(UnsafeFileError, match=r"belongs to another user \(uid 4242\)"):
        user_folder(root=shared)


def test_a_users_own_folder_is_found_again(shared: Path) -> None:
    first = user_folder(root=shared)
    first.mkdir(parents=True)
    assert user_folder(root=shared) == first == shared / "alice" / "04_workshop"
