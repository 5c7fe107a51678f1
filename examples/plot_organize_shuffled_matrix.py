"""
Organize shuffled smooth matrices
=================================

Smooth surfaces (an attention-like band, a curved ridge, a product shape) are sampled at
random latent points; rows and columns are shuffled and noise is added. The questionnaire
learns a tree on each axis; each leaf-ordering strategy turns the result into an order,
compared with the hidden one by ``|Spearman|`` and by the Neumann stress of the reordered
matrix (relative to the stress in the true order; lower is smoother).

The baselines are SciPy's hierarchical clustering (average and single linkage on Euclidean
distances) with optimal leaf ordering, applied to the rows and to the columns separately.

Run ``python examples/plot_organize_shuffled_matrix.py --small`` for a quick version.
"""

import argparse
import time

import numpy as np
from scipy.cluster.hierarchy import leaves_list, linkage

from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix
from skorg.metrics import neumann_stress, order_spearman


def scipy_orders(X, method):
    rows = leaves_list(linkage(X, method, optimal_ordering=True))
    cols = leaves_list(linkage(X.T, method, optimal_ordering=True))
    return rows, cols


def evaluate(data, rows, cols):
    truth = neumann_stress(data.X[np.ix_(data.row_true_order, data.col_true_order)])
    rho = 0.5 * (
        order_spearman(rows, data.row_true_order) + order_spearman(cols, data.col_true_order)
    )
    return rho, neumann_stress(data.X[np.ix_(rows, cols)]) / truth


def main(sizes=(64, 128), seeds=(0, 1, 2), noise=0.05):
    methods = {
        "questionnaire smoothest (default)": {},
        "questionnaire shortest": {"ordering": "shortest"},
        "questionnaire emd_olo": {"ordering": "emd_olo"},
        "questionnaire tree_olo": {"ordering": "tree_olo"},
        "questionnaire tree (original rule)": {"ordering": "tree"},
        "questionnaire Hoelder preset": {"preset": "paper_2d_holder"},
        "questionnaire emd_olo, alpha=0 beta=0": {"emd_beta": 0.0, "ordering": "emd_olo"},
    }
    baselines = {f"scipy {m} linkage + OLO": m for m in ("average", "single")}
    results = {name: [] for name in [*methods, *baselines]}
    start = time.perf_counter()
    for kind in ("band", "ridge", "product"):
        for n in sizes:
            for seed in seeds:
                data = make_shuffled_matrix(n, n, kind=kind, noise=noise, random_state=seed)
                for name, params in methods.items():
                    org = QuestionnaireOrganizer(**params).fit(data.X)
                    results[name].append(evaluate(data, org.row_order_, org.column_order_))
                for name, method in baselines.items():
                    results[name].append(evaluate(data, *scipy_orders(data.X, method)))
    n_cases = len(results["scipy average linkage + OLO"])
    print(
        f"{n_cases} shuffled matrices, sizes {sizes}, noise {noise} "
        f"({time.perf_counter() - start:.1f} s)"
    )
    print(f"{'method':<36}{'mean |rho|':>12}{'stress/true':>13}")
    for name, values in results.items():
        rho, stress = np.mean(values, axis=0)
        print(f"{name:<36}{rho:>12.3f}{stress:>13.2f}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--small", action="store_true", help="one size, one seed")
    args = parser.parse_args()
    if args.small:
        main(sizes=(48,), seeds=(0,))
    else:
        main()
