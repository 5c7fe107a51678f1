"""Head specialization lab: the single-location task and softmax / softmax-1 / Bayes-softmax.

Needs torch (``pip install skorg[torch]``). See the user guide, section *The effective
dynamics of head specialization*, and Sagitova, Duranthon, Zdeborova, arXiv 2603.03993.
"""

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError(
        "skorg.specialization needs torch; install the extra with `pip install skorg[torch]`."
    ) from exc

from ._analysis import (
    FlowSpecializationTest,
    participation_ratio,
    run_flow_specialization_test,
    unspecialized_time,
    wilson_interval,
)
from ._bayes import bayes_risk, posterior_position_weights
from ._events import SpecializationEvents, order_outcome, specialization_events
from ._experiment import SpecializationExperiment, run_specialization_experiment
from ._flow import FlowTrajectory, integrate_flow
from ._model import NORMALIZATIONS, AttentionRegressor, attention_forward, attention_weights
from ._population import population_risk, population_risk_gradient, random_initial_order
from ._risk import OrderParameters, model_risk, order_parameters
from ._task import (
    DiscretePrior,
    GaussianPrior,
    SingleLocationTask,
    flipped_spike_prior,
    spike_prior,
)
from ._train import TrainingHistory, train_online

__all__ = [
    "NORMALIZATIONS",
    "AttentionRegressor",
    "DiscretePrior",
    "FlowSpecializationTest",
    "FlowTrajectory",
    "GaussianPrior",
    "OrderParameters",
    "SingleLocationTask",
    "SpecializationEvents",
    "SpecializationExperiment",
    "TrainingHistory",
    "attention_forward",
    "attention_weights",
    "bayes_risk",
    "flipped_spike_prior",
    "integrate_flow",
    "model_risk",
    "order_outcome",
    "order_parameters",
    "participation_ratio",
    "population_risk",
    "population_risk_gradient",
    "posterior_position_weights",
    "random_initial_order",
    "run_flow_specialization_test",
    "run_specialization_experiment",
    "specialization_events",
    "spike_prior",
    "train_online",
    "unspecialized_time",
    "wilson_interval",
]
