"""MAN: planted defects are caught at the right path:line; clean manifests are silent."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

SEED_MANIFEST = """\
project: dllm_distill
cwd: /home/user/dllm_experiments_torch
conda: dllm
# conda_hook: /custom/path/to/conda
ssh: SJTUServer5
default_cmd: >
  python run_pc_distill_exp.py --backbone softmax --lam 0.5
  --K 500 --L 96 --W 16 --n_steps 30000 --batch_size 128 --lr 1e-4

preconditions:
  - type: checkpoint_exists
    path: checkpoints/transformer/pcc_softmax_L96_K500_N{N}_wikitext103.pt

gpus: [0, 1, 2, 3, 4, 5, 6, 7]
max_parallel: 8
gpu_free_threshold_mib: 500  # optional
oom_retry:
  delay: 120
  max_attempts: 3

jobs:
  - id: s200_N64_n50K
    args: {seed: 200, n_hidden: 64, n_train_subset: 50000, subset_seed: 2024}
  - id: s200_N128_n50K
    args: {seed: 200, n_hidden: 128, n_train_subset: 50000, subset_seed: 2024}
"""

SEED_PHASES = """\
phases:
  - name: train_teachers
    grid:
      N: [384, 512]
    template:
      cmd: python run_pc_exp.py --direction c --backbone softmax --n_hidden ${N}
      output_check: checkpoints/transformer/pcc_softmax_L96_K500_N${N}_wikitext103.pt

  - name: distill_students
    depends_on: train_teachers
    grid:
      N: [384, 512]
      seed: [42, 200, 201]
    template:
      cmd: python run_pc_distill_exp.py --n_hidden ${N} --seed ${seed}
      output_check: figures/pcdistill_sw_N${N}_seed${seed}.json
