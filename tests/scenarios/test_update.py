"""Updates that carry knowledge: a campaign made at an older template version is brought to a
newer one with `campaign update` (real copier, real git, through the CLI).

The template is a temporary copy of this repository's template (copier.yml and template/) in a
git repository, tagged v1.0.0; the next version adds a catalog entry and corrects a backend
fact, tagged v1.1.0. The user's own catalog entry, policy edit and page note must survive.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from campaignops.generate import new as scaffold
from campaignops.generate import template_source
from tests.conftest import Result, git

LAYER = "template/{{cookiecutter.campaign_slug}}"
LOCAL_PAGE = "backends/{% if 'local' in cookiecutter.backends.split(',') %}local.md{% endif %}"
OLD_FACT = "no controlling terminal; closing the terminal that submitted it"
NEW_FACT = "no controlling terminal (it has none to lose); closing the terminal that submitted it"
UPSTREAM_ENTRY = """\
  - id: frobnicator-exploded
    category: other
    title: The frobnicator explodes
    matchers:
      - 'FROBNICATOR EXPLODED in stage \\d+'
    samples:
      - "FROBNICATOR EXPLODED in stage 3"
    symptom: The run stops with FROBNICATOR EXPLODED.
    cause: The frobnicator's buffer overflows.
    fix: Give the frobnicator a larger buffer.
    source: https://example.org/frobnicator/issues/1
    verified: 2026-11
"""
OWN_ENTRY = """\
  - id: our-solver-diverged
    category: numerical-instability
    title: Our solver diverges
    matchers:
      - 'SOLVER DIVERGED at step \\d+'
    samples:
      - "SOLVER DIVERGED at step 42"
    symptom: The run stops with SOLVER DIVERGED.
    cause: The time step is too large for the stiff region.
    fix: Halve dt in configs/.
    source: lab notebook, run 17
    verified: 2026-11
