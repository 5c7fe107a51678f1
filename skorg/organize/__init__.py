"""Organize matrices and tensors: the questionnaire and its estimator."""

from ._ordering import ORDERINGS, leaf_order
from ._organizer import QuestionnaireOrganizer
from ._questionnaire import PRESETS, SCHEDULES, QuestionnaireResult, questionnaire

__all__ = [
    "ORDERINGS",
    "PRESETS",
    "SCHEDULES",
    "QuestionnaireOrganizer",
    "QuestionnaireResult",
    "leaf_order",
    "questionnaire",
]
