"""The local backend: jobs on this machine (CPU), and with a GPU list (the box executor)."""