"""
OWN_NOTE = "Our workstation has 64 GB of RAM; keep smokes under 8 GB."


def template_copy(dest: Path) -> Path:
    """copier.yml and template/ of this checkout, as copier reads them from a package."""
    dest.mkdir(parents=True)
    shutil.copy2(scaffold.template_root() / "copier.yml", dest / "copier.yml")
    shutil.copytree(
        scaffold.template_root() / "template",
        dest / "template",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return dest


def upstream_correction(tpl: Path) -> None:
    """The next template version: a new catalog entry and a corrected backend fact."""
    catalog = tpl / LAYER / "failures.yaml"
    text = catalog.read_text(encoding="utf-8")
    catalog.write_text(text.replace("failures:\n", "failures:\n" + UPSTREAM_ENTRY, 1), "utf-8")
    page = tpl / LAYER / LOCAL_PAGE
    text = page.read_text(encoding="utf-8")
    assert OLD_FACT in text  # the fact this test corrects is still in the template
    page.write_text(text.replace(OLD_FACT, NEW_FACT), encoding="utf-8")


def user_edits(root: Path) -> None:
    """What a campaign owner does between updates: an own entry, a policy edit, a page note."""
    local = root / "failures.local.yaml"
    local.write_text(
        local.read_text(encoding="utf-8").replace("failures: []\n", "failures:\n" + OWN_ENTRY),
        encoding="utf-8",
    )
    policy = root / "campaign.yaml"
    text = policy.read_text(encoding="utf-8")
    assert "max_parallel: 8 " in text
    policy.write_text(text.replace("max_parallel: 8 ", "max_parallel: 3 "), encoding="utf-8")
    page = root / "backends/local.md"
    text = page.read_text(encoding="utf-8")
    page.write_text(
        text.replace("\n# Local (this machine)\n", f"\n# Local (this machine)\n\n{OWN_NOTE}\n"),
        "utf-8",
    )


def diagnosed(run, root: Path, line: str) -> str | None:  # type: ignore[no-untyped-def]
    log = root.parent / "task.log"
    log.write_text(f"starting\n{line}\n", encoding="utf-8")
    got: Result = run("diagnose", "--log", str(log), "--state", "FAILED", "--format", "json")
    assert got.code in (0, 1), got.err
    entry = json.loads(got.out).get("entry")
    return entry.get("id") if isinstance(entry, dict) else entry


@pytest.fixture
def versions(tmp_path: Path) -> Path:
    tpl = template_copy(tmp_path / "tpl")
    git(tpl, "init", "-q")
    git(tpl, "add", "-A")
    git(tpl, "commit", "-q", "-m", "template 1.0.0")
    git(tpl, "tag", "v1.0.0")
    return tpl


def tag_next(tpl: Path) -> None:
    upstream_correction(tpl)
    git(tpl, "commit", "-q", "-am", "template 1.1.0: a new entry, a corrected fact")
    git(tpl, "tag", "v1.1.0")


@pytest.fixture
def old_campaign(versions: Path, tmp_path: Path, run, monkeypatch) -> Path:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    made = run("new", "camp", "--defaults", "--template", str(versions), "--vcs-ref", "v1.0.0")
    assert made.code == 0, made.err
    root = tmp_path / "camp"
    monkeypatch.chdir(root)
    user_edits(root)
    assert run("render").code == 0
    assert run("check").code == 0
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "our entry, our policy, our note")
    return root


def test_update_brings_upstream_knowledge_and_keeps_the_campaigns_own(
    old_campaign: Path, versions: Path, run
) -> None:  # type: ignore[no-untyped-def]
    root = old_campaign
    head = git(root, "rev-parse", "HEAD")
    assert diagnosed(run, root, "FROBNICATOR EXPLODED in stage 3") is None
    tag_next(versions)

    got = run("update")

    assert got.code == 0, got.out + got.err
    assert "from v1.0.0 to v1.1.0" in got.out
    changed = {line.split()[-1] for line in got.out.splitlines() if line.startswith("   M ")}
    assert changed == {".copier-answers.yml", "FAILURES.md", "backends/local.md", "failures.yaml"}
    assert git(root, "rev-parse", "HEAD") == head  # never commits
    # Upstream knowledge arrived: the entry (in the catalog, the view, the diagnosis) and the fact.
    assert "id: frobnicator-exploded" in (root / "failures.yaml").read_text(encoding="utf-8")
    assert "| frobnicator-exploded |" in (root / "FAILURES.md").read_text(encoding="utf-8")
    assert diagnosed(run, root, "FROBNICATOR EXPLODED in stage 3") == "frobnicator-exploded"
    page = (root / "backends/local.md").read_text(encoding="utf-8")
    assert NEW_FACT in page and OLD_FACT not in page
    # The campaign's own survived: its entry, its policy edit, its note on the page.
    assert OWN_ENTRY in (root / "failures.local.yaml").read_text(encoding="utf-8")
    assert "| our-solver-diverged |" in (root / "FAILURES.md").read_text(encoding="utf-8")
    assert diagnosed(run, root, "SOLVER DIVERGED at step 7") == "our-solver-diverged"
    assert "max_parallel: 3 " in (root / "campaign.yaml").read_text(encoding="utf-8")
    assert OWN_NOTE in page
    assert "_commit: v1.1.0" in (root / ".copier-answers.yml").read_text(encoding="utf-8")
    assert run("check").code == 0


def test_dry_run_reports_and_changes_nothing(old_campaign: Path, versions: Path, run) -> None:  # type: ignore[no-untyped-def]
    tag_next(versions)
    pinned = run("update", "--dry-run", "--to", "1.0.0")
    assert pinned.code == 0 and pinned.out.startswith("Already at template v1.0.0")
    got = run("update", "--dry-run")
    assert got.code == 0, got.err
    assert "Would update the template from v1.0.0 to v1.1.0" in got.out
    assert "   M failures.yaml" in got.out
    assert git(old_campaign, "status", "--porcelain") == ""
    assert "frobnicator" not in (old_campaign / "failures.yaml").read_text(encoding="utf-8")


def test_both_sides_changing_a_fact_leave_markers_named_by_update_and_check(
    old_campaign: Path, versions: Path, run
) -> None:  # type: ignore[no-untyped-def]
    root = old_campaign
    page = root / "backends/local.md"
    page.write_text(
        page.read_text(encoding="utf-8").replace(OLD_FACT, OLD_FACT.replace("no", "never a", 1)),
        encoding="utf-8",
    )
    git(root, "commit", "-q", "-am", "our wording of the fact")
    tag_next(versions)

    got = run("update")

    assert got.code == 1
    text = page.read_text(encoding="utf-8")
    line = text.splitlines().index(next(ln for ln in text.splitlines() if ln.startswith("<<<<<<<")))
    assert f"backends/local.md:{line + 1}: conflict" in got.out
    checked = run("check", "--select", "EOL", "--format", "json")
    assert checked.code == 1
    found = [(f["path"], f["line"], f["id"]) for f in json.loads(checked.out)["findings"]]
    assert found == [("backends/local.md", line + 1, "EOL005")]


def test_uncommitted_changes_are_refused(old_campaign: Path, versions: Path, run) -> None:  # type: ignore[no-untyped-def]
    tag_next(versions)
    (old_campaign / "notes.txt").write_text("draft\n", encoding="utf-8")
    got = run("update")
    assert got.code == 2
    assert "uncommitted changes (notes.txt)" in got.err
    assert "frobnicator" not in (old_campaign / "failures.yaml").read_text(encoding="utf-8")


def test_a_cookiecutter_campaign_is_refused_with_the_way_out(
    tmp_path: Path, run, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    assert run("new", "cc", "--defaults", "--engine", "cookiecutter").code == 0
    monkeypatch.chdir(tmp_path / "cc")
    got = run("update")
    assert got.code == 2
    assert "has no .copier-answers.yml: it was not generated with copier" in got.err
    assert "campaign new DIR --engine copier" in got.err


def test_a_campaign_new_campaign_follows_the_installed_package(
    tmp_path: Path, run, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """`campaign new` records the cache repository; a newer campaignops (another template and
    version) adds its tag there, and `campaign update` takes the campaign to it."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(template_source.CACHE_ENV, str(cache))
    old = template_copy(tmp_path / "pkg-0.1.0")
    monkeypatch.setattr(scaffold, "template_root", lambda: old)
    monkeypatch.setattr("campaignops.__version__", "0.1.0")
    monkeypatch.chdir(tmp_path)
    assert run("new", "camp", "--defaults").code == 0
    root = tmp_path / "camp"
    answers = (root / ".copier-answers.yml").read_text(encoding="utf-8")
    assert f"_commit: v0.1.0\n_src_path: {cache}\n" in answers
    monkeypatch.chdir(root)
    user_edits(root)
    assert run("render").code == 0
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "ours")

    new = template_copy(tmp_path / "pkg-0.2.0")
    upstream_correction(new)
    monkeypatch.setattr(scaffold, "template_root", lambda: new)
    monkeypatch.setattr("campaignops.__version__", "0.2.0")
    got = run("update")

    assert got.code == 0, got.out + got.err
    assert "from v0.1.0 to v0.2.0" in got.out
    assert template_source.tags(cache) == ("v0.1.0", "v0.2.0")
    assert "| frobnicator-exploded |" in (root / "FAILURES.md").read_text(encoding="utf-8")
    assert "| our-solver-diverged |" in (root / "FAILURES.md").read_text(encoding="utf-8")
    assert NEW_FACT in (root / "backends/local.md").read_text(encoding="utf-8")
    assert run("check").code == 0


