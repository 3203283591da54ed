#!/bin/bash
# A FAKE sbatch whose reply is lost: it queues the job for real, with the real sbatch
# (SBATCH_LOST_REPLY_REAL, e.g. /usr/bin/sbatch, on the test cluster), then prints what sbatch
# prints when slurmctld's answer does not come back in time, and exits 1, as if the job had not
# been submitted. Only the first SBATCH_LOST_REPLY_TIMES calls lose their reply (a counter in
# SBATCH_LOST_REPLY_DIR); later calls are the real sbatch. Each call appends a line to
# $SBATCH_LOST_REPLY_DIR/calls ("lost <id>" or "real"): what was queued, for the test to count.
# Link it as `sbatch` into a directory at the front of PATH.
set -u
dir=$SBATCH_LOST_REPLY_DIR
real=$SBATCH_LOST_REPLY_REAL
count=$(wc -l <"$dir/calls" 2>/dev/null || echo 0)
if [ "$count" -ge "${SBATCH_LOST_REPLY_TIMES:-1}" ]; then
    echo real >>"$dir/calls"
    exec "$real" "$@"
fi
queued=$("$real" "$@") || exit $?
echo "lost $queued" >>"$dir/calls"
echo "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation" >&2
exit 1
