"""The GP fitted on the shipped lab prior, written as JSON beside the prior's CSV.

The service loads it at start-up (milliseconds, numpy only) instead of fitting: no scikit-learn
in the service, no fit competing with scrapes for the interpreter on a slow host, nothing to
wait for at a stop.  The file names the prior it was fitted on (its SHA-256) and the model
version; a file that does not match both is not used (advisor/model/provider.py then fits, when
scikit-learn is installed, or says why the model is unavailable).  JSON, not a pickle: loading
it runs no code.

    python -m advisor.model.fitted           # refit the shipped prior and rewrite its .gp.json
    python -m advisor.model.fitted --check   # refit and compare with the shipped file (exit 1 if off)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from advisor.model import MODEL_VERSION
from advisor.model.features import FEATURES

FORMAT = 1
SEED = 0
RESTARTS = 2


class FittedError(Exception):
    """The fitted file cannot be used for this prior (missing, stale, or unreadable)."""


def fitted_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.name.removesuffix(".csv") + ".gp.json")


def digest(csv_path: Path) -> str:
    return hashlib.sha256(csv_path.read_bytes()).hexdigest()


def to_document(model: Any, csv_path: Path, lab_rows: int) -> dict[str, Any]:
    """What `write` stores for a fitted GPModel (advisor/model/regress.py)."""
    import numpy
    import scipy
    import sklearn

    f = model.fitted
    return {
        "format": FORMAT, "model_version": MODEL_VERSION, "model": "gp", "seed": model.seed,
        "restarts": model.restarts, "prior_file": csv_path.name, "prior_sha256": digest(csv_path),
        "lab_rows": lab_rows, "features": list(FEATURES),
        "fitted_with": {"scikit-learn": sklearn.__version__, "scipy": scipy.__version__, "numpy": numpy.__version__},
        "kernels": model.kernels,
        "perf": f.perf.to_json(), "write_p99": f.p99.to_json() if f.p99 is not None else None,
        # the same GPs conditioned on each workload's rows alone (advisor/model/gp.py GPPredictor)
        "by_workload": {w: {"perf": perf.to_json(), "write_p99": p99.to_json() if p99 is not None else None}
                        for w, (perf, p99) in f.by_workload.items()},
    }


def load(csv_path: Path) -> tuple[Any, dict[str, Any]]:
    """(GPPredictor, the document) for the prior at csv_path; FittedError says why not."""
    from advisor.model.gp import FittedGP, GPPredictor

    path = fitted_path(csv_path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise FittedError(f"no fitted model beside the prior ({path.name})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FittedError(f"{path.name} cannot be read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("model_version") != MODEL_VERSION:
        raise FittedError(f"{path.name} is of another format or model version "
                          f"(want format {FORMAT}, model {MODEL_VERSION})")
    if doc.get("prior_sha256") != digest(csv_path):
        raise FittedError(f"{path.name} was fitted on another version of {csv_path.name}")
    try:
        perf = FittedGP.from_json(doc["perf"])
        p99 = FittedGP.from_json(doc["write_p99"]) if doc.get("write_p99") else None
        by_workload = {str(w): (FittedGP.from_json(d["perf"]),
                                FittedGP.from_json(d["write_p99"]) if d.get("write_p99") else None)
                       for w, d in doc["by_workload"].items()}
    except (KeyError, TypeError, ValueError, ArithmeticError, AttributeError) as exc:  # LinAlgError is a ValueError
        raise FittedError(f"{path.name} is damaged: {exc}") from None
    return GPPredictor(perf, p99, by_workload=by_workload), doc


def fit_document(csv_path: Path) -> dict[str, Any]:
    """Fit the GP on the prior at csv_path (scikit-learn) and return the document to store;
    FittedError when the file holds no usable prior."""
    from advisor.model.dataset import load_csv, samples
    from advisor.model.regress import GPModel

    try:
        prior = samples(load_csv(csv_path))
    except (OSError, UnicodeDecodeError, KeyError, ValueError) as exc:
        raise FittedError(f"{csv_path} is not a prior CSV: {exc}") from None
    if len(prior) < 5:
        raise FittedError(f"{csv_path} holds {len(prior)} usable prior rows (a file that exists, with "
                          "a header row and at least 5 completed runs including a baseline, is needed)")
    return to_document(GPModel(SEED, RESTARTS).fit(prior), csv_path, len(prior))


def _predictions_agree(a: dict[str, Any], b: dict[str, Any], csv_path: Path, tolerance: float) -> str | None:
    """None when both documents predict the prior's own rows alike (within `tolerance` in log
    ratio, i.e. about tolerance × 100 %), else what differs.  Hyperparameters found by the
    optimiser may move in the last digits between library versions; predictions are what count."""
    import numpy as np

    from advisor.model.dataset import load_csv
    from advisor.model.gp import FittedGP, matrix

    X = matrix(load_csv(csv_path))
    if sorted(a.get("by_workload") or {}) != sorted(b.get("by_workload") or {}):
        return "the workloads with GPs of their own differ"
    pairs = [("", a, b)] + [(f"{w} ", a["by_workload"][w], b["by_workload"][w]) for w in sorted(a.get("by_workload") or {})]
    for label, doc_a, doc_b in pairs:
        for target in ("perf", "write_p99"):
            if (doc_a.get(target) is None) != (doc_b.get(target) is None):
                return f"{label}{target}: fitted in one file only"
            if doc_a.get(target) is None:
                continue
            mu_a, cov_a = FittedGP.from_json(doc_a[target]).predict(X)
            mu_b, cov_b = FittedGP.from_json(doc_b[target]).predict(X)
            worst = max(float(np.abs(mu_a - mu_b).max()),
                        float(np.sqrt(np.abs(np.diag(cov_a) - np.diag(cov_b))).max()))
            if worst > tolerance:
                return f"{label}{target}: predictions differ by up to {worst:.4f} (log ratio; tolerance {tolerance})"
    return None


def main(argv: list[str] | None = None) -> int:
    from advisor.model.dataset import prior_path

    ap = argparse.ArgumentParser(prog="python -m advisor.model.fitted", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", type=Path, default=prior_path(), help="the prior (default: the shipped one)")
    ap.add_argument("--check", action="store_true", help="refit and compare with the stored file; write nothing")
    ap.add_argument("--tolerance", type=float, default=0.01, help="--check: largest difference of a "
                    "prediction, in log ratio (default 0.01, about 1 %%)")
    args = ap.parse_args(argv)
    try:
        doc = fit_document(args.csv)
    except FittedError as exc:
        print(f"python -m advisor.model.fitted: {exc}", file=sys.stderr)
        return 2
    out = fitted_path(args.csv)
    if args.check:
        try:
            _, stored = load(args.csv)
        except FittedError as exc:
            print(f"fitted model: {exc}", file=sys.stderr)
            return 1
        problem = _predictions_agree(doc, stored, args.csv, args.tolerance)
        print(f"fitted model {out.name}: " + (problem or f"matches a refit of {args.csv.name} "
                                               f"({doc['lab_rows']} lab rows)"))
        return 1 if problem else 0
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out} ({doc['lab_rows']} lab rows; {', '.join(f'{k} {v}' for k, v in doc['kernels'].items())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
