"""Golden kill-event messages shared by every publisher's tests (see generate.py)."""