SLURM_PAGE = (
    "backends/{% if 'generic-slurm' in cookiecutter.backends.split(',') %}"
    "generic-slurm.md{% endif %}"
)
# Issue 23's knowledge audit: the claim the pages made before it, and the corrected paragraph.
SRUN_CLAIM = (
    "- **`srun` inside `sbatch`** no longer inherits `--cpus-per-task` (Slurm 22.05 and later): pass\n"
    "  `srun -c $SLURM_CPUS_PER_TASK` (verified docs.icer.msu.edu 2026-06).\n"
)
SRUN_FACT_START = "- **`srun` inside `sbatch` and `--cpus-per-task`**: Slurm 22.05 to 23.02"
SRUN_FACT_END = "slurm-22.05.md + slurm-23.11.md 2026-11).\n"
LAMBDA_PAGE = "backends/{% if 'lambda' in cookiecutter.backends.split(',') %}lambda.md{% endif %}"
# The Lambda API host: undecided before the audit, the current API description's host after it.
LAMBDA_CLAIM = (
    "  in public repositories also call `https://cloud.lambda.ai/api/v1`, so both hosts are in use.\n"
    '  Which host the current docs-api.lambda.ai reference names is under "Not confirmed".\n'
)
LAMBDA_FACT_START = "- Docs and console moved from lambdalabs.com to lambda.ai."
LAMBDA_FACT = "gives the base URL `https://cloud.lambda.ai/api/v1` for every endpoint"
DF_I_LOG = (
    "cp: cannot create regular file 'out/step-100.pt': No space left on device\n"
    "Filesystem     Inodes IUsed IFree IUse% Mounted on\n"
    "/dev/vda1        640K  640K     0  100% /\n"
)
QUOTA_LOG = (
    "OSError: [Errno 122] Disk quota exceeded: 'out/intermediate.ntw'\n"
    "    Filesystem   space   quota   limit   grace   files   quota   limit   grace\n"
    "storage:/export/users\n"
    "                 3289M  51200M  76800M            321k*   300k    350k   none\n"
)


