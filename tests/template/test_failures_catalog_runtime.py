"""The template's runtime entries through the matching engine: what a failed task's log tail
gets, for the classes whose evidence is a warning line, a launcher's signal report or a
message a wrapper prints around another tool's text.

Lines here are written in each tool's format (NCCL's WARN/INFO prefix, torchrun's failure
summary, TensorFlow's dso_loader warning); none is copied from the held-out corpus.
"""

from __future__ import annotations

import functools

import jinja2
import pytest

from campaignops.core import yamldoc
from campaignops.learn.diagnosis import engine
from campaignops.model import catalog
from tests.template.test_failures_catalog import TEMPLATE


@functools.cache
def rendered(domain: str) -> catalog.Catalog:
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    text = env.from_string(TEMPLATE.read_text(encoding="utf-8")).render(
        cookiecutter={"domain": domain}
    )
    return catalog.from_data(yamldoc.load(text, path="failures.yaml"))


def diagnose(text: str, domain: str = "other") -> tuple[str | None, str | None]:
    found = engine.diagnose(text, catalog=rendered(domain))
    return found.category, found.entry_id


NCCL_TAIL = """\
node3:811:902 [2] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.1.2.3<4455> with status=12 opcode=0 len=0 vendor err 129 (Recv)
node3:811:902 [2] NCCL INFO transport/net.cc:1302 -> 6
node3:811:902 [2] NCCL INFO proxy.cc:698 -> 6 [Progress Thread]
"""


def test_nccls_own_warn_and_trace_lines_name_the_remote_error() -> None:
    assert diagnose(NCCL_TAIL) == ("nccl", "nccl-remote-error")
    trace_only = (
        "n1:5:6 [0] NCCL INFO misc/socket.cc:80 -> 6\nn1:5:6 [0] NCCL INFO init.cc:1402 -> 6"
    )
    assert diagnose(trace_only) == ("nccl", "nccl-remote-error")


def test_an_error_line_outranks_nccls_warnings_even_when_it_comes_later() -> None:
    text = NCCL_TAIL + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert diagnose(text)[0] == "oom-gpu"


@pytest.mark.parametrize(
    ("code", "entry"),
    [
        ("2", "nccl-unhandled-system-error"),
        ("3", "nccl-internal-error"),
        ("6", "nccl-remote-error"),
        ("7", None),  # ncclInProgress: not an error
    ],
)
def test_the_return_code_of_nccls_trace_picks_the_entry(code: str, entry: str | None) -> None:
    line = f"n1:5:6 [0] NCCL INFO transport/net.cc:288 -> {code}"
    assert diagnose(line) == (("nccl", entry) if entry else (None, None))


def test_healthy_nccl_info_lines_with_arrows_are_not_a_trace() -> None:
    channel = "node3:811:811 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0"
    success_trace = "node3:811:902 [2] NCCL INFO proxy.cc:698 -> 0"
    assert diagnose(channel) == (None, None)
    assert diagnose(success_trace) == (None, None)


@pytest.mark.parametrize(
    ("line", "category", "entry"),
    [
        ("  exitcode  : -11 (pid: 4242)", "segfault", "segfault"),
        (
            "api.py:874] failed (exitcode: -11) local_rank: 3 (pid: 77) of binary: /x/python",
            "segfault",
            "segfault",
        ),
        ("  exitcode  : -7 (pid: 4242)", "segfault", "bus-error"),
        ("  traceback : Signal 7 (SIGBUS) received by PID 4242", "segfault", "bus-error"),
        (
            "api.py:874] failed (exitcode: -9) local_rank: 0 (pid: 77) of binary: /x/python",
            "oom-host",
            "torchrun-child-sigkill",
        ),
        ("  exitcode  : -110 (pid: 4242)", None, None),
    ],
)
def test_torchrun_names_the_signal_and_only_that_signal_decides(
    line: str, category: str | None, entry: str | None
) -> None:
    assert diagnose(line) == (category, entry)


def test_a_duplicate_launch_reported_only_by_c10d_warnings_is_recognised() -> None:
    text = (
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29511 "
        "(errno: 98 - Address already in use).\n"
        "[E socket.cpp:472] [c10d] The server socket has failed to listen on any local network address.\n"
    )
    assert diagnose(text) == ("other", "duplicate-launch-port-in-use")


def test_tensorflows_missing_libcudart_warning_is_not_a_failure_but_a_loader_error_is() -> None:
    tf = (
        "2021-06-01 10:00:00.123456: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] "
        "Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: "
        "cannot open shared object file: No such file or directory"
    )
    assert diagnose(tf) == (None, None)
    assert diagnose(
        "libcudart.so.12: cannot open shared object file: No such file or directory"
    ) == (
        "environment",
        "cuda-runtime-library-missing",
    )


@pytest.mark.parametrize(
    ("scale", "claimed"),
    [("64.0", False), ("1.0", False), ("0.5", True), ("0.0001220703125", True)],
)
def test_fairseq_overflow_counts_only_once_the_loss_scale_is_below_one(
    scale: str, claimed: bool
) -> None:
    line = f"| WARNING: overflow detected, setting loss scale to: {scale}"
    expected = ("numerical-instability", "fp16-loss-scale-overflow") if claimed else (None, None)
    assert diagnose(line, domain="ml-training") == expected


def test_lmod_split_over_two_lines_still_names_the_unknown_module() -> None:
    text = (
        'Lmod has detected the following error:\nThe following module(s) are unknown: "gcc/99.1"\n'
    )
    assert diagnose(text) == ("environment", "lmod-unknown-module")
