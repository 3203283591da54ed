"""review.compare on mutated campaigns: whatever a pull request commits, the review answers
(a Review, rendered both ways) or refuses with a CampaignError; never a traceback."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from campaignops.core.errors import CampaignError
from campaignops.gitops.review.render import markdown, to_json
from campaignops.gitops.review.run import compare
from tests import fuzzmutate
from tests.conftest import FIXTURES, TODAY

FILES = (
    ("campaign.yaml", "yaml"),
    ("manifests/smoke.yaml", "yaml"),
    ("queues/example.txt", "lines"),
    ("backends/local.md", "frontmatter"),
    ("failures.yaml", "yaml"),
    (".campaign/wrappers.lock", "lines"),
)
ROUNDS = 60


def test_mutated_heads_are_reviewed_or_refused(tmp_path: Path) -> None:
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(FIXTURES / "clean", base, symlinks=True)
    shutil.copytree(FIXTURES / "clean", head, symlinks=True)
    corpus = [p.read_bytes() for p in base.rglob("*") if p.is_file()]
    rng = random.Random(20261124)
    breaches: list[str] = []
    for number in range(ROUNDS):
        rel, kind = FILES[number % len(FILES)]
        original = (base / rel).read_bytes() if (base / rel).is_file() else b""
        mutated = fuzzmutate.mutate(rng, original, kind, corpus)
        (head / rel).parent.mkdir(parents=True, exist_ok=True)
        (head / rel).write_bytes(mutated)
        try:
            review = compare(base=base, head=head, today=TODAY, base_name="main")
            markdown(review)
            to_json(review)
        except CampaignError:
            pass
        except Exception as exc:  # the breach is the point: keep it, report them all
            breaches.append(
                f"{rel} #{number}: {type(exc).__name__}: {exc!r:.200} {mutated[:300]!r}"
            )
        finally:
            if (base / rel).is_file():
                (head / rel).write_bytes(original)
            else:
                (head / rel).unlink()
    assert breaches == []
