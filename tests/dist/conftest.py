"""Fresh venvs holding the built wheel, as users install it: pip's own resolver, the index.

Each venv is made by ``python -m venv`` outside the checkout, and the wheel is
installed with one extra (or none) by ``pip install 'kit_lab-....whl[EXTRA]'``:
pip resolves every dependency from the package index, so a dependency the
wheel forgets to declare is missing there as it would be for a user. The
venvs are built side by side (pip mostly waits on downloads and disk) while
the first tests run; a test waits only for the venv it needs.

These tests are the ``dist`` tier: ``make test-dist`` runs them (CI too);
``make unit`` leaves them out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The extras, each installed alone into a venv of its own; "" is the core install.
EXTRAS = ("", "asr", "lhotse", "rl", "notebook", "search", "mlflow", "tensorboard", "jobqueue")
EXTRAS += ("gateway", "hf")

#: Installed first where an extra's own requirement would take a build of several GB:
#: lhotse asks for plain `torch`, which alone resolves to a CUDA build; a CPU user
#: installs the CPU build first, as the Makefile does (KIT_TORCH is its TORCH).
BEFORE = {"lhotse": [os.environ.get("KIT_TORCH", "torch==2.13.0")]}

#: Venvs built at once: pip waits on the network and the disk more than on a core.
AT_ONCE = 3

#: A test's bound here: it may wait for its venv, whose install (downloads, and a
#: CPU PyTorch unpacked for lhotse) takes minutes on a cold cache and a busy machine.
INSTALL_BOUND = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.dist)
            item.add_marker(pytest.mark.timeout(INSTALL_BOUND))


def clean_env() -> dict[str, str]:
    """The environment a user's shell would give: nothing pointing into this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
    )
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def sh(*command: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=clean_env(),
        timeout=timeout,
        check=False,
    )


def installed_kit(python: Path) -> Path:
    """The folder of the ``kit`` package that ``python`` imports."""
    code = "import kit, pathlib; print(pathlib.Path(kit.__file__).parent)"
    found = sh(python, "-c", code, cwd=python.parent)
    assert found.returncode == 0, found.stderr
    return Path(found.stdout.strip())


class Venvs:
    """The wheel, and a venv per extra built in the background; ``python(extra)`` waits."""

    def __init__(self, where: Path) -> None:
        self.where = where
        # As `make dist`: the sdist, then the wheel built from it (in a folder of its own,
        # so no build/ left in the checkout, with files deleted since, reaches the wheel);
        # no isolated build env, so nothing is downloaded for the build itself.
        built = sh(
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--outdir",
            where / "wheel",
            ROOT,
            cwd=where,
        )
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        (self.wheel,) = (where / "wheel").glob("*.whl")
        self._pool = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="venv")
        self._closing = threading.Event()
        self._pips: set[subprocess.Popen[str]] = set()
        self._venvs: dict[str, Future[Path]] = {
            extra: self._pool.submit(self._build, extra) for extra in EXTRAS
        }

    def _build(self, extra: str) -> Path:
        venv = self.where / f"venv-{extra or 'core'}"
        log = self.where / f"venv-{extra or 'core'}.log"
        steps = [[sys.executable, "-m", "venv", venv]]
        pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet"]
        steps += [[*pip, requirement] for requirement in BEFORE.get(extra, [])]
        steps.append([*pip, f"{self.wheel}[{extra}]" if extra else self.wheel])
        with log.open("w") as out:
            for step in steps:
                out.write(f"$ {' '.join(map(str, step))}\n")
                out.flush()
                if self._closing.is_set():
                    raise RuntimeError("the session ended before this venv was built")
                pip = subprocess.Popen(
                    [str(part) for part in step],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                    cwd=self.where,
                    env=clean_env(),
                )
                self._pips.add(pip)
                try:
                    code = pip.wait(timeout=INSTALL_BOUND)
                finally:
                    self._pips.discard(pip)
                if code != 0:
                    said = log.read_text()[-3000:]
                    raise AssertionError(f"{' '.join(map(str, step))} exited {code}:\n{said}")
        return venv

    def python(self, extra: str) -> Path:
        """The python of the venv holding Kit with ``extra`` ("" for the core install)."""
        return self._venvs[extra].result() / "bin" / "python"

    def close(self) -> None:
        """Stop the builds no test waited for (a run of a few tests selected by -k)."""
        self._closing.set()
        for pip in list(self._pips):
            pip.kill()
        self._pool.shutdown(cancel_futures=True)


@pytest.fixture(scope="session")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venvs]:
    built = Venvs(tmp_path_factory.mktemp("dist"))
    yield built
    built.close()


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the checkout: `import kit` cannot find the source tree."""
    assert not tmp_path.is_relative_to(ROOT)
    return tmp_path
