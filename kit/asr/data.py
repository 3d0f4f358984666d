"""Where the decoding check's utterances come from: your test sets, in the formats you keep them.

``data`` in the config names one source:

- ``manifest``: JSON lines of ``{"id", "audio", "text", "speaker"?}``;
- ``kaldi``: a Kaldi data directory (``wav.scp``, ``text``, and optionally
  ``segments`` and ``utt2spk``), as ESPnet and Kaldi recipes prepare them;
- ``lhotse``: a Lhotse CutSet manifest (``cuts.jsonl.gz``), as icefall and
  ESPnet's Lhotse recipes write them, read with lhotse (``pip install lhotse``);
- ``hf``: a Hugging Face dataset saved to disk (``{path, split}``), its
  ``audio`` column read by Kit (stored bytes or a local file, never a URL);

or ``sets: {NAME: {one of those}}``: several named test sets in one run,
each utterance carrying its set (``record["set"]``), so scores come per set.
Every utterance is an entry ``{"id", "audio", "text", "speaker"?, "start"?,
"end"?}``. Bad data is an error naming the file, the line and the utterance,
found when the data is read, never a lost utterance later.
"""

from __future__ import annotations

import json
import wave
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kit._base.extras import install
from kit._base.files import file_digest, open_regular
from kit.asr._wav import wav_pcm
from kit.config._errors import error

#: The sources ``data`` (or each of ``data.sets``) may name; ``manifest`` is the default.
SOURCES = ("kaldi", "lhotse", "hf", "manifest")
RATE = 16000


