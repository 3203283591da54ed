"""Fingerprints (same config, any run length) and failure signatures (same crash, any attempt)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from campaignops.core import schema, yamldoc
from campaignops.core.errors import UsageError
from campaignops.model import queuefile
from campaignops.model.fingerprint import (
    fingerprints,
    smoke_args,
    submission_fingerprint,
    target_fingerprint,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "clean"
FP = re.compile(r"sha256:[0-9a-f]{64}\Z")


def production() -> dict[str, Any]:
    """The formats page's manifest: run length in an arg and in default_cmd, grid and phases."""
    return {
        "project": "dllm_distill",
        "cwd": "/home/user/dllm_experiments",
        "default_cmd": "python run.py --n_steps 30000 --batch_size 128",
        "backend": "alpine",
        "stage": "production",
        "max_parallel": 4,
        "resources": {"partition": "acpu", "time": "04:00:00", "cpus": 8, "mem": "32G"},
        "smoke": {"args": {"n_steps": 200}, "resources": {"time": "00:20:00"}},
        "jobs": [{"id": "s200_N64", "args": {"seed": 200, "n_hidden": 64, "n_steps": 30000}}],
        "grid": {"N": [64, 128], "seed": [42]},
        "template": {
            "id": "s${seed}_N${N}_g",
            "args": {"seed": "${seed}", "n_hidden": "${N}", "n_steps": 30000},
            "output": "results/s${seed}_N${N}/metrics.json",
        },
        "phases": [
            {
                "name": "teachers",
                "resources": {"gpus": 1, "time": "08:00:00"},
                "grid": {"N": [384]},
                "template": {"cmd": "python run_teacher.py --n_hidden ${N} --n_steps=50000"},
            }
        ],
    }


def test_every_target_has_a_distinct_prefixed_fingerprint() -> None:
    assert list(schema.validate(schema.MANIFEST, production())) == []
    fps = fingerprints(production())
    assert list(fps) == ["s200_N64", "s42_N64_g", "s42_N128_g", "teachers_N384"]
    assert all(FP.match(fp) for fp in fps.values())
    assert len(set(fps.values())) == len(fps)
    assert target_fingerprint(production(), "s42_N64_g") == fps["s42_N64_g"]


def test_fixture_manifest_targets_differ() -> None:
    doc = yamldoc.load((FIXTURES / "manifests" / "smoke.yaml").read_text(), path="smoke.yaml")
    fps = fingerprints(doc)
    assert sorted(fps) == ["lr0.01_s1", "lr0.01_s2", "lr0.1_s1", "lr0.1_s2"]
    assert len(set(fps.values())) == 4


def test_smoke_and_production_of_a_target_share_it() -> None:
    """The smoke manifest differs only in stage, backend, walltime, partition and run length."""
    smoke = production()
    smoke["stage"] = "smoke"
    smoke["backend"] = "local"
    smoke["max_parallel"] = 1
    smoke["resources"] |= {"partition": "atesting", "time": "00:30:00"}
    smoke["smoke"] = {"args": {"n_steps": 10}, "resources": {"time": "00:05:00"}}
    smoke["default_cmd"] = "python run.py --n_steps 200 --batch_size 128"
    smoke["jobs"][0]["args"]["n_steps"] = 200
    smoke["template"]["args"]["n_steps"] = 200
    smoke["phases"][0]["resources"]["time"] = "00:10:00"
    smoke["phases"][0]["template"]["cmd"] = "python run_teacher.py --n_hidden ${N} --n_steps=99"
    assert fingerprints(smoke) == fingerprints(production())


def test_the_smoke_overlay_keeps_the_fingerprint() -> None:
    """What the runner runs for a smoke (run-length keys set to smoke values) is the same config."""
    doc = production()
    smoked = copy.deepcopy(doc)
    smoked["jobs"][0]["args"] = smoke_args(doc, doc["jobs"][0]["args"])
    smoked["template"]["args"] = smoke_args(doc, doc["template"]["args"])
    assert smoked["template"]["args"]["n_steps"] == 200
    assert fingerprints(smoked) == fingerprints(doc)


def test_smoke_args_adds_run_length_keys_a_target_does_not_name() -> None:
    assert smoke_args(production(), {"seed": 1}) == {"seed": 1, "n_steps": 200}
    assert smoke_args({"project": "p"}, {"seed": 1}) == {"seed": 1}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("jobs", 0, "args", "seed"), 201),
        (("template", "args", "n_hidden"), "${seed}"),
        (("resources", "cpus"), 16),
        (("resources", "mem"), "64G"),
        (("phases", 0, "resources", "gpus"), 2),
        (("cwd",), "/elsewhere"),
        (("conda",), "other-env"),
    ],
)
def test_a_config_change_changes_it(path: tuple[str | int, ...], value: object) -> None:
    doc = production()
    node: Any = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    before, after = fingerprints(production()), fingerprints(doc)
    assert [t for t in before if before[t] != after.get(t)], f"{path} changed nothing"


def test_default_cmd_change_other_than_run_length_changes_every_target() -> None:
    doc = production()
    doc["default_cmd"] = "python run.py --n_steps 30000 --batch_size 256"
    before, after = fingerprints(production()), fingerprints(doc)
    assert all(before[t] != after[t] for t in ("s200_N64", "s42_N64_g"))


