"""
Best Haar-Walsh bases on organized trees
========================================

The tree Haar basis is one basis of a much larger dictionary that the same trees define:
the generalized Haar-Walsh wavelet packets. Every basis of the dictionary is orthonormal;
the best-basis search picks the one in which the data are sparsest. Here scikit-learn's
handwritten digits (images x pixels) are organized by a
:class:`~skorg.QuestionnaireOrganizer`, and on the learned trees the best separable packet
basis is compared with the tree Haar basis: the l1 cost of all coefficients, and the error
after keeping the same number of the largest coefficients; on fewer images, also the 2-D
(non-separable) tiling. The figure shows which levels of each tree's dictionary the chosen
basis uses.
"""

import os

import numpy as np
from sklearn.datasets import load_digits

from skorg import QuestionnaireOrganizer
from skorg.transforms import (
    best_wavelet_packet_tiling_2d,
    haar_compress,
    multi_best_wavelet_packet_basis,
    multi_haar_transform,
    multi_wavelet_packet_transform,
    wavelet_packet_info,
)

small = os.environ.get("SKORG_EXAMPLE_SMALL") == "1"

# %%
# The digits: images x non-constant pixels, fewer images in the small run of the tests.
X, _ = load_digits(return_X_y=True)
X = X[:, X.std(axis=0) > 0]
X = X[: 200 if small else 1000].astype(np.float64)
org = QuestionnaireOrganizer(n_iter=1 if small else 3).fit(X)
trees = [org.row_tree_, org.column_tree_]

# %%
# The separable best basis (one basis per axis, chosen by alternating over the axes from
# the tree Haar basis, so never costlier than it) against the tensor Haar basis.
bases = multi_best_wavelet_packet_basis(X, trees)
norm = np.linalg.norm(X)
haar_l1 = np.abs(multi_haar_transform(X, trees)).sum() / norm
best_l1 = np.abs(multi_wavelet_packet_transform(X, trees, bases)).sum() / norm
print(f"normalized l1 cost: tree Haar {haar_l1:.2f}, best packet basis {best_l1:.2f}")
for axis, basis in zip(("images", "pixels"), bases):
    print(f"  {axis}: {basis.direction} basis, levels used {np.unique(basis.levels).tolist()}")

# %%
# Keep the same number of largest coefficients in both bases.
fractions = [0.01, 0.02, 0.05, 0.1]
errors = {"tree Haar": [], "best basis": []}
for fraction in fractions:
    errors["tree Haar"].append(haar_compress(X, trees, fraction=fraction).relative_error)
    errors["best basis"].append(
        haar_compress(X, trees, fraction=fraction, basis=bases).relative_error
    )
for fraction, e_haar, e_best in zip(fractions, *errors.values(), strict=True):
    print(f"keep {fraction:4.0%}: relative error {e_haar:.3f} (Haar), {e_best:.3f} (best)")

# %%
# The best basis minimizes the l1 cost, not the error of a given count: the two measures
# can disagree, which the table shows either way.

# %%
# The 2-D tiling: tiles in both axes at once, so that the images may be split differently
# for one group of pixels than for another. Its search is quadratic in the tiles of the two
# trees (it refuses, before it starts, sizes past its limit), so it runs here on the first
# images only, organized on their own.
m = 40 if small else 100
sub = X[:m]
org_sub = QuestionnaireOrganizer(n_iter=1 if small else 3).fit(sub)
sub_trees = [org_sub.row_tree_, org_sub.column_tree_]
tiling = best_wavelet_packet_tiling_2d(sub, sub_trees)
sub_norm = np.linalg.norm(sub)
sub_haar = np.abs(multi_haar_transform(sub, sub_trees)).sum() / sub_norm
sub_bases = multi_best_wavelet_packet_basis(sub, sub_trees)
sub_best = np.abs(multi_wavelet_packet_transform(sub, sub_trees, sub_bases)).sum() / sub_norm
print(
    f"first {m} images: tree Haar {sub_haar:.2f}, best separable {sub_best:.2f}, "
    f"2-D tiling {tiling.cost / sub_norm:.2f}"
)

# %%
# The chosen basis: for every axis, the dictionary entries (level x position) it uses.
try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
if plt is not None:
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, tree, basis, name in zip(axes[:2], trees, bases, ("images", "pixels")):
        tags = wavelet_packet_info(tree)["tag"]
        used = np.full(tags.shape, np.nan)
        used[basis.levels, basis.positions] = tags[basis.levels, basis.positions]
        ax.imshow(used, aspect="auto", interpolation="nearest", cmap="viridis")
        ax.set_title(f"{name}: chosen entries (colour: tag)")
        ax.set_xlabel("position (packet order)")
        ax.set_ylabel("level")
    for name, errs in errors.items():
        axes[2].semilogy(fractions, errs, "o-", label=name)
    axes[2].set_xlabel("fraction of coefficients kept")
    axes[2].set_ylabel("relative error")
    axes[2].legend()
    fig.tight_layout()
    plt.show()
