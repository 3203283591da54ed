"""Fixtures of the runner's tests. The real Slurm cluster (``slurm_cluster``) and the
``slurm`` marker live in tests/conftest.py: the scenarios use them too."""
