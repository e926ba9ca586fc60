"""The evaluation harness: every system on the same questions, on public data sets."""

from .dataset import Dataset, DatasetError, EvalQuestion, load_dataset
from .runner import EvalResult, Evaluation, parse_sweep, system_names

__all__ = [
    "Dataset",
    "DatasetError",
    "EvalQuestion",
    "EvalResult",
    "Evaluation",
    "load_dataset",
    "parse_sweep",
    "system_names",
]
