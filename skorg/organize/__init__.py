"""Organize matrices and tensors: the questionnaire and its estimator."""

from ._assign import assign_to_tree
from ._ordering import ORDERINGS, leaf_order
from ._organizer import QuestionnaireOrganizer
from ._questionnaire import PRESETS, SCHEDULES, QuestionnaireResult, questionnaire

__all__ = [
    "ORDERINGS",
    "PRESETS",
    "SCHEDULES",
    "QuestionnaireOrganizer",
    "QuestionnaireResult",
    "assign_to_tree",
    "leaf_order",
    "questionnaire",
]
