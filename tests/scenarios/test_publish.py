"""The publishing steps as the generated workflows run them: the `campaign` executable, settings
from the CI environment only, against a local GitHub and GitLab API (tests/forge/fakeforge.py).

A pull request gets one review comment, edited on every push; the weekly audit opens one issue,
updates it on the next run, and closes it once the audit is clean.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.forge import fakeforge
from tests.forge.conftest import CI_VARIABLES, pull_request_event

MARK = "<!-- campaignops:campaign-review -->"
WORKFLOWS = Path(__file__).parents[2] / "template/{{cookiecutter.campaign_slug}}/.github/workflows"


def workflow_publish(kind: str) -> list[str]:
    """The `campaign publish KIND …` arguments as the generated GitHub workflow runs them."""
    (checks,) = WORKFLOWS.glob("*checks.yml*")
    found = re.search(rf"^\s+run: campaign (publish {kind} .*)$", checks.read_text(), re.M)
    assert found, f"no publish {kind} step in {checks.name}"
    return shlex.split(found[1])


def campaign_exe() -> str:
    return shutil.which("campaign") or str(Path(sys.executable).with_name("campaign"))


@pytest.fixture
def server() -> Iterator[fakeforge.Fake]:
    yield from fakeforge.serve()


def step(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One workflow step: `campaign ARGS` with only the CI's variables (and PATH)."""
    base = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES}
    return subprocess.run(
        [campaign_exe(), *args],
        env={**base, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_github_review_job_on_three_pushes(server: fakeforge.Fake, tmp_path: Path) -> None:
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": server.url,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_TOKEN": fakeforge.TOKEN,
        "GITHUB_EVENT_PATH": str(pull_request_event(tmp_path, number=7)),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    review = tmp_path / "review.md"
    # Another app's older comment holding the marker: never ours (issue 16, item 8).
    theirs = {"id": 3, "body": f"x\n\n{MARK}\n", "user": {"login": "other[bot]", "type": "Bot"}}
    server.state.comments[7] = [theirs]
    publish = workflow_publish("comment")
    pushes = ["targets added: 2\n", "targets added: 3\n", "targets added: 3\n"]
    outputs = []
    for text in pushes:
        review.write_text(text, encoding="utf-8")
        done = step(env, *publish, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.split(" on ")[0])
    first, *comments = server.state.comments[7]
    assert first == theirs
    assert len(comments) == 1
    only = comments[0]["id"]
    assert outputs == [
        f"created comment {only}",
        f"updated comment {only}",
        f"unchanged comment {only}",
    ]
    assert comments[0]["body"] == f"targets added: 3\n\n{MARK}\n"
    writes = [(c.method, c.path) for c in server.state.calls if c.method != "GET"]
    assert writes == [
        ("POST", "/repos/o/r/issues/7/comments"),
        ("PATCH", f"/repos/o/r/issues/comments/{only}"),
    ]
    assert fakeforge.TOKEN not in "".join(outputs)
    assert not (tmp_path / "summary.md").exists()


def test_gitlab_scheduled_audit_opens_updates_closes_one_issue(
    server: fakeforge.Fake, tmp_path: Path
) -> None:
    env = {
        "GITLAB_CI": "true",
        "CI_API_V4_URL": server.url + fakeforge.GITLAB_ROOT,
        "CI_PROJECT_ID": "42",
        "CAMPAIGN_GITLAB_TOKEN": fakeforge.TOKEN,
    }
    audit = tmp_path / "audit.md"

    def weekly(text: str | None) -> str:
        if text is not None:
            audit.write_text(text, encoding="utf-8")
        state = "open" if text is not None else "closed"
        done = step(
            env, "publish", "issue", "--label", "campaign-audit",
            "--title", "Campaign audit", "--body-file", "audit.md", "--state", state,
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.split(":")[0].strip()

    first = weekly("85 stale stamps\n")
    iid = server.state.gl_issues[0]["iid"]
    assert [first, weekly("3 stale stamps\n"), weekly(None), weekly(None)] == [
        f"created issue #{iid}",
        f"updated issue #{iid}",
        f"closed issue #{iid}",
        "no open issue labelled campaign-audit of ours",
    ]
    assert [(i["iid"], i["state"]) for i in server.state.gl_issues] == [(iid, "closed")]
    assert server.state.gl_issues[0]["description"] == (
        "3 stale stamps\n\n<!-- campaignops:campaign-audit -->\n"
    )
