"""Fetch ESPnet's source distribution from the package index and take out its inference tests.

The distribution is pinned by version and digest, so the tests that run are
the ones named here, byte for byte; it is kept in the user's cache, never in
this repository.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

VERSION = "202611"
SHA256 = "eb5816c4d2e4a18eaa2afacc2f8cf74f93e5534dec0fdcee0b2c89b6f7ddd1fd"

#: ESPnet3's tests of inference: the runner, the provider and the stage.
TEST_FILES = (
    "test/espnet3/systems/base/test_inference_runner.py",
    "test/espnet3/systems/base/test_inference_provider.py",
    "test/espnet3/systems/base/test_inference.py",
    "test/espnet3/parallel/test_inference_provider.py",
    "test/espnet3/parallel/test_inference_runner.py",
)
#: What those tests need beside them: their packages, ESPnet3's conftest, the audio they read.
SUPPORT = (
    "test/__init__.py",
    "test/espnet3/__init__.py",
    "test/espnet3/conftest.py",
    "test/espnet3/systems/__init__.py",
    "test/espnet3/systems/base/__init__.py",
    "test/espnet3/parallel/__init__.py",
    "test_utils/espnet3/audio/",
)


def cache_dir() -> Path:
    """Return where the distribution is kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kit-tests"


def sdist() -> Path:
    """Return ESPnet's source distribution, fetched with pip if it is not cached yet."""
    folder = cache_dir()
    path = folder / f"espnet-{VERSION}.tar.gz"
    if not path.is_file() or _digest(path) != SHA256:
        folder.mkdir(parents=True, exist_ok=True)
        # espnet 202611 asks for Python 3.12; its tests themselves run on this one.
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        command += ["--no-binary", ":all:", "--ignore-requires-python", "-d", str(folder)]
        subprocess.run([*command, f"espnet=={VERSION}"], check=True, timeout=600)
    digest = _digest(path)
    if digest != SHA256:
        raise RuntimeError(f"{path}: sha256 {digest}, not the pinned {SHA256}")
    return path


def extract(destination: Path) -> Path:
    """Take the tests and what they need out into ``destination``; return the tree's root."""
    prefix = f"espnet-{VERSION}/"
    wanted = [prefix + name for name in (*TEST_FILES, *SUPPORT)]
    with tarfile.open(sdist()) as archive:
        members = [
            member
            for member in archive.getmembers()
            if member.isfile() and any(_within(member.name, name) for name in wanted)
        ]
        archive.extractall(destination, members=members, filter="data")
    return destination / prefix


def _digest(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _within(member: str, wanted: str) -> bool:
    """Whether the archive's ``member`` is the file ``wanted`` or lies in the folder it names."""
    return member == wanted or (wanted.endswith("/") and member.startswith(wanted))
