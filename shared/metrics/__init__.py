"""Metrics: classification, regression, and representation statistics."""

from shared.metrics.classification import accuracy, macro_f1
from shared.metrics.regression import rmse
from shared.metrics.representation import effective_rank, per_dimension_variance

__all__ = ["accuracy", "effective_rank", "macro_f1", "per_dimension_variance", "rmse"]
