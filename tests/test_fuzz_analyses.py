"""The fuzz suite of tests/test_fuzz.py over the analyses: statistics, attention, the
specialization lab, the datasets and the readers, with every argument kind of issue 33
(complex values, NaN and out-of-range tolerances and levels, float ids, empty selections,
duplicate sparse entries, values near the float maximum and minimum, lying file headers).
"""

from __future__ import annotations

import numpy as np
import pytest

from skorg import datasets, io, stats
from skorg.trees import dyadic_tree

from .test_fuzz import Spec, _magnitude, _snapshot, fuzz_spec

attention = pytest.importorskip("skorg.attention")
specialization = pytest.importorskip("skorg.specialization")


def _values(r, n=None):
    return r.normal(size=n or int(r.integers(4, 20))) * _magnitude(r)


def _maps(r, n=1, heads=3, tokens=6):
    logits = r.normal(size=(n, 1, heads, tokens, tokens)) * 2
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return attention.AttentionMaps.from_array(e / e.sum(-1, keepdims=True), logits)


def _masks(r):
    n_sets, n_items = int(r.integers(2, 5)), int(r.integers(4, 12))
    m = int(r.integers(1, n_items))
    keys = r.random((n_sets, n_items))
    masks = np.zeros((n_sets, n_items), dtype=bool)
    np.put_along_axis(masks, np.argsort(keys, axis=1)[:, :m], True, axis=1)
    return masks


def _rank(confidence):
    return attention.rank_heads({"confidence": confidence})


def _model():
    from .attention.conftest import FakeTransformerLens

    return FakeTransformerLens().eval()


def _constant_metric(model):
    return np.array([1.0, 2.0, 3.0])


STATS = [
    Spec(
        stats.bootstrap_ci,
        lambda r: {"values": _values(r), "n_resamples": 50},
        numbers=("n_resamples",),
        arrays=("values",),
        others=("method", "statistic"),
        levels=("confidence_level",),
        positional=("values",),
        extreme=True,
    ),
    Spec(
        stats.bootstrap_of_means,
        lambda r: {"values": np.column_stack([_values(r, 9), _values(r, 9)]), "n_resamples": 50},
        numbers=("n_resamples",),
        arrays=("values",),
        others=("method", "function"),
        levels=("confidence_level",),
        positional=("values",),
        extreme=True,
    ),
    Spec(
        stats.permutation_p_value,
        lambda r: {"observed": float(r.normal()), "null": r.normal(size=30)},
        numbers=("observed",),
        arrays=("null",),
        others=("alternative",),
        positional=("observed", "null"),
        extreme=True,
    ),
    Spec(
        stats.permutation_test_paired,
        lambda r: (lambda n: {"a": _values(r, n), "b": _values(r, n), "n_resamples": 99})(
            int(r.integers(4, 30))
        ),
        numbers=("n_resamples",),
        arrays=("a", "b"),
        others=("alternative",),
        positional=("a", "b"),
        aliases={"b": ("a", "b")},
        extreme=True,
    ),
    Spec(
        stats.permutation_test_two_sample,
        lambda r: {"a": _values(r), "b": _values(r), "n_resamples": 99},
        numbers=("n_resamples",),
        arrays=("a", "b"),
        others=("alternative",),
        positional=("a", "b"),
        extreme=True,
    ),
    Spec(
        stats.paired_comparison,
        lambda r: (lambda n: {"a": _values(r, n), "b": _values(r, n), "n_resamples": 50})(
            int(r.integers(4, 30))
        ),
        numbers=("n_resamples",),
        arrays=("a", "b"),
        others=("alternative", "method"),
        levels=("confidence_level",),
        positional=("a", "b"),
        aliases={"b": ("a", "b")},
        extreme=True,
    ),
    Spec(
        stats.compare_samples,
        lambda r: {"a": _values(r), "b": _values(r), "n_resamples": 50},
        numbers=("n_resamples",),
        arrays=("a", "b"),
        others=("paired",),
        levels=("confidence_level",),
        positional=("a", "b"),
        aliases={"a": ("a", "paired"), "b": ("b", "paired")},
        extreme=True,
    ),
    Spec(
        stats.effect_size,
        lambda r: {"d": _values(r)},
        arrays=("d",),
        positional=("d",),
        extreme=True,
    ),
    Spec(
        stats.jaccard_null,
        lambda r: (lambda n: {"n_items": n, "set_size": int(r.integers(1, n + 1))})(
            int(r.integers(1, 10**6))
        ),
        numbers=("n_items", "set_size"),
        positional=("n_items", "set_size"),
        aliases={"n_items": ("n_items", "set_size")},
        extreme=True,
    ),
    Spec(
        stats.mean_pairwise_jaccard,
        lambda r: {"masks": _masks(r)},
        arrays=("masks",),
        positional=("masks",),
        extreme=True,
    ),
    Spec(
        stats.top_set_overlap_test,
        lambda r: {"masks": _masks(r), "n_resamples": 50},
        numbers=("n_resamples",),
        arrays=("masks",),
        positional=("masks",),
        extreme=True,
    ),
]

