"""``skorg attention --model DIR`` end to end on local directories of several families."""

import json

import numpy as np
import pytest
import torch

from skorg._cli import main

from .families import gpt2, t5
from .test_sources import _save_tokenizer


def _save(build, path):
    model, _, _ = build()
    if build is gpt2:  # what users save: the language model, with its head
        from transformers import GPT2LMHeadModel

        torch.manual_seed(0)
        model = GPT2LMHeadModel(model.config).eval()
    model.save_pretrained(path)
    _save_tokenizer(path, 60)
    text = path / "text.txt"
    text.write_text("w1 w2 w3 w4 w5 w6\nw7 w8 w9\n")
    return text


# a causal language model (masked logits in every analysis) and an encoder-decoder; the other
# families go through the same extraction, tested in test_families.py
@pytest.mark.parametrize("build", [gpt2, t5], ids=lambda b: b.__name__)
def test_attention_command_on_a_local_directory(build, tmp_path, capsys):
    model_dir = tmp_path / build.__name__
    text = _save(build, model_dir)
    out_dir = tmp_path / "out"
    argv = ["attention", "--model", model_dir, "--text-file", text, "--max-length", 8]
    code = main([str(a) for a in [*argv, "--prune-steps", 2, "-o", out_dir, "--quiet"]])
    _, err = capsys.readouterr()
    assert code == 0, err
    results = json.loads((out_dir / "results.json").read_text())
    heads = results["tables"]["head_scores"]
    assert len(heads) == 2 * 4  # two layers of four heads
    for row in heads:  # every score is a number: nothing broke on masked logits
        assert all(np.isfinite(v) for v in row.values() if isinstance(v, float))
    cases = {r["case"] for r in results["tables"]["paraproduct_residuals"]}
    assert cases
    causal = build is gpt2
    # causal heads: only their unmasked block is analysed, and the table says so
    assert all(("unmasked" in c) == causal for c in cases if c.startswith("head")), cases
    if build is t5:
        assert "encoder of the local model" in results["summary"][0]


def test_attention_command_on_a_model_without_attention_exits_2(tmp_path, capsys):
    import transformers
    from transformers import MambaConfig, MambaModel

    torch.manual_seed(0)
    config = MambaConfig(vocab_size=60, hidden_size=16, num_hidden_layers=1, state_size=4)
    model_dir = tmp_path / "mamba"
    MambaModel(config).save_pretrained(model_dir)
    _save_tokenizer(model_dir, 60)
    text = model_dir / "text.txt"
    text.write_text("w1 w2 w3\n")
    argv = ["attention", "--model", model_dir, "--text-file", text, "--max-length", 6]
    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # its kernel notices are not skorg's output
    try:
        code = main([str(a) for a in [*argv, "-o", tmp_path / "out", "--quiet"]])
    finally:
        transformers.logging.set_verbosity(level)
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("skorg: error: cannot analyse the attention of") and "mamba" in last


def _one_line_exit_2(argv, capsys):
    import transformers

    capsys.readouterr()  # what saving the model printed
    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # the library's notices are not skorg's output
    try:
        code = main([str(a) for a in argv])
    finally:
        transformers.logging.set_verbosity(level)
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_attention_command_on_a_longformer_directory(tmp_path, capsys):
    """Its sliding-window maps (test_banded.py) go through the whole report."""
    from .families_long import longformer

    model, _, _ = longformer()
    model_dir = tmp_path / "longformer"
    model.save_pretrained(model_dir)
    _save_tokenizer(model_dir, 60)
    text = model_dir / "text.txt"
    text.write_text("w1 w2 w3 w4 w5 w6\nw7 w8 w9\n")
    out_dir = tmp_path / "out"
    argv = ["attention", "--model", model_dir, "--text-file", text, "--max-length", 8]
    code = main([str(a) for a in [*argv, "--prune-steps", 2, "-o", out_dir, "--quiet"]])
    _, err = capsys.readouterr()
    assert code == 0, err
    results = json.loads((out_dir / "results.json").read_text())
    heads = results["tables"]["head_scores"]
    assert len(heads) == 2 * 4
    for row in heads:
        assert all(np.isfinite(v) for v in row.values() if isinstance(v, float))


def _report(argv, capsys):
    import transformers

    capsys.readouterr()
    level = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        code = main([str(a) for a in argv])
    finally:
        transformers.logging.set_verbosity(level)
    _, err = capsys.readouterr()
    assert code == 0, err
    out = argv[argv.index("-o") + 1]
    return json.loads((out / "results.json").read_text())


_FAST = ["--prune-steps", 2, "--n-random", 2, "--n-resamples", 100, "--quiet"]


