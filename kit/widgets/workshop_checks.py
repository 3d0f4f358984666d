"""The hidden checks of the workshop notebook (``notebooks/04_workshop.ipynb``).

The notebook loads them with ``%checks kit.widgets.workshop_checks``; each
runs after its exercise (or the exercise's solution) and tries the
attendee's code on inputs of its own, on the workshop's cluster where the
code would run at scale. A check answers with what passed, or raises
:class:`~kit.widgets.workshop.Hint`: what is wrong and where to look, never
the answer.

The checks hold no answer to copy: what an attendee's code must give on the
checks' inputs is kept as salted digests (:func:`matches`), never as code
that computes it or as a value, and no message shows it
(``tests/widgets/test_workshop_checks.py`` greps this module and every
message for each solution's code and values).

Examples
--------
>>> sorted(CHECKS)
['1', '2', '3', '4']
>>> try:
...     check_provider({})
... except Hint as found:
...     print(found.wrong)
VocabularyProvider is not defined
"""

from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Mapping
from typing import Any

import cloudpickle

from kit.widgets.workshop import Check, Hint

__all__ = ["CHECKS", "check_failures", "check_metric", "check_provider", "check_sweep"]

#: The checks' own material: not the notebook's, so a hard-coded answer does not pass.
WORDS = ["red", "blue"]
SENTENCES = ["red fish blue fish", "red", "one fish two fish red fish"]
#: What the digests below are salted with.
SALT = "kit-workshop-4f1c"
#: Digests of what right code gives on the material above: each sentence's record,
#: each one's known share, the run's share; the mean of the shares (a common mistake);
#: the failed items of exercise 3's broken config.
RECORDS = ["18d3379c0c916c43d3f0", "47152aacbbfefad72585", "d92071ab3c6cdf0a4f02"]
SHARES = ["681aa1c11e63df16f61d", "683549b4806552b30f3f", "7b5f87378714d81e4b33"]
WHOLE, MEAN, FAILED = "a330cc535213b6eedfaf", "201956d0f7e5b5092f6b", "f36ac5c0b67c5a123ab7"


def matches(value: Any, digest: str) -> bool:
    """Whether ``value`` is the one whose salted digest is ``digest`` (numbers to 9 places).

    Examples
    --------
    >>> matches({"known": 1, "sentence": "red", "words": 1}, RECORDS[1])
    True
    >>> matches(0.5000000001, SHARES[0]), matches(0.25, SHARES[0])
    (True, False)
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str | list | dict):
        return False
    text = f"{value:.9f}" if isinstance(value, float) else json.dumps(value, sort_keys=True)
    if isinstance(value, int) and not isinstance(value, bool) and digest in (*SHARES, WHOLE):
        text = f"{float(value):.9f}"
    return hashlib.sha256((SALT + text).encode()).hexdigest()[:20] == digest


def check_provider(ns: Mapping[str, Any]) -> list[str]:
    """Exercise 1: the provider's env, locally and on a worker, and the counting ``forward``."""
    provider_cls = defined(ns, "VocabularyProvider", "EnvironmentProvider")
    runner_cls = defined(ns, "CountKnown", "Runner")
    provider = provider_cls(probe_config())
    env = provider.build_env_local()
    if not isinstance(env, dict) or set(env) != {"vocabulary", "sentences"}:
        raise Hint(
            f"build_env_local returned {describe(env)}",
            "the env is a dict with two entries, 'vocabulary' and 'sentences'",
        )
    if not isinstance(env["vocabulary"], set | frozenset) or env["vocabulary"] != set(WORDS):
        raise Hint(
            f"the env's 'vocabulary' is {describe(env['vocabulary'])} for words {WORDS}",
            "make a set of the words in self.config.words (a set answers `w in vocabulary` fast)",
        )
    if list(env["sentences"]) != SENTENCES:
        raise Hint(
            "the env's 'sentences' are not the config's sentences",
            "use self.config.sentences, as a list",
        )
    setup = provider.make_worker_setup_fn()
    if not callable(setup):
        raise Hint(
            f"make_worker_setup_fn returned {describe(setup)}, not a function",
            "return a function that builds the env when a worker calls it (e.g. a lambda); "
            "return it, do not call it",
        )
    built = setup()
    if not isinstance(built, dict) or built != env:
        raise Hint(
            "the function from make_worker_setup_fn builds a different env than build_env_local",
            "a worker must get the same dict: a 'vocabulary' set and a 'sentences' list",
        )
    try:
        pickle.loads(cloudpickle.dumps(setup))  # as Kit sends it to the workers
    except Exception as error:
        raise Hint(
            f"the setup function cannot be sent to a worker ({type(error).__name__})",
            "let it use plain lists (as `words` and `sentences` above), not open files or locks",
        ) from None
    for idx in range(len(SENTENCES)):
        record = runner_cls.forward(idx, vocabulary=set(WORDS), sentences=SENTENCES)
        fields = {k: record.get(k) for k in ("sentence", "known", "words")}
        if not isinstance(record, dict) or not matches(fields, RECORDS[idx]):
            raise Hint(
                f"CountKnown.forward({idx}, ...) for {SENTENCES[idx]!r} with vocabulary "
                f"{set(WORDS)} returned {describe(record)}",
                "return a dict with 'sentence' (the sentence), 'known' (how many of its "
                "words are in the vocabulary) and 'words' (how many words it has)",
            )
    on_cluster(ns, runner_cls(provider_cls(probe_config()), parallel=ns.get("cluster")))
    return ["the env", "the worker setup", "forward's counts", "a run on the cluster's workers"]


