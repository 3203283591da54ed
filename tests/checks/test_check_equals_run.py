"""Check equals run: every reason `campaign submit` (its preflight, the gates, the planner, the
renderers) refuses for that the committed files and the backend pages already decide is a
`campaign check` finding at the manifest's line.

``REFUSALS`` lists each refusal site on submit's path (found by ``refusal_sites``: every function
that raises a CampaignError or returns a gate's refusal) with a manifest that triggers it and the
check ID that reports it first; ``NOT_FROM_FILES`` lists the sites whose reason only the moment
of submission knows (the git state, the live queue, the ledger, this machine, the command line).
A new refusal site fails ``test_every_refusal_site_is_classified`` until it is one or the other.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import git

SRC = Path(__file__).resolve().parents[2] / "src" / "campaignops"
# Submit's path: the preflight, the planner, the gates and the renderers every backend shares.
MODULES = (
    "runner/submit.py",
    "runner/asked.py",
    "runner/plan.py",
    "runner/gates.py",
    "runner/smoke.py",
    "runner/sibling.py",
    "runner/breaker.py",
    "runner/budget.py",
    "runner/inputs.py",
    "model/makeup.py",
    "runner/committed.py",
    "backends/registry.py",
    "backends/script.py",
    "backends/base.py",
    # The renderers of the backends the campaign below has (Slurm's, PBS's): what their
    # directives cannot say is refused before sbatch or qsub is called.
    "backends/slurm/backend.py",
    "backends/pbs/backend.py",
    "backends/gridengine/render.py",
)
BACKENDS = "backends=local,generic-slurm,alpine,polaris,kubernetes,generic-gridengine"


@dataclass(frozen=True)
class Refusal:
    site: str  # module:function that refuses
    why: str  # the refusal, as submit says it
    manifest: str
    check: str  # the check ID that reports it
    line: int
    stage: str = "production"
    said: str | None = None  # what submit says, where it refuses before its MAN checks
    policy: tuple[str, str] | None = None  # (old, new): an edit of campaign.yaml first
    found_in: str | None = None  # the file the finding is in (None: the manifest)


CMD = "default_cmd: python3 run.py\n"
# Polaris charges node-hours against an allocation: its size, or MAN018 says it is not known.
SIZED = ("  # allocations: {polaris: <size>}", "  allocations: {polaris: 100}")
REFUSALS = (
    Refusal(
        "model/makeup.py:command",
        "target 't' has no cmd and the manifest no default_cmd",
        "backend: local\ngrid: {seed: [1, 2]}\ntemplate: {id: 's${seed}'}\n",
        "MAN016",
        2,
    ),
    Refusal(
        "model/makeup.py:command",
        "queue cell: smoke.args may only set epochs",
        "queue: queues/example.txt\ndefault_cmd: bash scripts/run_one.v1.sh\n"
        "smoke: {args: {lr: 1}}\n",
        "MAN011",
        3,
        "smoke",
    ),
    Refusal(
        "model/makeup.py:command",
        "args key is not an option name (the schema's pattern reports it first)",
        CMD + "backend: local\njobs: [{id: t, args: {'a b': 1}}]\n",
        "MAN001",
        3,
    ),
    Refusal(
        "backends/registry.py:for_page",
        "backend 'kubernetes' (kind kubernetes) has no runner module",
        CMD + "backend: kubernetes\njobs: [{id: t}]\n",
        "MAN017",
        2,
    ),
    Refusal(
        "backends/script.py:_output_word",
        "output path holds '*' (checked literally: output-missing whatever was written)",
        CMD + "backend: local\njobs: [{id: t, output_check: '${CAMPAIGN_OUT}/t_*.json'}]\n",
        "MAN014",
        3,
    ),
    Refusal(
        "backends/script.py:preconditions_check",
        "N: unbound variable (a grid key nothing fills in a precondition path)",
        CMD + "backend: local\npreconditions: [{type: file_exists, path: 'ckpt/N{N}.pt'}]\n"
        "jobs: [{id: t, args: {seed: 1}}]\n",
        "MAN013",
        3,
    ),
    Refusal(
        "runner/gates.py:authorized",
        "backend 'elsewhere' is not in campaign.yaml's backends",
        CMD + "backend: elsewhere\njobs: [{id: t}]\n",
        "MAN007",
        2,
    ),
    Refusal(
        "runner/gates.py:authorized",
        "partition 'gpu-huge' is not on backends/alpine.md",
        CMD + "backend: alpine\nresources: {partition: gpu-huge, time: '01:00:00'}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
    ),
    Refusal(
        "runner/gates.py:authorized",
        "time '48:00:00' over acpu's max_walltime 1-00:00:00 (authorized passed it)",
        CMD + "backend: alpine\nresources: {partition: acpu, qos: cpu-normal, time: '48:00:00'}\n"
        "smoke: {resources: {partition: atesting, qos: testing, time: '00:10:00'}}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
    ),
    Refusal(
        "runner/gates.py:authorized",
        "Polaris prod below its 10-node minimum",
        CMD + "backend: polaris\nresources: {queue: prod, time: '01:00:00'}\n"
        "smoke: {resources: {queue: debug, time: '00:10:00'}}\njobs: [{id: t}]\n",
        "MAN018",
        3,
    ),
    Refusal(
        "runner/budget.py:budget",
        "one task alone over the cap: the gate adds the ledger's spend, never less",
        CMD + "backend: polaris\nresources: {queue: prod, nodes: 10, time: '12:00:00'}\n"
        "smoke: {resources: {queue: debug, nodes: 1, time: '00:10:00'}}\njobs: [{id: t}]\n",
        "MAN018",
        3,
        policy=SIZED,
    ),
    Refusal(
        "backends/slurm/backend.py:_resources",
        "resources.gpu_type without resources.gpus (Slurm's --gres needs the count)",
        CMD + "backend: generic-slurm\nresources: {gpu_type: A100, time: '00:10:00'}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
    ),
    Refusal(
        "backends/slurm/backend.py:_directives",
        "stages.warning_seconds over 65535 (sbatch keeps it in 16 bits)",
        CMD + "backend: generic-slurm\nresources: {time: '24:00:00'}\njobs: [{id: t}]\n",
        "POLICY001",
        22,
        "production",
        said="warning_seconds 70000 is over 65535",
        policy=("  warning_seconds: 360 ", "  warning_seconds: 70000 "),
        found_in="campaign.yaml",
    ),
    Refusal(
        "backends/gridengine/render.py:_refuse_unknown",
        "qos on Grid Engine, which has none",
        CMD + "backend: generic-gridengine\nresources: {qos: normal, time: '00:10:00'}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
    ),
    Refusal(
        "backends/gridengine/render.py:valid",
        "an account with a space: qsub -A splits it",
        CMD + "backend: generic-gridengine\nresources: {account: 'my lab', time: '00:10:00'}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
    ),
    Refusal(
        "backends/gridengine/render.py:megabytes",
        "mem '1234567890123M': the schema takes it, the renderer's size does not",
        CMD + "backend: generic-gridengine\nresources: {mem: 1234567890123M, time: '00:10:00'}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
    ),
    Refusal(
        "backends/slurm/backend.py:_valid",
        "mem '4GB': the schema takes it, --mem does not",
        CMD + "backend: generic-slurm\nresources: {mem: 4GB, time: '00:10:00'}\njobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
    ),
    Refusal(
        "backends/slurm/backend.py:_count",
        "a count below 1 (the schema's minimum reports it first)",
        CMD + "backend: generic-slurm\nresources: {nodes: 0, time: '00:10:00'}\njobs: [{id: t}]\n",
        "MAN001",
        3,
        "smoke",
    ),
    Refusal(
        "backends/pbs/backend.py:_chunk",
        "qos on PBS, which has none",
        CMD + "backend: polaris\nresources: {queue: debug, qos: normal, time: '00:10:00'}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
        policy=SIZED,
    ),
    Refusal(
        "backends/pbs/backend.py:pbs_size",
        "mem '1.5K': PBS sizes are whole KB",
        CMD + "backend: polaris\nresources: {queue: debug, mem: 1.5K, time: '00:10:00'}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
        policy=SIZED,
    ),
    Refusal(
        "backends/pbs/backend.py:_valid",
        "constraint 'gpu': PBS's select takes name=value",
        CMD + "backend: polaris\nresources: {queue: debug, constraint: gpu, time: '00:10:00'}\n"
        "jobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
        policy=SIZED,
    ),
    Refusal(
        "backends/pbs/backend.py:check_name",
        "a target id holding '=' (an id; no PBS -N name)",
        CMD + "backend: polaris\nresources: {queue: debug, time: '00:10:00'}\n"
        "jobs: [{id: 'lr=0.1'}]\n",
        "MAN018",
        4,
        "smoke",
        policy=SIZED,
    ),
    Refusal(
        "runner/smoke.py:smoke_first",
        "the smoke's time limit is over stages.smoke_max_minutes",
        CMD + "backend: local\nsmoke: {resources: {time: '02:00:00'}}\njobs: [{id: t}]\n",
        "MAN018",
        3,
        "smoke",
    ),
    Refusal(
        "model/makeup.py:queue_cells",
        "queue file not found",
        "queue: queues/none.txt\ndefault_cmd: bash scripts/run_one.v1.sh\n",
        "MAN011",
        1,
        "smoke",
        "queues/none.txt: no such file",
    ),
    Refusal(
        "runner/asked.py:checked_manifest",
        "a key the runner does not run (submit refuses the manifest while it holds it)",
        CMD + "backend: local\nanalyze_on_complete: true\njobs: [{id: t}]\n",
        "MAN012",
        3,
    ),
)
NOT_FROM_FILES = {
    "runner/asked.py:read_yaml": "the manifest the command names cannot be read (check: a problem)",
    "runner/submit.py:_reach": "this machine cannot reach the backend's scheduler",
    "runner/asked.py:read_policy": "the command names a queue file where a manifest goes",
    "runner/plan.py:_selected": "--targets names no target, or more than one at --stage single",
    "runner/plan.py:plan": "--stage names no stage",
    "runner/smoke.py:smoke_first": "no smoke of the current config COMPLETED (the ledger)",
    "runner/sibling.py:no_sibling": "a task of the target is queued or running (the live queue)",
    "runner/breaker.py:breaker": "three same-signature failures in a row (the ledger)",
    "runner/gates.py:require": "raises the first refusing gate's verdict: each gate is listed",
    "runner/budget.py:budget": "the cost of the targets asked, together, against the cap "
    "(--targets decides it; one task alone over the cap is a REFUSALS row)",
    "runner/budget.py:_against": "the ledger's spend so far against the cap",
    "runner/committed.py:_trick": "the git state of the checkout at submission",
    "runner/committed.py:_hidden": "the git state of the checkout at submission",
    "runner/committed.py:_untracked": "the git state of the checkout at submission",
    "runner/committed.py:_local": "the git state of the checkout at submission",
    "runner/committed.py:_repository": "the git state of the checkout at submission",
    "runner/committed.py:_missing": "the git state of the checkout at submission",
    "runner/committed.py:_changed": "the git state of the checkout at submission",
    "runner/committed.py:_pushed": "the git state of the checkout at submission",
    "backends/script.py:task_function": "the planner's own consistency (one output per task)",
    "backends/base.py:page": "a page that is not UTF-8 or unreadable (check: a problem, exit 2)",
    "backends/slurm/backend.py:_text": "the checkout's own path and log directory (this machine)",
    "backends/slurm/backend.py:render": "the planner's own consistency (a task, a command)",
    "backends/slurm/backend.py:parse_job_id": "what sbatch printed",
    "backends/pbs/backend.py:render": "the planner's own consistency (a task, a command)",
    "backends/pbs/backend.py:_directives": "max_parallel below 1: the schema's minimum (MAN001)",
    "backends/pbs/backend.py:_warning_timer": "the planner sets a warning only inside the limit",
    "backends/pbs/backend.py:parse_job_id": "what qsub printed",
    "backends/pbs/backend.py:parse_lookup": "what qselect printed",
    "backends/pbs/backend.py:task_id": "the ledger's job id",
    "backends/pbs/backend.py:cancel_argv": "the ledger's job id (campaign cancel)",
    "backends/gridengine/render.py:directives": "max_parallel below 1: the schema's minimum (MAN001)",
    "backends/gridengine/render.py:_warning": "the planner sets a warning only inside the limit",
    "backends/gridengine/render.py:render": "the planner's own consistency (a task, a command)",
}
# From the files, and not yet a check (the "check equals run" is not done while these
# are here): each says what submit refuses.
LEFT: dict[str, str] = {}


def refusal_sites() -> set[str]:
    """Every module:function on submit's path that raises a CampaignError (a call raised, not a
    re-raise) or returns a refusing Verdict (``_refuse``, budget's ``refuse``)."""
    found: set[str] = set()
    for rel in MODULES:
        tree = ast.parse((SRC / rel).read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or fn.name == "refuse":
                continue
            for node in ast.walk(fn):
                raised = isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                call = node.func if isinstance(node, ast.Call) else None
                refused = isinstance(call, ast.Name) and call.id in ("_refuse", "refuse")
                if raised or refused:
                    found.add(f"{rel}:{fn.name}")
                    break
    return found


def test_every_refusal_site_is_classified() -> None:
    listed = {r.site for r in REFUSALS} | set(NOT_FROM_FILES) | set(LEFT)
    sites = refusal_sites()
    assert sites - listed == set(), "classify it: a REFUSALS row (and its check) or NOT_FROM_FILES"
    assert listed - sites == set(), "a listed site no longer refuses: drop it"


@pytest.fixture
def camp(new_campaign: Callable[..., Path]) -> Path:
    return new_campaign("seedcheck", BACKENDS, "smoke_backend=local", "require_pushed=no")


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda r: f"{r.check}-{r.site}")
def test_a_refusal_submit_knows_from_the_files_is_a_check_finding(
    camp: Path, run, refusal: Refusal
) -> None:  # type: ignore[no-untyped-def]
    rel = "manifests/refused.yaml"
    (camp / rel).write_text(refusal.manifest, encoding="utf-8")
    if refusal.policy is not None:
        text = (camp / "campaign.yaml").read_text(encoding="utf-8")
        assert refusal.policy[0] in text
        (camp / "campaign.yaml").write_text(text.replace(*refusal.policy), encoding="utf-8")
    git(camp, "add", "-A")
    git(camp, "commit", "-qm", "a manifest submit refuses")
    found_in = refusal.found_in or rel
    checked = run("check", "--select", refusal.check[:-3], "--format", "json", found_in)
    assert (found_in, refusal.line, refusal.check) in checked.where(), checked.out
    submitted = run("submit", rel, "--stage", refusal.stage, "--dry-run")
    assert submitted.code != 0, submitted.out
    # submit runs the same MAN checks first: it refuses with the finding check gave.
    if refusal.said is not None:
        assert refusal.said in submitted.err
    else:
        assert f"{found_in}:{refusal.line}:" in submitted.err and refusal.check in submitted.err