def before_the_audit(tpl: Path) -> None:
    """The template as it was before issue 23: the srun claim, no quota-table evidence."""
    page = tpl / LAYER / SLURM_PAGE
    text = page.read_text(encoding="utf-8")
    start = text.index(SRUN_FACT_START)
    end = text.index(SRUN_FACT_END, start) + len(SRUN_FACT_END)
    page.write_text(text[:start] + SRUN_CLAIM + text[end:], encoding="utf-8")
    page = tpl / LAYER / LAMBDA_PAGE
    text = page.read_text(encoding="utf-8")
    start = text.index(LAMBDA_FACT_START)
    end = text.index("\n- ", start) + 1
    page.write_text(
        text[:start] + LAMBDA_FACT_START + "\n" + LAMBDA_CLAIM + text[end:], encoding="utf-8"
    )
    catalog = tpl / LAYER / "failures.yaml"
    text = catalog.read_text(encoding="utf-8")
    for entry_id in ("quota-files-over-limit", "df-inodes-full"):
        start = text.index(f"  - id: {entry_id}\n")
        end = text.index("  - id: ", start + 1)
        text = text[:start] + text[end:]
    catalog.write_text(text, encoding="utf-8")


def test_update_brings_the_audited_facts_and_the_new_evidence_to_an_old_campaign(
    tmp_path: Path, run, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    tpl = template_copy(tmp_path / "tpl")
    before_the_audit(tpl)
    git(tpl, "init", "-q")
    git(tpl, "add", "-A")
    git(tpl, "commit", "-q", "-m", "template before the audit")
    git(tpl, "tag", "v1.0.0")
    monkeypatch.chdir(tmp_path)
    made = run(
        "new", "camp", "--defaults", "--data", "backends=generic-slurm,local,lambda",
        "--template", str(tpl), "--vcs-ref", "v1.0.0",
    )  # fmt: skip
    assert made.code == 0, made.err
    root = tmp_path / "camp"
    monkeypatch.chdir(root)
    assert SRUN_CLAIM in (root / "backends/generic-slurm.md").read_text(encoding="utf-8")
    assert diagnosed(run, root, QUOTA_LOG) == "disk-quota-exceeded"
    assert LAMBDA_CLAIM in (root / "backends/lambda.md").read_text(encoding="utf-8")
    assert diagnosed(run, root, DF_I_LOG) == "disk-full"
    shutil.rmtree(tpl / "template")
    shutil.copytree(scaffold.template_root() / "template", tpl / "template")
    git(tpl, "add", "-A")
    git(tpl, "commit", "-q", "-m", "template after the audit")
    git(tpl, "tag", "v1.1.0")

    got = run("update")

    assert got.code == 0, got.out + got.err
    page = (root / "backends/generic-slurm.md").read_text(encoding="utf-8")
    assert SRUN_CLAIM not in page and SRUN_FACT_START in page
    assert "https://github.com/SchedMD/slurm/blob/master/CHANGELOG/slurm-23.11.md" in page
    assert diagnosed(run, root, QUOTA_LOG) == "quota-files-over-limit"
    lambda_page = (root / "backends/lambda.md").read_text(encoding="utf-8")
    assert LAMBDA_CLAIM not in lambda_page and LAMBDA_FACT in lambda_page
    assert diagnosed(run, root, DF_I_LOG) == "df-inodes-full"
