"""The instances of a ``kind: ssh`` backend page: the boxes the ssh backend runs on.

A page lists them in its front matter (``instances: [...]``), or names a campaign file that
holds the list (``instances: boxes/vast.yaml``). Each entry: ``name``, ``host`` (an alias of
``~/.ssh/config`` or ``user@host``), ``port``, ``identity``, ``known_hosts``, ``workdir`` (an
absolute directory on the box), ``gpus`` (the GPU indices the executor hands out, one task
each), ``usd_per_hour`` (the budget gate's price) and ``release`` (the provider's stop or destroy
command, printed by ``campaign release``; never run unasked). Formats: docs/formats.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from campaignops.core import yamldoc
from campaignops.core.errors import InputError
from campaignops.model import backendpage

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
# user@host or an ssh_config alias: no spaces, no option-looking leading "-", no shell words.
HOST = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9._-]*@)?[A-Za-z0-9_.:\[\]-]+\Z")
# RunPod's basic SSH goes through a proxy that gives a PTY shell only: no scp, sftp or rsync,
# and no command on the ssh line (docs.runpod.io/pods/configuration/use-ssh, verified 2026-11).
RUNPOD_PROXY = re.compile(r"@ssh\.runpod\.io\Z", re.IGNORECASE)
KEYS = frozenset(
    {
        "name",
        "host",
        "port",
        "identity",
        "known_hosts",
        "workdir",
        "gpus",
        "usd_per_hour",
        "release",
    }
)


@dataclass(frozen=True)
class Instance:
    """One box the ssh backend reaches."""

    name: str
    host: str
    workdir: str
    port: int | None = None
    identity: str | None = None  # a private key file (~ expanded)
    known_hosts: str | None = None  # pinned host keys (StrictHostKeyChecking=yes always)
    gpus: tuple[int, ...] | None = None
    usd_per_hour: float | None = None
    release: str | None = None

    def record(self) -> dict[str, Any]:
        """What the job's placement keeps of the instance (how to reach it again)."""
        return {
            "name": self.name,
            "host": self.host,
            "port": self.port,
            "identity": self.identity,
            "known_hosts": self.known_hosts,
            "workdir": self.workdir,
        }

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> Instance:
        return cls(
            name=str(data["name"]),
            host=str(data["host"]),
            workdir=str(data["workdir"]),
            port=data.get("port") if isinstance(data.get("port"), int) else None,
            identity=data.get("identity") if isinstance(data.get("identity"), str) else None,
            known_hosts=data.get("known_hosts")
            if isinstance(data.get("known_hosts"), str)
            else None,
        )


def _bad(where: str, what: str, hint: str, path: str) -> InputError:
    return InputError(path=path, message=f"{where}: {what}", hint=hint)


def _entry(raw: Any, index: int, path: str) -> Instance:
    where = f"instances[{index}]"
    if not isinstance(raw, Mapping):
        raise _bad(where, "is not a mapping", "write name:, host:, workdir: …", path)
    unknown = sorted(set(map(str, raw)) - KEYS)
    if unknown:
        raise _bad(where, f"unknown keys {unknown}", "keys: " + ", ".join(sorted(KEYS)), path)
    name, host, workdir = raw.get("name"), raw.get("host"), raw.get("workdir")
    if not isinstance(name, str) or not NAME.match(name):
        raise _bad(where, f"name {name!r} is not a name", "letters, digits, . _ -", path)
    where = f"instance {name}"
    if not isinstance(host, str) or not HOST.match(host) or host.startswith("-"):
        raise _bad(where, f"host {host!r} is not user@host or an alias", "e.g. root@1.2.3.4", path)
    if RUNPOD_PROXY.search(host):
        raise _bad(
            where,
            f"host {host} is RunPod's basic SSH proxy, which has no scp, sftp or rsync and runs "
            "no command given on the ssh line, so nothing can be deployed or queried through it",
            "expose TCP port 22 on the pod (a public IP) and use its full SSH: root@IP with "
            "port: the pod's mapped port (RUNPOD_TCP_PORT_22)",
            path,
        )
    if not isinstance(workdir, str) or not workdir.startswith("/") or "\n" in workdir:
        raise _bad(where, f"workdir {workdir!r} is not an absolute path", "e.g. /workspace", path)
    port = raw.get("port")
    if port is not None and (
        isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536
    ):
        raise _bad(where, f"port {port!r} is not 1-65535", "the box's SSH port", path)
    files: dict[str, str | None] = {}
    for key in ("identity", "known_hosts", "release"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise _bad(where, f"{key} {value!r} is not a non-empty string", "or leave it out", path)
        files[key] = value
    gpus = raw.get("gpus")
    if gpus is not None and (
        not isinstance(gpus, list)
        or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus)
        or len(set(gpus)) != len(gpus)
    ):
        raise _bad(where, f"gpus {gpus!r} is not a list of distinct indices", "e.g. [0, 1]", path)
    price = raw.get("usd_per_hour")
    if price is not None and (
        isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0
    ):
        raise _bad(where, f"usd_per_hour {price!r} is not a price", "e.g. 0.42", path)
    return Instance(
        name=name,
        host=host,
        workdir=workdir.rstrip("/") or "/",
        port=port,
        identity=files["identity"],
        known_hosts=files["known_hosts"],
        gpus=None if gpus is None else tuple(gpus),
        usd_per_hour=None if price is None else float(price),
        release=files["release"],
    )


def parse(raw: Any, *, path: str) -> tuple[Instance, ...]:
    """The instance list as written (``path`` names where, for the messages)."""
    if not isinstance(raw, list) or not raw:
        raise InputError(
            path=path,
            message="instances: expected a non-empty list of boxes",
            hint="list each box: name, host, port, identity, known_hosts, workdir, gpus, "
            "usd_per_hour (docs/formats.md, SSH instances)",
        )
    found = tuple(_entry(r, i, path) for i, r in enumerate(raw))
    names = [i.name for i in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(path=path, message=f"instances named twice: {twice}", hint="rename one")
    return found


def of_page(root: Path, name: str, page: Mapping[str, Any] | None) -> tuple[Instance, ...]:
    """The instances of backend ``name``'s page (a list, or a campaign file holding one)."""
    rel = backendpage.path_of(name)
    raw = (page or {}).get("instances")
    if raw is None:
        raise InputError(
            path=rel,
            message="a kind: ssh page lists no instances, so there is no box to run on",
            hint="add instances: [{name, host, port, identity, known_hosts, workdir, gpus, "
            "usd_per_hour}] to the front matter and commit (docs/formats.md, SSH instances)",
        )
    if isinstance(raw, str):
        target = (root / raw).resolve()
        if raw.startswith("/") or not target.is_relative_to(root.resolve()) or not target.is_file():
            raise InputError(
                path=rel,
                message=f"instances: {raw!r} is not a file of this campaign",
                hint="name a YAML file relative to the campaign root, e.g. boxes/vast.yaml",
            )
        rel = raw
        raw = yamldoc.load(target.read_text(encoding="utf-8"), path=raw)
    return parse(raw, path=rel)


def hourly(instances: Sequence[Instance]) -> float | None:
    """The instances' summed price per hour, None when none has one."""
    prices = [i.usd_per_hour for i in instances if i.usd_per_hour is not None]
    return sum(prices) if prices else None
