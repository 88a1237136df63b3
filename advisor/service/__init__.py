"""The service: app.py, the one wiring place (builds every resource and puts it on the app under
its key, advisor/api/appkeys.py), and reload.py, what SIGHUP applies to the running app."""
