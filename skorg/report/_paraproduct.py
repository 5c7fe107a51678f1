"""The paraproduct section: the reviewers' test of softmax invariance and organized heads."""

from __future__ import annotations

import numpy as np

from . import _figures as figs
from ._html import Report, Table

__all__ = [
    "PARAPRODUCT_COLUMNS",
    "VARIANT_LABELS",
    "VERDICT_TOLERANCE",
    "organized_logit_rows",
    "paraproduct_report",
    "paraproduct_section",
    "reviewers_rows",
    "verdict_rows",
]

PARAPRODUCT_COLUMNS = [
    "case",
    "variant",
    "rel_error",
    "rel_error_terms",
    "factor_max",
    "jacobian_max",
    "log10_exp_Pf_max",
]
#: The one human label of each variant key (the ``variant`` of every table, CSV and JSON);
#: figures, legends and sentences write ``key (label)`` through :func:`variant_name`.
VARIANT_LABELS = {
    "exact": "exact telescoping",
    "softmax": "true derivatives",
    "softmax_exp": "paper, A' = A'' = exp",
    "softmax_collapsed": "Eq. 18, A' = A'' = 1",
}


def variant_name(key):
    """A variant as every figure and sentence of the reports names it: ``key (label)``."""
    label = VARIANT_LABELS.get(key)
    return key if label is None else f"{key} ({label})"


#: Relative error of softmax(f) up to which an expansion counts as holding.
VERDICT_TOLERANCE = 0.1
_HOW_TO_READ = (
    "rel_error is ||softmax(f) - approximation|| / ||softmax(f)||, the approximation being the "
    "part left outside the expanded scales plus the variant's expansion; rel_error_terms "
    "compares the expansion alone. Variants: "
    f"{variant_name('exact')}: the telescoping identity, must be round-off; "
    f"{variant_name('softmax')}: the paraproduct with the true Jacobian and second "
    f"derivative; {variant_name('softmax_exp')}: the row normalizer held constant; "
    f"{variant_name('softmax_collapsed')}: 'softmax invariance'. "
    "jacobian_max is the largest softmax Jacobian entry at the block averages (at most 1/4); "
    "log10_exp_Pf_max the size of exp(P f), the factor Eq. 18 sets to 1."
)


def reviewers_rows(Ms=(1, 10, 100, 1000)):
    """The reviewers' 4 x 4 corner-block test, one row per (M, variant)."""
    from skorg.transforms import corner_block_logits, softmax_invariance_check

    rows = []
    for M in Ms:
        for row in softmax_invariance_check(corner_block_logits(float(M))):
            rows.append({"case": f"4x4 corner block M={M:g}", **row})
    return rows


def organized_logit_rows(n=64, scale=4.0, random_state=0):
    """A smooth attention-like logit matrix, in its order and shuffled (no model needed)."""
    from skorg.transforms import softmax_invariance_check

    x = (np.arange(n) + 0.5) / n
    width = 0.12 + 0.08 * x[:, None]
    band = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2 * width**2))
    f = scale * (band + 0.25 * (1 + np.sin(2 * np.pi * x))[:, None] * x[None, :])
    rng = np.random.default_rng(random_state)
    shuffled = f[np.ix_(rng.permutation(n), rng.permutation(n))]
    rows = []
    for label, logits in (("ordered", f), ("shuffled", shuffled)):
        for row in softmax_invariance_check(logits):
            rows.append({"case": f"smooth {n}x{n} logits, {label}", **row})
    return rows


def verdict_rows(rows, tolerance=VERDICT_TOLERANCE):
    """One row per case: the error of each variant and whether Eq. 18's collapse holds."""
    cases = {}
    for row in rows:
        cases.setdefault(row["case"], {})[row["variant"]] = row["rel_error"]
    out = []
    for case, err in cases.items():
        collapsed = err.get("softmax_collapsed", np.nan)
        true = err.get("softmax", np.nan)
        holds = bool(collapsed <= tolerance)
        out.append(
            {
                "case": case,
                "exact": err.get("exact", np.nan),
                "softmax": true,
                "softmax_exp": err.get("softmax_exp", np.nan),
                "softmax_collapsed": collapsed,
                "collapsed_over_true": collapsed / true if true > 0 else np.nan,
                "verdict": "Eq. 18 holds" if holds else "Eq. 18 fails",
            }
        )
    return out


def paraproduct_section(report, rows, columns=PARAPRODUCT_COLUMNS, *, real_heads=False):
    """Add the verdict table, the full residual table and the M plot to ``report``."""
    s = report.section("Paraproduct check: does softmax collapse (Eq. 18)?")
    what = "the reviewers' 4 x 4 test"
    if real_heads:
        what += " and the logits of real heads, on their organized trees and in token order"
    s.text(
        f"Cases: {what}. The verdict reads 'Eq. 18 holds' when "
        f"{variant_name('softmax_collapsed')} reproduces softmax(f) within a relative error "
        f"of {VERDICT_TOLERANCE}."
    )
    s.text(_HOW_TO_READ)
    verdicts = verdict_rows(rows)
    s.table(
        Table(
            "paraproduct_verdict",
            verdicts,
            caption="Relative error of each variant and the verdict per case",
        )
    )
    s.table(
        Table("paraproduct_residuals", rows, columns, caption="Every variant with its residuals")
    )
    corner = [r for r in rows if r["case"].startswith("4x4 corner block")]
    if corner:
        Ms = sorted({float(r["case"].rsplit("=", 1)[1]) for r in corner})
        series = {
            variant_name(v): [r["rel_error"] for r in corner if r["variant"] == v]
            for v in ("softmax", "softmax_exp", "softmax_collapsed")
        }
        s.figure(
            figs.line_plot(
                Ms,
                series,
                xlabel="M (value of the 2 x 2 corner block)",
                ylabel="relative error against softmax(f)",
                logx=True,
                logy=True,
                title="reviewers' 4 x 4 corner-block test",
                caption="Relative error of each expansion against M.",
            )
        )
    return verdicts


def paraproduct_report(extra_rows=(), *, Ms=(1, 10, 100, 1000), synthetic=True, label=""):
    """The report of ``skorg paraproduct-check``.

    Parameters
    ----------
    extra_rows : list of dict
        Rows of :func:`~skorg.transforms.softmax_invariance_check` with a ``case`` key (for
        example real heads).
    Ms : sequence of float
        Block values of the reviewers' test.
    synthetic : bool, default=True
        Add a smooth 64 x 64 logit matrix, ordered and shuffled.
    label : str
        Where the extra rows come from.

    Returns
    -------
    report : Report
    rows : list of dict
    """
    rows = reviewers_rows(Ms)
    if synthetic:
        rows += organized_logit_rows()
    rows += list(extra_rows)
    report = Report("skorg paraproduct check", meta={"cases": len({r["case"] for r in rows})})
    verdicts = paraproduct_section(report, rows, real_heads=bool(extra_rows))
    fails = [v["case"] for v in verdicts if v["verdict"] == "Eq. 18 fails"]
    report.summary = [
        f"{len(verdicts)} cases; {variant_name('softmax_collapsed')} fails (relative error > "
        f"{VERDICT_TOLERANCE}) in {len(fails)} of them.",
    ]
    if label:
        report.summary.append(f"Real heads: {label}.")
    return report, rows
