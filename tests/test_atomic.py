"""Files Kit writes whole never replace what is not a regular file: a device, a FIFO, a link."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kit._base.atomic import atomic_file
from kit.cli import EXIT_OK, EXIT_USAGE, main
from kit.config import save_config
from kit.errors import UnsafeFileError
from kit.examples.quickstart import CONFIG_PATH

FAST = ["model.work_seconds=0", "parallel.env=inline", "items.stop=10", "--items", "3"]


# The check keeps its verdict in the run's folder, by default under runs/ here.
pytestmark = pytest.mark.usefixtures("in_scratch_folder")


@pytest.fixture
def null_device(tmp_path: Path) -> Path:
    """A null device node of the test's own, in a scratch folder: /dev/null is never risked."""
    node = tmp_path / "scratch" / "null"
    node.parent.mkdir()
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        if os.environ.get("CI"):
            pytest.fail("CI runs as root, which may make a device node")
        pytest.skip("making a device node needs root")
    return node


def still_the_device(node: Path) -> bool:
    info = os.lstat(node)
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == os.makedev(1, 3)


def test_check_json_onto_a_device_writes_into_it_and_leaves_it_a_device(
    null_device: Path, tmp_path: Path
) -> None:
    code = main(["check", str(CONFIG_PATH), *FAST, "--json", str(null_device)])
    assert code == EXIT_OK
    assert still_the_device(null_device)
    assert os.listdir(null_device.parent) == ["null"]  # no temporary file left beside it


def test_a_file_kit_keeps_is_never_renamed_over_a_device(null_device: Path) -> None:
    # A run folder's files, a report, an export: written whole, so a device there is refused.
    with pytest.raises(UnsafeFileError) as info, atomic_file(null_device) as fh:
        fh.write("a report")
    assert str(info.value).startswith(f"{null_device} is a character device; Kit writes a file")
    assert still_the_device(null_device)
    assert os.listdir(null_device.parent) == ["null"]


def test_a_report_onto_a_device_is_refused_naming_it(
    null_device: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert main(["run", str(CONFIG_PATH), "model.work_seconds=0", "parallel.env=inline",
                 "items.stop=5", f"output_dir={run}"]) == EXIT_OK  # fmt: skip
    (run / "report.html").unlink()
    os.mknod(run / "report.html", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    capsys.readouterr()
    assert main(["report", str(run)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"{run / 'report.html'} is a character device" in err
    assert still_the_device(run / "report.html")


def test_a_fifo_named_as_output_gets_the_verdict(tmp_path: Path) -> None:
    fifo = tmp_path / "verdict"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(["check", str(CONFIG_PATH), *FAST, "--json", str(fifo)]) == EXIT_OK
    reader.join(timeout=60)
    assert json.loads(got[0])["ok"] is True
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_named_as_output_is_followed_and_kept(tmp_path: Path) -> None:
    target, link = tmp_path / "verdicts" / "today.json", tmp_path / "latest.json"
    target.parent.mkdir()
    target.write_text("old")
    link.symlink_to(target)
    assert main(["check", str(CONFIG_PATH), *FAST, "--json", str(link)]) == EXIT_OK
    assert link.is_symlink() and json.loads(target.read_text())["ok"] is True
    assert sorted(os.listdir(target.parent)) == ["today.json"]


def test_a_folder_named_as_output_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(CONFIG_PATH), *FAST, "--json", str(tmp_path)]) == EXIT_USAGE
    assert f"{tmp_path} is a folder; Kit writes a file whole" in capsys.readouterr().err


def test_save_config_writes_into_a_device(null_device: Path) -> None:
    assert save_config({"a": 1}, null_device) == null_device
    assert still_the_device(null_device)


def test_a_link_in_a_folder_kit_keeps_is_refused_not_replaced(tmp_path: Path) -> None:
    victim, link = tmp_path / "thesis.tex", tmp_path / "run" / "result.json"
    victim.write_text("precious")
    link.parent.mkdir()
    link.symlink_to(victim)
    refused = pytest.raises(UnsafeFileError, match=r"result.json is a symbolic link; Kit writes")
    with refused, atomic_file(link) as fh:
        fh.write("{}")
    assert link.is_symlink() and victim.read_text() == "precious"


@pytest.mark.parametrize("into", ["pipe", "file"])
def test_check_json_to_dev_stdout_follows_the_card_wherever_stdout_goes(
    into: str, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "kit", "check", str(CONFIG_PATH), *FAST, "--json"]
    out = tmp_path / "out.txt"
    with out.open("w") as file:
        done = subprocess.run(
            [*command, "/dev/stdout"],
            stdout=subprocess.PIPE if into == "pipe" else file,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=120,
            check=True,
        )
    text = done.stdout if into == "pipe" else out.read_text()
    card, _, verdict = text.partition("\n{")
    assert card.startswith("kit check: PASS on 3 items")
    assert json.loads("{" + verdict)["ok"] is True
    assert os.readlink("/dev/stdout") == "/proc/self/fd/1"
