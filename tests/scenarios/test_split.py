"""A queue run once on the local backend, then split by its measured run times for K boxes.

The story: the ablation queue ran in production; a fifth cell is appended; `campaign split
--cost history` splits the five across two instances by what the ledger measured (the new cell
estimated from its epochs), and each part runs under the template's real queue wrapper.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

from campaignops.model import ledger, queuefile
from tests.scenarios.conftest import Life

QUEUE = """\
# The ablation queue.
configs/abl/a.yaml reconstruction 2
configs/abl/b.yaml reconstruction 3
configs/abl/c.yaml segmentation 5
configs/abl/d.yaml segmentation 8
"""
MANIFEST = """\
project: ablation
queue: queues/abl.txt
default_cmd: bash scripts/run_one.v1.sh
backend: local
max_parallel: 2
resources: {time: "00:05:00", cpus: 1, mem: 200M}
smoke:
  args: {epochs: 1}
"""


def _recorded_seconds(root: Path) -> dict[str, float]:
    """Each cell's run time in its production task, read from the ledger as written."""
    (production,) = [j for j in ledger.read(root).jobs if j.stage == "production"]
    seconds = {}
    for target in production.targets:
        task = production.task(target)
        assert task is not None and task.succeeded, (target, task)
        began, ended = ledger.parse_time(task.started), ledger.parse_time(task.ended)
        recorded = task.run_time_s
        if recorded is None and began is not None and ended is not None:
            recorded = (ended - began).total_seconds()
        assert recorded is not None
        seconds[target] = recorded
    return seconds


def test_a_queue_is_split_by_its_run_times_and_each_part_runs(camp: Path, run) -> None:  # type: ignore[no-untyped-def]
    life = Life(root=camp, backend="local", run=run)
    for name in "abcde":
        life.write(f"configs/abl/{name}.yaml", f"lr: 0.{ord(name) - 96}\n", commit=False)
    life.write("queues/abl.txt", QUEUE, commit=False)
    life.write("manifests/abl.yaml", MANIFEST)
    assert life.submit("manifests/abl.yaml", "smoke").code == 0
    assert life.wait().state == "COMPLETED"
    life.commit("smoke done")
    assert life.submit("manifests/abl.yaml", "production").code == 0
    assert life.wait().state == "COMPLETED"
    seconds = _recorded_seconds(camp)
    assert sorted(seconds) == ["a", "b", "c", "d"]

    # A cell never run: its cost is its epochs at the run cells' seconds per epoch.
    life.write("queues/abl.txt", QUEUE + "configs/abl/e.yaml segmentation 4\n")
    done = run("split", "queues/abl.txt", "-n", "2", "--cost", "history", "--format", "json")
    assert done.code == 0, done.err
    split = json.loads(done.out)
    rate = math.fsum(seconds.values()) / (2 + 3 + 5 + 8)
    cost = {**seconds, "e": 4 * rate}
    assert [q["path"] for q in split["queues"]] == [
        "queues/abl.part1of2.txt",
        "queues/abl.part2of2.txt",
    ]
    lines = [line for q in split["queues"] for line in q["lines"]]
    expected = [c.cfg for c in queuefile.parse(QUEUE).cells] + ["configs/abl/e.yaml"]
    assert sorted(line.split(" ")[0] for line in lines) == sorted(expected)
    for q in split["queues"]:
        names = [queuefile.cell_name(line.split(" ")[0]) for line in q["lines"]]
        assert q["cost"] == round(math.fsum(cost[n] for n in names), 2)
    loads = [
        math.fsum(cost[queuefile.cell_name(x.split(" ")[0])] for x in q["lines"])
        for q in split["queues"]
    ]
    assert split["makespan"] == round(max(loads), 2)
    assert split["bound"] == round(max(math.fsum(cost.values()) / 2, max(cost.values())), 2)

    # The parts sit beside their queue: the checks see no cell name used twice.
    checked = run("check", "--select", "QUEUE", "--format", "json")
    assert checked.code == 0, checked.out

    # Each part is a queue file the template's wrapper runs as it is.
    part = camp / "queues/abl.part1of2.txt"
    assert part.read_text().startswith(
        "# Part 1 of 2 of queues/abl.txt, made by `campaign split -n 2 --cost history`.\n"
    )
    ran = subprocess.run(
        ["bash", "scripts/run_queue.v1.sh", "queues/abl.part1of2.txt"],
        cwd=camp,
        env={**os.environ, "CAMPAIGN_OUT": "runs/box1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    first = {queuefile.cell_name(x.split(" ")[0]) for x in split["queues"][0]["lines"]}
    finished = {p.parent.name for p in (camp / "runs/box1").glob("*/metrics.json")}
    assert finished == first
