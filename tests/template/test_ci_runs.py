"""The generated CI runs as written: its own steps, executed here, in a fresh virtualenv.

A campaign is generated with `campaign new --source <mirror>@<tag>`, where the mirror is a git
repository holding this checkout (tests/template/conftest.py): exactly what a campaign whose tool
comes from a repository records. The workflow's `run:` steps (GitHub) and the check job's
`script:` lines (GitLab) are parsed from the generated YAML and run in clones of the campaign,
with a virtualenv built by the workflow's own install step; tests/template/cikit.py tables what
stands in for the CI service. One virtualenv serves the whole module.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from campaignops.generate import install_source
from tests.template.cikit import (
    CHECKS,
    GITLAB,
    PR_CONTEXT,
    TIMEOUT,
    ZEROS,
    World,
    commit,
    first_rule,
    git_in,
    github_steps,
    push_context,
    run_check_job,
    run_github,
    run_gitlab,
)
from tests.template.conftest import Mirror

STAMP_DATE = re.compile(r"(?<![\d-])\d{4}-\d{2}(?![\d-])")
QUEUE = "queues/example.txt"
FIRST_CELL = "configs/example/baseline.yaml reconstruction 5\n"


def _append_cell(root: Path) -> None:
    """A new config and its cell at the end of the queue file (cell names come from configs)."""
    configs = root / "configs/example"
    (configs / "deep.yaml").write_text((configs / "wide.yaml").read_text(), encoding="utf-8")
    with (root / QUEUE).open("a", encoding="utf-8") as fh:
        fh.write("configs/example/deep.yaml segmentation 3\n")


def _freshen_stamps(root: Path) -> None:
    # The CI steps age stamps against the real date: move the template's stamps to this month
    # (as dev/demo.sh does) so the campaign is stale-free whenever the suite runs, and the
    # planted defect is the only finding.
    month = dt.date.today().strftime("%Y-%m")
    for path in root.rglob("*"):
        if ".git" in path.parts or not path.is_file() or path.suffix not in {".md", ".yaml"}:
            continue
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        fresh = [STAMP_DATE.sub(month, ln) if "verified" in ln else ln for ln in lines]
        path.write_text("".join(fresh), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "campaignops", "render"], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- the module's world --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, mirror: Mirror, pre_commit_home: Path
) -> Iterator[World]:
    home = tmp_path_factory.mktemp("ci-runs")
    made = subprocess.run(
        [
            *(sys.executable, "-m", "campaignops", "new", "camp", "--defaults"),
            *("--data", "ci=both", "--data", "require_pushed=no"),
            *("--source", f"{mirror.path}@{mirror.tag}"),
        ],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    assert f"CI installs: {mirror.requirement}" in made.stdout
    campaign = home / "camp"
    _freshen_stamps(campaign)
    commit(campaign, "Re-verify stamps")
    origin = home / "origin.git"
    git_in(home, "clone", "-q", "--bare", str(campaign), str(origin))
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    w = World(
        campaign=campaign,
        origin=origin,
        venv=venv,
        home=home,
        mirror=mirror,
        pre_commit_home=pre_commit_home,
    )
    # The workflow's own install step builds the environment every later step uses.
    install = github_steps(campaign, "check", push_context(ZEROS))[0]
    ran = run_github(w, campaign, install)
    assert ran.code == 0, ran.out
    # GitLab's campaign-check installs too: its line runs here, on a full check of the campaign
    # as generated; the GitLab tests below run the job's script after it.
    manual = {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main"}
    ran = run_gitlab(w, campaign, manual, install=True)
    assert ran.code == 0 and "full check" in ran.out, ran.out
    yield w


def test_the_workflow_and_gitlab_install_the_recorded_requirement(world: World) -> None:
    for rel in (CHECKS, ".github/workflows/audit.yml", GITLAB):
        text = (world.campaign / rel).read_text(encoding="utf-8")
        assert f'CAMPAIGNOPS_REQUIREMENT: "{world.mirror.requirement}"' in text, rel
    probe = (
        "import importlib.metadata as m, importlib.util as u, json; "
        "d = json.loads(m.distribution('campaignops').read_text('direct_url.json')); "
        "print(d['url'], d['vcs_info']['requested_revision'], "
        "u.find_spec('copier') is None and u.find_spec('cookiecutter') is None)"
    )
    proc = subprocess.run(
        [str(world.venv / "bin" / "python"), "-c", probe], capture_output=True, text=True
    )
    # Installed from the mirror at its tag, without the generation extra.
    url = install_source.local_url(world.mirror.path)
    assert proc.stdout.split() == [url, world.mirror.tag, "True"], proc.stdout + proc.stderr
    for tool in ("campaign", "pre-commit", "shellcheck", "check-jsonschema"):
        assert (world.venv / "bin" / tool).is_file(), tool


def test_campaign_new_without_the_extra_names_it(world: World) -> None:
    proc = subprocess.run(
        [str(world.venv / "bin" / "campaign"), "new", "other", "--defaults"],
        cwd=world.home,
        env=world.env({}),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "campaign new needs copier" in proc.stderr
    assert "pip install 'campaignops[new]'" in proc.stderr
    assert not (world.home / "other").exists()


def test_github_push_steps_pass_against_the_previouscommit(world: World) -> None:
    work = world.checkout("gh-push")
    before = git_in(work, "rev-parse", "HEAD")
    _append_cell(work)  # appending is allowed
    commit(work, "append a cell")
    ran = run_check_job(world, work, push_context(before))
    assert [r.code for r in ran.values()] == [0, 0, 0], ran
    assert "full check" not in ran["campaign check"].out


def test_github_push_rewriting_a_queue_line_fails_the_check(world: World) -> None:
    work = world.checkout("gh-rewrite")
    before = git_in(work, "rev-parse", "HEAD")
    text = (work / QUEUE).read_text(encoding="utf-8")
    (work / QUEUE).write_text(text.replace(FIRST_CELL, FIRST_CELL.replace("5", "7")), "utf-8")
    commit(work, "rewrite a cell in place")
    ran = run_check_job(world, work, push_context(before))
    check = ran["campaign check"]
    assert check.code == 1, check.out
    assert f"::error file={QUEUE},line=6" in check.out and "QUEUE004" in check.out
    assert list(ran) == ["campaign check"]  # the job stops at the failing step
    # A push that created the branch has no previous commit: the full check cannot see it.
    full = run_check_job(world, work, push_context(ZEROS))
    assert [r.code for r in full.values()] == [0, 0, 0], full
    assert "No previous commit to compare with: full check." in full["campaign check"].out


def test_github_planted_crlf_script_fails_check_and_shellcheck(world: World) -> None:
    work = world.checkout("gh-crlf")
    before = git_in(work, "rev-parse", "HEAD")
    (work / "scripts/hello.v1.sh").write_bytes(b"#!/usr/bin/env bash\r\necho hi\r\n")
    commit(work, "a CRLF script")
    ran = run_check_job(world, work, push_context(before))
    assert ran["campaign check"].code == 1
    assert "::error file=scripts/hello.v1.sh" in ran["campaign check"].out
    assert "EOL" in ran["campaign check"].out
    steps = github_steps(work, "check", push_context(before))
    shellcheck = next(s for s in steps if s.name == "shellcheck")
    sc = run_github(world, work, shellcheck)
    assert sc.code == 1 and "SC1017" in sc.out  # literal carriage return


def test_github_pull_request_checks_against_the_target_branch(world: World) -> None:
    work = world.checkout("gh-pr")
    git_in(work, "checkout", "-q", "-b", "change")
    _append_cell(work)
    commit(work, "append a cell")
    clean = run_check_job(world, work, PR_CONTEXT)
    assert [r.code for r in clean.values()] == [0, 0, 0], clean
    text = (work / QUEUE).read_text(encoding="utf-8")
    (work / QUEUE).write_text(text.replace(FIRST_CELL, ""), "utf-8")
    commit(work, "drop a cell")
    ran = run_check_job(world, work, PR_CONTEXT)
    assert ran["campaign check"].code == 1
    assert "QUEUE004" in ran["campaign check"].out and "origin/main" in ran["campaign check"].out


def test_the_workflow_schemas_step_checks_both_workflows(world: World) -> None:
    steps = github_steps(world.campaign, "check", push_context(ZEROS))
    schemas = next(s for s in steps if s.name == "workflow schemas")
    ran = run_github(world, world.campaign, schemas)
    assert ran.code == 0 and "ok -- validation done" in ran.out, ran.out
    broken = world.checkout("gh-schema")
    audit = broken / ".github/workflows/audit.yml"
    audit.write_text(audit.read_text().replace("runs-on:", "runs_on:"), encoding="utf-8")
    assert run_github(world, broken, schemas).code == 1


# --- GitLab ------------------------------------------------------------------------------------


def test_gitlab_push_checks_against_the_before_sha(world: World) -> None:
    work = world.checkout("gl-push")
    before = git_in(work, "rev-parse", "HEAD")
    _append_cell(work)
    commit(work, "append a cell")
    push = {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main"}
    ran = run_gitlab(world, work, {**push, "CI_COMMIT_BEFORE_SHA": before})
    assert ran.code == 0, ran.out
    assert "full check" not in ran.out and "ok -- validation done" in ran.out
    text = (work / QUEUE).read_text(encoding="utf-8")
    (work / QUEUE).write_text(text.replace(FIRST_CELL, FIRST_CELL.replace("5", "7")), "utf-8")
    commit(work, "rewrite a cell in place")
    ran = run_gitlab(world, work, {**push, "CI_COMMIT_BEFORE_SHA": before})
    assert ran.code == 1 and "QUEUE004" in ran.out, ran.out
    # On the default branch without a before-SHA (a manual run): the full check.
    full = run_gitlab(world, work, {**push, "CI_COMMIT_BEFORE_SHA": ZEROS})
    assert full.code == 0 and "full check" in full.out, full.out


def test_gitlab_new_branch_checks_against_the_merge_base(world: World) -> None:
    work = world.checkout("gl-branch")
    git_in(work, "checkout", "-q", "-b", "feature")
    text = (work / QUEUE).read_text(encoding="utf-8")
    (work / QUEUE).write_text(text.replace(FIRST_CELL, FIRST_CELL.replace("5", "7")), "utf-8")
    commit(work, "rewrite a cell in place")
    first_push = {
        "CI_PIPELINE_SOURCE": "push",
        "CI_COMMIT_BRANCH": "feature",
        "CI_COMMIT_BEFORE_SHA": ZEROS,
    }
    ran = run_gitlab(world, work, first_push)
    # The merge base with main is the base: a full check would not see the rewrite.
    assert ran.code == 1 and "QUEUE004" in ran.out and "full check" not in ran.out, ran.out


def test_gitlab_merge_request_checks_against_the_diff_base(world: World) -> None:
    work = world.checkout("gl-mr")
    base = git_in(work, "rev-parse", "HEAD")
    git_in(work, "checkout", "-q", "-b", "mr")
    (work / "scripts/hello.v1.sh").write_bytes(b"#!/usr/bin/env bash\necho hi\n")
    commit(work, "a new wrapper")
    mr = {
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_COMMIT_BEFORE_SHA": ZEROS,  # always zeros in merge request pipelines
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
    }
    text = (work / QUEUE).read_text(encoding="utf-8")
    (work / QUEUE).write_text(text.replace(FIRST_CELL, ""), "utf-8")
    commit(work, "drop a cell")
    ran = run_gitlab(world, work, mr)
    assert ran.code == 1 and "QUEUE004" in ran.out, ran.out


@pytest.mark.parametrize(
    ("variables", "pipeline", "jobs"),
    [
        # A merge request pipeline: check and review (a fork's too: the review is not posted).
        (
            {
                "CI_PIPELINE_SOURCE": "merge_request_event",
                "CI_PROJECT_ID": "7",
                "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "7",
            },
            "on_success",
            {"campaign-check", "campaign-review"},
        ),
        (
            {
                "CI_PIPELINE_SOURCE": "merge_request_event",
                "CI_PROJECT_ID": "7",
                "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "99",
            },
            "on_success",
            {"campaign-check", "campaign-review"},
        ),
        # A push to a branch with an open merge request: no branch pipeline (no duplicate).
        (
            {
                "CI_PIPELINE_SOURCE": "push",
                "CI_COMMIT_BRANCH": "f",
                "CI_OPEN_MERGE_REQUESTS": "g/p!1",
            },
            "never",
            set(),
        ),
        (
            {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main"},
            "on_success",
            {"campaign-check"},
        ),
        (
            {
                "CI_PIPELINE_SOURCE": "schedule",
                "CI_COMMIT_BRANCH": "main",
                "CI_COMMIT_REF_PROTECTED": "true",
            },
            "on_success",
            {"campaign-audit"},
        ),
        # A schedule on an unprotected branch: the audit (which holds the token) does not run.
        (
            {
                "CI_PIPELINE_SOURCE": "schedule",
                "CI_COMMIT_BRANCH": "f",
                "CI_COMMIT_REF_PROTECTED": "false",
            },
            "on_success",
            set(),
        ),
    ],
)
def test_gitlab_rules_pick_the_pipelines_and_jobs(
    world: World, variables: dict[str, str], pipeline: str, jobs: set[str]
) -> None:
    doc = yaml.safe_load((world.campaign / GITLAB).read_text(encoding="utf-8"))
    assert first_rule(doc["workflow"]["rules"], variables) == pipeline
    if pipeline == "never":
        return
    chosen = {
        name
        for name, spec in doc.items()
        if isinstance(spec, dict) and "script" in spec
        if first_rule(spec.get("rules", [{}]), variables) != "never"
    }
    assert chosen == jobs


# --- pre-commit --------------------------------------------------------------------------------


def test_pre_commit_stops_a_commit_with_a_planted_defect(world: World) -> None:
    work = world.checkout("hooks")
    env = world.env({})
    pre_commit = str(world.venv / "bin" / "pre-commit")
    installed = subprocess.run([pre_commit, "install"], cwd=work, env=env, capture_output=True)
    assert installed.returncode == 0, installed
    (work / "scripts/hello.v1.sh").write_bytes(b"#!/usr/bin/env bash\r\necho hi\r\n")
    git_in(work, "add", "-A")
    head = git_in(work, "rev-parse", "HEAD")
    proc = subprocess.run(
        ["git", "commit", "-m", "a CRLF script"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 1, proc.stdout
    assert git_in(work, "rev-parse", "HEAD") == head  # nothing committed
    assert re.search(r"campaign check \(all families\)\.+Failed", proc.stdout), proc.stdout
    assert "scripts/hello.v1.sh" in proc.stdout and "EOL" in proc.stdout
    assert re.search(r"shellcheck\.+Failed", proc.stdout), proc.stdout
    # The fixed script goes in.
    (work / "scripts/hello.v1.sh").write_bytes(b"#!/usr/bin/env bash\necho hi\n")
    git_in(work, "add", "-A")
    ok = subprocess.run(
        ["git", "commit", "-m", "an LF script"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    assert ok.returncode == 0, ok.stdout


# --- the inline scripts themselves -------------------------------------------------------------


def _inline_scripts(root: Path) -> Iterator[tuple[str, str, str]]:
    """(where, shell, script) for every `run:` of both workflows and every GitLab script line."""
    for rel in (CHECKS, ".github/workflows/audit.yml"):
        doc = yaml.safe_load((root / rel).read_text(encoding="utf-8"))
        for job_id, job in doc["jobs"].items():
            for step in job["steps"]:
                if "run" in step:
                    yield f"{rel}:{job_id}:{step.get('name', '')}", "bash", step["run"]
    doc = yaml.safe_load((root / GITLAB).read_text(encoding="utf-8"))
    for job_id, job in doc.items():
        if isinstance(job, dict) and "script" in job:
            yield f"{GITLAB}:{job_id}", "sh", "\n".join(job["script"])


def test_every_inline_script_passes_shellcheck(world: World) -> None:
    scripts = list(_inline_scripts(world.campaign))
    assert len(scripts) == 13  # checks.yml 4 + 3, audit.yml 3, .gitlab-ci.yml 3 jobs
    for where, shell, script in scripts:
        proc = subprocess.run(
            [str(world.venv / "bin" / "shellcheck"), "--shell", shell, "-"],
            input=script,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"{where}\n{proc.stdout}{proc.stderr}"


def _steps(root: Path, rel: str, job: str) -> dict[str, dict[str, object]]:
    doc = yaml.safe_load((root / rel).read_text(encoding="utf-8"))
    return {str(s.get("name", s.get("uses"))): s for s in doc["jobs"][job]["steps"]}


def test_review_and_audit_jobs_call_the_commands_with_least_permissions(world: World) -> None:
    # The contract with `campaign review`, `campaign publish` and `campaign audit` (built
    # elsewhere): these exact arguments, and only the permissions each job needs.
    checks = yaml.safe_load((world.campaign / CHECKS).read_text(encoding="utf-8"))
    assert checks["permissions"] == {"contents": "read"}
    review = checks["jobs"]["review"]
    assert review["if"] == "github.event_name == 'pull_request'"
    assert review["permissions"] == {"contents": "read", "pull-requests": "write"}
    steps = _steps(world.campaign, CHECKS, "review")
    run = str(steps["campaign review"]["run"])
    assert 'campaign review --base "origin/$BASE_REF" --format markdown > review.md' in run
    assert 'cat review.md >> "$GITHUB_STEP_SUMMARY"' in run
    post = steps["post the review as one comment (updated on later pushes)"]
    # GITHUB_TOKEN cannot tell who it is: the account it posts as is named (issue 16, item 8).
    assert post["run"] == (
        "campaign publish comment --marker campaign-review --body-file review.md "
        "--author 'github-actions[bot]'"
    )
    assert post["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    assert set(post["env"]) == {"GH_TOKEN", "GITHUB_TOKEN"}  # type: ignore[arg-type]

    audit = yaml.safe_load((world.campaign / ".github/workflows/audit.yml").read_text())
    assert set(audit[True]) == {"schedule", "workflow_dispatch"}  # YAML 1.1 reads `on` as True
    assert audit["permissions"] == {"contents": "read", "issues": "write"}
    assert audit["concurrency"] == {"group": "campaign-audit", "cancel-in-progress": False}
    steps = _steps(world.campaign, ".github/workflows/audit.yml", "audit")
    assert "campaign audit --format markdown > audit.md" in str(steps["campaign audit"]["run"])
    publish = steps["open, update or close the audit issue"]
    assert publish["run"] == (
        "campaign publish issue --label campaign-audit "
        '--title "Campaign audit: stale facts and standing checks" '
        "--body-file audit.md --state \"$STATE\" --author 'github-actions[bot]'"
    )
    assert publish["env"]["STATE"] == "${{ steps.audit.outputs.state }}"  # type: ignore[index]

    gitlab = yaml.safe_load((world.campaign / GITLAB).read_text(encoding="utf-8"))
    script = "\n".join(gitlab["campaign-review"]["script"])
    assert "campaign publish comment --platform gitlab --marker campaign-review" in script
    assert 'if [ -n "${CAMPAIGN_GITLAB_TOKEN:-}" ]' in script
    script = "\n".join(gitlab["campaign-audit"]["script"])
    assert "campaign publish issue --platform gitlab --label campaign-audit" in script
