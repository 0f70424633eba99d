#!/bin/bash
# The first-run trace of docs/architecture.md ("The gateway as stages").
# usage: internal/archmetrics/firsttrace/run.sh <commit>   (from the repository root)
# It checks <commit> out in a scratch worktree, copies this tool into it,
# instruments the packages a first run passes through, runs one first-run
# POST against a throwaway PostgreSQL, prints the counts over every
# instrumented package and over gateway/... alone, and removes the worktree.
set -euo pipefail
commit=${1:?commit}
root=$(git rev-parse --show-toplevel)
tool=$root/internal/archmetrics/firsttrace
scratch=$(mktemp -d)/trace
out=$(mktemp)
git worktree add -q --detach "$scratch" "$commit"
trap 'git -C "$root" worktree remove --force "$scratch"' EXIT
mkdir -p "$scratch/internal/archmetrics/firsttrace"
cp -r "$tool/ztrace" "$tool/main.go" "$scratch/internal/archmetrics/firsttrace/"
cp "$tool/testdata/ztrace_test.go.txt" "$scratch/gateway/ztrace_test.go"
(cd "$scratch" && go run ./internal/archmetrics/firsttrace "$scratch" gateway idempotency store sqlstore config fencing \
	shard region authn clock failover/policy internal/retry internal/lifecycle)
(cd "$scratch" && ZTRACE_OUT=$out go test -count=1 ./gateway/ -run TestZTraceFirstRun >/dev/null)
head -1 "$out" | sed 's/^/every instrumented package: /'
tail -n +2 "$out" | grep '^gateway/' | awk '
	$0 != prev { stays++; if (seen[$0] && $0 != prev) returns++; seen[$0] = 1; prev = $0 }
	END { n = 0; for (f in seen) n++; printf "gateway/... alone: stays %d files %d returns %d\n", stays, n, returns }'
