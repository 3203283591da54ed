#!/usr/bin/env python3
"""Fill the view blocks of the template's Markdown files with what `campaign render` produces.

Neither engine may run code after rendering (Copier would need --trust, and both engines must
give the same files), so a fresh campaign's views must already be in sync. This script renders
real campaigns with cookiecutter for each variant a view depends on, lets campaignops.views fill
the blocks, and writes the results back into the template as Jinja:

- STATUS.md `stages`, `jobs`: the same for every campaign (an empty ledger);
- FAILURES.md `failures`: one variant per domain (failures.yaml has domain entries);
- AGENTS.md `backends`: one row per backend, assembled by a Jinja loop in the chosen order.

Run it after changing a backend page, failures.yaml, or campaignops.views:
    python dev/template_views.py          # rewrite the template's blocks
    python dev/template_views.py --check  # exit 1 if they are out of date (the tests run this)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from cookiecutter.main import cookiecutter

from campaignops.core.files import FileReader
from campaignops.generate import answers
from campaignops.model import blocks
from campaignops.views import render as views

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "template" / "{{cookiecutter.campaign_slug}}"


def render_campaign(out: Path, **extra: str) -> Path:
    context = {"campaign_slug": "views", "backends": "local", "smoke_backend": "local", **extra}
    cookiecutter(
        str(ROOT), directory="template", no_input=True, extra_context=context, output_dir=str(out)
    )
    root = out / "views"
    views.render_all(root=root, write=True)
    return root


def raw(text: str) -> str:
    return "{% raw %}" + text + "{% endraw %}"


def splice(path: Path, jinja: dict[str, str]) -> str:
    """The template file with each named block's content replaced by Jinja source."""
    text = path.read_text()
    parsed = blocks.parse(text, known=views.VIEWS)
    return blocks.refresh(text, parsed, lambda name: jinja[name])


def generate() -> dict[Path, str]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        # Every backend, in the order of the answer list: one table row each.
        every = ",".join(answers.BACKENDS)
        full = render_campaign(base / "all", backends=every)
        table = views.render_backends(views.Sources(FileReader(full)))
        lines = table.split("\n")
        header, rows = lines[:2], lines[2:]
        cells = {}
        for name, row in zip(answers.BACKENDS, rows, strict=True):
            prefix = f"| {answers.BACKENDS.index(name) + 1} | "
            assert row.startswith(prefix), row
            cells[name] = row[len(prefix) :]
        status = (full / "STATUS.md").read_text()
        by_domain = {}
        for domain in answers.DOMAINS:
            root = render_campaign(base / domain, domain=domain)
            by_domain[domain] = views.render_failures(views.Sources(FileReader(root)))

    loop = (
        "{% for b in cookiecutter.backends.split(',') %}{% if not loop.first %}\n{% endif %}"
        "| {{ loop.index }} | {{ " + json.dumps(cells) + "[b] }}{% endfor %}"
    )
    backends_jinja = raw("\n".join(header) + "\n") + loop
    failures_jinja = (
        "".join(
            ("{% if " if i == 0 else "{% elif ")
            + f"cookiecutter.domain == {json.dumps(domain)} %}}"
            + raw(content)
            for i, (domain, content) in enumerate(by_domain.items())
        )
        + "{% endif %}"
    )
    # STATUS.md holds no Jinja: the rendered file is the template file.
    return {
        LAYER / "AGENTS.md": splice(LAYER / "AGENTS.md", {"backends": backends_jinja}),
        LAYER / "FAILURES.md": splice(LAYER / "FAILURES.md", {"failures": failures_jinja}),
        LAYER / "STATUS.md": status,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report; exit 1 if outdated")
    args = parser.parse_args()
    stale = []
    for path, text in generate().items():
        if path.read_text() != text:
            stale.append(path)
            if not args.check:
                path.write_text(text)
    for path in stale:
        verb = "out of date" if args.check else "updated"
        print(f"{verb}: {path.relative_to(ROOT)}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
