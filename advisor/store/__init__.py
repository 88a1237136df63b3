"""Persistence: one SQLite database under `state_dir` (stdlib sqlite3, WAL, versioned schema)."""
