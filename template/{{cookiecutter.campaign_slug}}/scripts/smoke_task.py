#!/usr/bin/env python3
"""The example task: a few short steps that checkpoint, resume and write metrics atomically.

    python3 scripts/smoke_task.py --config CFG --task TASK [--epochs N] --out DIR

It stands in for real work so the wrappers and the example manifest can be tried in seconds:

- reads CFG: a JSON object, or `key: value` lines (`#` comments, blank lines allowed);
- runs N steps of SMOKE_STEP_SECONDS (default 0.1 s) each;
- after every step (the safe point) writes DIR/checkpoint.json atomically;
- on SIGTERM or SIGUSR1 only sets a flag; the loop sees it at the next safe point, writes the
  checkpoint and exits 99 (checkpointed: run the same command again to resume);
- starts from DIR/checkpoint.json when it exists, so the identical command resumes;
- at the end writes DIR/metrics.json atomically and exits 0; when metrics.json already exists
  for the same run (the same CFG content, task and N, and the same $CAMPAIGN_CONFIG: the
  config fingerprint `campaign submit` gives each task) the cell is complete and it exits 0 at
  once. A metrics.json or checkpoint of another run is not this one's: the cell runs again
  from step 0 (after a fix commit, a re-smoke runs the cell, not the old result).

A config key `fail_at_step: K` makes step K fail (exit 1), to try failure handling.
Only the standard library is used. Exit codes: 0 done, 1 failed, 2 usage, 99 checkpointed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import Any

EXIT_CHECKPOINTED = 99
DEFAULT_EPOCHS = 3

_stop_signal: int | None = None


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    # Only set a flag: writing here could race with a half-finished step.
    global _stop_signal
    _stop_signal = signum


def _scalar(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "yes"):
        return True
    if lowered in ("false", "no"):
        return False
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_config(path: Path) -> dict[str, Any]:
    """A JSON object, or flat `key: value` lines."""
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("{"):
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object")
        return data
    config: dict[str, Any] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            raise ValueError(f"{path}:{number}: expected `key: value`, got {raw!r}")
        config[key.strip()] = _scalar(value.split(" #", 1)[0])
    return config


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Temporary file in the same directory, fsync, rename, fsync the directory."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def run_of(args: argparse.Namespace) -> dict[str, Any]:
    """What makes a finished cell this run's: the config's content, the task, the steps, and
    the fingerprint campaign submit exports (None when run by hand)."""
    digest = hashlib.sha256(Path(args.config).read_bytes()).hexdigest()
    return {
        "config_sha256": digest,
        "task": args.task,
        "epochs": args.epochs,
        "campaign_config": os.environ.get("CAMPAIGN_CONFIG") or None,
    }


def of_run(path: Path, run: dict[str, Any]) -> bool:
    """Whether the JSON file at ``path`` was written by ``run`` (its keys all equal)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and all(data.get(k) == v for k, v in run.items())


def load_checkpoint(path: Path, epochs: int, run: dict[str, Any]) -> tuple[int, float]:
    """(step, loss) saved in the checkpoint of this run; (0, inf) without one."""
    if not path.exists():
        return 0, math.inf
    if not of_run(path, run):
        print(
            f"{path} is another run's (config, task or epochs changed): starting over", flush=True
        )
        return 0, math.inf
    data = json.loads(path.read_text(encoding="utf-8"))
    step = data.get("step") if isinstance(data, dict) else None
    if not isinstance(step, int) or step < 0:
        raise ValueError(f"{path}: no valid `step` in the checkpoint")
    loss = data.get("loss")
    return min(step, epochs), float(loss) if isinstance(loss, (int, float)) else math.inf


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--task", required=True)
    parser.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGUSR1, _on_signal)

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    metrics_path = out / "metrics.json"
    checkpoint_path = out / "checkpoint.json"
    try:
        run = run_of(args)
        if of_run(metrics_path, run):
            print(f"{metrics_path} exists: cell already complete", flush=True)
            return 0
        if metrics_path.exists():
            print(
                f"{metrics_path} is another run's (config, task or epochs changed): running again",
                flush=True,
            )
        config = read_config(args.config)
        start, loss = load_checkpoint(checkpoint_path, args.epochs, run)
    except (OSError, ValueError) as exc:
        print(f"smoke_task: {exc}", file=sys.stderr, flush=True)
        return 1

    step_seconds = float(os.environ.get("SMOKE_STEP_SECONDS", "0.1"))
    lr = float(config.get("lr", 0.1))
    width = float(config.get("width", 1))
    fail_at = config.get("fail_at_step")
    if start:
        print(f"resuming from {checkpoint_path} at step {start}", flush=True)

    for step in range(start, args.epochs):
        time.sleep(step_seconds)
        if fail_at is not None and step + 1 == fail_at:
            print(f"step {step + 1}: simulated failure (fail_at_step)", file=sys.stderr, flush=True)
            return 1
        loss = 1.0 / (1.0 + lr * width * (step + 1))
        print(f"step {step + 1}/{args.epochs} loss={loss:.6f}", flush=True)
        # Safe point: the step is finished, the state is consistent.
        write_json_atomic(
            checkpoint_path,
            {**run, "step": step + 1, "loss": loss},
        )
        if _stop_signal is not None and step + 1 < args.epochs:
            name = signal.Signals(_stop_signal).name
            print(f"{name}: checkpointed at step {step + 1}; rerun to resume", flush=True)
            return EXIT_CHECKPOINTED

    write_json_atomic(
        metrics_path,
        {
            **run,
            "config": str(args.config),
            "resumed_from_step": start,
            "loss": loss if math.isfinite(loss) else None,
        },
    )
    print(f"done: {metrics_path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
