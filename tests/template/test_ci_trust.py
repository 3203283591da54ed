"""The generated CI's trust boundaries (issue 16, item 11), read from a rendered campaign.

- every action is pinned by a full commit SHA, with its release in a comment;
- the review job is serialized per pull request (two pushes never post two comments);
- in `.gitlab-ci.yml` the api-scope token is used only by this project's own merge requests and
  by scheduled audits of protected branches, and the file says how far the token reaches.

Only rendering is needed (no virtualenv): these run in seconds, unlike test_ci_runs.py.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.template.cikit import CHECKS, GITLAB, applying_rule
from tests.template.conftest import ROOT, full_answers, render_copier

AUDIT = ".github/workflows/audit.yml"
# `uses: owner/repo@<40 hex> # vX.Y.Z`: the SHA is what runs, the comment is what a person reads.
PINNED = re.compile(
    r"^\s*(?:- )?uses: (?P<action>[\w.-]+/[\w./-]+)@(?P<sha>[0-9a-f]{40}) # v\d+\.\d+\.\d+$"
)
USES = re.compile(r"^\s*(?:- )?uses:")
WORKFLOW_SOURCES = ROOT / "template" / "{{cookiecutter.campaign_slug}}" / ".github" / "workflows"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("ci-trust") / "camp"
    return render_copier(dest, full_answers("camp", {"ci": "both"}))


def _uses_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if USES.match(line)]


def test_every_action_is_pinned_by_commit_sha_with_its_release(campaign: Path) -> None:
    pins: dict[str, set[str]] = {}
    for rel in (CHECKS, AUDIT):
        text = (campaign / rel).read_text(encoding="utf-8")
        lines = _uses_lines(text)
        assert lines, rel
        for line in lines:
            match = PINNED.match(line)
            assert match, f"{rel}: not pinned by commit SHA with its tag in a comment: {line!r}"
            pins.setdefault(match["action"], set()).add(match["sha"] + line.split("#", 1)[1])
        # What YAML reads agrees with the lines: every step that uses an action names a SHA.
        doc = yaml.safe_load(text)
        for job in doc["jobs"].values():
            for step in job["steps"]:
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", step["uses"]), step
    # One action, one pin: the workflows never run two versions of the same action.
    assert {a: len(p) for a, p in pins.items()} == {
        "actions/checkout": 1,
        "actions/setup-python": 1,
    }


def test_the_template_sources_hold_no_unpinned_action() -> None:
    # The template files themselves (every conditional name), not only one rendered variant.
    sources = sorted(WORKFLOW_SOURCES.iterdir())
    assert len(sources) == 2
    for path in sources:
        for line in _uses_lines(path.read_text(encoding="utf-8")):
            assert PINNED.match(line), f"{path.name}: {line!r}"


def test_the_review_job_runs_once_per_pull_request_at_a_time(campaign: Path) -> None:
    jobs = yaml.safe_load((campaign / CHECKS).read_text(encoding="utf-8"))["jobs"]
    assert jobs["review"]["concurrency"] == {
        "group": "campaign-review-${{ github.event.pull_request.number }}",
        "cancel-in-progress": True,
    }
    # The check job posts nothing: it is not serialized (every push is checked).
    assert "concurrency" not in jobs["check"]


def _gitlab(campaign: Path) -> dict[str, dict[str, object]]:
    doc: dict[str, dict[str, object]] = yaml.safe_load(
        (campaign / GITLAB).read_text(encoding="utf-8")
    )
    return doc


SAME_PROJECT = {
    "CI_PIPELINE_SOURCE": "merge_request_event",
    "CI_PROJECT_ID": "7",
    "CI_MERGE_REQUEST_PROJECT_ID": "7",
    "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "7",
}
# "Run pipeline" on a fork's merge request: the pipeline runs in the parent (CI_PROJECT_ID),
# the source project is the fork.
FORK_IN_PARENT = {**SAME_PROJECT, "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "99"}


@pytest.mark.parametrize(
    ("variables", "posts"), [(SAME_PROJECT, "yes"), (FORK_IN_PARENT, "no")], ids=["own", "fork"]
)
def test_gitlab_review_posts_only_for_this_projects_merge_requests(
    campaign: Path, variables: dict[str, str], posts: str
) -> None:
    rules = _gitlab(campaign)["campaign-review"]["rules"]
    assert isinstance(rules, list)
    rule = applying_rule(rules, variables)
    assert rule.get("when", "on_success") == "on_success"  # the review itself always runs
    assert rule["variables"] == {"CAMPAIGN_POST_REVIEW": posts}


def _publish_section(campaign: Path) -> str:
    script = _gitlab(campaign)["campaign-review"]["script"]
    assert isinstance(script, list)
    (section,) = [s for s in script if "campaign publish" in s]
    return str(section)


@pytest.mark.parametrize(
    ("variables", "published"), [(SAME_PROJECT, True), (FORK_IN_PARENT, False)], ids=["own", "fork"]
)
def test_gitlab_review_job_uses_the_token_only_for_its_own_merge_requests(
    campaign: Path, tmp_path: Path, variables: dict[str, str], published: bool
) -> None:
    # The job's own publish lines, run by sh as the runner would, with the variables its rule
    # sets. `campaign` is a stand-in that records its arguments: what matters here is whether
    # the job calls publish at all with the token in reach (publish itself is tested against a
    # local API server in tests/forge).
    rules = _gitlab(campaign)["campaign-review"]["rules"]
    assert isinstance(rules, list)
    rule_vars = applying_rule(rules, variables)["variables"]
    assert isinstance(rule_vars, dict)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    shim = bin_dir / "campaign"
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{calls}"\n', encoding="utf-8")
    shim.chmod(0o755)
    (tmp_path / "review.md").write_text("## campaign review\nno findings\n", encoding="utf-8")
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "CAMPAIGN_GITLAB_TOKEN": "glpat-secret",  # an unprotected variable reaches every job
        **variables,
        **{str(k): str(v) for k, v in rule_vars.items()},
    }
    proc = subprocess.run(
        ["sh", "-e", "-c", _publish_section(campaign)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    made = calls.read_text(encoding="utf-8") if calls.exists() else ""
    assert ("publish comment --platform gitlab" in made) is published, made
    if not published:
        assert "no findings" in proc.stdout  # the fork's review is in the job log
        assert "fork" in proc.stdout


@pytest.mark.parametrize(("protected", "runs"), [("true", True), ("false", False)])
def test_gitlab_audit_runs_only_on_protected_branches(
    campaign: Path, protected: str, runs: bool
) -> None:
    rules = _gitlab(campaign)["campaign-audit"]["rules"]
    assert isinstance(rules, list)
    variables = {
        "CI_PIPELINE_SOURCE": "schedule",
        "CI_COMMIT_BRANCH": "main",
        "CI_COMMIT_REF_PROTECTED": protected,
    }
    assert (applying_rule(rules, variables).get("when", "on_success") != "never") is runs


def test_gitlab_file_states_the_tokens_reach(campaign: Path) -> None:
    text = (campaign / GITLAB).read_text(encoding="utf-8")
    header = text.split("\nworkflow:", 1)[0]
    flat = " ".join(header.replace("#", " ").split())
    for phrase in (
        "What the token reaches",
        "a pipeline run in this project for a fork's merge request",
        "runs the FORK's .gitlab-ci.yml with THIS project's variables",
        "mark the variable Masked, and Protected",
    ):
        assert phrase in flat, phrase
