"""
Organizing the attention heads of a small ViT on digits
=======================================================

A tiny vision transformer (8 x 8 images, 2 x 2 patches) is trained in seconds on
scikit-learn's digits; its heads are organized with the 3-D questionnaire on the
query x key x head network tensor of held-out images, ranked by bi-Haar l1 entropy, and pruned
in that order against the baselines, with held-out accuracy as the metric.
"""

import numpy as np
import torch
import torch.nn.functional as F

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
from skorg.attention._setups import accuracy_metric, train_digits_vit
from skorg.metrics import diffusion_embedding

torch.set_num_threads(2)
N_EPOCHS, N_IMAGES = 10, 4  # small defaults; the test suite trains the full 30 epochs

model, data = train_digits_vit(n_epochs=N_EPOCHS)
metric = accuracy_metric(data["X_test"], data["y_test"])
print(f"held-out accuracy: {metric(model):.3f}")
maps = extract_attention(model, {"pixel_values": data["X_test"][:N_IMAGES]})
X, head_index = network_tensor(maps, 0)
print("network tensor (queries, keys, heads):", X.shape)

organizer = QuestionnaireOrganizer(preset="paper_3d_heads").fit(X)
print("head tree: folders per level", organizer.trees_[2].level_sizes().tolist())
embedding, _ = diffusion_embedding(organizer.affinities_[2], 2)


def organize(T):
    return QuestionnaireOrganizer(preset="paper_3d_heads").fit(T).trees_


# %%
# Ranking by sparsity, beside the baselines, and its stability across images
sparsity = head_sparsity(maps, organize=organize)
batches = [(data["X_train"][i : i + 200], data["y_train"][i : i + 200]) for i in range(0, 400, 200)]
gradient = head_gradient_importance(
    model, batches, lambda m, b: F.cross_entropy(m(pixel_values=b[0]).logits, b[1])
)
table = rank_heads(
    {
        "sparsity": sparsity,
        "attention_entropy": attention_entropy(maps),
        "confidence": head_confidence(maps),
        "gradient": gradient,
    }
)
stability = ranking_stability(sparsity, fraction=0.1)
print("top-10% overlap across images:", round(stability["top_overlap"], 3))

# %%
# Pruning curves
result = prune_curves(model, table, metric, fractions=np.linspace(0, 1, 5))
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
    axes[2].set_ylabel("held-out accuracy")
    axes[2].legend()
    fig.tight_layout()
