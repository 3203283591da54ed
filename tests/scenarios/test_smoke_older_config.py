"""STATUS.md and `campaign status` say when a passed smoke ran a config the campaign no longer
has: the smoke_first gate refuses production for it ("smokes of t1 ran an older config"), so the
stages table must not show it as a plain COMPLETED (model/smokes.py: one rule for both).

Played on the local backend only: what is under test is the view, not the scheduler.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Result
from tests.scenarios.conftest import Life

ONE = """\
resources: {time: "00:05:00", mem: 200M}
smoke:
  args: {epochs: 2}
jobs:
  - id: t1
    cmd: python3 scripts/smoke_task.py --config configs/one.yaml --task t --out ${CAMPAIGN_OUT}/one/t1
    args: {epochs: 4}
    output: "${CAMPAIGN_OUT}/one/t1/metrics.json"
"""
OLDER = "COMPLETED (older config)"


def _row(text: str, target: str) -> str:
    """The stages table's row of ``target`` (the first table row that starts with it)."""
    rows = [line for line in text.splitlines() if line.startswith(f"| {target} |")]
    assert rows, text
    return rows[0]


def _status_md(root: Path) -> str:
    return (root / "STATUS.md").read_text(encoding="utf-8")


def _smoked(camp: Path, run) -> Life:  # type: ignore[no-untyped-def]
    """The campaign with t1's smoke COMPLETED (configs/one.yaml: lr 0.1)."""
    life = Life(root=camp, backend="local", run=run)
    life.write("configs/one.yaml", "lr: 0.1\n", commit=False)
    life.write("manifests/one.yaml", ONE)
    assert life.submit("manifests/one.yaml", "smoke").code == 0
    assert life.wait().state == "COMPLETED"
    return life


def test_a_smoke_of_an_older_config_says_so_until_it_is_smoked_again(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    life = _smoked(camp, run)
    assert "COMPLETED (" in _row(_status_md(camp), "t1")
    assert OLDER not in _status_md(camp)

    # The manifest asks for more memory: a new config (memory is what a smoke is there to test).
    life.write("manifests/one.yaml", ONE.replace("mem: 200M", "mem: 300M"))
    # The fix commit alone passes check: the mark follows the files, and the next render or
    # refresh writes it; a check that failed here would fail every fix commit until a render.
    assert OLDER not in _status_md(camp)
    edited = life.run("check", "--select", "VIEW")
    assert edited.code == 0, edited.out
    refused = life.submit("manifests/one.yaml", "production")
    assert refused.code == 1 and "smokes of t1 ran an older config" in refused.err
    assert life.run("status", "--refresh").code == 0
    assert OLDER in _row(_status_md(camp), "t1")
    shown: Result = life.run("status", "--format", "markdown")
    assert shown.code == 0 and OLDER in _row(shown.out, "t1")
    # What refresh wrote is what campaign render would write: the VIEW check agrees.
    life.commit("refreshed")
    checked = life.run("check", "--select", "VIEW")
    assert checked.code == 0, checked.out

    assert life.submit("manifests/one.yaml", "smoke").code == 0
    assert life.wait().state == "COMPLETED"
    assert OLDER not in _status_md(camp)
    life.commit("smoked again")
    assert life.submit("manifests/one.yaml", "production").code == 0


def test_a_re_smoke_after_a_config_edit_runs_the_cell_again(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    # The example task skips a cell it finds finished (a resumed queue must not redo work); a
    # finished cell of the old config is not one: a fix commit's re-smoke must run it.
    life = _smoked(camp, run)
    metrics = camp / "runs/smoke/one/t1/metrics.json"
    first = json.loads(metrics.read_text(encoding="utf-8"))
    assert first["campaign_config"], first  # the fingerprint submit exported to the task

    life.write("configs/one.yaml", "lr: 0.2\n")  # the fix commit
    assert life.submit("manifests/one.yaml", "smoke").code == 0
    job = life.wait()
    assert job.state == "COMPLETED"
    again = json.loads(metrics.read_text(encoding="utf-8"))
    assert again["campaign_config"] != first["campaign_config"]
    assert again["config_sha256"] != first["config_sha256"]
    assert again["loss"] != first["loss"] and again["resumed_from_step"] == 0
    logs = "".join(p.read_text(encoding="utf-8") for p in (camp / "logs").rglob("*.out"))
    assert "is another run's (config, task or epochs changed): running again" in logs
