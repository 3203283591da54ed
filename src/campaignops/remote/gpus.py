"""The GPUs of a box as nvidia-smi reports them: the query and its rows (a ``[N/A]`` reads None).

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

NVSMI = (
    "nvidia-smi",
    "--query-gpu=index,memory.used,memory.total",
    "--format=csv,noheader,nounits",
)
GPU_POLL_S = float(os.environ.get("BOXEXEC_GPU_POLL_S", "10"))  # a busy box is not asked more


def parse_gpus(text: str) -> list[dict[str, Any]]:
    """Rows of nvidia-smi's ``index,memory.used,memory.total`` query; ``[N/A]`` reads None."""

    def mib(cell: str) -> int | None:
        try:
            return int(float(cell.split()[0]))
        except (ValueError, IndexError):
            return None

    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 3 and cells[0].isascii() and cells[0].isdigit():
            used, total = mib(cells[1]), mib(cells[2])
            rows.append(
                {"index": int(cells[0]), "memory_used_mib": used, "memory_total_mib": total}
            )
    return rows


def query_gpus() -> tuple[list[dict[str, Any]] | None, str]:
    """(rows, "") or (None, why nvidia-smi gave none)."""
    try:
        out = subprocess.run(
            NVSMI, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False,
        )  # fmt: skip
    except FileNotFoundError:
        return None, "nvidia-smi is not on PATH"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi: {exc}"
    if out.returncode != 0:
        lines = (out.stderr or out.stdout).decode("utf-8", "replace").strip().splitlines()
        return None, "nvidia-smi exited {}: {}".format(out.returncode, lines[0] if lines else "")
    return parse_gpus(out.stdout.decode("utf-8", "replace")), ""
