"""The backends: ``base`` (the typed protocol), ``registry`` (which backend a page picks), and one
folder per scheduler or transport. Nothing outside ``backends`` imports a backend's own folder.
"""