def check_metric(ns: Mapping[str, Any]) -> list[str]:
    """Exercise 2: the per-item metric and the run's share in ``summarize``."""
    runner_cls = defined(ns, "CountKnownWithMetric", "Runner")
    provider_cls = defined(ns, "VocabularyProvider", "EnvironmentProvider")
    for idx in range(len(SENTENCES)):
        record = runner_cls.forward(idx, vocabulary=set(WORDS), sentences=SENTENCES)
        metrics = record.get("metrics") if isinstance(record, dict) else None
        share = metrics.get("known_share") if isinstance(metrics, dict) else None
        if not matches(share, SHARES[idx]):
            raise Hint(
                f"for {SENTENCES[idx]!r} the record's 'metrics' is {describe(metrics)}",
                "make 'metrics' a dict whose 'known_share' is the share of the sentence's "
                "words that are known, a number from 0 to 1",
            )
    runner = runner_cls(provider_cls(probe_config()), parallel=ns.get("cluster"))
    records = [runner_cls.forward(i, set(WORDS), SENTENCES) for i in range(len(SENTENCES))]
    try:
        summary = runner.summarize([*records, None])
    except Exception as error:
        raise Hint(
            f"summarize raised {type(error).__name__} on records with a failed item (None)",
            "skip the None records: they are items that failed",
        ) from None
    share = summary.get("known_share") if isinstance(summary, dict) else None
    if not matches(share, WHOLE):
        hint = (
            "that is the mean of the sentences' shares; the run's share counts words: "
            "all known words over all words"
            if matches(share, MEAN)
            else "return {'known_share': ...}: the known words of all records over all their words"
        )
        raise Hint(f"summarize returned {describe(summary)}", hint)
    result = on_cluster(ns, runner)
    if not isinstance(result.summary, dict) or not matches(
        result.summary.get("known_share"), WHOLE
    ):
        raise Hint(
            f"on the cluster, the run's summary is {describe(result.summary)}",
            "summarize gets the records of the whole run: add up over all of them",
        )
    return ["the per-item known_share", "the run's share of all words", "a run on the cluster"]


