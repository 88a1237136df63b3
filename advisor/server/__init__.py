"""The HTTP server's plumbing under the handlers of advisor/api/: bodies built once and sent in
slices (bodies.py, facts_body.py) and deflated as they are made (deflated.py, which the
exporters' renderer uses too), the limit on heavy work (limits.py), request bodies read with a
deadline (body.py), the connection guard (connections.py), JSON errors and the runner that
answers protocol errors with them (errors.py), and basic auth's password checks (passwords.py)."""
