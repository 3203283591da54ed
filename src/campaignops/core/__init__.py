"""Plumbing that knows no campaign format: errors, atomic writes, journal, safe text, files, layout,
git refs, the YAML loader, the compiled schema validator. Imports no other wing.
"""
