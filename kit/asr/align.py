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

from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType

_compiled: ModuleType | None
try:
    import kit.asr._align as _compiled
except ImportError:  # built without a C compiler: the same programme in Python
    _compiled = None

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

    Characters may be given as strings. Memory grows with the longer
    sequence, not with their product (a 4,000-word utterance's characters
    take megabytes): see :func:`ops`.

    Examples
    --------
    >>> align(["a", "b"], ["b", "c"]).counts()  # sclite: a deletion and an insertion
    {'correct': 1, 'substitutions': 0, 'deletions': 1, 'insertions': 1}
    >>> align([], ["x"]).counts()["insertions"], align(["x"], []).counts()["deletions"]
    (1, 1)
    >>> align("cat", "cut").counts()["substitutions"]
    1
    """
    steps: list[tuple[str, str | None, str | None]] = []
    i = j = 0
    for op in ops(ref, hyp).decode("ascii"):
        if op in "CS":
            steps.append((op, ref[i], hyp[j]))
            i, j = i + 1, j + 1
        elif op == "D":
            steps.append((op, ref[i], None))
            i += 1
        else:
            steps.append((op, None, hyp[j]))
            j += 1
    return Alignment(tuple(steps))


#: Cells (reference tokens times hypothesis tokens) whose moves are kept at once: a byte
#: each. Larger problems are aligned in blocks of rows in the same memory (the same moves,
#: about twice the arithmetic).
BLOCK_CELLS = 1 << 24


def ops(ref: Sequence[str], hyp: Sequence[str], block: int = BLOCK_CELLS) -> bytes:
    """Return sclite's alignment of two token sequences as steps: C, S, D and I, one byte each.

    The counts need only these (``ops(...).count(b"S")``); :func:`align`
    pairs them with the tokens. Compiled (``kit/asr/_align.c``) where the
    package was built with a C compiler, else the same programme in Python
    (:func:`python_ops`); ``tests/asr/test_align.py`` checks they agree.

    Examples
    --------
    >>> ops("the cat sat".split(), "the bat sat down".split())
    b'CSCI'
    >>> ops("kitten", "sitting")
    b'SCCCSCI'
    """
    left, right = _token_ids(ref, hyp)
    if _compiled is not None:
        return bytes(_compiled.ops(left, right, block))
    return python_ops(left, right, block)


def _token_ids(ref: Sequence[str], hyp: Sequence[str]) -> tuple[bytes, bytes]:
    """Return both sequences as buffers of 32-bit ids, equal ids for equal tokens."""
    if isinstance(ref, str) and isinstance(hyp, str):
        # A character's id is its code point: no table to build.
        return ref.encode("utf-32-le"), hyp.encode("utf-32-le")
    ids: dict[str, int] = {}
    return (
        array("i", [ids.setdefault(token, len(ids)) for token in ref]).tobytes(),
        array("i", [ids.setdefault(token, len(ids)) for token in hyp]).tobytes(),
    )


def python_ops(ref: bytes, hyp: bytes, block: int = BLOCK_CELLS) -> bytes:
    """:func:`ops` in Python, on two buffers of 32-bit token ids (what ``_align.c`` does).

    The costs are kept a row at a time and the moves of at most ``block``
    cells: a larger problem is done in blocks of rows, the first pass
    keeping the cost row where each block starts, the way back recomputing
    one block's moves at a time from there.

    Examples
    --------
    >>> ids = lambda *tokens: array("i", tokens).tobytes()
    >>> python_ops(ids(1, 2), ids(2, 3)), python_ops(ids(1, 2), ids(2, 3), block=1)
    (b'DCI', b'DCI')
    """
    left, right = array("i"), array("i")
    left.frombytes(ref)
    right.frombytes(hyp)
    n, m = len(left), len(right)
    height = min(n, max(1, block // (m + 1)))
    tops = list(range(0, n, height)) if n else []
    cost = [j * INS for j in range(m + 1)]
    marks = {0: list(cost)}
    for top in tops[:-1]:
        cost = _rows(left, right, top, top + height, cost, None)
        marks[top + height] = list(cost)
    steps = bytearray()
    i, j = n, m
    for top in reversed(tops):
        moves: list[bytearray] = []
        _rows(left, right, top, min(top + height, n), marks[top], moves)
        while i > top:
            step = moves[i - top - 1][j] if j else 1
            if step == 0:
                i, j = i - 1, j - 1
                steps.append(67 if left[i] == right[j] else 83)  # C, S
            elif step == 1:
                i -= 1
                steps.append(68)  # D
            else:
                j -= 1
                steps.append(73)  # I
    steps.extend(b"I" * j)
    steps.reverse()
    return bytes(steps)


def _rows(
    ref: array[int],
    hyp: array[int],
    top: int,
    bottom: int,
    above: list[int],
    moves: list[bytearray] | None,
) -> list[int]:
    """Return the cost row ``bottom`` from row ``top``'s (``above``); append rows' moves."""
    # The hot path of scoring without the compiled kernel: plain locals, no indexing it can
    # avoid. move: 0 diagonal, 1 deletion, 2 insertion.
    m = len(hyp)
    for i in range(top + 1, bottom + 1):
        word = ref[i - 1]
        left = i * DEL
        row, taken = [left], bytearray(m + 1)
        taken[0] = 1
        for j, heard in enumerate(hyp, start=1):
            diagonal = above[j - 1] if word == heard else above[j - 1] + SUB
            deleted, inserted = above[j] + DEL, left + INS
            # sclite's order: a match or substitution wins ties, then a deletion.
            if diagonal <= deleted and diagonal <= inserted:
                left = diagonal
            elif deleted < inserted:
                left, taken[j] = deleted, 1
            else:
                left, taken[j] = inserted, 2
            row.append(left)
        above = row
        if moves is not None:
            moves.append(taken)
    return above
