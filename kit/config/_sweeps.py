"""Hydra's sweep grammar: ``key=a,b``, ``range(...)``, ``choice(...)``, ``interval(...)``.

Parsing and the grid are hydra-core's own (its ``OverridesParser`` and its
``BasicSweeper.split_arguments``), so a sweep expands to exactly the trials
Hydra's multirun would make; only the checks around them are Kit's, so that
every refusal is a :class:`~kit.ConfigError` naming the override.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kit.config._errors import error
from kit.config._overrides import _parser

#: More trials than this is a typo (``range(0,1000000)``), not an experiment.
MAX_TRIALS = 10_000


@dataclass(frozen=True)
class SearchDimension:
    """One swept key of a search: the values (or the interval) a search may pick.

    ``kind`` is ``"choice"`` (pick among ``values``) or ``"interval"``
    (a number in ``[low, high]``, on a log scale when ``log``, an integer
    when ``integer``).
    """

    key: str
    kind: str
    values: tuple[Any, ...] = ()
    #: The choices as written in the override (``[0,1]``, ``'a b'``), to write them back.
    texts: tuple[str, ...] = ()
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    integer: bool = False


def _parse(overrides: Sequence[str]) -> list[Any]:
    if isinstance(overrides, str):
        raise TypeError("overrides must be a list of strings, e.g. ['a=1,2'], not one string")
    from hydra.errors import OverrideParseException

    parser = _parser()
    parsed = []
    for line in overrides:
        try:
            (override,) = parser.parse_overrides([line])
        except OverrideParseException as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
            raise error(
                f"cannot parse override {line!r}: {detail}",
                fix="write `key=a,b,c` to sweep values, `key=range(1,5)` for a range of numbers",
            ) from None
        except RecursionError:
            raise error(
                f"override {line[:50]!r} nests too deep to read",
                fix="give a flatter value, or put it in a YAML file",
            ) from None
        if override.is_sweep_override() and _nests_a_sweep(override.value()):
            raise error(
                f"override {line!r} puts a sweep inside a sweep",
                full_key=override.key_or_group,
                fix="sweep one list of plain values per key, e.g. `key=1,2,3`, "
                "`key=choice(1,2,3)` or `key=range(0,5)`",
            )
        if override.package is not None:
            raise error(
                f"override {line!r} names a package (@...); packages are not supported here",
                full_key=override.key_or_group,
                fix="use the plain dotted key, e.g. `decoder.beam_size=1,5`",
            )
        if override.is_sweep_override() and _kind(override) == "glob":
            raise error(
                f"override {line!r} is a glob: it picks among config group options, and "
                "Kit's configs have no groups",
                full_key=override.key_or_group,
                fix="list the values, e.g. `decoder.engine=whisper,pocketsphinx`",
            )
        if override.is_sweep_override() and override.is_delete():
            raise error(
                f"override {line!r} deletes a key and sweeps it at once",
                full_key=override.key_or_group,
                fix="sweep the key's values (`key=a,b`), or delete it (`~key`) in every trial",
            )
        parsed.append((line, override))
    # Hydra keeps the last of two overrides of one key; in a sweep that drops values silently.
    seen: dict[str, tuple[str, bool]] = {}
    for line, override in parsed:
        key, sweeps = override.key_or_group, override.is_sweep_override()
        if key in seen and (sweeps or seen[key][1]):
            raise error(
                f"override {line!r} sets {key} again after {seen[key][0]!r}, in a sweep",
                full_key=key,
                fix=f"give {key} once, with all its values, e.g. `{key}=1,2,3`",
            )
        seen[key] = (line, sweeps)
    return parsed


def _nests_a_sweep(value: Any) -> bool:
    """Whether a sweep's values hold another sweep (``choice(choice(1,2),3)``)."""
    from hydra.core.override_parser.types import Sweep

    inner = getattr(value, "list", None)
    if not isinstance(inner, list):
        return False
    return any(isinstance(v, Sweep) for v in inner)


def is_sweep(overrides: Sequence[str]) -> bool:
    """Tell whether any of ``overrides`` sweeps a key (``a=1,2``, ``range``, ``interval``...).

    Examples
    --------
    >>> is_sweep(["a=1", "b=x"]), is_sweep(["a=1", "b=x,y"]), is_sweep(["lr=interval(0,1)"])
    (False, True, True)
    """
    return any(override.is_sweep_override() for _, override in _parse(overrides))


