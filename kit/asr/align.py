"""Align a reference with a hypothesis the way NIST's ``sclite`` does, so Kit's counts are sclite's.

Word error counts depend on the alignment, not only on the edit distance:
"a b" against "b c" is two substitutions, or a deletion and an insertion,
at the same Levenshtein distance. Papers cite ``sclite``'s counts, and
``sclite`` aligns with weights of its own (a substitution costs 4, an
insertion or a deletion 3, a match 0) and breaks ties in a fixed order
(substitution or match first, then deletion, then insertion). jiwer and
kaldialign (even in its ``sclite_mode``) find alignments of the same cost
but split the errors differently, so this module does the dynamic
programme itself; ``tests/asr/test_sclite.py`` checks it against
Debian's ``sclite`` on thousands of pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

#: sclite's weights: what a substitution, an insertion and a deletion cost.
SUB, INS, DEL = 4, 3, 3


@dataclass(frozen=True)
class Alignment:
    """An aligned reference and hypothesis: one ``(op, ref, hyp)`` per step.

    ``op`` is ``"C"`` (correct), ``"S"`` (substitution), ``"D"`` (deletion:
    ``hyp`` is None) or ``"I"`` (insertion: ``ref`` is None).

    Examples
    --------
    >>> a = align("the cat sat".split(), "the bat sat down".split())
    >>> a.counts()
    {'correct': 2, 'substitutions': 1, 'deletions': 0, 'insertions': 1}
    >>> print(a.pretty())
    REF: the CAT sat ****
    HYP: the BAT sat DOWN
    """

    steps: tuple[tuple[str, str | None, str | None], ...] = field(default=())

    def counts(self) -> dict[str, int]:
        """Correct words, substitutions, deletions and insertions."""
        ops = Counter(op for op, _, _ in self.steps)
        return {
            "correct": ops["C"],
            "substitutions": ops["S"],
            "deletions": ops["D"],
            "insertions": ops["I"],
        }

    def substitutions(self) -> list[tuple[str, str]]:
        """Return the ``(ref, hyp)`` pairs substituted, in order.

        Examples
        --------
        >>> align(["a", "b"], ["a", "c"]).substitutions()
        [('b', 'c')]
        """
        return [(r, h) for op, r, h in self.steps if op == "S" and r is not None and h is not None]

    def columns(self) -> list[tuple[str, str, str]]:
        """Return each step as sclite prints it: errors in capitals, gaps as asterisks.

        Examples
        --------
        >>> align(["a", "b"], ["a"]).columns()
        [('C', 'a', 'a'), ('D', 'B', '*')]
        """
        out = []
        for op, ref, hyp in self.steps:
            r, h = ref or "", hyp or ""
            if op != "C":
                r, h = r.upper(), h.upper()
            width = max(len(r), len(h))
            out.append((op, r or "*" * width, h or "*" * width))
        return out

    def pretty(self) -> str:
        """Two lines as sclite prints them: errors in capitals, gaps as asterisks."""
        columns = self.columns()
        width = [max(len(r), len(h)) for _, r, h in columns]
        refs = " ".join(r.ljust(w) for (_, r, _), w in zip(columns, width, strict=True))
        hyps = " ".join(h.ljust(w) for (_, _, h), w in zip(columns, width, strict=True))
        return f"REF: {refs}".rstrip() + f"\nHYP: {hyps}".rstrip()

    def html(self) -> str:
        """Return the two lines of :meth:`pretty` as HTML, each error marked by its kind.

        Substitutions, deletions and insertions are ``<mark>`` elements of
        class ``kit-S``, ``kit-D`` and ``kit-I`` (their titles say which);
        the words are escaped.

        Examples
        --------
        >>> print(align(["a", "<b>"], ["a"]).html())
        REF: a <mark class='kit-D' title='deletion'>&lt;B&gt;</mark>
        HYP: a <mark class='kit-D' title='deletion'>***</mark>
        """
        import html

        titles = {"S": "substitution", "D": "deletion", "I": "insertion"}
        lines: tuple[list[str], list[str]] = ([], [])
        for op, *words in self.columns():
            width = max(len(word) for word in words)
            for line, word in zip(lines, words, strict=True):
                text = html.escape(word)
                if op != "C":
                    text = f"<mark class='kit-{op}' title='{titles[op]}'>{text}</mark>"
                line.append(text + " " * (width - len(word)))
        return f"REF: {' '.join(lines[0])}".rstrip() + f"\nHYP: {' '.join(lines[1])}".rstrip()


def align(ref: Sequence[str], hyp: Sequence[str]) -> Alignment:
    """Align two token sequences (words, or characters) with sclite's weights and ties.

    Examples
    --------
    >>> align(["a", "b"], ["b", "c"]).counts()  # sclite: a deletion and an insertion
    {'correct': 1, 'substitutions': 0, 'deletions': 1, 'insertions': 1}
    >>> align([], ["x"]).counts()["insertions"], align(["x"], []).counts()["deletions"]
    (1, 1)
    """
    n, m = len(ref), len(hyp)
    # cost[i][j]: the cheapest alignment of ref[:i] with hyp[:j]; move[i][j]: its last
    # step (0 diagonal, 1 deletion, 2 insertion). The loop is the hot path of scoring:
    # plain locals, no indexing it can avoid.
    cost = [[j * INS for j in range(m + 1)]]
    move = [bytearray([2]) * (m + 1)]
    for i, word in enumerate(ref, start=1):
        above = cost[-1]
        left = i * DEL
        row, moves = [left], bytearray(m + 1)
        moves[0] = 1
        for j, heard in enumerate(hyp, start=1):
            diagonal = above[j - 1] if word == heard else above[j - 1] + SUB
            deleted, inserted = above[j] + DEL, left + INS
            # sclite's order: a match or substitution wins ties, then a deletion.
            if diagonal <= deleted and diagonal <= inserted:
                left = diagonal
            elif deleted < inserted:
                left, moves[j] = deleted, 1
            else:
                left, moves[j] = inserted, 2
            row.append(left)
        cost.append(row)
        move.append(moves)
    steps: list[tuple[str, str | None, str | None]] = []
    i, j = n, m
    while i or j:
        step = move[i][j]
        if step == 0:
            i, j = i - 1, j - 1
            steps.append(("C" if ref[i] == hyp[j] else "S", ref[i], hyp[j]))
        elif step == 1:
            i -= 1
            steps.append(("D", ref[i], None))
        else:
            j -= 1
            steps.append(("I", None, hyp[j]))
    return Alignment(tuple(reversed(steps)))
