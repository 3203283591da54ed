"""The box executor as ONE file for a box: a zip of this package that python runs
(``python3 boxexec-<hash>.pyz CMD …``; python runs a zip's ``__main__.py``), built in memory and
deterministic (sorted names, fixed timestamps and modes, stored uncompressed), so the same
source is the same bytes and the same content name on every machine (docs/runner.md).

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from campaignops.remote.records import ENTRY

HERE = Path(__file__).resolve().parent
# The package's top in the zip: the executor needs nothing of campaignops but this package.
TOP = b'"""campaignops, as much of it as a box runs: the executor (campaignops.remote)."""\n'
EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold


def members() -> dict[str, bytes]:
    """``{name in the zip: bytes}``: this package's modules, its entry module as the zip's
    ``__main__.py``, and a ``campaignops/__init__.py`` that imports nothing."""
    found = {f"campaignops/remote/{p.name}": p.read_bytes() for p in sorted(HERE.glob("*.py"))}
    found["campaignops/__init__.py"] = TOP
    found["__main__.py"] = (HERE / ENTRY).read_bytes()
    return found


def build() -> bytes:
    """The zip's bytes (OSError when a module cannot be read)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in sorted(members().items()):
            info = zipfile.ZipInfo(name, date_time=EPOCH)
            info.external_attr = 0o644 << 16
            info.create_system = 3  # unix, wherever it is built
            archive.writestr(info, data)
    return buffer.getvalue()
