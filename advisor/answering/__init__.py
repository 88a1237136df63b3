"""One way into the answer (answerer.py): what every caller of the engine's `recommend` hands it,
gathered in one place: the probe evidence and efficiency reports the store keeps, and the
model's predictions for this host. exported_advice.py asks it for the datasets of the `workloads`
setting, as /metrics exports them."""
