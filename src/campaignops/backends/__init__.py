"""Backends that live each in a folder of its own (backends/<name>/): the scheduler's script,
calls and answers behind the ``Backend`` protocol (runner/backend_base.py)."""
