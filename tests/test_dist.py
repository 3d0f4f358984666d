"""The built wheel, installed into a fresh venv outside the checkout, works as the docs say."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from kit._extras import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[1]


def sh(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, cwd=cwd, check=False
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A venv of its own holding the wheel built from this checkout: (its python, a folder)."""
    where = tmp_path_factory.mktemp("dist")
    # The wheel as `make dist` builds it (without an isolated build env: no download).
    built = sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
               "-w", where / "wheel", ROOT, cwd=where)  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (where / "wheel").glob("*.whl")
    venv = where / "venv"
    made = sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=where)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    put = sh(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q",
             wheel, cwd=where)  # fmt: skip
    assert put.returncode == 0, put.stderr
    # Kit's dependencies come from this venv (nothing to download); a folder added by a
    # .pth line has its own .pth files skipped, so this checkout's editable Kit is not.
    site = Path(sh(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                   cwd=where).stdout.strip())  # fmt: skip
    (site / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python, where


def test_the_wheel_holds_kit_and_its_data_and_no_other_top_level_name(
    installed: tuple[Path, Path],
) -> None:
    _, where = installed
    (wheel,) = (where / "wheel").glob("*.whl")
    assert wheel.name.startswith(DISTRIBUTION.replace("-", "_") + "-")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    packages = {top for top in tops if not top.endswith((".dist-info", ".data"))}
    assert packages == {"kit"}  # no top-level `widgets` for a widgets.py to shadow
    for data in ("kit/py.typed", "kit/examples/quickstart.yaml", "kit/examples/asr/decode.yaml"):
        assert data in names, data
    shipped = [name for name in names if name.endswith(".ipynb")]
    assert len(shipped) == len(list((ROOT / "notebooks").glob("*.ipynb"))), shipped


def test_the_installed_kit_runs_the_quickstart_and_reads_the_decoding_config(
    installed: tuple[Path, Path],
) -> None:
    python, where = installed
    outside = where / "work"
    outside.mkdir(exist_ok=True)
    found = sh(python, "-c", "import kit, pathlib; print(pathlib.Path(kit.__file__).parent)",
               cwd=outside)  # fmt: skip
    package = Path(found.stdout.strip())
    assert package.is_relative_to(where / "venv"), (package, found.stderr)
    kit = python.parent / "kit"
    helped = sh(kit, "--help", cwd=outside)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: kit"), helped.stderr
    ran = sh(kit, "run", package / "examples" / "quickstart.yaml", "parallel.env=inline",
             "-o", outside / "quick", cwd=outside)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "300 ok, 0 failed" in ran.stdout
    shown = sh(kit, "config", "show", package / "examples" / "asr" / "decode.yaml", cwd=outside)
    assert shown.returncode == 0, shown.stderr
    assert "_target_: kit.asr.DecodeProvider" in shown.stdout


def test_the_installed_kit_copies_out_the_notebooks_it_ships(
    installed: tuple[Path, Path],
) -> None:
    python, where = installed
    copied = sh(python.parent / "kit", "notebooks", where / "mine", cwd=where)
    assert copied.returncode == 0, copied.stderr
    names = sorted(p.name for p in (where / "mine").glob("*.ipynb"))
    assert names == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert (
        str(where / "venv" / "share" / DISTRIBUTION / "notebooks")
        in sh(
            python, "-c", "from kit._notebooks import shipped; print(shipped())", cwd=where
        ).stdout
    )
    again = sh(python.parent / "kit", "notebooks", where / "mine", cwd=where)
    assert again.returncode == 2 and "nothing was copied" in again.stderr


def test_the_installed_workshop_magics_load(installed: tuple[Path, Path]) -> None:
    python, where = installed
    script = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_line_magic('load_ext', 'kit.widgets.workshop')\n"
        "print(sorted(shell.magics_manager.magics['cell']))\n"
    )
    loaded = sh(python, "-c", script, cwd=where)
    assert loaded.returncode == 0, loaded.stderr
    assert "'exercise'" in loaded.stdout and "'solution'" in loaded.stdout


def test_the_installed_wheel_turns_on_the_server_extension_for_its_environment(
    installed: tuple[Path, Path],
) -> None:
    python, where = installed
    enabled = python.parent.parent / "etc" / "jupyter" / "jupyter_server_config.d"
    assert (enabled / "jupyter-server-extension.json").is_file()
    listed = sh(python, "-m", "jupyter_server.extension.serverextension", "list", cwd=where)
    said = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)  # no colours
    assert "kit.widgets.bokehjs enabled" in said, said
    assert re.search(r"kit\.widgets\.bokehjs\s+OK", said), said  # it imports and loads
