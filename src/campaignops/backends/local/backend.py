"""The local backend the runner calls (runner.backend_base.Backend): campaignops.backends.local.machine's
functions with the checkout's state root (``.campaign/local/``) filled in, and each job sent to
its executor: localexec, or the box executor for a job with a GPU list
(campaignops.backends.local.gpu, ids ``local-gpu-…``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from campaignops.backends import base as backend_base
from campaignops.backends import command as scheduler
from campaignops.backends.local import gpu as localbox
from campaignops.backends.local.directives import LocalBackendError
from campaignops.backends.local.machine import (
    NAME,
    PARTIAL_ANSWER,
    STATE_DIR,
    TRANSIENT,
    UNSENT,
    cancel_argv,
    log_path,
    parse_job_id,
    parse_siblings,
    parse_states,
    query_argvs,
    render,
    sibling_argv,
    submit_argv,
    task_id,
)
from campaignops.backends.ssh import backend as sshbox
from campaignops.model.jobspec import JobSpec, JobState, live


class LocalBackend:
    """The local backend for one campaign checkout: the module's functions with its state root
    (``.campaign/local/``) filled in. A job with a GPU list runs under the box executor instead
    (campaignops.backends.local.gpu, ids ``local-gpu-…``): each method sends each id to its own
    executor. Checked against runner.backend_base.Backend by mypy."""

    NAME = NAME
    TRANSIENT = TRANSIENT
    UNSENT = UNSENT
    PARTIAL_ANSWER = PARTIAL_ANSWER

    def __init__(self, root: Path, name: str = NAME) -> None:
        self.root, self.name = root, name
        self.state = str(root / STATE_DIR)

    def _box(self, command: str, *args: str) -> list[str]:
        return [sys.executable, "-m", localbox.HELPER, command, "--state", self.state, *args]

    def _has_box_jobs(self) -> bool:
        return (Path(self.state) / localbox.BOX_DIR).is_dir()

    def render(self, spec: JobSpec) -> str:
        gpus = localbox.gpu_list(spec, backend_base.page(self.root, self.name))
        if gpus is not None:
            return localbox.render(spec, gpus)
        ignored = [k for k in localbox.BOX_ONLY if getattr(spec.box, k) is not None]
        if ignored:  # MAN012 passed them for a GPU request this stage or phase does not make
            raise LocalBackendError(
                message=f"job {spec.name!r} has no GPU list here, so localexec would run it "
                f"and ignore {', '.join(ignored)}",
                hint="list the GPUs in the manifest (gpus: [0, 1]), or remove those keys",
            )
        return render(spec)

    def submit_argv(self, script_path: str) -> list[str]:
        text = Path(script_path).read_text(encoding="utf-8")
        if localbox.is_box_script(text):
            return self._box("submit", "--backend", self.name, script_path)
        return submit_argv(script_path, state_root=self.state)

    def parse_job_id(self, stdout: str) -> str:
        job_id = stdout.strip()
        return job_id if localbox.is_box_id(job_id) else parse_job_id(stdout)

    def query_argvs(self, job_ids: Sequence[str]) -> list[list[str]]:
        boxed = [j for j in job_ids if localbox.is_box_id(j)]
        own = [j for j in job_ids if not localbox.is_box_id(j)]
        argvs = query_argvs(own, state_root=self.state) if own or not boxed else []
        return argvs + ([self._box("status", *boxed)] if boxed else [])

    def parse_states(self, outputs: Sequence[str]) -> dict[str, JobState]:
        found: dict[str, JobState] = {}
        for out in outputs:
            found |= sshbox.parse_states([out]) if _box_doc(out) else parse_states([out])
        return found

    def _siblings(self, stdout: str) -> tuple[JobState, ...]:
        box = _box_doc(stdout)
        boxed = sshbox.parse_states([json.dumps(box)]).values() if box else ()
        return parse_siblings(stdout) + tuple(boxed)

    def sibling_argv(self, names: Sequence[str]) -> list[str]:
        if self._has_box_jobs():
            return self._box("siblings", *names)
        return sibling_argv(names, state_root=self.state)

    def parse_live(self, stdout: str) -> tuple[JobState, ...]:
        return live(self._siblings(stdout))

    def lookup(self, names: Sequence[str], call: scheduler.Runs) -> dict[str, JobState]:
        if self._has_box_jobs():
            argv = self._box("siblings", "--all", *names)
        else:
            argv = sibling_argv(names, state_root=self.state, include_finished=True)
        return {j.job_id: j for j in self._siblings(call(argv).stdout)}

    def cancel_argv(self, job_ids: Sequence[str]) -> list[str]:
        if any(localbox.is_box_id(j) for j in job_ids):
            return self._box("cancel", *job_ids)
        return cancel_argv(job_ids, state_root=self.state)

    def task_id(self, job_id: str, index: int) -> str:
        return task_id(job_id, index)

    def log_path(self, job_id: str, *, name: str, index: int | None) -> str:
        return log_path(job_id, name=name, index=index)


def _box_doc(stdout: str) -> dict[str, Any] | None:
    """The box executor's part of an answer (localbox status, or siblings' ``box``)."""
    try:
        doc = json.loads(stdout)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    if doc.get("executor") == "box":
        return doc
    box = doc.get("box")
    return box if isinstance(box, dict) else None
