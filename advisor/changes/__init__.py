"""Change verification: a tracked setting that changed between two collections, and what the I/O
did before and after it (docs/changes.md)."""
