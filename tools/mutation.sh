#!/usr/bin/env bash
# Mutation testing of gatekeeper's rule-bearing modules with mutmut 3 (configured in
# pyproject.toml [tool.mutmut]); not part of CI. See docs/mutation.md.
#
#   tools/mutation.sh                 # every module at once, from scratch (the documented score)
#   tools/mutation.sh ledger          # one group: rules | ledger | recovery | backfill (each pays the
#                                     # ~3 min of stats and clean runs again)
#   KEEP=1 tools/mutation.sh rules    # reuse mutants/ and mutmut's cached results
#
# Two workers (--max-children 2, or MAX_CHILDREN=1 to leave a core free): one worker did not
# fit the ~20 min aimed at on the project's 2-core machine. Run it niced on a shared machine:
#   nice -n 10 tools/mutation.sh
# Ledger tests run on SQLite only here (`-k "not postgresql"` in [tool.mutmut]): the rules are
# the same SQL on both backends, and the normal suite runs every ledger test on PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A GROUPS_OF=(
  [rules]="gatekeeper.core.records.* gatekeeper.core.periods.* gatekeeper.core.planning.* gatekeeper.core.readiness.* gatekeeper.core.gate.*"
  [ledger]="gatekeeper.ledger.attempts.* gatekeeper.ledger.abandons.* gatekeeper.ledger.publications.* gatekeeper.ledger.staleness.*"
  [recovery]="gatekeeper.core.recovery.*"
  [backfill]="gatekeeper.core.cascade.* gatekeeper.core.backfill.* gatekeeper.core.reviewed.* gatekeeper.core.plan_facts.*"
)
declare -A GROUPS_OF+=([all]="")   # every module in [tool.mutmut] only_mutate, in one run
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(all)
for g in "${groups[@]}"; do
  [ -n "${GROUPS_OF[$g]+set}" ] || { echo "unknown group $g (rules, ledger, recovery, backfill)" >&2; exit 2; }
done

command -v mutmut >/dev/null || { echo "mutmut missing: pip install -e '.[dev,test,postgres]'" >&2; exit 2; }
[ "${KEEP:-0}" = 1 ] || rm -rf mutants

started=$(date +%s)
for g in "${groups[@]}"; do
  t0=$(date +%s)
  # shellcheck disable=SC2086  # the globs are mutmut's, quoted by set -f
  rc=0
  (set -f; GATEKEEPER_THOROUGH=1 mutmut run --max-children "${MAX_CHILDREN:-2}" ${GROUPS_OF[$g]}) || rc=$?
  echo "group $g: $(( $(date +%s) - t0 )) s (mutmut exit $rc)"
  if [ "$rc" -ne 0 ]; then
    # mutmut first runs the selected tests unmutated; if one fails there is no score.
    # Rerun them plainly to see which: python -m pytest <args of [tool.mutmut]>
    echo "mutmut failed (a selected test fails on the unmutated code?)" >&2
    exit "$rc"
  fi
done
echo "total: $(( $(date +%s) - started )) s"
python tools/mutation_score.py
