"""Grid Engine (Son of Grid Engine, Univa/Altair Grid Engine, OGS): ``kind: gridengine``.

The whole backend is this folder; the registry (backends/registry.py) lists ``kind.KIND``. See backend.py for the calls, render.py for the script and the afterok
rule, qstatxml.py and qacct.py for the answers, states.py for their fold.
"""

from __future__ import annotations
