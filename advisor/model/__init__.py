"""The regression model: predicts what a dataset setting does on a pool, with an interval, from the
lab prior (advisor/model/data/) and this host's probes; chooses the next probe by expected
improvement.  Predictions need numpy only (advisor/model/gp.py, from the fit shipped beside the
prior, advisor/model/fitted.py); scikit-learn (the `model` extra) is imported only to fit
(advisor/model/regress.py) and to evaluate (docs/model.md).
"""
from __future__ import annotations

# Bumped when features, targets or the model change: every answer that uses the model names it.
MODEL_VERSION = "11"


def numpy_missing() -> str | None:
    """Why the fitted model cannot predict here (numpy absent), or None."""
    try:
        import numpy  # noqa: F401 - the import is the check
    except ImportError:
        return "numpy is not installed (pip install numpy)"
    return None


def sklearn_missing() -> str | None:
    """Why the model cannot run here, or None when it can (imports scikit-learn: call it where the
    model is about to be fitted, not at start-up)."""
    try:
        import numpy  # noqa: F401 - the import is the check
        import sklearn  # noqa: F401 - the import is the check
    except ImportError as exc:
        return f"{exc.name or 'scikit-learn'} is not installed (pip install 'zfs-advisor[model]')"
    return None
