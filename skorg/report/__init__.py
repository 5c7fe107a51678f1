"""Analysis reports: one self-contained HTML page with the same numbers as CSV and JSON.

The builders behind the ``skorg`` command line. Figures need the ``plot`` extra
(matplotlib); without it every table is still written and the page says how to get the
figures. The attention report needs the ``attention`` extra. Importing this subpackage
imports neither matplotlib nor torch.
"""

from ._attention import attention_report
from ._attention_setup import (
    DEMO_SENTENCES,
    default_sentences,
    load_attention_setup,
    read_sentences,
)
from ._compare import compare_report
from ._errors import InputError, MissingExtraError, require_attention
from ._html import Figure, Report, Section, Table, matplotlib_available
from ._matrix import check_data, load_array, organize_report, synthetic_comparison
from ._paraproduct import (
    VERDICT_TOLERANCE,
    organized_logit_rows,
    paraproduct_report,
    reviewers_rows,
    verdict_rows,
)
from ._plots import (
    plot_head_entropies,
    plot_paraproduct_reconstructions,
    plot_pruning_curves,
    plot_scale_coefficients,
    plot_top_coefficients,
)
from ._progress import Progress

__all__ = [
    "DEMO_SENTENCES",
    "VERDICT_TOLERANCE",
    "Figure",
    "InputError",
    "MissingExtraError",
    "Progress",
    "Report",
    "Section",
    "Table",
    "attention_report",
    "check_data",
    "compare_report",
    "default_sentences",
    "load_array",
    "load_attention_setup",
    "matplotlib_available",
    "organize_report",
    "organized_logit_rows",
    "paraproduct_report",
    "plot_head_entropies",
    "plot_paraproduct_reconstructions",
    "plot_pruning_curves",
    "plot_scale_coefficients",
    "plot_top_coefficients",
    "read_sentences",
    "require_attention",
    "reviewers_rows",
    "synthetic_comparison",
    "verdict_rows",
]

# Building blocks of the command line (skorg._cli); not documented API.
from ._attention_heads import real_head_rows as real_head_rows
from ._html import PLOT_HINT as PLOT_HINT
from ._matrix import load_labelled as load_labelled
from ._progress import close_open_bars as close_open_bars