@pytest.mark.parametrize("name", ["swin", "swinv2", "swin-2stages"])
def test_attention_command_on_a_swin_directory(name, tmp_path, capsys):
    """Every block at image positions, on scikit-learn's digits: the whole report (two
    stages of 2 and 4 heads: every head of both ranked and pruned)."""
    from skorg.attention import extract_attention, head_sparsity
    from skorg.organize import QuestionnaireOrganizer
    from skorg.report._attention_setup import PRESET, digit_images

    from .families_long import LONG_WINDOWED

    model, _, _ = LONG_WINDOWED[name]()
    model_dir = tmp_path / name
    model.save_pretrained(model_dir)
    argv = ["attention", "--model", model_dir, "--n-organize", 3, *_FAST, "-o", tmp_path / "o"]
    results = _report(argv, capsys)
    heads = results["tables"]["head_scores"]
    assert "mapped back to image positions" in results["meta"]["attention read as"]
    assert (
        results["meta"]["embedding"] == "the mean over the patch positions of the last hidden state"
    )
    # the 3-D sections: the group of the most heads (the second stage's 2 x 2 patches)
    positions = 4 if name == "swin-2stages" else 16
    assert "scikit-learn's digits" in results["summary"][0]
    assert f"sample 0 has {positions} tokens" in results["summary"][0]
    # the report's sparsity is that of the image maps, organized as the report does
    pixels, _ = digit_images((8, 8), 1)
    maps = extract_attention(model, {"pixel_values": pixels[:3]}, windows="image")
    want = head_sparsity(
        maps, organize=lambda T: QuestionnaireOrganizer(preset=PRESET).fit(T).trees_
    ).mean(axis=0)
    got = {r["head"]: r["sparsity"] for r in heads}
    assert sorted(got) == sorted(f"L{l}H{h}" for l, h in maps.head_index())
    assert len(results["tables"]["pruning_curves"]) == 2
    np.testing.assert_allclose([got[f"L{l}H{h}"] for l, h in maps.head_index()], want, rtol=1e-12)


def test_attention_command_on_a_swin_directory_refuses_text(tmp_path, capsys):
    from .families_long import LONG_WINDOWED

    model, _, _ = LONG_WINDOWED["swin"]()
    model_dir = tmp_path / "swin"
    model.save_pretrained(model_dir)
    text = tmp_path / "text.txt"
    text.write_text("w1 w2 w3\n")
    argv = ["attention", "--model", model_dir, "--text-file", text, "-o", tmp_path / "out"]
    line = _one_line_exit_2([*argv, "--quiet"], capsys)
    assert line.startswith("skorg: error: ") and "holds a swin model, which takes images" in line


def test_attention_command_on_a_funnel_directory(tmp_path, capsys):
    """Pooled layers: every head ranked and pruned; the 3-D sections on the largest group; the
    sentence embedding from the last full-length hidden state, and the report says so."""
    from .test_ragged import funnel

    model, _ = funnel()
    model_dir = tmp_path / "funnel"
    model.save_pretrained(model_dir)
    _save_tokenizer(model_dir, 60)
    text = model_dir / "text.txt"
    text.write_text("w1 w2 w3 w4 w5 w6\nw7 w8 w9\nw2 w4 w6 w8\n")
    argv = ["attention", "--model", model_dir, "--text-file", text, "--max-length", 8]
    results = _report([*argv, *_FAST, "-o", tmp_path / "out"], capsys)
    heads = results["tables"]["head_scores"]
    assert len(heads) == 3 * 4  # three layers of four heads, of three sizes
    for row in heads:
        assert all(np.isfinite(v) for v in row.values() if isinstance(v, float))
    assert results["meta"]["embedding"].startswith(
        "the mean over the real tokens of hidden_states[1]"
    )
    assert "3 layers of 3 different sizes" in results["summary"][0]
    assert "use layers [0] (4 of the 12 heads" in results["summary"][1]
    assert len(results["tables"]["head_embedding"]) == 4  # the head tree of that group


def test_attention_command_on_a_segformer_directory(tmp_path, capsys):
    """Reduced keys, stages of 2 and 4 heads, no image_size in the config (64 x 64 is used and
    said), and a (batch, channels, height, width) last hidden state."""
    from .test_ragged import segformer

    model, _ = segformer()
    model.save_pretrained(tmp_path / "segformer")
    argv = ["attention", "--model", tmp_path / "segformer", "--n-organize", 3]
    results = _report([*argv, *_FAST, "-o", tmp_path / "out"], capsys)
    assert sorted(r["head"] for r in results["tables"]["head_scores"]) == [
        "L0H0", "L0H1", "L1H0", "L1H1", "L1H2", "L1H3",
    ]  # fmt: skip
    assert "resized to 64 x 64 (the model names no image size)" in results["summary"][0]
    assert "use layers [1] (4 of the 6 heads" in results["summary"][1]  # the square group