def _text_lines(path: Path) -> list[tuple[int, str]]:
    r"""Return ``(line number, line)`` of a UTF-8 text file; bad bytes are named by line.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "text"
    >>> _ = path.write_bytes(b"u1 hi\nu2 caf\xe9\n")
    >>> _text_lines(path)
    Traceback (most recent call last):
    ...
    kit.ConfigError: .../text, line 2: not UTF-8 (byte 0xe9 at column 7); save it as UTF-8
    """
    lines = []
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        try:
            lines.append((number, raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise error(
                f"{path}, line {number}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1}); save it as UTF-8"
            ) from None
    return lines


def read_manifest(path: str | Path) -> list[dict[str, Any]]:
    r"""Read a JSON-lines manifest of ``{"id", "audio", "text"}``; audio paths become absolute.

    Relative audio paths are relative to the manifest. Errors name the file,
    the line and what to fix.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "test.jsonl"
    >>> _ = path.write_text('{"id": "u1", "audio": "u1.wav", "text": "hi"}\n')
    >>> entry = read_manifest(path)[0]
    >>> entry["audio"] == str(path.parent / "u1.wav"), entry["text"]
    (True, 'hi')
    """
    manifest = Path(path)
    if not manifest.is_file():
        raise FileNotFoundError(
            f"data.manifest: no such file: {manifest}; build the corpus with "
            "`python -m kit.examples.asr.corpus runs/asr-data` or point it at your own"
        )
    entries = []
    for number, line in _text_lines(manifest):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{manifest}, line {number}: not valid JSON ({exc.msg})") from None
        missing = [key for key in ("id", "audio", "text") if key not in entry]
        if missing:
            raise error(
                f"{manifest}, line {number}: missing {', '.join(missing)}; "
                'each line needs {"id": ..., "audio": "path.wav", "text": ...}'
            )
        audio = Path(entry["audio"])
        entry["audio"] = str(audio if audio.is_absolute() else manifest.parent / audio)
        entries.append(entry)
    return entries


#: What a path that is no regular file is (checked from its metadata: a FIFO is never opened,
#: reading it would wait for ever).
NOT_REGULAR = "is not a regular file (a FIFO or a device, say)"


def read_wav(path: str) -> tuple[bytes, float]:
    """Return the 16-bit PCM frames of a 16 kHz mono WAV file and its duration in seconds."""
    if Path(path).exists() and not Path(path).is_file():
        raise error(f"{path} {NOT_REGULAR}; give a WAV file")
    return wav_pcm(path, path)


def audio_pcm(audio: Any) -> tuple[bytes, float]:
    """Return 16-bit PCM and duration for a WAV path or a decoded ``{"array", "sampling_rate"}``.

    The second form is what a Hugging Face ``datasets`` Audio column holds.

    Examples
    --------
    >>> pcm, seconds = audio_pcm({"array": [0.0, 0.5, -0.5, 1.0], "sampling_rate": 16000})
    >>> len(pcm), seconds
    (8, 0.00025)
    """
    if isinstance(audio, (str, Path)):
        return read_wav(str(audio))
    if isinstance(audio, dict) and "path" in audio and "array" not in audio:
        # A Hugging Face Audio column left undecoded (kit.asr._hf): its bytes, else its file.
        from kit.asr._hf import remote, stored_pcm

        stored = stored_pcm(audio)
        if stored is not None:
            return stored
        if not audio["path"] or remote(str(audio["path"])):
            raise error(f"audio {audio['path']!r} is not a local file; store it in the dataset")
        return read_wav(str(audio["path"]))
    if isinstance(audio, dict) and "array" in audio:
        rate = audio.get("sampling_rate", 16000)
        if rate != 16000:
            raise error(f"audio at {rate} Hz: resample it to 16 kHz (datasets: cast_column)")
        import numpy as np

        # Decoders (soundfile, lhotse, datasets) read 16-bit PCM as n / 32768: its inverse
        # gives back the file's own samples, so an utterance decodes as its WAV file does.
        floats = np.asarray(audio["array"], dtype=np.float64)
        samples = np.clip(np.round(floats * 32768), -32768, 32767).astype("<i2")
        return samples.tobytes(), len(samples) / 16000
    raise TypeError(
        "audio must be a WAV path, {'array', 'sampling_rate'} or {'bytes', 'path'}, "
        f"got {audio!r:.80}"
    )


def _wav_problem(path: Path) -> str | None:
    """Return what keeps ``path`` from being decoded (missing, another format), or None."""
    if not path.exists():
        return f"no such file: {path}"
    if not path.is_file():
        return f"{path} {NOT_REGULAR}; give a WAV file"
    try:
        with wave.open(str(path)) as wav:
            rate, channels, width = wav.getframerate(), wav.getnchannels(), wav.getsampwidth()
    except (wave.Error, EOFError) as exc:
        return (
            f"{path} is not a WAV file ({exc}); convert it with "
            f"`sox {path} -r 16000 -c 1 -b 16 out.wav`"
        )
    if (rate, channels, width) != (RATE, 1, 2):
        return (
            f"{path} is {rate} Hz, {channels} channel(s), {8 * width}-bit; the recognizers take "
            f"16 kHz 16-bit mono: convert it with `sox {path} -r 16000 -c 1 -b 16 out.wav`"
        )
    return None


def item_problem(entry: Mapping[str, Any]) -> str | None:
    """Return what keeps an entry from being decoded and scored (read from headers), or None.

    Its recording must be a 16 kHz 16-bit mono WAV that exists (or an array at
    16 kHz), its segment must lie within it, and it must have a text.

    Examples
    --------
    >>> item_problem({"audio": "no/such.wav", "text": "hi"})
    'no such file: no/such.wav'
    >>> item_problem({"audio": {"array": [0.0], "sampling_rate": 8000}, "text": "hi"})
    'audio at 8000 Hz: resample it to 16 kHz'
    """
    audio = entry.get("audio")
    if isinstance(audio, dict) and "array" in audio:
        rate = audio.get("sampling_rate", RATE)
        if rate != RATE:
            return f"audio at {rate} Hz: resample it to 16 kHz"
    elif isinstance(audio, (str, Path)):
        problem = _wav_problem(Path(audio))
        if problem is not None:
            return problem
        if entry.get("end") is not None:
            with wave.open(str(audio)) as wav:
                length = wav.getnframes() / wav.getframerate()
            if float(entry["end"]) > length + 0.01:
                return f"its segment ends at {entry['end']} s, after the recording's {length:.2f} s"
    else:
        return f"audio must be a WAV path or {{'array', 'sampling_rate'}}, got {audio!r:.60}"
    if not isinstance(entry.get("text"), str):
        return "no text to score against"
    return None


def _kaldi_lines(path: Path, fields: int) -> list[tuple[int, list[str]]]:
    """Return ``(line number, fields)`` of a Kaldi table: a key, then up to ``fields - 1`` more."""
    rows = []
    seen: dict[str, int] = {}
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        parts = line.split(maxsplit=fields - 1)
        if fields > 1 and len(parts) < fields and path.name != "text":
            raise error(
                f"{path}, line {number}: expected {fields} fields, got {len(parts)}: {line!r}"
            )
        if parts[0] in seen:
            raise error(
                f"{path}, line {number}: {parts[0]} appears again (first on line "
                f"{seen[parts[0]]}); each key once"
            )
        seen[parts[0]] = number
        rows.append((number, parts))
    return rows


def read_kaldi_dir(folder: str | Path) -> list[dict[str, Any]]:
    r"""Read a Kaldi data directory: the utterances of ``text``, in its order.

    ``wav.scp`` maps recordings to WAV files (paths relative to the data
    directory, since workers do not share your current folder); a command
    (``... |``) is refused: Kit does not run commands a data directory holds.
    With ``segments``, utterances are stretches of recordings; ``utt2spk``
    gives their speakers. Every audio file is checked (it exists, 16 kHz
    16-bit mono WAV) before anything is decoded.

    Examples
    --------
    >>> import tempfile, wave, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with wave.open(str(d / "a.wav"), "wb") as w:
    ...     w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    ...     w.writeframes(bytes(32000))
    >>> _ = (d / "wav.scp").write_text("rec1 a.wav\n")
    >>> _ = (d / "segments").write_text("u1 rec1 0.0 0.5\nu2 rec1 0.5 1.0\n")
    >>> _ = (d / "text").write_text("u1 hello there\nu2 general\n")
    >>> _ = (d / "utt2spk").write_text("u1 ann\nu2 bob\n")
    >>> [(e["id"], e["text"], e["speaker"], e["start"], e["end"]) for e in read_kaldi_dir(d)]
    [('u1', 'hello there', 'ann', 0.0, 0.5), ('u2', 'general', 'bob', 0.5, 1.0)]
    """
    root = Path(folder)
    for name in ("wav.scp", "text"):
        if not (root / name).is_file():
            raise FileNotFoundError(
                f"data.kaldi: {root} has no {name}; a Kaldi data directory needs wav.scp "
                "(recording-id path.wav) and text (utterance-id words...)"
            )
    recordings: dict[str, tuple[Path, int]] = {}
    scp = root / "wav.scp"
    for number, (rec, where) in _kaldi_lines(scp, 2):
        if where.rstrip().endswith("|") or where.lstrip().startswith("|"):
            raise error(
                f"{scp}, line {number}: recording {rec} is a command ({where.strip()!r}); Kit "
                "does not run commands a data directory holds: write the audio to WAV files "
                "first and list their paths"
            )
        path = Path(where.strip())
        recordings[rec] = (path if path.is_absolute() else root / path, number)
    segments: dict[str, tuple[str, float, float]] = {}
    if (root / "segments").is_file():
        for number, (utt, *rest) in _kaldi_lines(root / "segments", 4):
            rec, start, end = rest[0], rest[1], rest[2].split()[0]
            try:
                begin, finish = float(start), float(end)
            except ValueError:
                raise error(
                    f"{root / 'segments'}, line {number}: utterance {utt}: start and end must "
                    f"be seconds, got {start!r} and {end!r}"
                ) from None
            if rec not in recordings:
                raise error(
                    f"{root / 'segments'}, line {number}: utterance {utt} is in recording "
                    f"{rec}, which wav.scp does not list"
                )
            if not 0 <= begin < finish:
                raise error(
                    f"{root / 'segments'}, line {number}: utterance {utt} runs from {begin} "
                    f"to {finish} s; it must start at 0 or later and end after it starts"
                )
            segments[utt] = (rec, begin, finish)
    speakers: dict[str, str] = {}
    if (root / "utt2spk").is_file():
        speakers = {utt: spk for _, (utt, spk) in _kaldi_lines(root / "utt2spk", 2)}
    checked: dict[str, None] = {}
    entries = []
    for number, (utt, *words) in _kaldi_lines(root / "text", 2):
        entry: dict[str, Any] = {"id": utt, "text": words[0].strip() if words else ""}
        if segments:
            if utt not in segments:
                raise error(
                    f"{root / 'text'}, line {number}: utterance {utt} has no line in segments"
                )
            rec, entry["start"], entry["end"] = segments[utt]
        elif utt in recordings:
            rec = utt
        else:
            raise error(
                f"{root / 'text'}, line {number}: utterance {utt} has no audio: wav.scp has no "
                "recording of that id (and there is no segments file)"
            )
        path, scp_line = recordings[rec]
        if rec not in checked:
            problem = _wav_problem(path)
            if problem is not None:
                raise error(f"{scp}, line {scp_line}: recording {rec}: {problem}")
            checked[rec] = None
        entry["audio"] = str(path)
        if utt in speakers:
            entry["speaker"] = speakers[utt]
        entries.append(entry)
    return entries


#: The audio sources Lhotse may read for Kit: a local file, or bytes in the manifest.
_READABLE_SOURCES = ("file", "memory")


def _source_problem(stored: Any) -> str | None:
    """Return why a cut (as its manifest stores it) cannot be read as data, or None.

    Every audio source anywhere in it counts (a mixed cut's tracks, a
    transform's impulse response, a custom field's recording): Lhotse would
    run a ``command`` source, or a ``url`` one starting ``pipe:``, as a shell
    command, and fetch any other URL. A data file is data: only local
    regular files and bytes stored in the manifest are read.

    Examples
    --------
    >>> _source_problem({"recording": {"sources": [{"type": "url", "source": "pipe:rm x"}]}})
    "its audio is a url source ('pipe:rm x'); Kit reads a manifest's audio from local files ..."
    >>> _source_problem({"recording": {"sources": [{"type": "file", "source": "/dev/null"}]}})
    'its audio /dev/null is not a regular file (a FIFO or a device, say); Kit reads audio ...'
    """
    if isinstance(stored, Mapping):
        for source in stored.get("sources") or []:
            kind = source.get("type") if isinstance(source, Mapping) else None
            where = source.get("source") if isinstance(source, Mapping) else source
            if kind not in _READABLE_SOURCES:
                return (
                    f"its audio is a {kind} source ({where!r:.80}); Kit reads a manifest's "
                    "audio from local files only, never running or fetching what a data file "
                    "names: write the audio to files first and list their paths"
                )
            if kind == "file":
                path = Path(str(where))
                if not path.exists():
                    return f"its audio is missing: no such file {where}"
                if not path.is_file():
                    return (
                        f"its audio {where} {NOT_REGULAR}; Kit reads audio from regular files only"
                    )
        children: Any = [value for key, value in stored.items() if key != "sources"]
    elif isinstance(stored, (list, tuple)):
        children = stored
    else:
        return None
    for child in children:
        problem = _source_problem(child)
        if problem is not None:
            return problem
    return None


def _bytes_held(stored: Any) -> Any:
    """Return a cut as its manifest stores it, each file source's bytes read here, by Kit.

    Lhotse reads a ``.sph`` file (and an ``.opus`` one, when asked) with a
    shell command holding the file's name; audioread may start ``ffmpeg``.
    Handed bytes, every reader lhotse has decodes them in this process: the
    ones that would start a process take a path only, and fail on bytes. A
    name is never given to a program, whatever characters it holds.

    Examples
    --------
    >>> cut = {"recording": {"sources": [{"type": "file", "source": "/dev/null"}]}}
    >>> _bytes_held(cut)
    Traceback (most recent call last):
    ...
    OSError: [Errno 22] not a regular file: '/dev/null'
    """
    if isinstance(stored, Mapping):
        held = {key: _bytes_held(value) for key, value in stored.items() if key != "sources"}
        if "sources" in stored:
            held["sources"] = [_source_bytes(source) for source in stored["sources"] or []]
        return held
    if isinstance(stored, (list, tuple)):
        return [_bytes_held(child) for child in stored]
    return stored


def _source_bytes(source: Mapping[str, Any]) -> Mapping[str, Any]:
    if source.get("type") != "file":
        return source  # bytes already (a memory source): anything else was refused at load
    with open_regular(source["source"]) as fh:
        return {**source, "type": "memory", "source": fh.read()}


class LhotseCuts(Sequence[dict[str, Any]]):
    """The cuts of a Lhotse CutSet manifest as entries; a cut's audio is loaded when asked for.

    Every cut is checked when the manifest is read: one channel at 16 kHz,
    a supervision to score against, and audio read from local files that
    exist (or bytes the manifest holds): a URL, a ``pipe:`` or a command is
    refused, wherever in the cut it is (a mixed cut's tracks too), since
    Lhotse would fetch or run it. Kit reads a file's bytes itself and hands
    them to lhotse, which then decodes in this process whatever the format
    (its ``.sph`` reader would run a shell command with the file's name).
    """

    def __init__(self, path: str | Path) -> None:
        try:
            from lhotse import CutSet
        except ImportError:
            raise ImportError(f"data.lhotse needs lhotse: {install('lhotse')}") from None
        manifest = Path(path)
        if not manifest.is_file():
            raise FileNotFoundError(f"data.lhotse: no such file: {manifest}")
        self.path = manifest
        self.cuts = CutSet.from_file(manifest).to_eager()
        for position, cut in enumerate(self.cuts):
            where = f"{manifest}, cut {position} ({cut.id})"
            if cut.sampling_rate != RATE or cut.num_channels != 1:
                raise error(
                    f"{where}: {cut.sampling_rate} Hz, {cut.num_channels} channel(s); the "
                    "recognizers take 16 kHz mono: write the cuts with "
                    "`cuts.resample(16000).to_file(...)` (and one channel)"
                )
            if not cut.supervisions:
                raise error(f"{where}: no supervision, so no text to score against")
            problem = _source_problem(cut.to_dict())
            if problem is not None:
                raise error(f"{where}: {problem}")

    def __len__(self) -> int:
        return len(self.cuts)

    def __getitem__(self, index: Any) -> Any:
        from lhotse import CutSet

        cut = self.cuts[index]
        supervisions = cut.supervisions
        text = " ".join(s.text for s in supervisions if s.text)
        where = f"{self.path}, cut {index} ({cut.id})"
        try:
            (held,) = CutSet.from_dicts([_bytes_held(cut.to_dict())])
            samples = held.load_audio()[0]
        except OSError as exc:
            raise error(f"{where}: its audio cannot be read: {exc}") from None
        entry: dict[str, Any] = {
            "id": cut.id,
            "text": text,
            "audio": {"array": samples, "sampling_rate": cut.sampling_rate},
            "duration": cut.duration,
        }
        if supervisions[0].speaker is not None:
            entry["speaker"] = supervisions[0].speaker
        return entry


class Sets(Sequence[dict[str, Any]]):
    """Several named test sets as one sequence; each entry says its ``set``.

    Examples
    --------
    >>> both = Sets({"clean": [{"id": "a"}], "other": [{"id": "b"}, {"id": "c"}]})
    >>> len(both), both[2], both.names
    (3, {'id': 'c', 'set': 'other'}, ['clean', 'other'])
    """

    def __init__(self, sets: Mapping[str, Sequence[Any]]) -> None:
        self.sets = dict(sets)
        self.names = list(self.sets)
        self._bounds: list[tuple[int, str]] = []
        total = 0
        for name, entries in self.sets.items():
            total += len(entries)
            self._bounds.append((total, name))

    def __len__(self) -> int:
        return self._bounds[-1][0] if self._bounds else 0

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, int) or not -len(self) <= index < len(self):
            raise IndexError(f"utterance {index!r}: the sets hold {len(self)} utterances")
        index %= len(self)
        start = 0
        for stop, name in self._bounds:
            if index < stop:
                return {**self.sets[name][index - start], "set": name}
            start = stop
        raise IndexError(index)  # pragma: no cover (the bounds cover every index)


def _source(data: Mapping[str, Any], where: str) -> Any:
    """Return the utterances of the one source (kaldi, lhotse, hf, manifest) ``data`` gives."""
    given = [name for name in ("kaldi", "lhotse", "hf") if data.get(name)]
    if len(given) > 1:
        raise error(f"{where}: give one of {' or '.join(given)}, not several")
    if given == ["kaldi"]:
        return read_kaldi_dir(data["kaldi"])
    if given == ["lhotse"]:
        return LhotseCuts(data["lhotse"])
    if given == ["hf"]:
        from kit.asr._hf import read_hf

        return read_hf(data["hf"])
    if not data.get("manifest"):
        raise error(f"{where}: give kaldi, lhotse, hf or manifest")
    return read_manifest(data["manifest"])


def load_dataset_entries(data: Mapping[str, Any]) -> Any:
    """Return the utterances ``data`` names: one source, or ``sets`` of them by name.

    Examples
    --------
    >>> load_dataset_entries({"sets": {}})
    Traceback (most recent call last):
    ...
    kit.ConfigError: data.sets is empty: give {NAME: {kaldi: DIR}} (or manifest, hf) per test set
    """
    sets = data.get("sets")
    if sets is not None:
        if not isinstance(sets, Mapping) or not sets:
            raise error(
                "data.sets is empty: give {NAME: {kaldi: DIR}} (or manifest, hf) per test set"
            )
        return Sets({str(name): _source(each, f"data.sets.{name}") for name, each in sets.items()})
    return _source(data, "data")


#: The keys of ``data`` (and of each of ``data.sets``) that name a file or folder.
PATH_KEYS = ("root", "manifest", "kaldi", "lhotse", "hf.path")


def absolute_data_paths(config: Any, base: str | Path | None = None) -> Any:
    """Return ``config`` with the relative paths ``data`` names made whole from ``base``.

    Workers do not share the folder a run was started in (a remote
    scheduler's were started elsewhere), and an env is named by the data it
    holds: ``runs/asr-data`` from two folders is two corpora. A path built
    from ``data.root`` follows it. ``config`` itself is never changed: a
    copy is returned (``base``: this folder by default).

    Examples
    --------
    >>> from omegaconf import OmegaConf
    >>> cfg = OmegaConf.create({"data": {"root": "runs/d", "manifest": "${data.root}/c.jsonl"}})
    >>> whole = absolute_data_paths(cfg, "/home/ada")
    >>> whole.data.root, whole.data.manifest, cfg.data.root
    ('/home/ada/runs/d', '/home/ada/runs/d/c.jsonl', 'runs/d')
    """
    import copy

    from omegaconf import DictConfig, OmegaConf

    from kit.asr._hf import remote

    here = Path(base) if base is not None else Path.cwd()
    config = copy.deepcopy(config)
    data = OmegaConf.select(config, "data")
    if not isinstance(data, DictConfig):
        return config
    sets = data.get("sets")
    for section in [data, *(sets.values() if isinstance(sets, DictConfig) else [])]:
        if not isinstance(section, DictConfig):
            continue
        for key in PATH_KEYS:
            value = OmegaConf.select(section, key, throw_on_missing=False)
            # A URL or a pipe is left as it is, for its reader to refuse.
            local = isinstance(value, str) and value and not remote(value)
            if local and not Path(value).expanduser().is_absolute():
                OmegaConf.update(section, key, str(here / value), merge=False)
    return config


def entry_fingerprint(entry: Mapping[str, Any]) -> str:
    """Return a digest of what an utterance's decoding and scoring read: its audio and its text.

    The audio's bytes (a WAV file's, read once per process while it is
    unchanged; a decoded array's samples) and every other field (its text,
    its segment's start and end) as data: an utterance changed under the
    same id is decoded again, not reused (docs/reuse.md).

    Examples
    --------
    >>> a = {"id": "u1", "text": "hello", "audio": {"array": [0.0, 0.5], "sampling_rate": 16000}}
    >>> entry_fingerprint(a) == entry_fingerprint({**a, "text": "hello!"})
    False
    """
    import hashlib

    audio = entry.get("audio")
    if isinstance(audio, (str, Path)):
        sound = _file_sound(Path(audio))
    elif isinstance(audio, Mapping) and "array" in audio:
        sound = "samples:" + hashlib.sha256(audio_pcm(audio)[0]).hexdigest()
    else:
        sound = f"other:{audio!r}"
    rest = {str(k): v for k, v in entry.items() if k != "audio"}
    return hashlib.sha256(
        (sound + json.dumps(rest, sort_keys=True, default=repr)).encode()
    ).hexdigest()


def _file_sound(path: Path) -> str:
    """Return a WAV file's digest; for what is not a regular file there, a token matching nothing.

    Its item is then decoded, and fails as it would have (a fifo is never
    opened here: reading one would wait for a writer).
    """
    import secrets

    try:  # file_digest opens without waiting and refuses what is not a regular file
        return "file:" + file_digest(path)
    except OSError:
        return "unmatched:" + secrets.token_hex(8)


def entry_pcm(entry: Mapping[str, Any]) -> tuple[bytes, float]:
    """Return an entry's 16-bit PCM and duration: its whole file, or its segment of it."""
    pcm, seconds = audio_pcm(entry["audio"])
    if entry.get("start") is None and entry.get("end") is None:
        return pcm, seconds
    start = float(entry.get("start") or 0.0)
    end = min(float(entry["end"]) if entry.get("end") is not None else seconds, seconds)
    piece = pcm[2 * round(start * RATE) : 2 * round(end * RATE)]
    return piece, len(piece) / (2 * RATE)
