"""CPU seconds per test, opt in: ``CAMPAIGNOPS_TEST_CPU=PATH python -m pytest …``.

The machine the suite runs on is shared, so wall times say more about the neighbours than
about a test; CPU seconds do not. With the variable set, each pytest process (the controller
and every xdist worker) appends one JSON line per test to ``PATH.<worker>`` (``PATH.main``
without xdist): the test's id, its wall seconds, and the user + system seconds of the process
itself (``RUSAGE_SELF``) and of the children it waited for (``RUSAGE_CHILDREN``) across its
setup, call and teardown, so a session fixture's cost lands on the first test that asks for
it. A last line per process (id ``<session>``) holds the process's totals, collection and
xdist included. Processes nobody waits for (a detached executor, a daemon) are not counted.

``python -m tests.cpuclock PATH…`` ranks what was recorded: the dearest tests, then per file.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

VARIABLE = "CAMPAIGNOPS_TEST_CPU"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _sink() -> Path | None:
    where = os.environ.get(VARIABLE)
    if not where:
        return None
    return Path(f"{where}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")


def _write(sink: Path, record: dict[str, object]) -> None:
    with sink.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    sink = _sink()
    if sink is None:
        return (yield)
    wall = time.monotonic()
    own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    try:
        return (yield)
    finally:
        _write(
            sink,
            {
                "id": item.nodeid,
                "wall": round(time.monotonic() - wall, 3),
                "self": round(_cpu(resource.RUSAGE_SELF) - own, 3),
                "children": round(_cpu(resource.RUSAGE_CHILDREN) - children, 3),
            },
        )


def pytest_sessionfinish(session: pytest.Session) -> None:
    sink = _sink()
    if sink is not None:
        _write(
            sink,
            {
                "id": "<session>",
                "self": round(_cpu(resource.RUSAGE_SELF), 3),
                "children": round(_cpu(resource.RUSAGE_CHILDREN), 3),
            },
        )


def _report(paths: list[str], top: int = 40) -> str:
    tests: dict[str, float] = {}
    files: dict[str, float] = defaultdict(float)
    sessions = 0.0
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            cpu = float(record["self"]) + float(record["children"])
            if record["id"] == "<session>":
                sessions += cpu
                continue
            tests[record["id"]] = tests.get(record["id"], 0.0) + cpu
            files[str(record["id"]).split("::")[0]] += cpu
    lines = [
        f"{len(tests)} tests, {sum(tests.values()):.1f} s CPU in tests; processes {sessions:.1f} s"
    ]
    lines += [
        f"{cpu:8.2f}  {name}" for name, cpu in sorted(tests.items(), key=lambda t: -t[1])[:top]
    ]
    lines.append("per file:")
    lines += [
        f"{cpu:8.2f}  {name}" for name, cpu in sorted(files.items(), key=lambda t: -t[1])[:top]
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(_report(sys.argv[1:]))
