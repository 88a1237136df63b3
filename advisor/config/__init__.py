"""The service's configuration: its settings (settings.py: file, environment and flags) and the
web configuration file (webconfig.py: TLS and basic auth, with the TLS handshake check of
tlscheck.py). Read by the parts above; it names none of their code."""