"""


RUNS = "default_cmd: python run.py\n"


def write(campaign: Path, name: str, text: str, *, runnable: bool = True) -> str:
    """Write a manifest. ``runnable``: one that names no command gets a default_cmd at its end
    (line numbers unchanged), so a test of another check sees no MAN016."""
    rel = f"manifests/{name}"
    try:
        mapping = isinstance(yaml.safe_load(text), dict)
    except yaml.YAMLError:
        mapping = False
    if runnable and mapping and "cmd" not in text and "queue:" not in text:
        text = (text if text.endswith("\n") else text + "\n") + RUNS
    (campaign / rel).write_text(text)
    return rel


def man(run, *paths: str):  # type: ignore[no-untyped-def]
    return run("check", "--select", "MAN", "--format", "json", *paths)


def test_clean_fixture_is_silent(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    result = man(run)
    assert (result.code, result.ids()) == (0, [])


def test_experiment_queue_phases_run_as_written_outputs_anywhere_in_the_campaign(
    campaign: Path, run
) -> None:  # type: ignore[no-untyped-def]
    # The seed's phases write where its code writes (checkpoints/, figures/): an output counts
    # for a task only if that task wrote it (backends/script.py), so no path is dictated.
    rel = write(campaign, "seed.yaml", SEED_PHASES)
    result = man(run, rel)
    assert (result.code, result.ids()) == (0, [])
    # A glob is checked literally, so the task would end output-missing: MAN014 at its line.
    globbed = SEED_PHASES.replace("pcdistill_sw_N${N}_seed", "pcdistill_sw_N${N}_*_seed")
    result = man(run, write(campaign, "seed.yaml", globbed))
    assert result.where() == [(rel, 16, "MAN014")]
    assert "holds '*', a glob" in result.out


def test_experiment_queue_keys_the_runner_does_not_run_are_each_reported(
    campaign: Path, run
) -> None:  # type: ignore[no-untyped-def]
    # The seed's manifest passes the schema unchanged (no MAN001), but every key the runner
    # would silently ignore is a finding at that key, naming what happens instead and when.
    # On a scheduler (generic-slurm) the box keys are not run; on local, with its GPU list, they
    # are (test_on_local_with_a_gpu_list_the_box_keys_are_run).
    rel = write(
        campaign, "seed.yaml", SEED_MANIFEST.replace("cwd:", "backend: generic-slurm\ncwd:", 1)
    )
    result = man(run, rel)
    assert result.where() == [
        (rel, 3, "MAN012"),  # cwd
        (rel, 4, "MAN012"),  # conda
        (rel, 6, "MAN012"),  # ssh
        (rel, 13, "MAN013"),  # preconditions[0].path: {N}
        # gpus (line 15) is run: one GPU per task, the list's length caps the array.
        (rel, 17, "MAN012"),  # gpu_free_threshold_mib
        # oom_retry (line 18) is run: status --refresh resubmits OUT_OF_MEMORY targets.
    ]
    by_line = {f["line"]: f for f in result.json()["findings"]}
    assert by_line[4]["message"] == (
        "conda is accepted but the runner does not run it: no conda environment is activated "
        "on a scheduler or this machine (only a box executor runs it: an ssh backend's, or the "
        "local one's with a GPU list)"
    )
    assert by_line[4]["hint"] == (
        "set backend: to an ssh backend, or activate it in the command (conda run -n ENV …); "
        "campaign submit refuses the manifest while it holds the key"
    )
    assert 18 not in by_line
    assert 15 not in by_line
    assert "every task runs from the campaign checkout" in str(by_line[3]["message"])
    assert by_line[13]["message"] == (
        "preconditions[0]: path 'checkpoints/transformer/pcc_softmax_L96_K500_N{N}_"
        "wikitext103.pt' reads 'N', which target 's200_N64_n50K' gives no value for (neither "
        "a grid key nor an arg of it)"
    )
    # The one edit that makes it run: a name every target fills.
    assert "n_hidden, n_train_subset, seed, subset_seed (e.g. {n_hidden})" in str(
        by_line[13]["hint"]
    )


def test_on_local_with_a_gpu_list_the_box_keys_are_run(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    # The local backend runs a manifest with a GPU list under the box executor (localbox).
    rel = write(campaign, "seed.yaml", SEED_MANIFEST.replace("cwd:", "backend: local\ncwd:", 1))
    assert man(run, rel).where() == [(rel, 3, "MAN012"), (rel, 6, "MAN012"), (rel, 13, "MAN013")]
    # A count (gpus: 2) runs there only when the local page lists the machine's GPUs.
    counted = SEED_MANIFEST.replace("cwd:", "backend: local\ncwd:", 1).replace(
        "gpus: [0, 1, 2, 3, 4, 5, 6, 7]", "gpus: 2"
    )
    rel = write(campaign, "seed.yaml", counted)
    assert (rel, 4, "MAN012") in man(run, rel).where()
    page = campaign / "backends/local.md"
    page.write_text(page.read_text().replace("kind: local\n", "kind: local\ngpus: [0, 1]\n", 1))
    assert man(run, rel).where() == [(rel, 3, "MAN012"), (rel, 6, "MAN012"), (rel, 13, "MAN013")]


def test_on_an_ssh_backend_the_box_keys_are_run_and_not_reported(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    # A GPU box's executor activates conda and polls GPU memory: there those keys are run.
    policy = campaign / "campaign.yaml"
    policy.write_text(policy.read_text().replace("[local, generic-slurm]", "[local, gpu-box]"))
    page = (campaign / "backends/local.md").read_text()
    (campaign / "backends/gpu-box.md").write_text(
        page.replace("platform: local", "platform: gpu-box").replace("kind: local", "kind: ssh")
    )
    rel = write(campaign, "seed.yaml", SEED_MANIFEST.replace("cwd:", "backend: gpu-box\ncwd:", 1))
    result = man(run, rel)
    assert result.where() == [
        (rel, 3, "MAN012"),  # cwd: tasks run from the deployed commit, on a box too
        (rel, 6, "MAN019"),  # ssh: names no instance of the page (it lists none)
        (rel, 13, "MAN013"),
    ]
    # The exact edit: the box, as an instance of the page.
    assert "add the box to backends/gpu-box.md's instances: - {name: SJTUServer5, host: " in (
        str(result.json()["findings"][1]["hint"])
    )


def test_ssh_alias_an_ssh_page_lists_is_run_there_and_without_backend_one_edit(
    campaign: Path, run
) -> None:  # type: ignore[no-untyped-def]
    policy = campaign / "campaign.yaml"
    policy.write_text(policy.read_text().replace("[local, generic-slurm]", "[local, gpu-box]"))
    page = (campaign / "backends/local.md").read_text()
    box = "instances:\n  - {name: box1, host: SJTUServer5, workdir: /data/runs, gpus: [0, 1]}\n"
    (campaign / "backends/gpu-box.md").write_text(
        page.replace("platform: local", "platform: gpu-box")
        .replace("kind: local", "kind: ssh")
        .replace("---\n", "---\n" + box, 1)
        if page.startswith("---\n")
        else page
    )
    runnable = SEED_MANIFEST.replace("{N}", "{n_hidden}").replace(
        "cwd: /home/user/dllm_experiments_torch\n", ""
    )
    rel = write(campaign, "seed.yaml", runnable.replace("conda:", "backend: gpu-box\nconda:", 1))
    assert man(run, rel).where() == []  # ssh: SJTUServer5 is box1's host: it runs there
    # No backend named: ONE finding at the first box key, with the one edit that runs them all.
    rel = write(campaign, "seed.yaml", runnable)
    result = man(run, rel)
    assert result.where() == [(rel, 2, "MAN019")]
    finding = result.json()["findings"][0]
    assert finding["message"] == (
        "conda, ssh, gpu_free_threshold_mib: run only by an ssh backend's executor, and this "
        "manifest names no backend: the keys would be ignored"
    )
    assert str(finding["hint"]).startswith("add `backend: gpu-box`: ")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("conda_hook: /opt/conda/bin/conda\n", "conda_hook"),
        ("analyze_on_complete: true\n", "analyze_on_complete"),
        ("stage: production\n", "stage"),
        ("cwd: /elsewhere\n", "cwd"),
    ],
)
def test_each_key_not_run_is_a_finding(campaign: Path, run, text: str, key: str) -> None:  # type: ignore[no-untyped-def]
    rel = write(campaign, "k.yaml", text + "jobs: [{id: a}]\n")
    result = man(run, rel)
    assert result.where() == [(rel, 1, "MAN012")]
    assert str(result.json()["findings"][0]["message"]).startswith(f"{key} is accepted but")


@pytest.mark.parametrize(
    "text",
    [
        "cwd: .\n",
        "cwd: ./\n",
        "analyze_on_complete: false\n",
        "oom_retry: {delay: 60, max_attempts: 0}\n",
        "oom_retry: {delay: 60, max_attempts: 3}\n",  # run: status --refresh retries
        "gpus: []\n",
        "gpus: 0\n",
        "gpus: [0, 1, 2, 3]\n",  # run: one GPU per task, four at once
    ],
)
def test_a_key_asking_for_what_the_runner_does_anyway_is_silent(
    campaign: Path, run, text: str
) -> None:  # type: ignore[no-untyped-def]
    rel = write(campaign, "k.yaml", text + "jobs: [{id: a}]\n")
    assert man(run, rel).where() == []


def test_resources_and_backend_below_the_top_level_are_not_run(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (
        "resources: {cpus: 2}\n"
        "jobs:\n"
        "  - id: a\n"
        "    backend: local\n"
        "    resources: {cpus: 4}\n"
        "grid: {seed: [1]}\n"
        "template:\n"
        '  id: "s${seed}"\n'
        "  resources: {mem: 2G}\n"
        "phases:\n"
        "  - name: p\n"
        "    resources: {gpus: 1}\n"
        "    jobs: [{id: b}]\n"
    )
    rel = write(campaign, "n.yaml", text)
    result = man(run, rel)
    # A phase's own resources are run (one phase, one array job); a job's or template's not.
    assert result.where() == [(rel, line, "MAN012") for line in (4, 5, 9)]
    messages = [str(f["message"]) for f in result.json()["findings"]]
    assert [m.split(" is accepted")[0] for m in messages] == [
        "backend of job 'a'",
        "resources of job 'a'",
        "template.resources",
    ]
    assert "the targets of one array job share its resources" in messages[1]


def test_preconditions_the_script_cannot_check(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (
        "preconditions:\n"
        "  - {type: gpu_free, path: x}\n"
        "  - {type: file_exists}\n"
        "  - {type: dir_exists, path: 'data/$(whoami)'}\n"
        "  - {type: dir_exists, path: 'data/${seed}'}\n"
        "  - {type: checkpoint_exists, path: '/scratch/${USER}/teacher.pt'}\n"
        "  - {type: file_exists, path: ../shared/vocab.txt}\n"
        "jobs: [{id: a}]\n"
    )
    rel = write(campaign, "pre.yaml", text)
    result = man(run, rel)
    # Absolute paths and '..' are fine for what a task reads; only what it writes stays inside.
    assert result.where() == [(rel, line, "MAN013") for line in (2, 3, 4, 5)]
    messages = [str(f["message"]) for f in result.json()["findings"]]
    assert messages == [
        "preconditions[0]: type 'gpu_free' is not one the runner checks",
        "preconditions[1]: file_exists has no path",
        "preconditions[2]: path 'data/$(whoami)' uses '$' other than in ${NAME} (only "
        "environment references ${NAME} expand)",
        "preconditions[3]: path 'data/${seed}' reads 'seed', which target 'a' gives no value "
        "for (neither a grid key nor an arg of it)",
    ]
    assert result.json()["findings"][0]["hint"] == (
        "use one of: checkpoint_exists, dir_exists, file_exists"
    )


def test_outputs_the_script_cannot_check_inside_the_campaign(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (
        "jobs:\n"
        "  - {id: a, output: /tmp/a/metrics.json}\n"
        "  - {id: b, output: '${CAMPAIGN_OUT}/../../b.json'}\n"
        "  - {id: c, output: 'runs/$RANDOM/c.json'}\n"
        "  - {id: d, output: '${CAMPAIGN_OUT}/${who}/d.json'}\n"
        "  - {id: e, output: '${CAMPAIGN_OUT}/e/metrics.json', output_check: e.json}\n"
        "grid: {seed: [1, 2]}\n"
        "template:\n"
        '  id: "s${seed}"\n'
        '  output: "/abs/s${seed}.json"\n'
    )
    rel = write(campaign, "out.yaml", text)
    result = man(run, rel)
    assert result.where() == [(rel, line, "MAN014") for line in (2, 3, 4, 5, 6, 10)]
    messages = [str(f["message"]) for f in result.json()["findings"]]
    assert messages == [
        "output '/tmp/a/metrics.json' of target 'a' is absolute",
        "output '${CAMPAIGN_OUT}/../../b.json' of target 'b' leaves the campaign ('..')",
        "output 'runs/$RANDOM/c.json' of target 'c' uses '$' other than in ${NAME} (only "
        "environment references ${NAME} expand)",
        "output '${CAMPAIGN_OUT}/${who}/d.json' of target 'd' reads ${who}, which is neither a "
        "grid key "
        "nor an environment variable",
        "output_check is next to output: only output is checked after the task",
        "output '/abs/s1.json' of target 's1' is absolute",  # once for the template's cells
    ]
    assert result.json()["findings"][0]["hint"] == (
        "write the one path the task writes, relative to the campaign (grid placeholders such "
        "as ${seed} fill in per cell), e.g. ${CAMPAIGN_OUT}/a/metrics.json (CAMPAIGN_OUT is "
        "runs/<stage>)"
    )


def test_seed_grid_example_with_unquoted_flow_placeholders_is_a_yaml_error(
    campaign: Path, run
) -> None:  # type: ignore[no-untyped-def]
    # `{seed: ${seed}}` is not valid YAML in any parser; we say where and how to quote it.
    rel = write(
        campaign,
        "g.yaml",
        'grid:\n  seed: [1]\ntemplate:\n  id: "s${seed}"\n  args: {seed: ${seed}}\n',
    )
    result = man(run, rel)
    assert result.where() == [(rel, 5, "MAN008")]
    assert '"${seed}"' in result.json()["findings"][0]["hint"]


def test_schema_error_points_at_the_offending_node(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    rel = write(
        campaign,
        "bad.yaml",
        "project: x\nmax_paralel: 3\njobs:\n  - id: a\n    args: {seed: 1}\n  - id: b\n    oops: 1\n",
    )
    result = man(run, rel)
    found = result.json()["findings"]
    assert [(f["line"], f["col"], f["id"]) for f in found] == [(2, 1, "MAN001"), (7, 5, "MAN001")]
    assert "did you mean 'max_parallel'?" in str(found[0]["message"])


def test_wrong_type_points_at_value(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    rel = write(campaign, "t.yaml", "jobs:\n  - id: a\nmax_parallel: many\n")
    result = man(run, rel)
    f = result.json()["findings"][0]
    assert (f["line"], f["col"], f["id"]) == (3, 15, "MAN001")
    assert "max_parallel" in str(f["message"])


def test_duplicate_job_id_reported_at_the_duplicate(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    rel = write(campaign, "d.yaml", "jobs:\n  - id: a\n  - id: b\n  - id: a\n")
    result = man(run, rel)
    assert result.where() == [(rel, 4, "MAN002")]
    assert "first defined at line 2" in str(result.json()["findings"][0]["message"])


def test_grid_template_missing_a_key_collides_once(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    rel = write(
        campaign, "g.yaml", 'grid:\n  N: [1, 2]\n  seed: [1, 2, 3]\ntemplate:\n  id: "n${N}"\n'
    )
    result = man(run, rel)
    assert result.where() == [(rel, 5, "MAN002")]
    assert "seed=1 and N=1, seed=2" in str(result.json()["findings"][0]["message"])


def test_undefined_placeholder(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (
        'grid:\n  seed: [1]\ntemplate:\n  id: "s${seed}"\n  cmd: run --seed ${sed} --home ${HOME}\n'
    )
    rel = write(campaign, "p.yaml", text)
    result = man(run, rel)
    # ${HOME} is an environment variable (UPPER_CASE, not a grid key): left to the shell.
    assert result.where() == [(rel, 5, "MAN003")]
    assert "${sed}" in str(result.json()["findings"][0]["message"])


def test_placeholder_in_phase_names_the_phase(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = SEED_PHASES.replace("--seed ${seed}", "--seed ${seeds}").replace(
        "output_check: ", "output_check: ${CAMPAIGN_OUT}/"
    )
    rel = write(campaign, "ph.yaml", text)
    result = man(run, rel)
    assert result.where() == [(rel, 15, "MAN003")]
    assert "phase 'distill_students'" in str(result.json()["findings"][0]["message"])


def test_depends_on_unknown_phase_and_cycle(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (
        "phases:\n"
        "  - name: a\n    depends_on: b\n    jobs: [{id: a1}]\n"
        "  - name: b\n    depends_on: [a, nope]\n    jobs: [{id: b1}]\n"
    )
    rel = write(campaign, "c.yaml", text)
    result = man(run, rel)
    assert result.where() == [(rel, 3, "MAN005"), (rel, 6, "MAN004")]
    assert "a -> b -> a" in str(result.json()["findings"][0]["message"])


def test_self_dependency_is_a_cycle(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    rel = write(
        campaign, "s.yaml", "phases:\n  - name: a\n    depends_on: a\n    jobs: [{id: x}]\n"
    )
    assert man(run, rel).where() == [(rel, 3, "MAN005")]


def test_shared_output_path(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (
        "jobs:\n  - id: a\n    output: ${CAMPAIGN_OUT}/out/latest.pth\n"
        "  - id: b\n    output: ${CAMPAIGN_OUT}/out/./latest.pth\n"
    )
    rel = write(campaign, "o.yaml", text)
    result = man(run, rel)
    assert result.where() == [(rel, 5, "MAN006")]
    assert "'a' and 'b'" in str(result.json()["findings"][0]["message"])


def test_grid_output_without_cell_key_shares_path(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = 'grid:\n  seed: [1, 2]\ntemplate:\n  id: "s${seed}"\n  output_check: ${CAMPAIGN_OUT}/ckpt/latest.pth\n'
    rel = write(campaign, "go.yaml", text)
    assert man(run, rel).where() == [(rel, 5, "MAN006")]


def test_unauthorized_backend(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = "backend: polaris\njobs:\n  - id: a\n  - id: b\n    backend: vast-ai\n  - id: c\n    backend: local\n"
    rel = write(campaign, "b.yaml", text)
    result = man(run, rel)
    # A job's own backend is also not run yet (MAN012), authorized or not.
    assert result.where() == [
        (rel, 1, "MAN007"),
        (rel, 5, "MAN012"),
        (rel, 5, "MAN007"),
        (rel, 7, "MAN012"),
    ]
    assert "generic-slurm, local" in str(result.json()["findings"][0]["hint"])
    assert "every target runs on the manifest's backend" in str(
        result.json()["findings"][1]["message"]
    )


def test_oversized_grid_is_refused_not_expanded(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    keys = "".join(f"  k{i}: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n" for i in range(12))
    rel = write(campaign, "big.yaml", f"grid:\n{keys}template:\n  id: x\n")
    result = man(run, rel)
    assert result.where() == [(rel, 1, "MAN009")]


def test_discovery_without_paths_finds_every_manifest(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "manifests" / "sub").mkdir()
    write(campaign, "sub/x.yml", "jobs: [{id: a}, {id: a}]\n")
    assert man(run).where() == [("manifests/sub/x.yml", 1, "MAN002")]


def test_select_and_ignore_by_id(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    rel = write(campaign, "x.yaml", "backend: nope\njobs: [{id: a}, {id: a}]\n")
    assert sorted(man(run, rel).ids()) == ["MAN002", "MAN007"]
    only = run("check", "--select", "MAN007", "--format", "json", rel)
    assert only.ids() == ["MAN007"]
    skip = run("check", "--select", "MAN", "--ignore", "MAN007", "--format", "json", rel)
    assert skip.ids() == ["MAN002"]


def test_grid_without_template_id_gets_distinct_default_ids(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    from campaignops.core import yamldoc
    from campaignops.model import manifest

    doc = yamldoc.load(SEED_PHASES, path="x")
    ids = [t.id for t in manifest.targets(doc)]
    assert ids[:2] == ["train_teachers_N384", "train_teachers_N512"]
    assert ids[2] == "distill_students_N384_seed42"
    assert len(ids) == len(set(ids)) == 8


QUEUED = """\
project: q
queue: queues/{queue}
default_cmd: bash scripts/run_one.v1.sh
smoke:
  args: {{epochs: 1}}
