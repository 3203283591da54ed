#!/usr/bin/env bash
# The main job, end to end on this machine: install campaignops, create a campaign with
# `campaign new` (template → git init → first commit), check it, submit the example's smokes to
# the local backend through the gates (the grid manifest, then the queue file, each one array
# job), wait, refresh `campaign status`, show where STATUS.md and the ledger are; then plant two
# classic defects and watch `campaign check` catch them.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# CAMPAIGNOPS_DEMO_INSTALLED=1: campaign (with [new]) is already on PATH; the tests run the demo
# so, from the suite's own installation, offline.
if [ -z "${CAMPAIGNOPS_DEMO_INSTALLED:-}" ]; then
  python3 -m venv "$here/.venv"
  "$here/.venv/bin/python" -m pip install --quiet --upgrade pip
  "$here/.venv/bin/python" -m pip install --quiet -e "$here[new]"  # [new]: campaign new's engines
  export PATH="$here/.venv/bin:$PATH"
fi

demo="${1:-$(mktemp -d)/demo-campaign}"
echo "== campaign new $demo --defaults"
campaign new "$demo" --defaults
cd "$demo"
# The template's backend facts carry the month they were verified; STALE ages them. A real
# campaign re-verifies them; the demo stamps them with this month so its clean run stays clean.
month="$(date +%Y-%m)"
grep -rl 'verified' --include='*.md' --include='*.yaml' . |
  xargs sed -i -E "/verified/ s/\b[0-9]{4}-(0[1-9]|1[0-2])\b/$month/g"
campaign render >/dev/null
git -c user.name=demo -c user.email=demo@example.org commit --quiet -am "Re-verify stamps" >/dev/null || true

echo
echo "== campaign check on the new campaign"
campaign check && echo "clean (exit 0)"

echo
echo "== production before any smoke: the smoke_first gate refuses"
campaign submit manifests/example.yaml --stage production || echo "(refused, exit $?)"

echo
echo "== campaign submit manifests/example.yaml --stage smoke  (one array job on the local backend)"
campaign submit manifests/example.yaml --stage smoke

echo
echo "== campaign submit manifests/example-queue.yaml --stage smoke  (the queue file: one array task per line)"
campaign submit manifests/example-queue.yaml --stage smoke

echo
echo "== waiting for them: one batched status query every 2 s (a demo loop; in real life use mail,"
echo "   or 'campaign status --watch', which asks at most once a minute)"
for _ in $(seq 1 30); do
  campaign status --refresh >/dev/null 2>&1
  grep -q 'PENDING\|RUNNING' STATUS.md || break
  sleep 2
done
campaign status
echo "grid outputs:  $(find runs/smoke/example -name metrics.json | sort | tr '\n' ' ')"
echo "queue outputs: $(find runs/smoke -name cell.json | sort | tr '\n' ' ')"

echo
echo "== plant a CRLF wrapper script and a duplicate target id"
printf '#!/usr/bin/env bash\r\necho hi\r\n' > scripts/hello.v1.sh
printf 'jobs:\n  - id: a\n  - id: a\n' > manifests/dup.yaml
set +e
campaign check
code=$?
set -e
echo "(exit $code: findings)"

echo
echo "== campaign check --fix repairs the line endings (of files git tracks: stage the new script)"
git add scripts/hello.v1.sh
campaign check --fix --select EOL >/dev/null || true
campaign check --select EOL && echo "line endings clean (exit 0)"

echo
echo "== remove what the demo planted: the campaign is clean again"
git reset --quiet -- scripts/hello.v1.sh
rm -f scripts/hello.v1.sh manifests/dup.yaml
campaign check && echo "clean (exit 0)"

echo
echo "Look at: $demo"
echo "  STATUS.md                 the stage and job tables (a view of the ledger)"
echo "  .campaign/ledger.jsonl    every submission: intent, result, state changes"
echo "  runs/ and logs/           the smokes' outputs and logs"
echo "  AGENTS.md, HPC_PLAYBOOK.md, campaign.yaml, backends/, failures.yaml, manifests/"
echo "  'campaign --help' lists every command"
