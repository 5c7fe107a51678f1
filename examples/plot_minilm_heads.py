"""
Organizing the attention heads of all-MiniLM-L6-v2
==================================================

The paper's attention analysis on a language model, offline: the 6 x 12 heads of
all-MiniLM-L6-v2 on sentences from standard-library docstrings are stacked into a
query x key x head network tensor, organized with the 3-D questionnaire, and ranked by their
bi-Haar l1 entropy on the organized query and key trees. The ranking is then tested the only way
that counts: pruning heads in its order and watching the sentence embedding drift, against the
standard baselines (attention entropy, confidence, gradient importance, random order).
"""

import numpy as np
import torch

from skorg import QuestionnaireOrganizer
from skorg.attention import (
    attention_entropy,
    extract_attention,
    head_confidence,
    head_gradient_importance,
    head_sparsity,
    network_tensor,
    prune_curves,
    rank_heads,
    ranking_stability,
)
from skorg.attention._setups import (
    embedding_similarity_metric,
    load_minilm,
    mean_pooled_embedding,
    minilm_batch,
)
from skorg.metrics import diffusion_embedding

torch.set_num_threads(2)
N_SENTENCES, MAX_LENGTH = 3, 16  # small defaults; raise them for the paper-sized study

model, tokenizer = load_minilm()
maps = extract_attention(
    model, minilm_batch(tokenizer, N_SENTENCES, max_length=MAX_LENGTH), tokenizer=tokenizer
)
X, head_index = network_tensor(maps, 0)
print("network tensor (queries, keys, heads):", X.shape)


def organize(T):
    return QuestionnaireOrganizer(preset="paper_3d_heads").fit(T).trees_


organizer = QuestionnaireOrganizer(preset="paper_3d_heads").fit(X)
head_tree = organizer.trees_[2]
print("head tree: folders per level", head_tree.level_sizes().tolist())
embedding, _ = diffusion_embedding(organizer.affinities_[2], 2)

# %%
# Ranking by sparsity, beside the baselines
sparsity = head_sparsity(maps, organize=organize)
batch = minilm_batch(tokenizer, 8, max_length=MAX_LENGTH)
direction = torch.randn(8, 384, generator=torch.Generator().manual_seed(0))
gradient = head_gradient_importance(
    model, [batch], lambda m, b: (mean_pooled_embedding(m, b) * direction).sum()
)
table = rank_heads(
    {
        "sparsity": sparsity,
        "attention_entropy": attention_entropy(maps),
        "confidence": head_confidence(maps),
        "gradient": gradient,
    }
)
print("sparsest heads (layer, head):", head_index[table["orders"]["sparsity"][:5]].tolist())
stability = ranking_stability(sparsity, fraction=0.1)
print("heads always in the bottom 10%:", head_index[stability["always_bottom"]].tolist())

# %%
# Pruning curves
result = prune_curves(
    model,
    table,
    embedding_similarity_metric(model, batch, per_input=True),
    fractions=np.linspace(0, 1, 6),
)
print(result.summary())

try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
if plt is not None:
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    best = table["orders"]["sparsity"][0]
    rows, cols = organizer.orders_[0], organizer.orders_[1]
    axes[0].imshow(X[np.ix_(rows, cols, [best])][:, :, 0], cmap="viridis")
    axes[0].set_title(f"organized head {tuple(head_index[best])}")
    axes[1].scatter(*embedding.T, c=head_index[:, 0], cmap="tab10")
    axes[1].set_title("diffusion embedding of heads (colour: layer)")
    for name, curve in result.curves.items():
        axes[2].plot(result.fractions, curve, marker="o", label=name)
    axes[2].set_xlabel("fraction of heads removed")
    axes[2].set_ylabel("cosine to unpruned embedding")
    axes[2].legend()
    fig.tight_layout()
