"""campaign audit resources: the ledger's finished tasks, grouped by manifest (and phase) and
stage, against what each manifest asks for now (resolved as plan.resources_for resolves it).

The figures and rules are campaignops.learn.rightsizing's (pure); this module reads the ledger and
the manifests. A manifest that is gone, unreadable or schema-invalid leaves its groups without a current
request (memory is then held to the recorded ReqMem, time to nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from campaignops.core import schema
from campaignops.core.errors import UsageError
from campaignops.core.files import FileReader
from campaignops.learn import efficiency, rightsizing
from campaignops.model import ledger, manifest
from campaignops.runner.plan import resources_for


def phases_of(doc: Mapping[str, Any]) -> dict[str, str]:
    """Each target's phase, for a manifest with phases (others: none to look up)."""
    if not doc.get("phases"):
        return {}
    return {t.id: t.phase for t in manifest.targets(doc) if t.phase is not None}


def label(path: str, phase: str | None) -> str:
    """A group's manifest as reports name it: ``manifests/x.yaml``, ``manifests/x.yaml#train``
    for one phase of a manifest with phases (each phase has its own resources)."""
    return f"{path}#{phase}" if phase else path


def select(
    jobs: Iterable[ledger.Job],
    reader: FileReader,
    *,
    stage: str | None = None,
    manifest_path: str | None = None,
) -> list[ledger.Job]:
    """The jobs of a manifest (and a stage), as audit resources and campaign report take them.

    UsageError when ``manifest_path`` is neither a file of the campaign nor named by a job.
    """
    found = [j for j in jobs if j.text("manifest")]
    if manifest_path is not None:
        if not reader.exists(manifest_path) and all(
            j.text("manifest") != manifest_path for j in found
        ):
            raise UsageError(
                message=f"no manifest {manifest_path} in the campaign or its ledger",
                hint="pass a manifest path as campaign submit took it, e.g. manifests/x.yaml",
            )
        found = [j for j in found if j.text("manifest") == manifest_path]
    if stage is not None:
        found = [j for j in found if j.stage == stage]
    return found


def resources(
    *, root: Path, stage: str | None = None, manifest_path: str | None = None
) -> rightsizing.Audit:
    """The right-sizing audit of the campaign at ``root``, optionally one stage or manifest.

    UsageError when ``manifest_path`` is neither a file of the campaign nor named by a job.
    """
    reader = FileReader(root)
    jobs = select(ledger.read(root).jobs, reader, stage=stage, manifest_path=manifest_path)
    docs: dict[str, Mapping[str, Any] | None] = {}
    phases: dict[str, dict[str, str]] = {}
    groups: dict[rightsizing.GroupKey, list[rightsizing.Sample]] = {}
    used: dict[rightsizing.GroupKey, list[efficiency.Usage]] = {}
    requests: dict[rightsizing.GroupKey, rightsizing.Request] = {}
    for job in jobs:
        path, at = str(job.text("manifest")), job.stage or "?"
        if path not in docs:
            docs[path] = manifest_doc(reader, path)
            phases[path] = phases_of(docs[path] or {})
        doc = docs[path]
        phase = next((phases[path][t] for t in job.targets if t in phases[path]), None)
        key = (label(path, phase), at)
        found = rightsizing.samples(job)
        used.setdefault(key, []).extend(efficiency.usages(job))
        if not found:
            continue
        groups.setdefault(key, []).extend(found)
        if key not in requests:
            asked = resources_for(doc, phase, at) if doc is not None else None
            requests[key] = rightsizing.Request(
                mem=asked.mem if asked else None,
                time=asked.time if asked else None,
                cpus=asked.cpus if asked else None,
            )
    audit = rightsizing.audit(groups, requests)
    order = [(s.manifest, s.stage) for s in audit.stages]
    return replace(audit, efficiency=efficiency.all_of({k: used[k] for k in order}))


def manifest_doc(reader: FileReader, path: str) -> Mapping[str, Any] | None:
    """The manifest, if it reads and is schema-valid (the resolution assumes a valid one)."""
    loaded = reader.read_yaml(path)
    if loaded is None or loaded[1] is not None or not isinstance(loaded[0], Mapping):
        return None
    if next(schema.validate(schema.MANIFEST, loaded[0]), None) is not None:
        return None
    return loaded[0]
