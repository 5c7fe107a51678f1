"""The ``skorg`` command line: ``demo``, ``attention``, ``compare``, ``organize``,
``paraproduct-check``, ``warmup``.

Every subcommand writes a report folder (``index.html`` with embedded figures, the numbers as
CSV and ``results.json``). A user mistake (missing file, wrong shape, NaN, unknown model,
missing extra) ends with exit code 2 and a one-line reason on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time

from ._commands import (
    MAX_AXIS,
    MAX_ITER,
    SEED_MAX,
    UsageError,
    _attention,
    _axis_pair,
    _block_value,
    _compare,
    _demo,
    _finite,
    _organize,
    _paraproduct,
    _positive,
    _separator,
    _warmup,
)

__all__ = ["main"]


COMPILE_NOTE = (
    "skorg: first run: compiling the numba kernels it needs (once; seconds to a few minutes; "
    "`skorg warmup` does it ahead of time)"
)


def _note_compilation(args):
    """Say so on stderr when this run will compile the kernels (a fresh install)."""
    if getattr(args, "quiet", False) or args.func is _warmup:
        return
    from .._warmup import kernels_cached

    if kernels_cached() is False:
        print(COMPILE_NOTE, file=sys.stderr)


def _add_common(parser, output=None):
    parser.add_argument(
        "--output",
        "-o",
        default=output,
        metavar="DIR",
        help=f"report folder (default: {output})" if output else "also write a report folder",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress output")


def _add_synthetic(parser, n_iter_default):
    group = parser.add_argument_group("synthetic data (a shuffled smooth matrix)")
    group.add_argument(
        "--size",
        type=_positive(int, 4, MAX_AXIS),
        default=128,
        help=f"rows and columns, 4 to {MAX_AXIS} (default 128)",
    )
    group.add_argument("--kind", choices=["band", "ridge", "product"], default="band")
    group.add_argument(
        "--noise",
        type=_positive(float, 0.0, 1e300),
        default=0.05,
        help="standard deviation of the added noise, relative, 0 to 1e300 (default 0.05)",
    )
    group.add_argument(
        "--seed",
        type=_positive(int, 0, SEED_MAX),
        default=0,
        help=f"random seed, 0 to {SEED_MAX} (default 0)",
    )
    if n_iter_default is not None:
        group.add_argument(
            "--n-iter",
            type=_positive(int, 1, MAX_ITER),
            default=n_iter_default,
            help=f"questionnaire iterations, 1 to {MAX_ITER} (default {n_iter_default})",
        )


def _add_attention_options(parser, *, max_length=32, prune_steps=11, n_random=5):
    parser.add_argument(
        "--max-length",
        type=_positive(int, 4),
        default=max_length,
        help=f"tokens per sentence at most, truncated (default {max_length})",
    )
    parser.add_argument(
        "--prune-steps",
        type=_positive(int, 2, 201),
        default=prune_steps,
        help=f"points on each pruning curve, 2 to 201 (default {prune_steps})",
    )
    parser.add_argument(
        "--n-random",
        type=_positive(int, 1),
        default=n_random,
        help=f"random prune orders averaged into the random baseline (default {n_random})",
    )
    parser.add_argument(
        "--n-organize",
        type=_positive(int, 2),
        default=16,
        help="inputs whose attention is organized and ranked (default 16); the pruning "
        "metric uses every input",
    )
    parser.add_argument(
        "--n-resamples",
        type=_positive(int, 100),
        default=2000,
        help="bootstrap resamples and null draws (default 2000)",
    )
    parser.add_argument(
        "--tie-axes",
        type=_axis_pair,
        metavar="0,1",
        help="rank, prune and measure entropy on trees that give queries and keys one tree "
        "and one order (default: the paper's separate query and key trees; the report shows "
        "both organized maps either way)",
    )


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors on one line (the command line's contract)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _build_parser():
    parser = _Parser(
        prog="skorg",
        description="Organize matrices, tensors and transformer attention with partition "
        "trees; every command writes an HTML report with CSV/JSON numbers.",
    )
    from .. import __version__
    from ..organize import PRESETS

    parser.add_argument("--version", action="version", version=f"skorg {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="analyse the heads of all-MiniLM-L6-v2 on an embedded text sample",
        description="Organize, rank and prune the attention heads of all-MiniLM-L6-v2 "
        "(offline package) on an embedded text sample and write a report folder. "
        "--synthetic instead prints how well the questionnaire recovers the hidden order of a "
        "shuffled smooth matrix (no extras needed).",
    )
    demo.add_argument(
        "--synthetic", action="store_true", help="quick check on a shuffled matrix (prints a table)"
    )
    demo.add_argument(
        "--n-sentences",
        type=_positive(int, 2),
        default=64,
        help="sentences: the 8 embedded ones, then standard-library docstring sentences "
        "(default 64)",
    )
    # fewer pruning steps and random orders than `skorg attention`: the demo's time budget
    _add_attention_options(demo, max_length=24, prune_steps=6, n_random=4)
    _add_common(demo, "skorg-report")
    _add_synthetic(demo, 3)
    demo.set_defaults(func=_demo)

    att = sub.add_parser(
        "attention",
        help="the attention report for a chosen model and text",
        description="The attention report for 'minilm', 'digits-vit' or a local Hugging "
        "Face model directory (a text encoder with its tokenizer).",
    )
    att.add_argument(
        "--model",
        default="minilm",
        metavar="NAME_OR_PATH",
        help="minilm, digits-vit, or a local model directory (default minilm)",
    )
    att.add_argument(
        "--text-file", metavar="F", help="one sentence per line (default: the embedded sample)"
    )
    att.add_argument(
        "--max-sentences",
        type=_positive(int, 1),
        default=64,
        help="use at most this many lines of the text file (default 64)",
    )
    _add_attention_options(att)
    _add_common(att, "skorg-attention-report")
    att.set_defaults(func=_attention)

    cmp = sub.add_parser(
        "compare",
        help="compare the attention networks of two models (or two layer sets) on one text",
        description="Organize the query x key x head tensor of each input for two models "
        "(minilm, digits-vit or local Hugging Face directories) and compare their tri-Haar "
        "network entropy, whole and per layer, paired by input (intervals, permutation "
        "tests, effect sizes), with the head trees side by side. One --model with "
        "--layers-a/--layers-b compares two layer sets of that model.",
    )
    cmp.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="NAME_OR_PATH",
        help="a model; give it twice for two models",
    )
    cmp.add_argument("--layers-a", metavar="L,L,...", help="layers of the first model")
    cmp.add_argument("--layers-b", metavar="L,L,...", help="layers of the second model")
    cmp.add_argument(
        "--text-file", metavar="F", help="one sentence per line (default: the embedded sample)"
    )
    cmp.add_argument(
        "--max-sentences",
        type=_positive(int, 2),
        default=64,
        help="use at most this many lines of the text file (default 64)",
    )
    cmp.add_argument(
        "--max-length",
        type=_positive(int, 4),
        default=32,
        help="tokens per sentence at most, truncated (default 32)",
    )
    cmp.add_argument(
        "--n-organize",
        type=_positive(int, 2),
        default=12,
        help="inputs organized and compared (default 12)",
    )
    cmp.add_argument(
        "--n-resamples",
        type=_positive(int, 100),
        default=2000,
        help="bootstrap resamples (default 2000)",
    )
    _add_common(cmp, "skorg-compare-report")
    cmp.set_defaults(func=_compare)

    org = sub.add_parser(
        "organize",
        help="organize a matrix or tensor from .csv, .tsv, .npy, .npz, .parquet or .h5ad",
        description="Learn a partition tree on every axis of a matrix or tensor; report the "
        "organized heatmaps, the trees and the Haar sparsity; optionally write compressed or "
        "denoised data. Writes organized.npy, order_<axis>.npy and levels_<axis>.npy too.",
    )
    org.add_argument(
        "file", nargs="?", metavar="FILE", help=".csv, .tsv, .txt, .npy, .npz, .parquet or .h5ad"
    )
    org.add_argument("--key", help="array name inside an .npz holding several")
    table = org.add_argument_group("text tables (.csv, .tsv, .txt)")
    table.add_argument(
        "--sep",
        type=_separator,
        help="column separator: one character, \\t for a tab or \\s+ for runs of whitespace "
        "(default: detected)",
    )
    table.add_argument(
        "--header",
        choices=["infer", "yes", "no"],
        default="infer",
        help="the first line names the columns (default: infer)",
    )
    table.add_argument(
        "--index-col",
        choices=["infer", "yes", "no"],
        default="infer",
        help="the first column names the rows (default: infer)",
    )
    table.add_argument(
        "--decimal",
        choices=[".", ","],
        metavar="MARK",
        help="decimal mark, . or , (default: detected; a comma when the numbers are written 2,5)",
    )
    table.add_argument(
        "--missing-values",
        choices=["error", "zero", "column-mean", "drop-rows", "drop-columns"],
        default="error",
        help="empty or NA cells (and NaN in .parquet): an error naming them (default), "
        "fill with 0 or the column mean, or drop their rows or columns",
    )
    org.add_argument("--layer", help="layer of an .h5ad file to use instead of X")
    org.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="the settings of Fasina et al. (2025): paper_3d_heads for query x key x head "
        "tensors (cosine initial affinity, flexible trees, alpha 0, beta 1, 3 iterations) or "
        "paper_2d_holder for one matrix before the paraproduct (alpha 1, beta 0, 10 "
        "iterations, the trees' leaf orders); default: the library's defaults",
    )
    org.add_argument(
        "--compress",
        type=_finite,
        metavar="FRACTION",
        help="keep this fraction of the Haar coefficients (writes compressed.npy)",
    )
    org.add_argument(
        "--denoise",
        action="store_true",
        help="soft-threshold the Haar coefficients (writes denoised.npy)",
    )
    org.add_argument(
        "--synthetic",
        action="store_true",
        help="a shuffled smooth matrix instead of FILE, with the hidden-order comparison",
    )
    _add_common(org, "skorg-organize-report")
    _add_synthetic(org, None)
    org.add_argument(
        "--n-iter",
        type=_positive(int, 1, MAX_ITER),
        default=None,
        help=f"questionnaire iterations, 1 to {MAX_ITER} (default: the preset's)",
    )
    org.add_argument(
        "--tie-axes",
        type=_axis_pair,
        metavar="A,B",
        help="one tree and one order for two axes of equal length that index the same "
        "objects (0,1 for an affinity, correlation or distance matrix); the report shows "
        "the untied organization beside it",
    )
    org.set_defaults(func=_organize)

    par = sub.add_parser(
        "paraproduct-check",
        help="the softmax-invariance verdict table (Eq. 18)",
        description="Compare the paper's softmax paraproduct expansions with softmax itself: "
        "the reviewers' 4 x 4 corner-block test, a smooth logit matrix, and real heads of a "
        "model on their organized trees.",
    )
    par.add_argument(
        "--M",
        type=_block_value,
        nargs="+",
        default=[1, 10, 100, 1000],
        help="block values of the 4 x 4 test (default 1 10 100 1000)",
    )
    par.add_argument(
        "--model",
        default="minilm",
        metavar="NAME_OR_PATH",
        help="model whose heads are checked, or 'none' (default minilm)",
    )
    par.add_argument("--text-file", metavar="F", help="sentences for the model (first 2)")
    par.add_argument(
        "--n-heads",
        type=_positive(int, 1),
        default=3,
        help="heads checked, sparsest to least sparse (default 3)",
    )
    _add_common(par, None)
    par.set_defaults(func=_paraproduct)

    warm = sub.add_parser(
        "warmup",
        help="compile the numba kernels now (once after installing)",
        description="Compile and cache every numba kernel of the common calls (fits, Haar "
        "transforms), so that the first real call does not wait for the compiler. Run it "
        "once after `pip install skorg`; the cache lives next to the package or in "
        "NUMBA_CACHE_DIR.",
    )
    warm.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    warm.set_defaults(func=_warmup)
    return parser


def main(argv=None):
    """Run the command line; returns the exit code (2 for a user mistake)."""
    from ..report import InputError, MissingExtraError

    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports bad arguments itself, with exit code 2
        return exc.code if isinstance(exc.code, int) else 2
    from ..report import close_open_bars

    start = time.perf_counter()
    # said once the command has checked its input and starts working (a missing file gets its
    # one-line error alone)
    args.note_compilation = lambda: _note_compilation(args)
    try:
        code = args.func(args)
    except MissingExtraError as exc:
        close_open_bars()
        print(f"skorg: error: {exc}", file=sys.stderr)
        return 2
    except (UsageError, InputError) as exc:
        close_open_bars()  # the reason goes on a line of its own
        print(f"skorg: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:
        print(f"skorg: error: not enough memory: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        close_open_bars()
        print("skorg: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last resort: one line, never a traceback
        first = (str(exc).strip().splitlines() or [""])[0]
        print(
            f"skorg: error: {type(exc).__name__}: {first} (an unexpected failure; please "
            "report it with the command line)",
            file=sys.stderr,
        )
        return 2
    if not getattr(args, "quiet", False):
        print(f"finished in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return code
