"""The page at `/`: server-rendered HTML of what the daemon knows (pools, advice, probe runs,
efficiency reports), built from the standard library alone and readable without JavaScript.

`gather` reads (facts, the rule book's answers, the probe store), `views` renders; the
handlers that serve them are advisor/api/page.py. Nothing here imports aiohttp.
"""
