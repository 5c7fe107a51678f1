"""
Organize survey-like data: people x questions with latent traits
================================================================

A synthetic questionnaire: every person mixes two hidden traits (say, how outdoorsy and how
social they are) in a proportion given by an angle, and every question probes its own mix.
Answers are on a 1-5 scale with noise. People and questions arrive in random order, so the
answer matrix looks like noise.

The questionnaire learns a partition tree on the people and one on the questions, each
from the other's geometry. Read the result three ways: the organized matrix is smooth; the
order of the people follows their hidden trait angle (absolute Spearman correlation); and the
Haar coefficients on the learned trees are far sparser than on the given order.

Set ``SKORG_EXAMPLE_SMALL=1`` for a quick run with fewer people and questions.
"""

import os

import numpy as np

from skorg import QuestionnaireOrganizer
from skorg.metrics import order_spearman
from skorg.transforms import l1_entropy
from skorg.trees import dyadic_tree

SMALL = os.environ.get("SKORG_EXAMPLE_SMALL") == "1"
n_people, n_questions = (60, 24) if SMALL else (300, 80)
rng = np.random.default_rng(0)

# %%
# The hidden structure: a trait angle per person and a probed angle per question.
# The answer grows with the agreement between the two, as on a Likert scale.
person_angle = rng.uniform(0.0, np.pi, n_people)
question_angle = rng.uniform(0.0, np.pi, n_questions)
agreement = np.cos(person_angle[:, None] - question_angle[None, :])
answers = np.clip(np.rint(3.0 + 2.0 * agreement + 0.4 * rng.standard_normal(agreement.shape)), 1, 5)
people, questions = rng.permutation(n_people), rng.permutation(n_questions)
X = answers[np.ix_(people, questions)]
print(f"answers: {X.shape[0]} people x {X.shape[1]} questions, values {np.unique(X)}")

# %%
# Organize. The default preset alternates column and row trees three times.
organizer = QuestionnaireOrganizer().fit(X)
rows, cols = organizer.row_order_, organizer.column_order_
rho_people = order_spearman(rows, np.argsort(person_angle[people]))
rho_questions = order_spearman(cols, np.argsort(question_angle[questions]))
print(f"|Spearman| with the hidden order: people {rho_people:.3f}, questions {rho_questions:.3f}")

# %%
# Sparsity: the normalized l1 norm of all bi-Haar coefficients, lower is smoother.
given = [dyadic_tree(np.arange(n)) for n in X.shape]
print(
    f"l1 entropy on the learned trees {l1_entropy(X, organizer.trees_, normalize=True):.2f}, "
    f"on the given order {l1_entropy(X, given, normalize=True):.2f}"
)
print("people tree, folders per level:", organizer.row_tree_.level_sizes().tolist())

# %%
# The answers as given and organized (skipped without matplotlib).
try:
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
if plt is not None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    for ax, M, title in (
        (axes[0], X, "as collected"),
        (axes[1], organizer.organize(X), "organized"),
    ):
        image = ax.imshow(M, aspect="auto", cmap="RdYlBu_r", vmin=1, vmax=5)
        ax.set_title(title)
        ax.set_xlabel("question")
        ax.set_ylabel("person")
    fig.colorbar(image, ax=axes, label="answer (1-5)")
    plt.show()
