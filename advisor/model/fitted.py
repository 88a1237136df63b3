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
        # the perf sd's scale for 0, 1, 2+ probed candidates, fitted on held-out pairs (advisor/model/calibration.py)
        "calibration": list(f.calibration),
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
        calibration = tuple(float(x) for x in doc["calibration"])
        if not all(0 < x < 10 for x in calibration):
            raise ValueError(f"calibration scales {calibration} are not all within (0, 10)")
    except (KeyError, TypeError, ValueError, ArithmeticError, AttributeError) as exc:  # LinAlgError is a ValueError
        raise FittedError(f"{path.name} is damaged: {exc}") from None
    return GPPredictor(perf, p99, by_workload=by_workload, calibration=calibration), doc


def fit_document(csv_path: Path, calibrate: bool = True) -> dict[str, Any]:
    """Fit the GP on the prior at csv_path (scikit-learn) and return the document to store;
    FittedError when the file holds no usable prior.  `calibrate`: fit the calibration too (a
    `--check` recomputes the stored one from the stored GPs instead)."""
    from advisor.model.dataset import load_csv, samples
    from advisor.model.regress import GPModel

    try:
        prior = samples(load_csv(csv_path))
    except (OSError, UnicodeDecodeError, KeyError, ValueError) as exc:
        raise FittedError(f"{csv_path} is not a prior CSV: {exc}") from None
    if len(prior) < 5:
        raise FittedError(f"{csv_path} holds {len(prior)} usable prior rows (a file that exists, with "
                          "a header row and at least 5 completed runs including a baseline, is needed)")
    return to_document(GPModel(SEED, RESTARTS, calibrate=calibrate).fit(prior), csv_path, len(prior))


def _targets(f: Any) -> Any:
    """The training targets of a fitted GP, recovered from the fit: (K + noise I) alpha = y."""
    import numpy as np

    from advisor.model.gp import JITTER

    K = f._k(f.X_train, f.X_train) + (f.noise + JITTER) * np.eye(len(f.X_train))
    return K @ f.alpha


def log_likelihood(f: Any, y: Any) -> float:
    """The log marginal likelihood of targets y under the GP's hyperparameters (what the fit
    maximises; Rasmussen & Williams, Gaussian Processes for Machine Learning, eq. 2.30)."""
    import numpy as np

    alpha = np.linalg.solve(f.factor().T, np.linalg.solve(f.factor(), y))
    return float(-0.5 * y @ alpha - np.log(np.diag(f.factor())).sum() - 0.5 * len(y) * np.log(2 * np.pi))


def _disagreement(stored: dict[str, Any], refit: dict[str, Any], csv_path: Path, nats: float) -> str | None:
    """None when the stored document is a fit of this prior as good as a refit here, else what
    is off.  Checked: the same training rows and targets, the per-workload GPs being the stored
    GP conditioned on each workload's rows, and hyperparameters whose likelihood is within `nats`
    of the refit's.  The hyperparameters themselves are not compared: the likelihood is flat along
    some length scales, and the optimiser ends on another point of that ridge with another CPU's
    floating point (a refit on another machine: log likelihood -277.998 against the stored
    -277.992, length scales 5 against 13.6, predictions up to 0.076 apart in log ratio)."""
    from advisor.model.dataset import load_csv, samples
    from advisor.model.gp import FittedGP
    from advisor.model.regress import by_workload

    fits = {}
    for target in ("perf", "write_p99"):
        if (stored.get(target) is None) != (refit.get(target) is None):
            return f"{target}: fitted in one file only"
        if stored.get(target) is None:
            continue
        mine = FittedGP.from_json(stored[target])
        if off := _fit_disagreement(target, mine, FittedGP.from_json(refit[target]), csv_path, nats):
            return off
        fits[target] = mine
    prior = samples(load_csv(csv_path))
    expected = by_workload(prior, fits["perf"], fits.get("write_p99"), [s for s in prior if s.y_p99 is not None])
    if off := _workloads_disagreement(expected, stored.get("by_workload") or {}, prior):
        return off
    return _calibration_disagreement(stored, fits, expected, prior)


