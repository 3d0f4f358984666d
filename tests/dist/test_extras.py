"""Each extra installed alone into a fresh venv: its feature's smallest real use works there."""

from __future__ import annotations

import re
import shutil
import textwrap
import wave
from pathlib import Path

import pytest
import yaml

from tests.dist.conftest import Venvs, installed_kit, sh
from tests.servers import gateway_server
from tests.slurm import slurm_parallel, slurm_problem

QUICK = {
    "provider": {"_target_": "kit.examples.quickstart.ModelProvider"},
    "model": {"coefficients": [1.0, -2.0, 0.5], "work_seconds": 0.0},
    "items": {"start": 0, "stop": 20},
    "parallel": {"env": "inline"},
    "runner": {"_target_": "kit.examples.quickstart.Evaluate"},
}


def quick_config(folder: Path, **parallel: object) -> Path:
    """The quickstart's config, on 20 items, with its ``parallel`` section replaced."""
    path = folder / "quick.yaml"
    path.write_text(yaml.safe_dump({**QUICK, "parallel": parallel or QUICK["parallel"]}))
    return path


def kit_of(python: Path) -> Path:
    return python.parent / "kit"


def run_python(python: Path, code: str, cwd: Path, timeout: float = 300) -> str:
    done = sh(python, "-c", textwrap.dedent(code), cwd=cwd, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_rl_collects_cartpole_episodes_from_a_pool_of_gymnasium_envs(
    venvs: Venvs, outside: Path
) -> None:
    said = run_python(
        venvs.python("rl"),
        """
        from kit.rl import EpisodeCollector, gym_env
        from kit.rl.pool import SyncWorkerPool
        from kit.rl.workers import SyncEnvWorker

        pool = SyncWorkerPool(SyncEnvWorker.from_env_fn(lambda: gym_env("CartPole-v1"), 2))
        episodes = EpisodeCollector(pool).collect(2, lambda obs, rngs: [0] * len(obs))
        print([e.status.value for e in episodes])
        """,
        outside,
    )
    assert said.strip() == "['terminated', 'terminated']"


def test_search_runs_an_optuna_search_of_two_trials(venvs: Venvs, outside: Path) -> None:
    done = sh(
        kit_of(venvs.python("search")),
        "sweep",
        quick_config(outside),
        "--search",
        "optuna",
        "--trials",
        "2",
        "--metric",
        "max_y",
        "model.work_seconds=interval(0,0.001)",
        "-o",
        outside / "search",
        cwd=outside,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list((outside / "search").glob("trial-*"))) == 2


def test_mlflow_takes_a_run_and_its_client_reads_it_back(venvs: Venvs, outside: Path) -> None:
    python = venvs.python("mlflow")
    store = f"sqlite:///{outside / 'mlflow.db'}"
    done = sh(
        kit_of(python),
        "run",
        quick_config(outside),
        f"tracking.mlflow={store}",
        "-o",
        outside / "run",
        cwd=outside,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = run_python(
        python,
        f"""
        import mlflow
        runs = mlflow.MlflowClient({store!r}).search_runs(
            [e.experiment_id for e in mlflow.MlflowClient({store!r}).search_experiments()])
        print(len(runs), runs[0].data.metrics["max_y"])
        """,
        outside,
    )
    assert said.split() == ["1", "1.0"]


def test_tensorboard_event_files_are_read_by_tensorboards_reader(
    venvs: Venvs, outside: Path
) -> None:
    python = venvs.python("tensorboard")
    done = sh(
        kit_of(python),
        "run",
        quick_config(outside),
        "tracking.tensorboard=true",
        "-o",
        outside / "runs" / "run",
        cwd=outside,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = run_python(
        python,
        f"""
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        logs = EventAccumulator({str(outside / "runs" / "tensorboard" / "run")!r}).Reload()
        print(sorted(logs.Tags()["scalars"])[:3])
        """,
        outside,
    )
    assert said.startswith("['"), said


def test_jobqueue_writes_a_slurm_job_script_and_runs_on_slurm_where_it_is_up(
    venvs: Venvs, outside: Path
) -> None:
    python = venvs.python("jobqueue")
    said = run_python(
        python,
        """
        from kit.cluster import job_script
        print(job_script({"env": "slurm", "options": {"cores": 1, "memory": "1GB"}}))
        """,
        outside,
    )
    assert "#SBATCH" in said and str(python.parent) in said  # the venv's own python starts
    if (problem := slurm_problem()) is not None:
        pytest.skip(problem)
    # The tests' SLURM section less its prologue: the job runs the venv's own Kit.
    section = slurm_parallel(outside)["options"]
    options = {key: value for key, value in section.items() if key != "job_script_prologue"}
    config = quick_config(outside, env="slurm", n_workers=1, options=options)
    done = sh(kit_of(python), "run", config, "-o", outside / "run", cwd=outside, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "20 ok, 0 failed" in done.stdout


def test_gateway_runs_on_a_dask_gateway_server(venvs: Venvs, outside: Path) -> None:
    python = venvs.python("gateway")
    (outside / "server").mkdir()
    with gateway_server(outside / "server", "pw") as address:
        auth = {"type": "basic", "username": "ada", "password": "pw"}
        config = quick_config(
            outside, env="gateway", address=address, n_workers=1, options={"auth": auth}
        )
        done = sh(kit_of(python), "run", config, "-o", outside / "run", cwd=outside, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "20 ok, 0 failed" in done.stdout


def test_notebook_builds_the_widgets_loads_the_magics_and_turns_on_the_server_extension(
    venvs: Venvs, outside: Path
) -> None:
    python = venvs.python("notebook")
    said = run_python(
        python,
        f"""
        from IPython.core.interactiveshell import InteractiveShell
        import kit
        from kit.widgets import ConfigEditor

        editor = ConfigEditor(kit.load_config({str(quick_config(outside))!r}))
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "kit.widgets.workshop")
        print(type(editor).__name__, sorted(shell.magics_manager.magics["cell"]))
        """,
        outside,
    )
    assert said.startswith("ConfigEditor") and "'exercise'" in said and "'solution'" in said
    enabled = python.parent.parent / "etc" / "jupyter" / "jupyter_server_config.d"
    assert (enabled / "jupyter-server-extension.json").is_file()
    listed = sh(python, "-m", "jupyter_server.extension.serverextension", "list", cwd=outside)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)  # no colours
    assert re.search(r"kit\.widgets\.bokehjs\s+OK", shown), shown
    ran = sh(kit_of(python), "run", quick_config(outside), "-o", outside / "run", cwd=outside)
    assert ran.returncode == 0, ran.stderr[-3000:]
    reported = sh(kit_of(python), "report", outside / "run", cwd=outside)
    assert reported.returncode == 0, reported.stderr[-3000:]
    assert "Bokeh" in (outside / "run" / "report.html").read_text()


def spoken(folder: Path) -> Path:
    """Two utterances spoken by flite into a corpus (the decoding example's own tool)."""
    for tool in ("flite", "sox"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (run .ci/system-deps.sh demo as root)")
    return folder / "asr-data"


def test_asr_decodes_spoken_utterances_with_pocketsphinx_and_whisper(
    venvs: Venvs, outside: Path
) -> None:
    python = venvs.python("asr")
    data = spoken(outside)
    run_python(
        python,
        f"""
        from kit.examples.asr.corpus import build_corpus
        build_corpus({str(data)!r}, n_sentences=2, n_digits=1, voices=("slt",))
        """,
        outside,
    )
    decode = installed_kit(python) / "examples" / "asr" / "decode.yaml"
    for engine in ("pocketsphinx", "whisper"):
        done = sh(
            kit_of(python),
            "run",
            "--max-wer",
            "60%",
            decode,
            f"decoder.engine={engine}",
            f"data.root={data}",
            "parallel.env=inline",
            "items.stop=3",
            "-o",
            outside / engine,
            cwd=outside,
            timeout=600,
        )
        assert done.returncode == 0, (engine, done.stdout[-2000:], done.stderr[-3000:])
        assert "3 ok, 0 failed" in done.stdout, done.stdout


def test_lhotse_reads_a_cutset_manifest_into_decoding_items(venvs: Venvs, outside: Path) -> None:
    python = venvs.python("lhotse")
    audio = outside / "u1.wav"
    with wave.open(str(audio), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\0\0" * 1600)
    said = run_python(
        python,
        f"""
        import lhotse
        from kit.asr.data import LhotseCuts

        rec = lhotse.Recording.from_file({str(audio)!r}, recording_id="u1")
        sup = lhotse.SupervisionSegment(id="u1", recording_id="u1", start=0.0,
                                        duration=rec.duration, text="ONE", speaker="ada")
        cuts = lhotse.CutSet.from_manifests(
            recordings=lhotse.RecordingSet.from_recordings([rec]),
            supervisions=lhotse.SupervisionSet.from_segments([sup]))
        cuts.to_file("cuts.jsonl.gz")
        (item,) = LhotseCuts("cuts.jsonl.gz")
        audio = item["audio"]
        print(item["text"], item["speaker"], audio["sampling_rate"], len(audio["array"]))
        """,
        outside,
    )
    assert said.split() == ["ONE", "ada", "16000", "1600"]


def test_hf_reads_a_saved_dataset_of_flac_audio_without_torchcodec(
    venvs: Venvs, outside: Path
) -> None:
    # datasets 4+ decodes an Audio column through torchcodec, which the extra does not install:
    # Kit reads the stored bytes itself.
    said = run_python(
        venvs.python("hf"),
        """
        import importlib.util, io
        import datasets, numpy, soundfile
        from kit.asr.data import audio_pcm, load_dataset_entries

        flac = io.BytesIO()
        soundfile.write(flac, numpy.zeros(1600, dtype="int16"), 16000, format="FLAC")
        rows = [{"id": "u1", "audio": {"bytes": flac.getvalue(), "path": "u1.flac"}, "text": "ONE"}]
        table = datasets.Dataset.from_list(rows)
        table.cast_column("audio", datasets.Audio()).save_to_disk("saved")
        (row,) = load_dataset_entries({"hf": {"path": "saved"}})
        pcm, seconds = audio_pcm(row["audio"])
        print(row["text"], len(pcm), seconds, importlib.util.find_spec("torchcodec") is None)
        """,
        outside,
    )
    assert said.split() == ["ONE", "3200", "0.1", "True"]
