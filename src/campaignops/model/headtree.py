"""The campaign's committed files as HEAD's tree lists them, and the part of a fingerprint that
stands for a directory a command reaches without naming its files (model/named.py, ``Reach``).

A command such as ``cat configs/extra/*.yaml``, ``ls configs/extra`` or ``bash -c "$X"`` reads
files no word of it names. Its fingerprint then covers every committed file under the directory
it starts from (the whole campaign when that is the current directory): one digest per
directory over the sorted (path, git object id) pairs of HEAD's tree. The ids come from one
``git ls-tree -r`` per submission, not from reading the files, so a queue of a thousand cells
that each reach the campaign costs one git call and one hash per distinct directory. The
runner's own files (outputs, logs, job scripts, the ledger, the lock, STATUS.md: layout's
RUNNER_FILES and RUNNER_DIRS) and the files the fingerprint already covers in its own way (the
manifest, its run-length keys masked, and its queue file) are left out, so recording a smoke or
lengthening the production run never asks for another smoke.

The committed gate makes this sound: it refuses a submission while any file of the checkout
that a job can read is untracked or differs from HEAD, so what HEAD lists under a directory is
what the job finds there (apart from files a committed ignore rule declares outputs or caches).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Collection, Iterable, Mapping, MutableMapping
from pathlib import Path

from campaignops.core import layout

ROOT_KEY = "./"  # the whole campaign, in a fingerprint's files


def head_blobs(root: Path) -> dict[str, str]:
    """Every file and symlink HEAD holds under ``root``: root-relative path -> object id. One
    git call, no file read. Empty outside a repository or before the first commit (the
    committed gate refuses those; a dry run's fingerprint then covers the named files only)."""
    argv = ["git", "--no-replace-objects", "--no-optional-locks", "-C", str(root)]
    # From a subdirectory ls-tree lists that directory, with paths relative to it.
    proc = subprocess.run([*argv, "ls-tree", "-r", "-z", "HEAD"], capture_output=True, check=False)
    if proc.returncode != 0:
        return {}
    out: dict[str, str] = {}
    for entry in proc.stdout.split(b"\0"):
        meta, _, rel = entry.partition(b"\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == b"blob":  # a submodule's commit is not a file
            out[os.fsdecode(rel)] = fields[2].decode()
    return out


def outermost(dirs: Iterable[str]) -> tuple[str, ...]:
    """``dirs`` without those inside another of them ("" is the whole campaign), sorted."""
    keep: list[str] = []
    for d in sorted(set(dirs), key=lambda d: (d.count("/"), d)):
        if not any(k == "" or d == k or d.startswith(k + "/") for k in keep):
            keep.append(d)
    return tuple(sorted(keep))


def reached(
    dirs: Iterable[str],
    blobs: Mapping[str, str],
    *,
    skip: Collection[str] = (),
    cache: MutableMapping[str, str] | None = None,
) -> dict[str, str]:
    """For each outermost directory of ``dirs`` holding committed files: its key in a
    fingerprint's files (``d/``, or ROOT_KEY) -> the digest of the committed files under it,
    ``skip`` and the runner's own files left out. A directory without any is left out, so an
    output directory a command names counts the same before and after the run that makes it.
    ``cache`` (by directory) spares the hash when many targets reach one."""
    memo: MutableMapping[str, str] = {} if cache is None else cache
    out: dict[str, str] = {}
    for d in outermost(dirs):
        if d not in memo:
            lead = d + "/" if d else ""
            pairs = sorted(
                (rel, sha)
                for rel, sha in blobs.items()
                if rel.startswith(lead) and rel not in skip and not layout.runner_written(rel)
            )
            text = "".join(f"{sha} {rel}\0" for rel, sha in pairs)
            memo[d] = (
                "tree:sha256:" + hashlib.sha256(os.fsencode(text)).hexdigest() if pairs else ""
            )
        if memo[d]:  # no committed file there (an output directory, an ignored one): nothing
            out[lead_key(d)] = memo[d]
    return out


def lead_key(d: str) -> str:
    return d + "/" if d else ROOT_KEY