def _fit_disagreement(target: str, mine: Any, theirs: Any, csv_path: Path, nats: float) -> str | None:
    """None when the stored GP `mine` has the refit's rows, linear mean and targets, and
    hyperparameters within `nats` of its likelihood, else what is off."""
    import numpy as np

    if mine.X_train.shape != theirs.X_train.shape or not np.allclose(mine.X_train, theirs.X_train):
        return f"{target}: trained on other rows than {csv_path.name} holds"
    zero = np.zeros(len(FEATURES))
    if not np.allclose(zero if mine.linear is None else mine.linear,
                       zero if theirs.linear is None else theirs.linear, rtol=0, atol=1e-9):
        return f"{target}: another linear mean than a refit's (least squares, no optimiser: a change of code)"
    y = _targets(theirs)  # what the GP models: the targets less the linear mean
    if not np.allclose(_targets(mine), y, rtol=0, atol=1e-6):
        return f"{target}: trained on other targets than {csv_path.name} gives"
    gap = log_likelihood(theirs, y) - log_likelihood(mine, y)
    if gap > nats:
        return (f"{target}: the stored hyperparameters are {gap:.2f} nats less likely than a refit's "
                f"(tolerance {nats})")
    return None


def _workloads_disagreement(expected: dict, got: dict[str, Any], prior: list) -> str | None:
    """None when the stored per-workload GPs (`got`) predict as the stored GP conditioned on each
    workload's rows (`expected`) does, else what is off."""
    import numpy as np

    from advisor.model.gp import FittedGP, matrix

    if sorted(expected) != sorted(got):
        return "the workloads with GPs of their own differ"
    X = matrix([s.obs for s in prior])
    for workload, pair in expected.items():
        for target, want in zip(("perf", "write_p99"), pair, strict=True):
            if (want is None) != (got[workload].get(target) is None):
                return f"{workload} {target}: fitted in one file only"
            if want is not None and not np.allclose(FittedGP.from_json(got[workload][target]).predict(X)[0],
                                                    want.predict(X)[0], rtol=0, atol=1e-6):
                return f"{workload} {target}: not the stored GP conditioned on {workload}'s rows"
    return None


def _calibration_disagreement(stored: dict[str, Any], fits: dict[str, Any], workloads: dict, prior: list) -> str | None:
    """None when the stored calibration is the one the stored GPs give on the prior's held-out
    pairs (advisor/model/calibration.py: numpy only, deterministic for the same GPs)."""
    from advisor.model.calibration import fit_scales
    from advisor.model.gp import GPPredictor

    want = fit_scales(GPPredictor(fits["perf"], fits.get("write_p99"), by_workload=workloads), prior)
    got = tuple(stored.get("calibration") or ())
    if len(got) != len(want) or any(abs(a - b) > 1e-9 for a, b in zip(got, want, strict=True)):
        return f"calibration: stored {list(got)}, the stored GPs give {list(want)} on the held-out pairs"
    return None


def main(argv: list[str] | None = None) -> int:
    from advisor.model.dataset import prior_path

    ap = argparse.ArgumentParser(prog="python -m advisor.model.fitted", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", type=Path, default=prior_path(), help="the prior (default: the shipped one)")
    ap.add_argument("--check", action="store_true", help="refit and compare with the stored file; write nothing")
    ap.add_argument("--tolerance", type=float, default=0.5, help="--check: how much less likely (log "
                    "marginal likelihood, nats) the stored hyperparameters may be than a refit's (default 0.5)")
    args = ap.parse_args(argv)
    try:
        doc = fit_document(args.csv, calibrate=not args.check)
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
        problem = _disagreement(stored, doc, args.csv, args.tolerance)
        print(f"fitted model {out.name}: " + (problem or f"matches a refit of {args.csv.name} "
                                               f"({doc['lab_rows']} lab rows)"))
        return 1 if problem else 0
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out} ({doc['lab_rows']} lab rows; {', '.join(f'{k} {v}' for k, v in doc['kernels'].items())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