"""


def test_a_queue_manifest_is_valid_and_needs_no_jobs(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "queues/q.txt").write_text("configs/a.yaml train 3\n")
    rel = write(campaign, "q.yaml", QUEUED.format(queue="q.txt"))
    result = man(run, rel)
    assert (result.code, result.ids()) == (0, []), result.out


def test_queue_manifest_problems_are_reported_where_they_are(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    text = (
        "project: q\nqueue: ../elsewhere/q.txt\n"
        "smoke:\n  args: {epochs: 1, steps: 10}\n"
        "jobs:\n  - id: a\n"
    )
    rel = write(campaign, "q.yaml", text)
    found = man(run, rel).json()["findings"]
    got = [(f["line"], f["col"], f["id"], f["message"]) for f in found]
    prefix = "queue manifest: "
    assert got == [
        (2, 1, "MAN011", prefix + "no default_cmd to run each cell with"),
        (
            2,
            8,
            "MAN011",
            prefix + "queue path '../elsewhere/q.txt' must stay inside the campaign"
            " (relative, no '..')",
        ),
        (4, 21, "MAN011", prefix + "smoke.args sets 'steps', which is not a field of a queue line"),
        (
            5,
            1,
            "MAN011",
            prefix + "'jobs' next to 'queue': the queue's cells are this manifest's targets",
        ),
    ]


def test_a_missing_queue_file_is_reported_at_the_queue_key(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    rel = write(campaign, "q.yaml", QUEUED.format(queue="absent.txt"))
    result = man(run, rel)
    assert result.where() == [(rel, 2, "MAN011")]
    assert "'queues/absent.txt' not found" in str(result.json()["findings"][0]["message"])


def test_a_queue_smoke_epochs_the_wrapper_would_refuse_is_reported(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    (campaign / "queues/q.txt").write_text("configs/a.yaml train 3\n")
    rel = write(campaign, "q.yaml", QUEUED.format(queue="q.txt").replace("epochs: 1", "epochs: 0"))
    result = man(run, rel)
    assert result.where() == [(rel, 5, "MAN011")]
    assert "smoke.args.epochs: epochs 0 is not a positive integer" in str(
        result.json()["findings"][0]["message"]
    )


def test_a_precondition_key_the_script_would_not_read_is_a_schema_error(
    campaign: Path, run
) -> None:  # type: ignore[no-untyped-def]
    text = "preconditions:\n  - {type: file_exists, path: a, min_size: 10, x-note: ok}\njobs: [{id: a}]\n"
    rel = write(campaign, "pk.yaml", text)
    result = man(run, rel)
    assert result.where() == [(rel, 2, "MAN001")]
    assert "min_size" in str(result.json()["findings"][0]["message"])


def test_a_job_id_or_args_key_with_a_trailing_newline_is_man015(campaign: Path, run) -> None:  # type: ignore[no-untyped-def]
    # The schema's `$` matches before a final newline under Python's re: MAN015 matches whole.
    text = 'jobs:\n  - id: "a\\n"\n    cmd: "true"\n    args: {"lr\\n": 1, ok: 2}\n'
    rel = write(campaign, "nl.yaml", text)
    result = man(run, rel)
    assert result.where() == [(rel, 2, "MAN015"), (rel, 4, "MAN015")]
    messages = [str(f["message"]) for f in result.json()["findings"]]
    assert messages == [
        "target id 'a\\n' is not an id "
        "(letters, digits and . _ + = -, starting with a letter or digit)",
        "jobs.0.args key 'lr\\n' is not an option name "
        "(letters, digits and _ . -, starting with a letter or _)",
    ]