def split_sweep(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``overrides`` into the keys they sweep and the lines every trial gets as written.

    Examples
    --------
    >>> split_sweep(["beam=1,5", "+seed=0", "lr=interval(0,1)", "~x"])
    (['beam', 'lr'], ['+seed=0', '~x'])
    """
    swept: list[str] = []
    fixed: list[str] = []
    for line, override in _parse(overrides):
        if override.is_sweep_override():
            swept.append(override.key_or_group)
        else:
            fixed.append(line)
    return swept, fixed


def expand_sweep(overrides: Sequence[str]) -> list[list[str]]:
    """Expand a grid sweep into its trials, each a list of plain ``key=value`` overrides.

    The grid is the product of the swept keys, in the order given (the last
    key varies fastest); a plain override applies to every trial. The trials
    are the ones Hydra's ``BasicSweeper`` makes from the same overrides.

    Raises
    ------
    ConfigError
        For an override that does not parse, a search space (``interval``)
        where a grid is needed, ``glob`` (it picks among config groups,
        which Kit's configs do not have), an empty sweep, or more than
        :data:`MAX_TRIALS` trials.

    Examples
    --------
    >>> expand_sweep(["decoder.beam_size=1,5", "decoder.engine=whisper,sphinx", "seed=0"])
    ... # doctest: +NORMALIZE_WHITESPACE
    [['decoder.beam_size=1', 'decoder.engine=whisper', 'seed=0'],
     ['decoder.beam_size=1', 'decoder.engine=sphinx', 'seed=0'],
     ['decoder.beam_size=5', 'decoder.engine=whisper', 'seed=0'],
     ['decoder.beam_size=5', 'decoder.engine=sphinx', 'seed=0']]
    >>> expand_sweep(["lr=range(1,4)"])
    [['lr=1'], ['lr=2'], ['lr=3']]
    >>> expand_sweep(["~x", "y=1,2"])  # as written, not Hydra's `~x=null`
    [['~x', 'y=1'], ['~x', 'y=2']]
    >>> expand_sweep(["y=choice('1',2)"])  # text stays text
    [["y='1'"], ['y=2']]
    """
    parsed = _parse(overrides)
    count = 1
    for line, override in parsed:
        if not override.is_sweep_override():
            continue
        key = override.get_key_element()
        if not override.is_discrete_sweep():
            raise error(
                f"override {line!r} is a search space ({_kind(override)}), not a list of values",
                full_key=key,
                fix="search it with `--search optuna --trials N`, or list values for a grid, "
                "e.g. `lr=0.001,0.01,0.1`",
            )
        size = _size(override)
        if size == 0:
            raise error(
                f"override {line!r} sweeps no value at all",
                full_key=key,
                fix="give at least one value, e.g. `key=range(1,4)` for 1, 2, 3",
            )
        count *= size
        if count > MAX_TRIALS:
            sweep = " ".join(text for text, o in parsed if o.is_sweep_override())
            raise error(
                f"the sweep {sweep!r} makes more than {MAX_TRIALS:,} trials",
                full_key=key,
                fix="sweep fewer values, or search the space with `--search optuna --trials N`",
            )
    # The product Hydra's BasicSweeper makes, through the parser's public API: one
    # list of lines per key in the order first given (a key given twice keeps its
    # place and takes the last value), the last key varying fastest.
    lines: dict[str, list[str]] = {}
    for line, override in parsed:
        key = override.get_key_element()
        if override.is_sweep_override():
            # Each value with its text from one pass: a shuffle() is drawn once.
            pairs = override.sweep_iterator(transformer=_with_text)
            # As written back, a value reads as itself: Hydra writes `choice('1',3)`'s
            # first as `1`, a number.
            lines[key] = [f"{key}={_faithful(value, text)}" for value, text in pairs]
        else:
            # As the user wrote it: Hydra writes `~x` back as `~x=null` (delete x only
            # if it is null), which fails every trial whose x is set.
            lines[key] = [line]
    return [list(trial) for trial in itertools.product(*lines.values())]


def _with_text(value: Any) -> tuple[Any, str]:
    """Pair a swept value with the text Hydra writes for it."""
    from hydra.core.override_parser.types import Transformer

    return value, Transformer.str(value)


def search_space(overrides: Sequence[str]) -> tuple[list[SearchDimension], list[str]]:
    """Split ``overrides`` into the dimensions a search picks from and the fixed overrides.

    ``a=1,2`` and ``choice(...)``/``range(...)`` are choices; ``interval(lo,hi)``
    a number between them, ``tag(log, interval(...))`` on a log scale, and
    ``int(interval(...))`` an integer (as in Hydra's Optuna sweeper).

    Examples
    --------
    >>> dims, fixed = search_space(["lr=tag(log, interval(1e-4, 1e-1))", "beam=1,5", "seed=0"])
    >>> [(d.key, d.kind, d.log) for d in dims], fixed
    ([('lr', 'interval', True), ('beam', 'choice', False)], ['seed=0'])
    >>> dims[1].values
    (1, 5)
    """
    dims: list[SearchDimension] = []
    fixed: list[str] = []
    for line, override in _parse(overrides):
        if not override.is_sweep_override():
            fixed.append(line)
            continue
        key = override.get_key_element()
        if override.is_discrete_sweep():
            if _size(override) > MAX_TRIALS:  # a range(0,10**9) is a typo, not a choice
                raise error(
                    f"override {line!r} gives more than {MAX_TRIALS:,} values to choose from",
                    full_key=key,
                    fix="search a range of numbers as an interval, e.g. `key=int(interval(0,100))`",
                )
            values = tuple(override.sweep_iterator())
            if not values:
                raise error(
                    f"override {line!r} sweeps no value at all",
                    full_key=key,
                    fix="give at least one value",
                )
            texts = tuple(
                _faithful(value, text)
                for value, text in zip(values, override.sweep_string_iterator(), strict=True)
            )
            values = tuple(getattr(v, "text", v) if _quoted(v) else v for v in values)
            dims.append(SearchDimension(key, "choice", values=values, texts=texts))
            continue
        sweep = override.value()
        low, high = sweep.start, sweep.end
        if not (math.isfinite(low) and math.isfinite(high)):
            raise error(
                f"override {line!r} is an interval without finite bounds ({low} to {high})",
                full_key=key,
                fix="give both bounds as numbers, e.g. `lr=interval(0.001,0.1)`",
            )
        if not low < high:
            raise error(
                f"override {line!r} is an empty interval ({low} to {high})",
                full_key=key,
                fix="give the lower bound first, e.g. `lr=interval(0.001,0.1)`",
            )
        log = "log" in sweep.tags
        if log and low <= 0:
            raise error(
                f"override {line!r} is a log-scale interval starting at {low}",
                full_key=key,
                fix="start a log interval above 0, e.g. `tag(log, interval(1e-5, 1e-1))`",
            )
        integer = isinstance(low, int) and isinstance(high, int)
        dims.append(
            SearchDimension(
                key, "interval", low=float(low), high=float(high), log=log, integer=integer
            )
        )
    if not dims:
        raise error(
            "a search needs at least one swept key; these overrides sweep none: "
            + " ".join(repr(line) for line in overrides),
            fix="sweep a key, e.g. `lr=tag(log, interval(1e-4, 1e-1))` or `beam=1,3,5`",
        )
    return dims, fixed


def _quoted(value: Any) -> bool:
    from hydra.core.override_parser.types import QuotedString

    return isinstance(value, QuotedString)


def _faithful(value: Any, text: str) -> str:
    """Return ``text`` as an override value that reads back as ``value``: ``'1'`` stays text.

    Hydra writes the choices of ``choice('1',3,false)`` as ``1``, ``3``, ``False``;
    given back as an override, the first would be the number 1.

    Examples
    --------
    >>> _faithful("1", "1"), _faithful(1, "1"), _faithful("beam", "beam")
    ("'1'", '1', 'beam')
    """
    if _quoted(value) or not isinstance(value, str):
        return text
    from hydra.errors import OverrideParseException

    try:
        (override,) = _parser().parse_overrides([f"k={text}"])
    except OverrideParseException:
        override = None  # it needs quotes to be read at all
    if override is not None and override.value() == value and isinstance(value, str):
        return text
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _size(override: Any) -> int:
    """Count a discrete sweep's values without listing them (``range(0,10**9)`` is a typo)."""
    if _kind(override) != "range":
        return len(list(override.sweep_string_iterator()))
    sweep = override.value()
    if not sweep.step:
        raise error(
            f"override {override.input_line!r} is a range with step 0",
            full_key=override.get_key_element(),
            fix="give a step other than 0, e.g. `range(0,10,2)`",
        )
    count: int = math.ceil((sweep.stop - sweep.start) / sweep.step)
    return max(0, count)


_KINDS = {
    "CHOICE_SWEEP": "choice",
    "SIMPLE_CHOICE_SWEEP": "choice",
    "GLOB_CHOICE_SWEEP": "glob",
    "RANGE_SWEEP": "range",
    "INTERVAL_SWEEP": "interval",
}


def _kind(override: Any) -> str:
    """Name the sweep as the user wrote it: ``choice``, ``range``, ``glob``, ``interval``."""
    name = getattr(override.value_type, "name", "")
    return _KINDS.get(name, name.lower())