@pytest.mark.parametrize(
    "cmd",
    [
        "python x.py --n_steps 5 --lr 0.1",
        "python x.py --n_steps=5 --lr 0.1",
        "python x.py -n_steps 5 --lr 0.1",
        "python x.py n_steps=5 --lr 0.1",
    ],
)
def test_run_length_flags_in_commands_are_masked(cmd: str) -> None:
    doc = production()
    doc["default_cmd"] = cmd
    longer = copy.deepcopy(doc)
    longer["default_cmd"] = cmd.replace("5", "90000")
    other_lr = copy.deepcopy(doc)
    other_lr["default_cmd"] = cmd.replace("0.1", "0.2")
    assert fingerprints(longer) == fingerprints(doc)
    assert fingerprints(other_lr) != fingerprints(doc)


def test_a_key_merely_containing_a_run_length_name_is_not_masked() -> None:
    doc = production()
    doc["default_cmd"] = "python x.py --max_n_steps 5"
    other = copy.deepcopy(doc)
    other["default_cmd"] = "python x.py --max_n_steps 6"
    assert fingerprints(other) != fingerprints(doc)


def test_widening_the_mask_invalidates_earlier_smokes() -> None:
    doc = production()
    doc["smoke"]["args"]["seed"] = 1
    before, after = fingerprints(production()), fingerprints(doc)
    assert all(before[t] != after[t] for t in before)


def test_unknown_target_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no target 'nope'"):
        target_fingerprint(production(), "nope")


def test_submission_fingerprint() -> None:
    fps = fingerprints(production())
    assert submission_fingerprint(fps, ["s200_N64"]) == fps["s200_N64"]
    both = submission_fingerprint(fps, ["s42_N64_g", "s200_N64"])
    assert both == submission_fingerprint(fps, ["s200_N64", "s42_N64_g", "s200_N64"])
    assert FP.match(both) and both not in fps.values()


# ------------------------------------------------------------------------- properties

_keys = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(lambda k: k != "n_steps")
_scalars = st.one_of(st.integers(-1000, 1000), st.booleans(), st.text(max_size=8))
_args = st.dictionaries(_keys, _scalars, max_size=5)


def _reordered(value: Any) -> Any:
    """The same data with every mapping's keys in reverse insertion order."""
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


def _doc(args: list[dict[str, Any]]) -> dict[str, Any]:
    jobs = [{"id": f"t{i}", "args": {**a, "n_steps": 1000}} for i, a in enumerate(args)]
    return {"project": "p", "smoke": {"args": {"n_steps": 2}}, "jobs": jobs}


@given(st.lists(_args, min_size=1, max_size=4))
def test_key_order_is_irrelevant(args: list[dict[str, Any]]) -> None:
    doc = _doc(args)
    assert fingerprints(_reordered(doc)) == fingerprints(doc)


@given(st.lists(_args, min_size=1, max_size=4), st.integers(1, 10**9))
def test_run_length_values_never_matter(args: list[dict[str, Any]], steps: int) -> None:
    doc = _doc(args)
    other = copy.deepcopy(doc)
    for job in other["jobs"]:
        job["args"]["n_steps"] = steps
    other["smoke"]["args"]["n_steps"] = steps % 7
    assert fingerprints(other) == fingerprints(doc)


@given(_args, _keys, _scalars)
def test_any_other_arg_change_changes_it(args: dict[str, Any], key: str, value: Any) -> None:
    doc = _doc([args])
    other = copy.deepcopy(doc)
    other["jobs"][0]["args"][key] = value
    changed = args.get(key, object()) != value or type(args.get(key)) is not type(value)
    assert (fingerprints(other) != fingerprints(doc)) == changed


QUEUE_MANIFEST: dict[str, Any] = {
    "project": "q",
    "queue": "queues/q.txt",
    "default_cmd": "bash scripts/run_one.v1.sh",
    "smoke": {"args": {"epochs": 1}},
}


def test_a_queue_cell_is_fingerprinted_by_its_fields_not_its_epochs_or_neighbours() -> None:
    first = queuefile.parse("configs/a.yaml train 5\nconfigs/b.yaml train\n").cells
    fps = fingerprints(QUEUE_MANIFEST, first)
    assert sorted(fps) == ["a", "b"] and fps["a"] != fps["b"]
    # Another epochs count is another run length of the same config: same fingerprint.
    longer = queuefile.parse("configs/a.yaml train 50\nconfigs/b.yaml train\n").cells
    assert fingerprints(QUEUE_MANIFEST, longer)["a"] == fps["a"]
    # Appending a cell (the allowed edit of a queue in flight) leaves earlier cells alone.
    appended = queuefile.parse("configs/a.yaml train 5\nconfigs/b.yaml train\nconfigs/c.yaml x\n")
    assert {
        k: v for k, v in fingerprints(QUEUE_MANIFEST, appended.cells).items() if k != "c"
    } == fps
    # Another task is another config.
    other = queuefile.parse("configs/a.yaml detect 5\n").cells
    assert fingerprints(QUEUE_MANIFEST, other)["a"] != fps["a"]
    # The wrapper is part of the config: a new wrapper version needs a new smoke.
    v2 = {**QUEUE_MANIFEST, "default_cmd": "bash scripts/run_one.v2.sh"}
    assert fingerprints(v2, first)["a"] != fps["a"]


def test_a_queue_cell_config_file_content_is_part_of_its_fingerprint() -> None:
    cells = queuefile.parse("configs/a.yaml train 5\nconfigs/b.yaml train\n").cells
    before = fingerprints(
        QUEUE_MANIFEST, cells, configs={"configs/a.yaml": "sha256:1", "configs/b.yaml": "sha256:2"}
    )
    after = fingerprints(
        QUEUE_MANIFEST, cells, configs={"configs/a.yaml": "sha256:9", "configs/b.yaml": "sha256:2"}
    )
    assert before["a"] != after["a"] and before["b"] == after["b"]
