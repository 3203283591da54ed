"""Benchmark: the campaign fuzz suite (tests/test_fuzz_campaign.py) at length, >= 50,000 inputs.

Generates a campaign (`campaign new` plus a completed and a failed smoke on the local backend),
then mutates its real files and runs `campaign check` (whole campaign and edited paths, text
and JSON), `campaign submit --dry-run` (local), `campaign status` (table, JSON, Markdown) and
`campaign render` in-process on each input, under a watchdog (tests/fuzzkit.py says what an
input is and what breaks the contract). Prints the inputs tried, the breaches, and inputs per
second, overall and per command; --out keeps each breach's input and traceback.

Exit status: 0 when no input broke the contract, 1 when some did, 2 on a setup problem.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests import fuzzkit  # noqa: E402

# The CI suite's proportions: the dry runs cost most (git and the local backend's query).
WEIGHTS = {
    "check": 10,
    "check-json": 10,
    "check-paths": 12,
    "check-paths-json": 12,
    "submit-dry-run": 4,
    "submit-dry-run-queue": 4,
    "status": 14,
    "status-json": 14,
    "status-markdown": 8,
    "render": 12,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=50_000, help="inputs to try (50,000)")
    parser.add_argument("--seed", type=int, default=1, help="the mutation seed (1)")
    parser.add_argument("--bound", type=float, default=30.0, help="seconds per input (30)")
    parser.add_argument(
        "--out", type=Path, help="write each breach here as it is found, with its input's files"
    )
    args = parser.parse_args(argv)
    total = sum(WEIGHTS.values())
    shares = {c: args.inputs * w // total for c, w in WEIGHTS.items()}
    shares["check"] += args.inputs - sum(shares.values())
    with tempfile.TemporaryDirectory(prefix="campaign-fuzz-") as tmp:
        try:
            root = fuzzkit.build_campaign(Path(tmp))
        except (RuntimeError, OSError) as exc:
            print(f"setup failed: {exc}", file=sys.stderr)
            return 2
        pristine = fuzzkit.snapshot(root)
        start = time.monotonic()

        written = 0

        def progress(tally: fuzzkit.Tally) -> None:
            nonlocal written
            if args.out:  # as they come: a long run's first breach need not wait for its end
                args.out.mkdir(parents=True, exist_ok=True)
                for i in range(written, len(tally.failures)):
                    path = args.out / f"breach-{i:04d}.txt"
                    path.write_text(tally.failures[i], encoding="utf-8", errors="replace")
                    fuzzkit.keep(tally.failed[i], args.out / "inputs")
                written = len(tally.failures)
            if tally.inputs % 2500 == 0:
                rate = tally.inputs / (time.monotonic() - start)
                print(f"  {tally.inputs} inputs, {len(tally.failures)} breaches, {rate:.1f}/s")

        tally = fuzzkit.campaign(
            root, pristine, seed=args.seed, shares=shares, bound_s=args.bound, on_input=progress
        )
        wall = time.monotonic() - start
    print(f"inputs tried: {tally.inputs} (seed {args.seed})")
    print(f"failures (contract breaches): {len(tally.failures)}")
    print(f"inputs per second: {tally.inputs / wall:.1f} (wall {wall:.0f} s)")
    for command, codes in sorted(tally.codes.items()):
        n = sum(codes.values())
        exits = ", ".join(f"{k}: {v}" for k, v in sorted(codes.items(), key=str))
        print(f"  {command:<22} {n:>6} inputs  {tally.spent[command] / n * 1000:6.1f} ms  {exits}")
    if args.out and tally.failures:
        print(f"breaches written to {args.out} (their inputs' files under {args.out}/inputs)")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
