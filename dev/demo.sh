#!/usr/bin/env bash
# The main job, end to end on this machine: install campaignops, create a campaign with
# `campaign new` (template → git init → first commit), check it (clean), run its example smoke
# on the local machine, plant two classic defects and watch `campaign check` catch them with
# path:line and a hint, repair one with --fix, and print where to look.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python3 -m venv "$here/.venv"
"$here/.venv/bin/python" -m pip install --quiet --upgrade pip
"$here/.venv/bin/python" -m pip install --quiet -e "$here"
export PATH="$here/.venv/bin:$PATH"

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
echo "== the example smoke, on this machine (what \`campaign submit --stage smoke\` will run)"
CAMPAIGN_OUT=runs bash scripts/run_queue.v1.sh queues/example.txt
echo "outputs: $(find runs -name metrics.json | sort | tr '\n' ' ')"

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
echo "== campaign check --fix repairs the line endings"
campaign check --fix --select EOL >/dev/null || true
campaign check --select EOL && echo "line endings clean (exit 0)"

echo
echo "Look at: $demo"
echo "  AGENTS.md (rules), HPC_PLAYBOOK.md, campaign.yaml (policy), backends/, failures.yaml,"
echo "  manifests/example.yaml, queues/example.txt, runs/ (the smoke's outputs), STATUS.md"
echo "  'campaign --help' lists every command"
