"""Running a generated campaign's CI steps here: the stand-ins for GitHub Actions and GitLab CI.

tests/template/test_ci_runs.py parses a generated workflow's `run:` steps (GitHub) and the check
job's `script:` lines (GitLab) from the YAML and runs them in clones of a generated campaign, with
a virtualenv that the workflow's own install step builds.

What stands in for the CI service (the documented table):

| in the workflow | here |
|---|---|
| `actions/checkout` with `fetch-depth: 0` | a `git clone` of a bare "origin" (all history, `origin/main`) |
| `actions/setup-python` | a fresh `python -m venv`, first on PATH (the test's own venv is not) |
| a `run:` step without `shell:` | `bash -e -c SCRIPT` (GitHub runs `bash -e {0}`: github/docs#23853) |
| `${{ github.event_name }}` | `push` or `pull_request` |
| `${{ github.event.before }}` | the pushed branch's previous commit, or 40 zeros (new branch) |
| `${{ github.base_ref }}` | `main` on a pull request, empty on a push |
| GitLab `script:` lines | joined in one `sh -e` script (the runner runs them in one shell) |
| GitLab predefined variables | CI_PIPELINE_SOURCE, CI_COMMIT_BRANCH, CI_COMMIT_BEFORE_SHA, CI_DEFAULT_BRANCH, CI_MERGE_REQUEST_DIFF_BASE_SHA, CI_MERGE_REQUEST_TARGET_BRANCH_NAME |

Only GitHub expressions in `env:` are substituted: a script holding `${{ }}` fails the test
(expressions pasted into scripts are a script-injection risk, and untestable here).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.template.conftest import Mirror

ZEROS = "0" * 40
EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")
CHECKS = ".github/workflows/checks.yml"
GITLAB = ".gitlab-ci.yml"
TIMEOUT = 900  # the install step builds campaignops from the mirror and fetches its dependencies


@dataclass(frozen=True)
class Step:
    name: str
    script: str
    env: Mapping[str, str]


@dataclass(frozen=True)
class Ran:
    code: int
    out: str


@dataclass(frozen=True)
class World:
    campaign: Path  # the generated campaign (its own git repository; origin's source)
    origin: Path  # a bare repository: the "forge"
    venv: Path
    home: Path  # checkouts and scratch files
    mirror: Mirror
    pre_commit_home: Path

    def env(self, extra: Mapping[str, str]) -> dict[str, str]:
        """The machine's environment, without the test's own venv, git or pre-commit state."""
        test_bin = str(Path(sys.executable).parent)
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GIT_", "PRE_COMMIT", "VIRTUAL_ENV", "PYTHON", "SKIP"))
        }
        path = [p for p in base.get("PATH", "").split(os.pathsep) if p and p != test_bin]
        base["PATH"] = os.pathsep.join([str(self.venv / "bin"), *path])
        ident = {"NAME": "CI", "EMAIL": "ci@example.org"}
        base.update({f"GIT_{w}_{k}": v for w in ("AUTHOR", "COMMITTER") for k, v in ident.items()})
        base["PRE_COMMIT_HOME"] = str(self.pre_commit_home)
        return {**base, **extra}

    def checkout(self, name: str, branch: str = "main") -> Path:
        """actions/checkout with fetch-depth: 0: every branch of origin, `branch` checked out."""
        dest = self.home / name
        git_in(self.home, "clone", "-q", "--branch", branch, str(self.origin), str(dest))
        return dest


def git_in(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=CI", "-c", "user.email=ci@example.org", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def commit(root: Path, message: str) -> str:
    git_in(root, "add", "-A")
    git_in(root, "commit", "-q", "--allow-empty", "-m", message)
    return git_in(root, "rev-parse", "HEAD")


# --- GitHub ------------------------------------------------------------------------------------


def github_steps(root: Path, job: str, context: Mapping[str, str]) -> list[Step]:
    """The `run:` steps of ``job`` with their env (workflow, job, step), expressions substituted
    from ``context``; an expression the table does not define raises KeyError."""
    doc = yaml.safe_load((root / CHECKS).read_text(encoding="utf-8"))
    spec = doc["jobs"][job]
    steps: list[Step] = []
    for step in spec["steps"]:
        if "run" not in step:
            continue  # actions/checkout, actions/setup-python: the World stands in for them
        assert "${{" not in step["run"], f"{step.get('name')}: an expression inside a script"
        assert "shell" not in step and "if" not in step
        merged = {**doc.get("env", {}), **spec.get("env", {}), **step.get("env", {})}
        env = {k: EXPRESSION.sub(lambda m: context[m.group(1)], str(v)) for k, v in merged.items()}
        steps.append(Step(name=str(step.get("name", step["run"])), script=step["run"], env=env))
    return steps


def run_github(world: World, cwd: Path, step: Step) -> Ran:
    runner = {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(cwd),
        "GITHUB_STEP_SUMMARY": str(world.home / "summary.md"),
        "GITHUB_OUTPUT": str(world.home / "output.txt"),
    }
    proc = subprocess.run(
        ["bash", "-e", "-c", step.script],
        cwd=cwd,
        env=world.env({**runner, **step.env}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    return Ran(code=proc.returncode, out=proc.stdout)


def push_context(before: str) -> dict[str, str]:
    return {"github.event_name": "push", "github.event.before": before, "github.base_ref": ""}


PR_CONTEXT = {
    "github.event_name": "pull_request",
    "github.event.before": "",
    "github.base_ref": "main",
}


def run_check_job(world: World, cwd: Path, context: Mapping[str, str]) -> dict[str, Ran]:
    """Every step after the install (done once for the module), in order, as a job would:
    the first failing step ends the job."""
    steps = github_steps(cwd, "check", context)
    assert steps[0].name.startswith("install campaignops")
    out: dict[str, Ran] = {}
    for step in steps[1:]:
        out[step.name] = ran = run_github(world, cwd, step)
        if ran.code != 0:
            break
    return out


# --- GitLab ------------------------------------------------------------------------------------


def gitlab_script(root: Path, job: str) -> tuple[list[str], dict[str, str]]:
    """The job's `script:` lines, and the pipeline's and job's variables."""
    doc = yaml.safe_load((root / GITLAB).read_text(encoding="utf-8"))
    spec = doc[job]
    variables = {**doc.get("variables", {}), **spec.get("variables", {})}
    return list(spec["script"]), {k: str(v) for k, v in variables.items()}


