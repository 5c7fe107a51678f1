import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plot_head_specialization.py"


@pytest.mark.slow
def test_example_small_run():
    spec = importlib.util.spec_from_file_location("plot_head_specialization", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    exp, sweep, heads, curves = module.main(["--no-plot"])
    assert set(exp) == {"softmax", "bayes_softmax"}
    assert sweep.dims == module.SMALL["sweep_dims"]
    _, r_bayes, closed, risks, trained = heads
    # closed-form weights: Bayes-softmax is the posterior mean, softmax cannot switch heads off
    assert abs(closed["bayes_softmax"] - r_bayes) < 0.02
    assert closed["softmax"] > r_bayes + 1.0
    assert all(len(r) == len(module.SMALL["head_counts"]) for r in risks.values())
    for norm, curve in curves.items():
        assert len(curve) == trained[norm].n_heads
        assert np.all(np.asarray(curve) >= r_bayes - 0.02)
