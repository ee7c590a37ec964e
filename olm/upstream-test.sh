#!/usr/bin/env bash
# olm/upstream-test.sh: OLM's own tests of every package the patch series
# touches (every test, not only the series' own), run at once through
# test/olm's module graph (a generated go.mod with a replace, -modfile):
# on OLM unpatched, on the patched tree with the StatusSource feature gate
# off (the series as shipped), on the patched tree with it on (GATE=on),
# and on the first patch alone with it off and on (the read-only gate,
# which must build and pass without RequestAck). It prints the count of tests run
# (top-level and subtests) and fails on any failure, or when a patched
# tree runs fewer tests than the unpatched one. `make olm-native-upstream-test` runs it; VERSION and
# OLM_GIT as for olm/native.sh.
set -euo pipefail
GO=${GO:-go}
MODULE=github.com/operator-framework/operator-lifecycle-manager
root=$(cd "$(dirname "$0")/.." && pwd)

# The packages the series touches: the directories of its Go files.
pkgs=$(grep -h '^diff --git a/' "$root"/olm/patches/*.patch | awk '{print $3}' | sed 's|^a/||' | grep '\.go$' | xargs -n1 dirname | sort -u | sed "s|^|$MODULE/|")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/olm-upstream.XXXXXX")
cleanup() {
  # The trees' test runs still going (each in a process group of its
  # own), if it is stopped while they run: INT or TERM. A SIGKILL of this
  # script's process group does not reach them.
  local pid
  for pid in $(cat "$tmp"/*.pid 2>/dev/null); do
    kill -- "-$pid" 2>/dev/null || true
  done
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tree() { # name gate [NOPATCH [PATCHES]]
  local name=$1 gate=$2 nopatch=${3:-} npatches=${4:-}
  GO=$GO GATE=$gate NOPATCH=$nopatch PATCHES=$npatches bash "$root/olm/native.sh" "$tmp/$name" >/dev/null
  cp "$root/test/olm/go.mod" "$tmp/$name.mod"
  cp "$root/test/olm/go.sum" "$tmp/$name.sum"
  $GO mod edit -replace="$MODULE=$tmp/$name" -replace="github.com/statuscheck/statuscheck=$root" "$tmp/$name.mod"
}

run() { # name
  local name=$1 start status
  start=$(date +%s)
  set +e
  (cd "$root/test/olm" && $GO test -modfile="$tmp/$name.mod" -count=1 -v $pkgs) > "$tmp/$name.log" 2>&1
  status=$?
  set -e
  local top sub fail skip
  top=$(grep -cE '^--- (PASS|FAIL|SKIP): ' "$tmp/$name.log" || true)
  sub=$(grep -cE '^ +--- (PASS|FAIL|SKIP): ' "$tmp/$name.log" || true)
  fail=$(grep -cE '^ *--- FAIL: ' "$tmp/$name.log" || true)
  skip=$(grep -cE '^ *--- SKIP: ' "$tmp/$name.log" || true)
  printf '%-22s %6s tests %7s subtests %5s failed %5s skipped  exit %s  %ss\n' "$name" "$top" "$sub" "$fail" "$skip" "$status" "$(( $(date +%s) - start ))"
  echo "$top" > "$tmp/$name.count"
  if [ "$status" -ne 0 ]; then
    grep -E '^ *--- FAIL|^FAIL|panic|undefined|cannot' "$tmp/$name.log" | head -50
    return 1
  fi
}

echo "packages the series touches:"
echo "$pkgs" | sed 's/^/  /'
tree upstream off 1
tree patched off
tree patched-gate-on on
tree first-patch-gate-on on "" 1
tree first-patch off "" 1
# The runs at once: OLM's tests of these packages mostly wait (on
# informers and timeouts, a few percent of a core each), so together they
# take about as long as the longest, about four minutes on 2 cores.
failed=0
names="upstream patched patched-gate-on first-patch first-patch-gate-on"
set -m # each run in a process group of its own, which cleanup stops whole
for name in $names; do
  run "$name" > "$tmp/$name.out" 2>&1 &
  echo $! > "$tmp/$name.pid"
done
set +m
for name in $names; do
  wait "$(cat "$tmp/$name.pid")" || failed=1
  rm -f "$tmp/$name.pid" # waited for: its pid may be reused
  cat "$tmp/$name.out"
done
for name in patched patched-gate-on first-patch first-patch-gate-on; do
  if [ "$(cat "$tmp/$name.count" 2>/dev/null || echo 0)" -lt "$(cat "$tmp/upstream.count" 2>/dev/null || echo 0)" ]; then
    echo "$name ran fewer tests than the unpatched tree" >&2
    failed=1
  fi
done
exit $failed
