"""The instances of a kind: ssh page: what is accepted, and each refusal's message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from campaignops.backends.ssh import instances as sshinstances
from campaignops.backends.ssh.instances import Instance
from campaignops.core.errors import InputError

BOX = {
    "name": "a100-1",
    "host": "root@203.0.113.7",
    "port": 20544,
    "identity": "~/.ssh/vast",
    "known_hosts": "~/.ssh/known_hosts_vast",
    "workdir": "/workspace/",
    "gpus": [0, 1],
    "usd_per_hour": 1.2,
    "release": "vastai destroy instance 123",
}


def refusal(raw: Any) -> str:
    with pytest.raises(InputError) as caught:
        sshinstances.parse(raw, path="backends/generic-ssh.md")
    assert caught.value.path == "backends/generic-ssh.md"
    return f"{caught.value.message.removeprefix('backends/generic-ssh.md: ')} | {caught.value.hint}"


def test_an_instance_is_read_as_written() -> None:
    assert sshinstances.parse(
        [BOX, {"name": "ws", "host": "lab-box", "workdir": "/data"}], path="p"
    ) == (
        Instance(
            name="a100-1",
            host="root@203.0.113.7",
            workdir="/workspace",
            port=20544,
            identity="~/.ssh/vast",
            known_hosts="~/.ssh/known_hosts_vast",
            gpus=(0, 1),
            usd_per_hour=1.2,
            release="vastai destroy instance 123",
        ),
        Instance(name="ws", host="lab-box", workdir="/data"),
    )


def test_runpods_basic_proxy_is_refused_with_the_way_out() -> None:
    text = refusal([BOX | {"host": "abc123-64410f2c@ssh.runpod.io"}])
    assert text.startswith(
        "instance a100-1: host abc123-64410f2c@ssh.runpod.io is RunPod's basic SSH proxy, which "
        "has no scp, sftp or rsync"
    )
    assert "expose TCP port 22" in text and "RUNPOD_TCP_PORT_22" in text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"host": "-oProxyCommand=x"}, "instance a100-1: host '-oProxyCommand=x' is not user@host"),
        ({"host": "root@h; rm -rf /"}, "instance a100-1: host 'root@h; rm -rf /' is not"),
        ({"workdir": "work"}, "instance a100-1: workdir 'work' is not an absolute path"),
        ({"port": 0}, "instance a100-1: port 0 is not 1-65535"),
        ({"port": True}, "instance a100-1: port True is not 1-65535"),
        ({"gpus": [0, 0]}, "instance a100-1: gpus [0, 0] is not a list of distinct indices"),
        ({"usd_per_hour": -1}, "instance a100-1: usd_per_hour -1 is not a price"),
        ({"identity": ""}, "instance a100-1: identity '' is not a non-empty string"),
        ({"name": "a b"}, "instances[0]: name 'a b' is not a name"),
        ({"zone": "eu"}, "instances[0]: unknown keys ['zone']"),
    ],
)
def test_a_bad_entry_is_refused_saying_which_and_why(change: dict[str, Any], message: str) -> None:
    assert refusal([BOX | change]).startswith(message)


def test_an_empty_list_and_twice_the_same_name_are_refused() -> None:
    assert refusal([]).startswith("instances: expected a non-empty list of boxes")
    assert refusal([BOX, BOX]).startswith("instances named twice: ['a100-1']")


def test_a_page_may_name_a_file_of_the_campaign(tmp_path: Path) -> None:
    (tmp_path / "boxes").mkdir()
    (tmp_path / "boxes/vast.yaml").write_text("- {name: v1, host: root@10.0.0.1, workdir: /w}\n")
    page = {"kind": "ssh", "instances": "boxes/vast.yaml"}
    assert sshinstances.of_page(tmp_path, "vast-ai", page) == (
        Instance(name="v1", host="root@10.0.0.1", workdir="/w"),
    )
    with pytest.raises(InputError, match="is not a file of this campaign"):
        sshinstances.of_page(tmp_path, "vast-ai", {"instances": "../elsewhere.yaml"})
    with pytest.raises(InputError, match="lists no instances") as caught:
        sshinstances.of_page(tmp_path, "generic-ssh", {"kind": "ssh"})
    assert caught.value.path == "backends/generic-ssh.md"


def test_hourly_price_is_the_sum_of_the_priced_boxes() -> None:
    boxes = sshinstances.parse([BOX, BOX | {"name": "b", "usd_per_hour": 0.3}], path="p")
    assert sshinstances.hourly(boxes) == pytest.approx(1.5)
    assert (
        sshinstances.hourly(
            sshinstances.parse([{"name": "x", "host": "h", "workdir": "/"}], path="p")
        )
        is None
    )
