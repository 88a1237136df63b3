"""Sources of truth about the host: one module per source, pure parsers.

Each module has a `parse_*(text)` that is tested on recorded output and a
`read_*`/`load_*` that fetches the text through `HostFiles` or a
`CommandRunner`, so a whole host can be replayed from a snapshot.
"""