ATTENTION = [
    Spec(
        attention.AttentionMaps.from_array,
        lambda r: {"probs": _maps(r).probs},
        arrays=("probs",),
        levels=("atol",),
        positional=("probs",),
        aliases={"atol": ("atol", "probs")},  # atol=0 refuses rounded sums, naming probs
        extreme=True,
    ),
    Spec(
        attention.softmax_invariance_survey,
        lambda r: {"maps": _maps(r, heads=2, tokens=4), "n_resamples": 20},
        numbers=("sample", "n_resamples"),
        levels=("confidence_level", "tolerance"),
        ids=("heads",),
        positional=("maps",),
        extreme=True,
    ),
    Spec(_rank, lambda r: {"confidence": r.random(6)}, arrays=("confidence",), extreme=True),
    Spec(
        attention.ranking_stability,
        lambda r: {"scores": r.random((3, 6)), "n_resamples": 50},
        numbers=("n_resamples",),
        arrays=("scores",),
        levels=("fraction",),
        positional=("scores",),
        extreme=True,
    ),
    Spec(
        attention.sensitivity_sweep,
        lambda r: {
            "maps": _maps(r, n=3, heads=2, tokens=4),
            "trees": [(dyadic_tree(4), dyadic_tree(4))] * 3,
            "ks": (4,),
            "default_k": 16,
            "fractions": (0.5,),
            "n_resamples": 50,
        },
        numbers=("default_k", "n_resamples"),
        ids=("ks", "fractions", "batch_counts"),
        positional=("maps", "trees"),
        extreme=True,
    ),
    Spec(
        attention.prune_curves,
        lambda r: {
            "model": _model(),
            "orders": {"a": r.permutation(4)},
            "metric": _constant_metric,
            "fractions": [0.0, 0.5, 1.0],
            "n_resamples": 50,
        },
        numbers=("threshold", "n_random", "n_resamples"),
        levels=("confidence_level",),
        others=("method",),
        ids=("fractions",),
        positional=("model", "orders", "metric"),
        extreme=True,
    ),
]

SPECIALIZATION = [
    Spec(
        specialization.wilson_interval,
        lambda r: (lambda n: {"successes": int(r.integers(0, n + 1)), "trials": n})(
            int(r.integers(1, 1000))
        ),
        numbers=("successes", "trials"),
        levels=("confidence",),
        positional=("successes", "trials"),
        aliases={"successes": ("successes", "trials"), "trials": ("successes", "trials")},
        extreme=True,
    ),
    Spec(
        specialization.unspecialized_time,
        lambda r: {
            "t": np.arange(3.0),
            "m": [[[0.0, 0.01]], [[0.5, 0.1]], [[1.0, 0.0]]],
            "mean": [1.0, 0.0],
        },
        numbers=("cosine", "min_alignment"),
        arrays=("t", "mean"),
        positional=("t", "m", "mean"),
        aliases={"t": ("t", "m", "mean"), "mean": ("t", "m", "mean")},
        extreme=True,
        allow=("inf",),  # inf: never aligned within the records (documented)
    ),
    Spec(
        specialization.participation_ratio,
        lambda r: {"m": r.normal(size=(3, 4)) * _magnitude(r)},
        arrays=("m",),
        positional=("m",),
        extreme=True,
        allow=("nan",),  # NaN for a head with m = 0 (documented): it combines no direction
    ),
    Spec(
        specialization.run_flow_specialization_test,
        lambda r: {
            "n_init": 1,
            "n_heads": 2,
            "learning_rates": (1.0,),
            "tau_max": 1.0,
            "n_samples": 16,
            "progress": False,
        },
        numbers=("n_init", "n_heads", "dim", "tau_max"),
        ids=("learning_rates",),
        extreme=True,
    ),
]


