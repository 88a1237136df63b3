"""HTTP API: one module per resource, wired in advisor.app."""
