"""What the box executor writes and reads beside its job: JSON records written atomically, the
identity of a live process (a pid is reused), its error, and the command that runs it again.

Standard library only, Python 3.8+ (the package travels to boxes: campaignops.remote.artifact).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ENTRY = "boxexec.py"  # the entry module: run by its path here, the zip's __main__.py on a box


class BoxError(Exception):
    def __init__(self, *, message: str, hint: str) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: Any, mode: int = 0o644) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=1, sort_keys=True) + "\n")
        out.flush()
        os.fsync(out.fileno())
    tmp.replace(path)


def proc_ticks(pid: Any) -> int | None:
    """The start time of a live process (``/proc/PID/stat`` field 22), None for a dead or zombie
    one: a pid alone may be reused, and ``kill -0`` succeeds on a zombie."""
    if not isinstance(pid, int) or pid <= 1:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
        return None if fields[0] in (b"Z", b"X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(record: Any) -> bool:
    if not isinstance(record, dict) or record.get("ticks") is None:
        return False
    return bool(proc_ticks(record.get("pid")) == record["ticks"])


def program() -> list[str]:
    """The command that runs this executor again (``run``, detached by ``start``; ``wrap``, for
    each task attempt): the zip it came in on a box, else the entry module beside this one."""
    here = Path(__file__).absolute()
    archive = next((p for p in here.parents if p.is_file()), None)
    return [sys.executable, str(archive or here.with_name(ENTRY))]