SPECIALIZATION += [
    Spec(
        specialization.specialization_events,
        lambda r: {"t": np.arange(4.0), "m": r.normal(size=(4, 2, 3)) * 2},
        numbers=("threshold", "drop"),
        arrays=("t", "m"),
        positional=("t", "m"),
        aliases={"t": ("t", "m"), "m": ("t", "m")},
        extreme=True,
        allow=("inf",),  # times: inf for a direction never captured (documented)
    ),
    Spec(
        specialization.order_outcome,
        lambda r: {"times": r.random(3) * 10, "order": r.permutation(3)},
        arrays=("times",),
        ids=("order",),
        positional=("times", "order"),
        aliases={"times": ("times", "order"), "order": ("times", "order")},
        extreme=True,
    ),
    Spec(
        specialization.GaussianPrior,
        lambda r: {"variances": r.random(3) + 0.5, "mean": r.normal(size=3)},
        arrays=("variances", "mean"),
        positional=("variances",),
        extreme=True,
    ),
    Spec(
        specialization.spike_prior,
        lambda r: {"theta": r.normal(size=3)},
        arrays=("theta",),
        positional=("theta",),
        extreme=True,
    ),
    Spec(
        specialization.posterior_position_weights,
        lambda r: {
            "latent": r.normal(size=(5, 4, 2)),
            "prior": specialization.spike_prior([1.0, 2.0]),
        },
        arrays=("latent",),
        positional=("latent", "prior"),
        extreme=True,
    ),
]


@pytest.mark.parametrize(
    "spec", STATS + ATTENTION + SPECIALIZATION, ids=lambda s: getattr(s.func, "__name__", "")
)
def test_fuzz_analysis_function(spec):
    fuzz_spec(spec)


# ----------------------------------------------------------------------------- files
def _lying_npy(shape, data_bytes):
    import io as _io

    from numpy.lib import format as npy_format

    buf = _io.BytesIO()
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    npy_format.write_array_header_1_0(buf, header)
    return buf.getvalue() + b"\0" * data_bytes


@pytest.mark.parametrize(
    ("shape", "data_bytes"), [((10**6, 10**6), 80), ((4, 5), 152), ((2**40,), 0), ((3,), 0)]
)
@pytest.mark.parametrize("container", ["npy", "npz"])
def test_fuzz_read_array_with_lying_headers(tmp_path, shape, data_bytes, container):
    """A header that claims more data than the file holds: a ReadError naming the file,
    never a MemoryError or an allocation."""
    import zipfile

    data = _lying_npy(shape, data_bytes)
    path = tmp_path / f"liar.{container}"
    if container == "npy":
        path.write_bytes(data)
    else:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("X.npy", data)
    with pytest.raises(
        io.ReadError, match=r"liar\.np[yz](\['X'\])? is not a valid \.npy file: its header claims"
    ):
        io.read_array(path)


def test_fuzz_datasets_near_the_float_limits():
    # noise and sizes at the ends of their ranges: finite output or a named error
    for noise in (1e300, 1e-310, 0.5):
        X = datasets.make_shuffled_matrix(6, 5, noise=noise, random_state=0).X
        assert np.all(np.isfinite(X))
    for noise in (1e307, 1 + 1j, np.nan):
        with pytest.raises(ValueError, match="noise"):
            datasets.make_shuffled_matrix(6, 5, noise=noise)
    for n in (2.5, 1e307, True):
        with pytest.raises(TypeError, match="n_rows"):
            datasets.make_shuffled_matrix(n, 5)
    x = np.array([[1e307], [-1e307]])
    before = _snapshot(x)
    with pytest.raises(TypeError, match="x must hold real numbers"):
        datasets.smooth_surface(x + 1j, np.zeros((1, 3)))
    assert np.all(np.isfinite(datasets.smooth_surface(x * 1e-317, np.zeros((1, 3)))))
    assert before[1].tolist() == x.tolist()


