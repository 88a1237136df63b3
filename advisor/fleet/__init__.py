"""The fleet: sibling pools' probes read back from the Prometheus that scrapes every daemon
(docs/fleet.md).  client.py queries its HTTP API, series.py refuses what is not a measurement,
view.py matches sibling pools and turns their runs into the model's observations, reader.py
keeps the last good view on a slow background schedule, never on the request path."""
