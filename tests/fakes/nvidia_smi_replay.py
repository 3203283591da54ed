#!/usr/bin/env python3
"""A replay of recorded ``nvidia-smi`` query output, standing in for nvidia-smi where no GPU is.

It answers exactly the query the box executor makes,
``--query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits``, and refuses any
other arguments (exit 2), so a change in what the executor asks cannot pass unnoticed. It prints
the recording named by ``NVSMI_REPLAY`` (a file under tests/data/nvidia-smi/; ``#`` lines are the
source notes and are not printed). ``NVSMI_REPLAY_STATE``, when set, names a JSON file a test may
rewrite between calls:

- ``{"used": {"<index>": MiB}}`` replaces that GPU's recorded memory.used (a task filling a GPU,
  or the memory coming free);
- ``{"fail": {"code": n, "message": "..."}}`` makes the call fail as a lost driver does (the
  message is printed on stdout, as nvidia-smi prints it).

Each call appends one line to ``NVSMI_REPLAY_CALLS`` when that is set (a count for the tests).
Link or copy it as ``nvidia-smi`` into a directory at the front of PATH.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

QUERY = ["--query-gpu=index,memory.used,memory.total", "--format=csv,noheader,nounits"]


def main(argv: list[str]) -> int:
    if argv != QUERY:
        print(f"nvidia_smi_replay: replays only `nvidia-smi {' '.join(QUERY)}`, not {argv}")
        return 2
    calls = os.environ.get("NVSMI_REPLAY_CALLS")
    if calls:
        with Path(calls).open("a", encoding="utf-8") as out:
            out.write("query\n")
    state_file = os.environ.get("NVSMI_REPLAY_STATE")
    state = {}
    if state_file and Path(state_file).exists():
        state = json.loads(Path(state_file).read_text(encoding="utf-8"))
    fail = state.get("fail")
    if fail:
        print(fail["message"])
        return int(fail["code"])
    used = {str(k): v for k, v in (state.get("used") or {}).items()}
    for line in Path(os.environ["NVSMI_REPLAY"]).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        index, recorded, total = line.split(",")
        if index.strip() in used:
            recorded = f" {used[index.strip()]}"
        print(f"{index},{recorded},{total}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
