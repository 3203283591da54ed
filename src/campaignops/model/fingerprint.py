"""Identities: of a target's configuration (the fingerprint) and of a failure (the signature).

**The fingerprint** says "the same config": same physics, same code path, same hardware shape;
only the run length may differ. A smoke and a production of a target therefore share it, and the
smoke-first gate can match one against the other. It is the sha256 of a canonical JSON form
(sorted keys, no whitespace) of:

- the manifest-level settings, minus what is not configuration: ``description`` (prose),
  ``stage`` (what the manifest is meant for, not what it computes), ``backend`` (a smoke may run
  on the policy's smoke_backend), ``max_parallel`` (how many run at once), ``smoke`` (the smoke's
  own length and walltime) and the target sources (``jobs``, ``grid``, ``template``, ``phases``,
  ``queue``: a queue cell is hashed as a target, its fields as args, plus its config file's
  sha256);
- the names of the run-length keys (the keys of ``smoke.args``): adding a key there widens the
  mask, so it must invalidate earlier smokes;
- the target's phase settings, and the target itself: id, phase, expanded args, cmd, output and
  its job/template settings;
- the accelerator class of the stage's request (``cpu``, ``gpu``, ``gpu:<model>``: see
  runner.accelerator), so a CPU smoke never stands for a GPU production;
- the content (sha256) of every file in the campaign the target's command names (its config,
  its script; inside ``bash -c '…'`` too), and for each directory it reaches without naming
  its files (a glob, a brace, a variable, a directory argument) one digest of HEAD's object
  ids under it (model/named.py, model/headtree.py): editing one is a new config, whatever
  the manifest says.

Masked (value replaced, key kept): every run-length key in an ``args`` mapping, ``--key V``,
``--key=V``, ``-key V`` and ``key=V`` of a run-length key inside commands, and in every
``resources`` the walltime and the placement (``time``, ``partition``, ``queue``, ``account``,
``qos``): where and how long a job runs, not what it runs. Nodes, tasks, cpus, memory and GPUs
stay: they are the parallelism and memory a smoke is there to test.

**The signature** names a failure so the breaker can see the same crash three times in a row: the
failure catalog's entry id when one of its matchers hits the log tail, else ``STATE:exit`` plus the
last error-looking line with numbers, hex and paths masked.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from campaignops.core.errors import UsageError
from campaignops.model import manifest
from campaignops.model.queuefile import Cell

PREFIX = "sha256:"
MASK = "<run-length>"
# Resources that say where and how long, not what: masked in the fingerprint.
PLACEMENT_KEYS = frozenset({"time", "partition", "queue", "account", "qos"})
# Manifest-level keys that are not configuration, or are hashed per target instead.
NOT_CONFIG = frozenset(
    {
        "description",
        "stage",
        "backend",
        "max_parallel",
        "smoke",
        "jobs",
        "grid",
        "template",
        "phases",
        "queue",
    }
)
# Keys of a job or template hashed from the expanded Target instead (or not config: backend).
_FROM_TARGET = frozenset({"id", "args", "cmd", "output", "output_check", "backend"})
# Keys of a phase hashed elsewhere: its name is the target's phase, its sources are the targets.
_PHASE_SOURCES = frozenset({"name", "jobs", "grid", "template"})


def canonical(data: Any) -> str:
    """JSON with sorted keys and no whitespace: equal data, equal text, whatever the key order."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(data: Any) -> str:
    return PREFIX + hashlib.sha256(canonical(data).encode("utf-8")).hexdigest()


