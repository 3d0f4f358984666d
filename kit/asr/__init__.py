"""The decoding check: speech recognition on your test sets, scored as sclite scores it.

A recognizer per worker (Whisper through CTranslate2, PocketSphinx, or your
own :class:`Recognizer`) decodes utterances from a JSON-lines manifest, a
Kaldi data directory, a Lhotse CutSet or a Hugging Face dataset, or several
named test sets at once; each utterance is scored with a chosen text
normaliser and aligned as NIST's sclite aligns (WER and CER with their
substitutions, deletions and insertions). A finished run is scored again
without decoding (:func:`score_folder`, ``kit score``) and exported for
sclite or ESPnet (:func:`export`, ``kit export``). ESPnet3's inference
contract runs as ESPnet3 writes it (:class:`InferenceProvider`,
:class:`InferenceRunner`, :func:`infer`). Install with
``pip install 'kit-lab[asr]'``; :mod:`kit.examples.asr` is the worked
example on a generated corpus.

Examples
--------
>>> from kit.asr import align, score
>>> score("The cat sat.", "the bat sat")["errors"]
1
>>> print(align("the cat sat".split(), "the bat sat".split()).pretty())
REF: the CAT sat
HYP: the BAT sat
"""

from kit.asr.align import Alignment, align
from kit.asr.data import read_kaldi_dir, read_manifest
from kit.asr.decode import DecodeProvider, DecodeRunner
from kit.asr.export import export
from kit.asr.inference import InferenceProvider, InferenceRunner, infer
from kit.asr.recognizers import Recognizer, make_recognizer
from kit.asr.rescore import Scores, score_folder
from kit.asr.wer import corpus_cer, corpus_wer, differences, normalizer, score, wer_by

__all__ = [
    "Alignment",
    "DecodeProvider",
    "DecodeRunner",
    "InferenceProvider",
    "InferenceRunner",
    "Recognizer",
    "Scores",
    "align",
    "corpus_cer",
    "corpus_wer",
    "differences",
    "export",
    "infer",
    "make_recognizer",
    "normalizer",
    "read_kaldi_dir",
    "read_manifest",
    "score",
    "score_folder",
    "wer_by",
]
