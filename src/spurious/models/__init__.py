"""Models: probes trained on feature matrices (linear probe, any scikit-learn classifier)."""

from spurious.models.linear import LogisticProbe
from spurious.models.sklearn_adapter import make_probe

__all__ = ["LogisticProbe", "make_probe"]
