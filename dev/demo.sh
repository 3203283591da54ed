#!/usr/bin/env bash
# The main job, end to end on this machine: install campaignops, copy the example campaign into a
# fresh git repository, check it (clean), plant two classic defects, watch `campaign check` catch
# them with path:line and a hint, repair one with --fix, and print where to look.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python3 -m venv "$here/.venv"
"$here/.venv/bin/python" -m pip install --quiet --upgrade pip
"$here/.venv/bin/python" -m pip install --quiet -e "$here"
export PATH="$here/.venv/bin:$PATH"

demo="${1:-$(mktemp -d)/demo-campaign}"
cp -R "$here/tests/fixtures/clean" "$demo"
cd "$demo"
# The example's facts carry fixed verified stamps; a real campaign re-verifies them. Stamp them with
# this month so the clean run stays clean whenever the demo is run (STALE ages them otherwise).
month="$(date +%Y-%m)"
grep -rl 'verified' --include='*.md' --include='*.yaml' . |
  xargs sed -i -E "/verified/ s/\b[0-9]{4}-(0[1-9]|1[0-2])\b/$month/g"
campaign render >/dev/null
git init --quiet
git add -A
git -c user.name=demo -c user.email=demo@example.org commit --quiet -m "demo campaign"

echo "== campaign check on a clean campaign"
campaign check && echo "clean (exit 0)"

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
echo "  campaign.yaml (policy), manifests/, backends/, queues/, scripts/, failures.yaml"
echo "  run 'campaign check --help' and 'campaign checks' for every option and ID"