def run_length_keys(doc: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys of ``smoke.args``, sorted: the args a smoke shortens."""
    smoke = doc.get("smoke")
    args = smoke.get("args") if isinstance(smoke, Mapping) else None
    return tuple(sorted(str(k) for k in args)) if isinstance(args, Mapping) else ()


def smoke_args(doc: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """A target's args for its smoke: the run-length keys set to the manifest's smoke values
    (added when the target does not name them: its command may carry the production value)."""
    smoke = doc.get("smoke")
    overlay = smoke.get("args") if isinstance(smoke, Mapping) else None
    return {**args, **(overlay if isinstance(overlay, Mapping) else {})}


def _mask_args(args: Any, keys: Sequence[str]) -> Any:
    if not isinstance(args, Mapping):
        return args
    return {k: MASK if k in keys else v for k, v in args.items()}


def _mask_resources(resources: Any) -> Any:
    if not isinstance(resources, Mapping):
        return resources
    return {k: MASK if k in PLACEMENT_KEYS else v for k, v in resources.items()}


def _cmd_pattern(keys: Sequence[str]) -> re.Pattern[str] | None:
    if not keys:
        return None
    names = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
    # --key V, --key=V, -key V, key=V (Hydra-style overrides); the value is one shell word.
    return re.compile(rf"(?<![\w.-])((?:--?(?:{names})(?:=|\s+))|(?:(?:{names})=))[^\s;&|]+")


def _mask_cmd(cmd: Any, pattern: re.Pattern[str] | None) -> Any:
    if pattern is None or not isinstance(cmd, str):
        return cmd
    return pattern.sub(lambda m: m.group(1) + MASK, cmd)


def manifest_config(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest-level part of every target's fingerprint, masked."""
    keys = run_length_keys(doc)
    pattern = _cmd_pattern(keys)
    config = {k: v for k, v in doc.items() if k not in NOT_CONFIG}
    if "resources" in config:
        config["resources"] = _mask_resources(config["resources"])
    if "default_cmd" in config:
        config["default_cmd"] = _mask_cmd(config["default_cmd"], pattern)
    return {"manifest": config, "run_length_keys": list(keys)}


def _node(doc: Mapping[str, Any], where: manifest.Where) -> Any:
    node: Any = doc
    for step in where:
        node = node[step]
    return node


def _source(doc: Mapping[str, Any], target: manifest.Target) -> Mapping[str, Any]:
    """The job or template mapping a target was expanded from."""
    where = target.id_at[:-1] if target.id_at and target.id_at[-1] == "id" else target.id_at
    node = _node(doc, where)
    return node if isinstance(node, Mapping) else {}


def _phase_config(doc: Mapping[str, Any], name: str | None) -> dict[str, Any] | None:
    if name is None:
        return None
    for phase in doc.get("phases") or ():
        if isinstance(phase, Mapping) and phase.get("name") == name:
            config = {k: v for k, v in phase.items() if k not in _PHASE_SOURCES}
            if "resources" in config:
                config["resources"] = _mask_resources(config["resources"])
            return config
    return None


def fingerprints(
    doc: Mapping[str, Any],
    cells: Sequence[Cell] = (),
    *,
    configs: Mapping[str, str] | None = None,
    hardware: Mapping[str, str] | None = None,
    files: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, str]:
    """Every target's fingerprint, by target id, in one expansion of the manifest (``cells``:
    those of its ``queue``, when it has one; ``configs``: their config files' digests by path,
    so an edited config is a new config; ``hardware``: each target's accelerator class at the
    stage being judged (runner.accelerator); ``files``: the digests of the files each target's
    command names, by path, so an edited script or config is a new config).

    ``doc`` is a schema-valid manifest (``campaign check`` passes): expansion assumes it.
    """
    base = manifest_config(doc)
    keys = base["run_length_keys"]
    pattern = _cmd_pattern(keys)
    out: dict[str, str] = {}
    for target in manifest.targets(doc, cells):
        source = _source(doc, target)
        own = {k: v for k, v in source.items() if k not in _FROM_TARGET}
        if "resources" in own:
            own["resources"] = _mask_resources(own["resources"])
        own.update(
            id=target.id,
            phase=target.phase,
            args=_mask_args(dict(target.args), keys),
            cmd=_mask_cmd(target.cmd, pattern),
            output=target.output,
        )
        if target.positional:
            own["config_digest"] = (configs or {}).get(str(target.args.get("cfg")))
        data = {**base, "phase": _phase_config(doc, target.phase), "target": own}
        if hardware is not None:
            data["hardware"] = hardware.get(target.id)
        if files is not None:
            data["files"] = dict(sorted((files.get(target.id) or {}).items()))
        out[target.id] = digest(data)
    return out


def target_fingerprint(doc: Mapping[str, Any], target_id: str) -> str:
    """One target's fingerprint; use ``fingerprints`` for many (it expands the manifest once)."""
    found = fingerprints(doc).get(target_id)
    if found is None:
        raise UsageError(
            message=f"no target {target_id!r} in the manifest",
            hint="list the manifest's targets with: campaign check (the ids are its jobs' ids "
            "and its grids' expanded template ids)",
        )
    return found


def submission_fingerprint(by_target: Mapping[str, str], targets: Iterable[str]) -> str:
    """The fingerprint a ledger record carries for ``targets``: a lone target's own fingerprint,
    else the digest of the sorted (target, fingerprint) pairs. A reader holding every target's
    current fingerprint can recompute it and so tell whether a recorded run is of today's config.
    """
    ids = sorted(set(targets))
    if len(ids) == 1:
        return by_target[ids[0]]
    return digest([[t, by_target[t]] for t in ids])
