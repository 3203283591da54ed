"""The GitOps loop end to end: what `campaign review` and `campaign audit` write is what the
publishing step posts, against the local GitHub and GitLab API (tests/forge/fakeforge.py).

A pull request that grows the campaign gets ONE review comment, updated after the next push;
the weekly audit of a campaign a year old opens ONE issue, updates it a month later, and closes
it once every stamp is renewed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import git
from tests.forge import fakeforge
from tests.forge.conftest import CI_VARIABLES, pull_request_event
from tests.scenarios import test_review

branch = test_review.branch  # the campaign on its branch `grow`, main as the base


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[fakeforge.Fake]:
    for name in CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield from fakeforge.serve()


def test_a_pull_request_gets_one_review_comment_updated_on_the_next_push(  # type: ignore[no-untyped-def]
    branch: Path, run, server: fakeforge.Fake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_API_URL": server.url,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_TOKEN": fakeforge.TOKEN,
        "GITHUB_EVENT_PATH": str(pull_request_event(tmp_path, number=3)),
    }.items():
        monkeypatch.setenv(key, value)

    def review_job() -> str:
        """The workflow's review job: the review, then the sticky comment."""
        done = run("review", "--base", "main", "--format", "markdown", "--today", "2026-11-21")
        assert done.code == 0, done.err
        (tmp_path / "review.md").write_text(done.out, encoding="utf-8")
        posted = run(
            "publish", "comment", "--marker", "campaign-review",
            "--body-file", str(tmp_path / "review.md"), "--author", "github-actions[bot]",
        )  # fmt: skip
        assert posted.code == 0, posted.err
        return done.out

    first = review_job()
    assert "**targets: 3 added" in first
    (comment,) = server.state.comments[3]
    assert comment["body"].startswith(first.rstrip("\n"))

    (branch / "configs/example/tiny.yaml").write_text("lr: 0.1\nwidth: 2\n", encoding="utf-8")
    with (branch / "queues/example.txt").open("a", encoding="utf-8") as fh:
        fh.write("configs/example/tiny.yaml segmentation 3\n")
    git(branch, "add", "-A")
    git(branch, "commit", "-qm", "grow: one more queue cell")
    second = review_job()
    assert second != first

    (again,) = server.state.comments[3]  # the same comment, edited, never a second one
    assert again["id"] == comment["id"]
    assert again["body"].startswith(second.rstrip("\n"))
    assert "configs/example/tiny.yaml segmentation 3" in again["body"]
    writes = [(c.method, c.path) for c in server.state.calls if c.method != "GET"]
    assert writes == [
        ("POST", "/repos/o/r/issues/3/comments"),
        ("PATCH", f"/repos/o/r/issues/comments/{comment['id']}"),
    ]


def test_the_weekly_audit_opens_updates_and_closes_one_issue(  # type: ignore[no-untyped-def]
    demo: Path, run, server: fakeforge.Fake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key, value in {
        "GITLAB_CI": "true",
        "CI_API_V4_URL": server.url + fakeforge.GITLAB_ROOT,
        "CI_PROJECT_ID": "42",
        "CAMPAIGN_GITLAB_TOKEN": fakeforge.TOKEN,
    }.items():
        monkeypatch.setenv(key, value)
    body = tmp_path / "audit.md"

    def weekly(today: str) -> tuple[int, str]:
        """The scheduled job: the audit, then open/update or close its issue by the exit code."""
        audit = run("audit", "--today", today, "--format", "markdown")
        assert audit.code in (0, 1), audit.err
        body.write_text(audit.out, encoding="utf-8")
        state = "open" if audit.code == 1 else "closed"
        posted = run(
            "publish", "issue", "--label", "campaign-audit", "--title", "Campaign audit",
            "--body-file", str(body), "--state", state,
        )  # fmt: skip
        assert posted.code == 0, posted.err
        return audit.code, posted.out.split(":")[0].strip()

    code, said = weekly("2027-06-01")
    (issue,) = server.state.gl_issues
    assert code == 1 and said == f"created issue #{issue['iid']}"
    june = issue["description"]
    assert "backends/local.md" in june and "failures.yaml" in june

    code, said = weekly("2027-07-01")
    assert code == 1 and said == f"updated issue #{issue['iid']}"
    assert server.state.gl_issues[0]["description"] != june

    # Someone re-checks every fact and renews its stamp.
    tracked = git(demo, "ls-files").split()
    for rel in tracked:
        path = demo / rel
        text = path.read_text(encoding="utf-8")
        if "2026-11" in text:
            path.write_text(text.replace("2026-11", "2027-06"), encoding="utf-8")
    subprocess.run(["git", "commit", "-qam", "re-verified"], cwd=demo, check=True)
    code, said = weekly("2027-07-01")
    assert code == 0 and said == f"closed issue #{issue['iid']}"
    assert [(i["iid"], i["state"]) for i in server.state.gl_issues] == [(issue["iid"], "closed")]
