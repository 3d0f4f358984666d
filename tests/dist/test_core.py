"""`pip install kit-lab` with no extra: the core works, and each missing extra is named."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from kit._base.extras import DISTRIBUTION
from tests.dist.conftest import ROOT, Venvs, installed_kit, sh

QUICKSTART = "kit/examples/quickstart.yaml"

#: What a bare `import kit` must not load: an extra's packages, Kit's optional wings.
LIGHT = ("numpy", "pandas", "bokeh", "ipywidgets", "pyarrow.compute", "kit.rl", "kit.asr")
LIGHT += ("kit.widgets",)


def package(venvs: Venvs) -> Path:
    return installed_kit(venvs.python(""))


def test_the_wheel_holds_kit_and_its_data_and_no_other_top_level_name(venvs: Venvs) -> None:
    assert venvs.wheel.name.startswith(DISTRIBUTION.replace("-", "_") + "-")
    names = zipfile.ZipFile(venvs.wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    packages = {top for top in tops if not top.endswith((".dist-info", ".data"))}
    assert packages == {"kit"}  # no top-level `widgets` for a widgets.py to shadow
    for data in ("kit/py.typed", "kit/examples/quickstart.yaml", "kit/examples/asr/decode.yaml"):
        assert data in names, data
    # sclite's alignment, compiled (the build machine has a C compiler).
    assert [n for n in names if n.startswith("kit/asr/_align.") and n.endswith(".so")], names
    shipped = [name for name in names if name.endswith(".ipynb")]
    assert len(shipped) == len(list((ROOT / "notebooks").glob("*.ipynb"))), shipped


def test_the_package_index_description_has_no_link_into_the_checkout(venvs: Venvs) -> None:
    # The README's links to docs/*.md and its screenshot led nowhere on the index.
    wheel = zipfile.ZipFile(venvs.wheel)
    metadata = wheel.read(next(n for n in wheel.namelist() if n.endswith("/METADATA"))).decode()
    description = metadata.split("\n\n", 1)[1]
    assert "Description-Content-Type: text/markdown" in metadata
    assert "configs and overrides" in description  # the README, its links as their text
    assert not re.findall(r"\]\((?![a-z]+:|#)[^)]*\)", description)


def test_import_kit_in_a_core_install_loads_no_optional_stack(venvs: Venvs, outside: Path) -> None:
    python = venvs.python("")
    script = "import json, sys, kit, kit.errors; print(json.dumps(sorted(sys.modules)))"
    imported = sh(python, "-c", script, cwd=outside)
    assert imported.returncode == 0, imported.stderr
    modules = json.loads(imported.stdout)
    assert [name for name in LIGHT if name in modules] == []
    assert package(venvs).is_relative_to(venvs.where / "venv-core")


def test_the_readme_quickstart_runs_in_a_core_install(venvs: Venvs, outside: Path) -> None:
    section = (ROOT / "README.md").read_text().split("## Quickstart in ten lines", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    (outside / "quickstart.py").write_text(code.group(1))
    ran = sh(venvs.python(""), "quickstart.py", cwd=outside, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.startswith("[{'idx': 0, 'y': 0}, {'idx': 1, 'y': 3}, {'idx': 2, 'y': 6}]")


def test_kit_help_and_kit_run_of_the_quickstart_config_in_a_core_install(
    venvs: Venvs, outside: Path
) -> None:
    kit = venvs.python("").parent / "kit"
    helped = sh(kit, "--help", cwd=outside)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: kit"), helped.stderr
    ran = sh(
        kit,
        "run",
        package(venvs) / "examples" / "quickstart.yaml",
        "-o",
        outside / "quick",
        cwd=outside,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert "300 ok, 0 failed" in ran.stdout
    shown = sh(
        kit, "config", "show", package(venvs) / "examples" / "asr" / "decode.yaml", cwd=outside
    )
    assert shown.returncode == 0, shown.stderr
    assert "_target_: kit.asr.DecodeProvider" in shown.stdout


def test_the_core_install_copies_out_the_notebooks_it_ships(venvs: Venvs, outside: Path) -> None:
    kit = venvs.python("").parent / "kit"
    copied = sh(kit, "notebooks", outside / "mine", cwd=outside)
    assert copied.returncode == 0, copied.stderr
    names = sorted(p.name for p in (outside / "mine").glob("*.ipynb"))
    assert names == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    again = sh(kit, "notebooks", outside / "mine", cwd=outside)
    assert again.returncode == 2 and "nothing was copied" in again.stderr


# Each feature used in a core install: one clear error naming the install line, exit 2.
MISSING = {
    "rl": ["python", "-c", "import kit.rl"],
    "notebook": ["python", "-c", "import kit.widgets"],
    "dashboard": ["kit", "report", "{run}"],
    "search": [
        "kit",
        "sweep",
        QUICKSTART,
        "--search",
        "optuna",
        "--trials",
        "2",
        "--metric",
        "max_y",
        "model.work_seconds=interval(0,0.001)",
        "-o",
        "{out}",
    ],
    "mlflow": ["kit", "run", QUICKSTART, "tracking.mlflow=true", "-o", "{out}"],
    "tensorboard": ["kit", "run", QUICKSTART, "tracking.tensorboard=true", "-o", "{out}"],
    "jobqueue": ["kit", "run", QUICKSTART, "parallel.env=slurm", "-o", "{out}"],
    "gateway": [
        "kit",
        "run",
        QUICKSTART,
        "parallel.env=gateway",
        "parallel.address=http://127.0.0.1:9",
        "-o",
        "{out}",
    ],
    "asr": [
        "kit",
        "run",
        "kit/examples/asr/decode.yaml",
        "parallel.env=inline",
        "items.stop=1",
        "data.root={run}/asr",
        "-o",
        "{out}",
    ],
    "lhotse": ["python", "-c", "from kit.asr.data import LhotseCuts; LhotseCuts('cuts.jsonl')"],
    "hf": [
        "python",
        "-c",
        "from kit.asr.data import load_dataset_entries as load; load(dict(hf=1))",
    ],
}


#: The messages of Kit's optional wings, whole (the manual quotes the first).
PINNED = {
    "rl": "kit.rl needs numpy, which is not installed: pip install 'kit-lab[rl]'",
    "notebook": "kit.widgets needs ipywidgets, which is not installed: "
    "pip install 'kit-lab[notebook]'",
}


@pytest.fixture(scope="module")
def a_run(venvs: Venvs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished quickstart run made by the core install (for `kit report`)."""
    where = tmp_path_factory.mktemp("run")
    kit = venvs.python("").parent / "kit"
    ran = sh(
        kit,
        "run",
        package(venvs) / "examples" / "quickstart.yaml",
        "parallel.env=inline",
        "items.stop=20",
        "-o",
        where / "run",
        cwd=where,
    )
    assert ran.returncode == 0, ran.stderr
    (where / "run" / "asr").mkdir()
    (where / "run" / "asr" / "corpus.jsonl").write_text(
        json.dumps({"id": "u1", "audio": "u1.wav", "text": "one"}) + "\n"
    )
    return where / "run"


@pytest.mark.parametrize("extra", sorted(MISSING))
def test_a_feature_whose_extra_is_missing_names_its_install_line(
    venvs: Venvs, a_run: Path, outside: Path, extra: str
) -> None:
    python = venvs.python("")
    shipped = package(venvs).parent
    words = [w.format(run=a_run, out=outside / "out") for w in MISSING[extra]]
    if words[0] == "kit":
        words = [str(python.parent / "kit"), *words[1:]]
        words = [str(shipped / w) if w.startswith("kit/examples/") else w for w in words]
    else:
        words = [str(python), *words[1:]]
    done = sh(*words, cwd=outside, timeout=300)
    said = done.stderr
    assert f"pip install '{DISTRIBUTION}[{extra}]'" in said, said[-2000:]
    assert PINNED.get(extra, "") in said
    if words[0].endswith("/kit"):
        assert done.returncode == 2, said
        assert "Traceback" not in said, said
    else:
        assert said.rstrip().splitlines()[-1].startswith("ModuleNotFoundError: ") or (
            said.rstrip().splitlines()[-1].startswith("ImportError: ")
        ), said