def gitlab_install(root: Path) -> str:
    """campaign-check's first line: the install every later line uses."""
    lines, _ = gitlab_script(root, "campaign-check")
    assert lines[0].startswith("python -m pip install "), lines[0]
    return lines[0]


def run_gitlab(
    world: World, cwd: Path, predefined: Mapping[str, str], *, install: bool = False
) -> Ran:
    """campaign-check's script as a runner would run it. Its install line runs when
    ``install`` is set; else it must be the one the module's world already ran (a pip install
    of what is installed costs ~4 s of CPU, and the tests after it are about the base commit)."""
    lines, variables = gitlab_script(cwd, "campaign-check")
    if not install:
        assert lines[0] == gitlab_install(world.campaign), "the install line differs"
        lines = lines[1:]
    script = "\n".join(lines)
    runner = {"CI": "true", "GITLAB_CI": "true", "CI_DEFAULT_BRANCH": "main", **predefined}
    proc = subprocess.run(
        ["sh", "-e", "-c", script],
        cwd=cwd,
        env=world.env({**variables, **runner}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
    )
    return Ran(code=proc.returncode, out=proc.stdout)


_RULE_TERM = re.compile(r'^\$(?P<var>\w+)(?:\s*==\s*(?:"(?P<value>[^"]*)"|\$(?P<other>\w+)))?$')


def rule_matches(expression: str, variables: Mapping[str, str]) -> bool:
    """GitLab's `rules: if:` for the forms the template uses: `$VAR`, `$VAR == "x"`,
    `$VAR == $OTHER`, `&&`."""
    for term in expression.split("&&"):
        match = _RULE_TERM.match(term.strip())
        assert match, f"rule form not understood here: {term!r}"
        value = variables.get(match["var"], "")
        if match["other"] is not None:
            if value != variables.get(match["other"], ""):
                return False
        elif (value != match["value"]) if match["value"] is not None else not value:
            return False
    return True


def applying_rule(
    rules: list[dict[str, object]], variables: Mapping[str, str]
) -> dict[str, object]:
    """The first rule that applies (its `when`, `variables`); `{"when": "never"}` if none."""
    for rule in rules:
        if "if" not in rule or rule_matches(str(rule["if"]), variables):
            return rule
    return {"when": "never"}


def first_rule(rules: list[dict[str, object]], variables: Mapping[str, str]) -> str:
    """`when` of the first rule that applies ("on_success" by default); "never" if none."""
    return str(applying_rule(rules, variables).get("when", "on_success"))
