"""
Does softmax collapse on organized attention? A numerical verdict on Eq. 18
===========================================================================

The paper "Intrinsic and Extrinsic Organized Attention" (arXiv 2506.15541)
expands the row-wise softmax of an attention head with a tensor paraproduct,
``D_{j,j'} ~ A'(u) c + A''(u) a b``, and its Corollary 1 (Eq. 18) then sets
``A' = A'' = exp(P f) = exp(0) = 1`` ("softmax invariance"). Reviewers objected
that the softmax derivative is a row-wise Jacobian with entries bounded by 1/4,
and proposed a concrete test: a 4 x 4 logit matrix with a 2 x 2 block of value
``M`` in a corner, for ``M = 1, 10, 100, 1000``.

This script runs that test and the same comparison on larger, smooth
("organized") logit matrices, in their true order and shuffled. Four variants
are compared with ``softmax(f)``:

* ``exact`` - the telescoping identity (must be round-off);
* ``softmax`` - the paraproduct with the true Jacobian and second derivative;
* ``softmax_exp`` - the paper's ``A' = A'' = exp`` with the row normalizer held
  constant;
* ``softmax_collapsed`` - the paper's Eq. 18, ``A' = A'' = 1``.

``rel_error`` is ``||softmax(f) - approximation|| / ||softmax(f)||`` where the
approximation is the exact part left outside the expanded scales plus the
variant's expansion; ``rel_error_terms`` compares the expansion alone (the
right-hand side of Eq. 18 without its remainder). ``jacobian_max`` is the
largest softmax Jacobian entry at the averages ``u = P_{j,j'} f`` and
``log10_exp_Pf_max`` the size of ``exp(P f)`` that the paper sets to 1.
"""

import numpy as np

from skorg.transforms import corner_block_logits, format_table, softmax_invariance_check

COLUMNS = [
    "case",
    "variant",
    "rel_error",
    "rel_error_terms",
    "factor_max",
    "jacobian_max",
    "log10_exp_Pf_max",
]


def concrete_test(Ms=(1, 10, 100, 1000)):
    """The reviewers' 4 x 4 test, one row per (M, variant)."""
    rows = []
    for M in Ms:
        for row in softmax_invariance_check(corner_block_logits(float(M))):
            rows.append({"case": f"M={M}", **row})
    return rows


def organized_logits(n, scale=4.0):
    """A smooth attention-like logit matrix (band around the diagonal)."""
    x = (np.arange(n) + 0.5) / n
    width = 0.12 + 0.08 * x[:, None]
    band = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2 * width**2))
    return scale * (band + 0.25 * (1 + np.sin(2 * np.pi * x))[:, None] * x[None, :])


def organized_test(n=128, seed=0):
    """True order against shuffled rows and columns, all scales and the paper's band."""
    f = organized_logits(n)
    rng = np.random.default_rng(seed)
    shuffled = f[np.ix_(rng.permutation(n), rng.permutation(n))]
    rows = []
    for label, logits in (("ordered", f), ("shuffled", shuffled)):
        for scales in ("all", "paper"):
            for row in softmax_invariance_check(logits, scales=scales):
                rows.append({"case": f"{n}x{n} {label} scales={scales}", **row})
    return rows


def plot(rows):
    """Relative error against M for each variant (only if matplotlib is installed)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for variant in ("softmax", "softmax_exp", "softmax_collapsed"):
        sel = [r for r in rows if r["variant"] == variant]
        Ms = [float(r["case"][2:]) for r in sel]
        ax.loglog(Ms, [r["rel_error"] for r in sel], "o-", label=variant)
    ax.set_xlabel("M (block logit)")
    ax.set_ylabel("relative error vs softmax(f)")
    ax.set_title("4 x 4 corner-block test")
    ax.legend()
    fig.tight_layout()
    return fig


if __name__ == "__main__":
    rows = concrete_test()
    print("Reviewers' 4 x 4 test: f = [[0,0,0,0],[0,0,0,0],[0,0,M,M],[0,0,M,M]]\n")
    print(format_table(rows, COLUMNS))
    print("\nOrganized 128 x 128 logits, true order against shuffled\n")
    print(format_table(organized_test(), COLUMNS))
    fig = plot(rows)
    if fig is not None:
        import matplotlib.pyplot as plt

        plt.close(fig) if plt.get_backend().lower() == "agg" else plt.show()
