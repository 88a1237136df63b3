"""The service's process: its logging (logs.py), the memory it gives back to the kernel
(memory.py) and systemd's notifications (systemd.py). Below every other part: it imports none."""
