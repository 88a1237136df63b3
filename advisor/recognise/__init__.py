"""Workload recognition per dataset: what a dataset's observed I/O looks like, matched against the
workload profiles' own traits (docs/recognition.md).

- `signature`: a profile role's expected traits, read from its io block and its probe fio job;
- `traits`: what a window of one dataset's objset counters shows;
- `classify`: the best-fitting profile with a confidence, or `unknown`;
- `window`: the daemon's per-dataset windows, fed one collection at a time.
"""
