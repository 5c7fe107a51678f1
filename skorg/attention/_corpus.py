"""A small text corpus that ships with Python: sentences from standard-library docstrings."""

from __future__ import annotations

import importlib
import inspect
import re

__all__ = ["stdlib_sentences"]

_MODULES = (
    "argparse", "base64", "bisect", "calendar", "collections", "contextlib", "csv",
    "dataclasses", "datetime", "decimal", "difflib", "enum", "fractions", "functools", "glob",
    "gzip", "heapq", "hmac", "inspect", "itertools", "json", "logging", "operator", "pathlib",
    "pickle", "pprint", "queue", "random", "shlex", "shutil", "statistics", "string", "tempfile",
    "textwrap", "threading", "timeit", "typing", "uuid", "warnings", "zipfile",
)  # fmt: skip
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"^[A-Za-z][A-Za-z,;:'()-]*[.,;:)]?$")


def _docstrings(module_name):
    module = importlib.import_module(module_name)
    yield inspect.getdoc(module) or ""
    for name in sorted(vars(module)):
        obj = getattr(module, name)
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield inspect.getdoc(obj) or ""


def _sentences(module_name, min_words, max_words):
    for doc in _docstrings(module_name):
        for paragraph in doc.split("\n\n"):
            text = " ".join(paragraph.split())
            for sentence in _SENTENCE_END.split(text):
                words = sentence.split()
                if not min_words <= len(words) <= max_words or not sentence.endswith("."):
                    continue
                if all(_WORD.match(w) for w in words):  # plain prose, no code or markup
                    yield sentence


def stdlib_sentences(n_sentences=32, *, min_words=6, max_words=20):
    """Deterministic English sentences taken from standard-library docstrings.

    The modules are visited round-robin in a fixed order, each giving its sentences in the
    order of its docstrings (module first, then public functions and classes by name), so the
    corpus depends only on the Python version and needs no download.

    Parameters
    ----------
    n_sentences : int, default=32
    min_words, max_words : int
        Length limits of a sentence, in whitespace-separated words.

    Returns
    -------
    sentences : list of str

    Examples
    --------
    >>> from skorg.attention import stdlib_sentences
    >>> sentences = stdlib_sentences(4)
    >>> len(sentences), all(s.endswith(".") for s in sentences)
    (4, True)
    """
    if n_sentences < 1 or min_words < 1 or max_words < min_words:
        raise ValueError(
            f"need n_sentences >= 1 and 1 <= min_words <= max_words, got {n_sentences}, "
            f"{min_words}, {max_words}."
        )
    sources = [_sentences(name, min_words, max_words) for name in _MODULES]
    out, seen = [], set()
    while sources and len(out) < n_sentences:
        alive = []
        for source in sources:
            sentence = next(source, None)
            if sentence is None:
                continue
            alive.append(source)
            if sentence not in seen and len(out) < n_sentences:
                seen.add(sentence)
                out.append(sentence)
        sources = alive
    if len(out) < n_sentences:
        raise ValueError(f"the standard library gives only {len(out)} such sentences.")
    return out
