"""The ``skorg`` command line."""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["main"]


class UsageError(Exception):
    """A user mistake: reported in one line with exit code 2."""


def _scipy_olo_order(X):
    from scipy.cluster.hierarchy import leaves_list, linkage

    return leaves_list(linkage(X, "average", optimal_ordering=True))


def _demo(args):
    import numpy as np

    from .datasets import make_shuffled_matrix
    from .metrics import neumann_stress, order_spearman
    from .organize import QuestionnaireOrganizer

    if args.size < 4:
        raise UsageError(f"--size must be at least 4, got {args.size}")
    data = make_shuffled_matrix(
        args.size, args.size, kind=args.kind, noise=args.noise, random_state=args.seed
    )
    X = data.X
    truth = neumann_stress(X[np.ix_(data.row_true_order, data.col_true_order)])
    print(f"shuffled {args.kind} matrix {X.shape}, noise {args.noise}, seed {args.seed}")
    print(f"{'method':<34}{'|rho| rows':>11}{'|rho| cols':>11}{'stress/true':>13}{'time s':>9}")
    rows = []
    for ordering in ("emd_olo", "tree_olo", "tree"):
        start = time.perf_counter()
        org = QuestionnaireOrganizer(n_iter=args.n_iter, ordering=ordering).fit(X)
        rows.append(
            (
                f"questionnaire, ordering={ordering}",
                org.row_order_,
                org.column_order_,
                time.perf_counter() - start,
            )
        )
    start = time.perf_counter()
    rows.append(
        (
            "scipy average + optimal leaf order",
            _scipy_olo_order(X),
            _scipy_olo_order(X.T),
            time.perf_counter() - start,
        )
    )
    for name, r, c, seconds in rows:
        rho_r = order_spearman(r, data.row_true_order)
        rho_c = order_spearman(c, data.col_true_order)
        stress = neumann_stress(X[np.ix_(r, c)]) / truth
        print(f"{name:<34}{rho_r:>11.3f}{rho_c:>11.3f}{stress:>13.2f}{seconds:>9.2f}")
    return 0


def _build_parser():
    parser = argparse.ArgumentParser(
        prog="skorg", description="Organize matrices and tensors with partition trees."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="organize a shuffled smooth matrix and report how well the order came back"
    )
    demo.add_argument("--size", type=int, default=128, help="rows and columns (default 128)")
    demo.add_argument("--kind", choices=["band", "ridge", "product"], default="band")
    demo.add_argument("--noise", type=float, default=0.05)
    demo.add_argument("--n-iter", type=int, default=3)
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None):
    """Run the command line; returns the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"skorg: error: {exc}", file=sys.stderr)
        return 2
