"""What a refresh writes of a box's log tails: only what was asked, where this checkout says,
bounded, never through a link (campaignops.backends.ssh.boxlogs)."""

from __future__ import annotations

from pathlib import Path

from campaignops.backends.ssh import boxlogs

ARRAY = {"name": "c.t.smoke", "placement": [{"indices": [0, 2]}, {"indices": [1]}]}
SINGLE = {"name": "c.u.smoke", "placement": [{"indices": [0]}]}
RECORDS = {"ssh-1-aaaaaa": ARRAY, "ssh-2-bbbbbb": SINGLE}


def test_the_tails_asked_are_those_with_no_log_here_and_named_as_log_path(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs/c.t.smoke-ssh-1-aaaaaa_2.out").write_text("pulled already\n")
    jobs = {"ssh-1-aaaaaa": {"indices": [0, 2]}, "ssh-2-bbbbbb": {"indices": [0]}}
    asked = boxlogs.wanted(tmp_path, jobs, RECORDS)
    assert asked == {"ssh-1-aaaaaa": [0], "ssh-2-bbbbbb": [0]}
    line = boxlogs.command("/w/.campaignops/boxexec-1.py", "/w/.campaignops/jobs", asked)
    assert line.endswith(
        "python3 /w/.campaignops/boxexec-1.py tails /w/.campaignops/jobs "
        "ssh-1-aaaaaa=0 ssh-2-bbbbbb=0 || true; }"
    )
    assert boxlogs.command("x", "y", {}) == ""
    assert boxlogs.split(f'{{"now": 1}}\n{boxlogs.MARK}\n{{"a": 1}}\n') == (
        '{"now": 1}',
        '{"a": 1}\n',
    )
    # One task: its log has no index here (as on Slurm); on the box it has (the executor's).
    assert boxlogs.pulled("ssh-2-bbbbbb", SINGLE, [0]) == {
        "logs/c.u.smoke-ssh-2-bbbbbb_0.out": "logs/c.u.smoke-ssh-2-bbbbbb.out"
    }


def test_a_box_answer_writes_only_what_was_asked_bounded(tmp_path: Path) -> None:
    asked = {"ssh-1-aaaaaa": [0], "ssh-2-bbbbbb": [0]}
    answer = {
        "ssh-1-aaaaaa": {"0": "x" * (boxlogs.LIMIT + 10), "1": "not asked", "../0": "no"},
        "ssh-2-bbbbbb": {"0": ["not text"]},
        "ssh-9-cccccc": {"0": "not asked"},
    }
    written = boxlogs.keep(tmp_path, answer, asked, RECORDS)
    assert written == ["logs/c.t.smoke-ssh-1-aaaaaa_0.out"]
    assert (tmp_path / written[0]).read_bytes() == b"x" * boxlogs.LIMIT
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [Path(written[0]).name]
    assert boxlogs.keep(tmp_path, ["not", "a", "dict"], asked, RECORDS) == []


def test_a_link_where_the_logs_go_is_never_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "camp"
    root.mkdir()
    (root / "logs").symlink_to(elsewhere)
    asked = {"ssh-2-bbbbbb": [0]}
    assert boxlogs.keep(root, {"ssh-2-bbbbbb": {"0": "tail\n"}}, asked, RECORDS) == []
    assert list(elsewhere.iterdir()) == []
