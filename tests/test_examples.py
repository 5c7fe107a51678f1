"""Every example in examples/ runs on small sizes and prints what its text promises."""

import re
import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# how each example runs small: command-line arguments and whether it is run as a script
SMALL = {
    "plot_organize_shuffled_matrix.py": ["--small"],
    "plot_haar_compression.py": [],
    "plot_wavelet_packets.py": [],  # SKORG_EXAMPLE_SMALL=1
    "plot_paraproduct_softmax_invariance.py": [],
    "plot_survey_questionnaire.py": [],  # SKORG_EXAMPLE_SMALL=1
    "plot_grid_search_emd.py": [],  # SKORG_EXAMPLE_SMALL=1
    "plot_minilm_heads.py": [],  # small by default (3 sentences of 16 tokens)
    "plot_digits_vit_heads.py": [],  # small by default (10 epochs, 4 images)
    "plot_effective_dynamics.py": ["--tiny"],
}
# run by tests/specialization/test_example.py (its small run takes a while on its own)
ELSEWHERE = {"plot_head_specialization.py"}
NEEDS_TORCH = {"plot_minilm_heads.py", "plot_digits_vit_heads.py", "plot_effective_dynamics.py"}


def test_every_example_is_run_by_a_test():
    assert {p.name for p in EXAMPLES.glob("plot_*.py")} == set(SMALL) | ELSEWHERE


def run_example(name, monkeypatch, capsys):
    import matplotlib

    matplotlib.use("Agg")  # plt.show() returns at once
    import matplotlib.pyplot as plt

    monkeypatch.setenv("SKORG_EXAMPLE_SMALL", "1")
    monkeypatch.setattr(sys, "argv", [name, *SMALL[name]])
    monkeypatch.chdir(EXAMPLES)
    try:
        runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    finally:
        plt.close("all")
    return capsys.readouterr().out


def numbers(pattern, text):
    return [float(v) for v in re.search(pattern, text).groups()]


@pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive:UserWarning")
@pytest.mark.parametrize("name", sorted(SMALL))
def test_example_runs_small(name, monkeypatch, capsys):
    if name in NEEDS_TORCH:
        pytest.importorskip("torch")
    out = run_example(name, monkeypatch, capsys)
    if name == "plot_survey_questionnaire.py":
        people, questions = numbers(r"people ([\d.]+), questions ([\d.]+)", out)
        learned, given = numbers(r"learned trees ([\d.]+), on the given order ([\d.]+)", out)
        assert questions > 0.9 and people > 0.5
        assert learned < given
    elif name == "plot_grid_search_emd.py":
        scores = [float(line.split()[3]) for line in out.splitlines()[1:5]]
        assert scores == sorted(scores, reverse=True) and len(scores) == 4  # 2 x 2 x 1 grid
        assert "best: {'emd_alpha'" in out
    elif name == "plot_organize_shuffled_matrix.py":
        assert re.search(r"3 shuffled matrices, sizes \(48,\)", out)
    elif name == "plot_haar_compression.py":
        organized, random = numbers(r"l1 all\s+([\d.]+)\s+([\d.]+)", out)
        assert organized < random
    elif name == "plot_wavelet_packets.py":
        haar, best = numbers(r"tree Haar ([\d.]+), best packet basis ([\d.]+)", out)
        assert best <= haar
        haar, best, tiling = numbers(
            r"tree Haar ([\d.]+), best separable ([\d.]+), 2-D tiling ([\d.]+)", out
        )
        assert tiling <= best <= haar
        assert len(re.findall(r"keep\s+\d+%: relative error", out)) == 4
    elif name == "plot_paraproduct_softmax_invariance.py":
        assert "Reviewers' 4 x 4 test" in out and "softmax_collapsed" in out
    elif name == "plot_effective_dynamics.py":
        gaps = [float(g) for g in re.findall(r"max_t \|m_SGD - m_flow\| = ([\d.]+)", out)]
        assert len(gaps) == 2 and all(0 <= g < 1 for g in gaps)  # D = 32, 64
        # 2 initializations per learning rate: the Wilson 95% interval of k = 0 of n = 2 is
        # [0, z^2 / (n + z^2)] = [0, 0.66] in closed form
        held = re.findall(r"\s+\d+ \[([\d.]+), ([\d.]+)\]", out)
        assert held and all((lo, hi) == ("0.00", "0.66") for lo, hi in held[:1])
        assert "participation ratio" in out
    else:
        assert "network tensor (queries, keys, heads)" in out
        assert "ranking" in out and "sparsity" in out
