"""HTTP API: the handlers, one module per resource, wired in advisor.service.app; appkeys.py names what
the wiring puts on the app for them, runtime.py what a reload replaces."""
