#!/usr/bin/env python3
"""Write copier.yml's `validator:` lines from campaignops.generate.answers.RULES (campaignops.generate.copier_rules).

Run it after changing a rule, a message or the list of questions:
    python dev/copier_validators.py          # rewrite copier.yml
    python dev/copier_validators.py --check  # exit 1 if copier.yml is out of date (the tests run this)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from campaignops.generate.copier_rules import rewrite

COPIER_YML = Path(__file__).resolve().parents[1] / "copier.yml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args()
    text = COPIER_YML.read_text(encoding="utf-8")
    wanted = rewrite(text)
    if wanted == text:
        return 0
    if args.check:
        print(
            f"{COPIER_YML.name} is out of date: run python dev/copier_validators.py",
            file=sys.stderr,
        )
        return 1
    COPIER_YML.write_text(wanted, encoding="utf-8")
    print(f"rewrote {COPIER_YML.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
