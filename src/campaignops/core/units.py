"""Memory sizes as people write them: binary units in KiB, and the shortest way to show one."""

from __future__ import annotations

# KiB per unit letter (the letter-less and K forms are KiB; Slurm's and PBS's M and G are binary).
KIB = {"": 1.0, "K": 1.0, "M": 1024.0, "G": 1024.0**2, "T": 1024.0**3, "P": 1024.0**4}


def show_size(kib: float) -> str:
    """``52.7M``, ``4.1G``, ``16G``: the largest binary unit it reaches, one decimal at most."""
    for unit in ("P", "T", "G", "M"):
        if kib >= KIB[unit]:
            return f"{kib / KIB[unit]:.1f}".removesuffix(".0") + unit
    return f"{kib:.0f}K"
