"""Check families: one module each, registered in registry.py."""
