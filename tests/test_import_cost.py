"""A bare `import kit` stays light: the optional stacks load only when their feature is used."""

from __future__ import annotations

import json
import subprocess
import sys

# What `import kit` must not load: an extra's packages (absent from a core install), the
# scientific stack, Kit's own optional wings, and importlib.metadata (some 30 modules,
# for the cluster backends packages add: read when a config names one).
HEAVY = (
    "numpy",
    "pandas",
    "bokeh",
    "ipywidgets",
    "IPython",
    "pyarrow.compute",
    "distributed",
    "kit.rl",
    "kit.asr",
    "kit.widgets",
    "importlib.metadata",
)


def loaded_by(code: str) -> list[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_import_kit_loads_none_of_the_optional_stacks() -> None:
    modules = loaded_by("import kit, kit.errors")
    assert [name for name in HEAVY if name in modules] == []


def test_kits_public_names_are_there_after_a_bare_import() -> None:
    modules = loaded_by("import kit\nassert all(hasattr(kit, name) for name in kit.__all__)")
    assert "kit.runner" in modules
    assert [name for name in ("kit.rl", "kit.asr", "kit.widgets") if name in modules] == []