def check_failures(ns: Mapping[str, Any]) -> list[str]:
    """Exercise 3: the failed item's index and its traceback, read from the result."""
    result = ns.get("result")
    if result is None or not hasattr(result, "records"):
        raise Hint("there is no run result named `result`", "keep the cell's `result = ...` line")
    failed, traceback = ns.get("failed"), ns.get("first_traceback")
    if not isinstance(failed, list | tuple) or not matches(list(failed), FAILED):
        raise Hint(
            f"`failed` is {describe(failed)}",
            "the result knows which item indices failed: look at its attributes "
            "(`dir(result)`, or `result.` and Tab)",
        )
    if not isinstance(traceback, str) or "ZeroDivisionError" not in traceback:
        raise Hint(
            f"`first_traceback` is {describe(traceback)}, not the text of a traceback",
            "`result.errors` lists the errors, first failed first; each has a `.traceback`",
        )
    return ["the failed indices", "the first error's traceback"]


def check_sweep(ns: Mapping[str, Any]) -> list[str]:
    """Exercise 4: a sweep over both vocabularies, and its best trial by ``known_share``."""
    swept = ns.get("swept")
    if swept is None or not hasattr(swept, "trials"):
        raise Hint("there is no sweep result named `swept`", "keep the cell's `swept = ...`")
    values = sorted(trial.values().get("words", "") for trial in swept.trials)
    if len(values) != 2 or len(set(values)) != 2:
        raise Hint(
            f"the sweep ran {len(swept.trials)} trial(s) of `words`: {values}",
            "one override sweeps a key over several values: `key=a,b` (here each value is "
            "a list in brackets)",
        )
    trial, best = ns.get("trial"), ns.get("best")
    scores = {
        t.name: r.summary.get("known_share")
        for t, r in zip(swept.trials, swept.results, strict=True)
        if r is not None
    }
    top = max(scores, key=lambda name: scores[name] or 0.0)
    if getattr(trial, "name", None) != top or getattr(best, "summary", None) is None:
        raise Hint(
            f"`trial` is {getattr(trial, 'name', describe(trial))}, but {top} has the highest "
            "known_share",
            "best() takes the metric's name, and minimize=False when higher is better",
        )
    return ["two trials, one per vocabulary", "the best one by known_share"]


#: The checks by exercise number, as ``%checks`` loads them.
CHECKS: dict[str, Check] = {
    "1": check_provider,
    "2": check_metric,
    "3": check_failures,
    "4": check_sweep,
}


def defined(ns: Mapping[str, Any], name: str, base: str) -> Any:
    """Return the class ``name`` of the notebook, checked to subclass Kit's ``base``."""
    import kit

    found = ns.get(name)
    if not isinstance(found, type) or not issubclass(found, getattr(kit, base)):
        raise Hint(
            f"{name} is not defined" if found is None else f"{name} is not a kit.{base} class",
            f"define `class {name}({base}):` in the exercise cell (later cells use the name)",
        )
    return found


def probe_config() -> Any:
    """Return the checks' config: the notebook's keys with other words and sentences."""
    import kit

    return kit.load_config({"words": WORDS, "sentences": SENTENCES})


def on_cluster(ns: Mapping[str, Any], runner: Any) -> Any:
    """Run ``runner`` over the probe sentences where the notebook's runs go; items must pass."""
    result = runner.run(range(len(SENTENCES)))
    if result.errors:
        error = result.errors[0]
        last = error.traceback.strip().splitlines()[-1] if error.traceback else str(error)
        raise Hint(
            f"on the cluster's workers, item {error.index} failed: {last}",
            "a worker builds its env with the function make_worker_setup_fn returns: "
            "call it yourself and look at what it gives",
        )
    keys = ("sentence", "known", "words")
    got = [{k: r.get(k) for k in keys} if isinstance(r, dict) else r for r in result.records]
    if not all(matches(r, d) for r, d in zip(got, RECORDS, strict=True)):
        raise Hint(
            "on the cluster's workers, the run's records differ from forward's here",
            "the env a worker builds must hold the same vocabulary and sentences",
        )
    return result


def describe(value: Any) -> str:
    """Return a short description of what the attendee's code gave."""
    text = repr(value)
    return text if len(text) <= 80 else f"a {type(value).__name__} ({text[:60]}...)"
