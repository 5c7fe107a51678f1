"""TransformerLens 4.x (``TransformerBridge`` only), installed beside the environment.

TransformerLens 4 removed ``HookedTransformer``, so it cannot share the test environment with
the 3.x release that the ``test`` extra pins. The README's test command installs it with
``pip install --no-deps --target .tl4``; this module runs the checks in a subprocess with that
folder first on ``PYTHONPATH`` (or the folder named by ``SKORG_TL4_PATH``), and asserts the
figures that the subprocess prints as one JSON line.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .families import gpt2
from .test_sources import _save_tokenizer, _tlens_batch

REPO = Path(__file__).resolve().parents[2]

# Runs under TransformerLens 4 with the model directory and the batch as arguments; every
# figure is computed here and checked by the parent, so a failure shows the numbers.
SCRIPT = r"""
import importlib.metadata, json, sys
import numpy as np, torch
import transformer_lens
from transformer_lens.model_bridge import TransformerBridge
from transformers import GPT2LMHeadModel
from skorg.attention import attention_layout, extract_attention, mask_heads

torch.set_num_threads(2)
path, ids, mask = sys.argv[1], *(torch.tensor(a) for a in json.loads(sys.argv[2]))
try:
    transformer_lens.HookedTransformer
    removed = False
except (AttributeError, ImportError):
    removed = True
bridge = TransformerBridge.boot_transformers(path, device="cpu")
maps = extract_attention(bridge, {"input": ids, "attention_mask": mask})
hf = GPT2LMHeadModel.from_pretrained(path, attn_implementation="eager").eval()
with torch.no_grad():
    ref = torch.stack(hf(ids, attention_mask=mask, output_attentions=True).attentions, 1)
ref = ref.double().numpy()
ok = np.broadcast_to(maps.mask[:, None, None], ref.shape)
back = torch.softmax(torch.from_numpy(maps.logits).double(), -1).nan_to_num(0.0).numpy()
n_heads = maps.probs.shape[2]
seen = {}


def keep(z, hook):
    seen[hook.name] = z.detach().clone()


hooks = [(f"blocks.{i}.attn.hook_z", keep) for i in range(maps.probs.shape[1])]


def run():
    seen.clear()
    bridge.run_with_hooks(ids, fwd_hooks=hooks)
    # (batch, position, heads, d_head) whichever way the bridge lays hook_z out
    return [z.unflatten(-1, (n_heads, -1)) if z.dim() == 3 else z for z in seen.values()]


plain = run()
with mask_heads(bridge, [(1, 2)]):
    masked = run()
after = run()
others = [h for h in range(n_heads) if h != 2]
print(json.dumps({
    "version": importlib.metadata.version("transformer-lens"),
    "file": transformer_lens.__file__,
    "hooked_transformer_removed": removed,
    "kind": attention_layout(bridge).kind,
    "shape": list(maps.probs.shape),
    "padding_masked": bool(not maps.mask[1, :, 4:].any() and maps.mask[0, -1].all()),
    "max_error_vs_hf_eager": float(np.abs(maps.probs[ok] - ref[ok]).max()),
    "max_error_softmax_logits": float(np.abs(back - maps.probs).max()),
    "masked_head_max_abs": float(masked[1][:, :, 2].abs().max()),
    "masked_head_plain_max_abs": float(plain[1][:, :, 2].abs().max()),
    "other_heads_changed": float((masked[1][:, :, others] - plain[1][:, :, others]).abs().max()),
    "layer0_changed": float((masked[0] - plain[0]).abs().max()),
    "restored_changed": max(float((a - p).abs().max()) for a, p in zip(after, plain)),
}))
"""


def _tl4_path():
    path = Path(os.environ.get("SKORG_TL4_PATH", REPO / ".tl4"))
    if not (path / "transformer_lens").is_dir():
        pytest.skip(
            f"TransformerLens 4.x is not installed in {path}: run the README's test-command step "
            "`python -m pip install --no-deps --upgrade --target .tl4 transformer-lens==4.3.0` "
            "(or set SKORG_TL4_PATH to such a folder)"
        )
    return path


@pytest.mark.slow  # a fresh interpreter importing torch, transformers and TransformerLens
def test_transformer_bridge_of_transformer_lens_4(tmp_path):
    tl4 = _tl4_path()
    import torch
    from transformers import GPT2LMHeadModel

    model, _, _ = gpt2()
    torch.manual_seed(0)
    GPT2LMHeadModel(model.config).eval().save_pretrained(tmp_path / "gpt2")
    _save_tokenizer(tmp_path / "gpt2")
    ids, mask = _tlens_batch()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tl4), str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    (tmp_path / "check.py").write_text(SCRIPT)
    args = json.dumps([ids.tolist(), mask.tolist()])
    out = subprocess.run(
        [sys.executable, str(tmp_path / "check.py"), str(tmp_path / "gpt2"), args],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(got))  # the figures, shown with -s
    assert got["version"].startswith("4."), got
    assert Path(got["file"]).resolve().is_relative_to(tl4.resolve()), got
    assert got["hooked_transformer_removed"], got
    assert got["kind"] == "tlens" and got["shape"] == [2, 2, 4, 6, 6], got
    assert got["padding_masked"], got
    assert got["max_error_vs_hf_eager"] <= 1e-5, got
    assert got["max_error_softmax_logits"] <= 1e-6, got
    # mask_heads: exactly head (1, 2) is zero, every other head as before, restored on exit
    assert got["masked_head_max_abs"] == 0.0 and got["masked_head_plain_max_abs"] > 0, got
    assert got["other_heads_changed"] == 0.0 and got["layer0_changed"] == 0.0, got
    assert got["restored_changed"] == 0.0, got