# Public names of these modules covered elsewhere, with the reason.
COVERED_ELSEWHERE = {
    "BootstrapResult": "a result container, returned by bootstrap_ci",
    "PairedComparison": "a result container, returned by paired_comparison",
    "AttentionMaps": "its constructor from_array is fuzzed above",
    "RaggedAttentionMaps": "groups of AttentionMaps (from_array fuzzed above); its own checks "
    "(empty, non-AttentionMaps, repeated layers): tests/attention/test_ragged.py",
    "PruningResult": "a result container, returned by prune_curves",
    "rank_heads": "fuzzed above through one score (_rank)",
    "attention_entropy": "a reduction of AttentionMaps, which from_array checks",
    "head_confidence": "a reduction of AttentionMaps, which from_array checks",
    "head_sparsity": "through sensitivity_sweep above (k, trees)",
    "head_gradient_importance": "needs a model and a loss: tests/attention/test_prune.py",
    "extract_attention": "needs a model: tests/attention/test_extract.py and test_families.py",
    "attention_layout": "needs a model: tests/attention/test_mask.py",
    "mask_heads": "needs a model: tests/attention/test_mask.py",
    "gate_heads": "needs a model: tests/attention/test_mask.py",
    "network_tensor": "a view of AttentionMaps: tests/attention/test_network.py",
    "network_entropy": "tri-Haar l1 entropy of the fuzzed transforms: test_network.py",
    "compare_networks": "organizes two corpora: tests/attention/test_network.py",
    "stdlib_sentences": "a fixed corpus: tests/attention/test_sources.py",
    "dask_head_statistics": "needs a model and dask: tests/test_dask.py",
    "map_head_statistics": "needs a model: tests/test_dask.py",
    "load_head_statistics": "reads files written by map_head_statistics: tests/test_dask.py",
    "read_array": "its lying headers above; text tables in tests/io/test_readers.py",
    "from_anndata": "AnnData containers: tests/io/test_readers.py",
    "LabelledArray": "a result container, returned by read_array",
    "ReadError": "an exception class",
    "MissingDependencyError": "an exception class",
    "make_shuffled_matrix": "tests/test_fuzz.py, and its float limits above",
    "make_shuffled_tensor": "tests/test_fuzz.py",
    "smooth_surface": "tests/test_fuzz.py, and its float limits above",
}
# The specialization lab's models, trainers and integrators run torch for seconds per call:
# they have argument tests of their own beside the module.
COVERED_ELSEWHERE.update(
    {
        name: f"torch runs of seconds each: argument tests in tests/specialization/{where}"
        for name, where in (
            ("AttentionRegressor", "test_model.py"),
            ("attention_forward", "test_model.py"),
            ("attention_weights", "test_model.py"),
            ("bayes_risk", "test_risk.py"),
            ("model_risk", "test_risk.py"),
            ("order_parameters", "test_risk.py"),
            ("integrate_flow", "test_flow.py"),
            ("population_risk", "test_population.py"),
            ("population_risk_gradient", "test_population.py"),
            ("random_initial_order", "test_population.py and test_arguments.py"),
            ("run_specialization_experiment", "test_experiment.py"),
            ("train_online", "test_train.py"),
            ("SingleLocationTask", "test_task.py and test_arguments.py"),
        )
    }
)
COVERED_ELSEWHERE.update(
    {
        "DiscretePrior": "built by spike_prior, fuzzed above; tests/specialization/test_task.py",
        "flipped_spike_prior": "spike_prior's twin (fuzzed above): test_task.py",
        "FlowSpecializationTest": "a result container, returned by run_flow_specialization_test",
        "FlowTrajectory": "a result container, returned by integrate_flow",
        "OrderParameters": "a result container, returned by order_parameters",
        "SpecializationEvents": "a result container, returned by specialization_events",
        "SpecializationExperiment": "a result container of run_specialization_experiment",
        "TrainingHistory": "a result container, returned by train_online",
    }
)


def test_every_analysis_function_is_fuzzed_or_covered():
    fuzzed = {getattr(s.func, "__name__", None) for s in STATS + ATTENTION + SPECIALIZATION}
    fuzzed |= {"from_array"}
    missing = []
    for module in (stats, attention, specialization, datasets, io):
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or name.isupper():
                continue
            if name not in fuzzed and name not in COVERED_ELSEWHERE:
                missing.append(f"{module.__name__}.{name}")
    assert not missing, f"public names without a fuzz spec or a stated reason: {missing}"
