"""The rules engine: rule and workload files -> recommendations.

    loader.py     reads and validates rules/*.yaml and rules/workloads/*.yaml
    schema.py     what a rule and a workload may say (pydantic)
    context.py    the catalogue of facts rules may name, and the Context they are computed in
    derived_*.py  the facts rules name, derived from the host model: workload and host, pool layout,
                  the I/O the host shows (derived_io.py), dataset
    evaluator.py  one rule in one context -> passed / change / skipped, explained
    service.py    one request: resolve the target, evaluate every rule, merge
    models.py     the answer (the /recommend JSON contract)
    text.py       the same answer as text; verify lines
    docs.py       docs/rules.md, generated from the rules

The regression model (later) plugs in at `service.merge`: it may fill
`expected_effect` and turn `source` into "model" or "rule+model".
"""
