#!/usr/bin/env bash
# olm/vendored-test.sh: the series on a git revision of OLM that vendors
# its dependencies (master does; its dependencies are newer than test/olm's
# module graph, so olm/upstream-test.sh cannot build it): OLM's own tests
# of every package the series touches, in the tree with -mod=vendor, on the
# revision unpatched and then after each patch in turn, so that each patch
# is shown to build and pass on its own. It prints the count of tests run
# at each step and fails on any failure. `make olm-vendored-test
# OLM_GIT=GITDIR [VERSION=master]` runs it (GITDIR: a git directory of
# OLM's repository, such as the one `fetch` writes).
set -euo pipefail
GO=${GO:-go}
: "${OLM_GIT:?set OLM_GIT to a git directory of OLM}"
VERSION=${VERSION:-master}
root=$(cd "$(dirname "$0")/.." && pwd)

pkgs=$(grep -h '^diff --git a/' "$root"/olm/patches/*.patch | awk '{print $3}' | sed 's|^a/||' | grep '\.go$' | xargs -n1 dirname | sort -u | sed 's|^|./|')
commit=$(git --git-dir="$OLM_GIT" rev-parse "$VERSION^{commit}")

# A fixed directory for the revision, so that a second run finds its
# builds in Go's build cache (they are keyed by the directory too).
tmp="${TMPDIR:-/tmp}/olm-vendored-$commit"
cleanup() { chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp" "$tmp.tar" "$tmp.err" "$tmp.known" "$tmp.absent"; }
cleanup
trap cleanup EXIT
mkdir -p "$tmp"

# A partial mirror may list blobs it does not hold (its largest files);
# those are left out, and named, so that what is tested is plain.
# Every path of a missing blob is left out (one blob can sit at several).
git --git-dir="$OLM_GIT" ls-tree -r "$commit" | awk '$2 == "blob" { print $3 }' | sort -u |
  git --git-dir="$OLM_GIT" cat-file --batch-check='%(objectname) %(objecttype)' | awk '$2 == "missing" { print $1 }' > "$tmp.absent"
missing=()
if [ -s "$tmp.absent" ]; then
  while IFS= read -r -d '' entry; do
    meta=${entry%%$'\t'*}
    path=${entry#*$'\t'}
    if grep -qxF "${meta##* }" "$tmp.absent"; then
      missing+=(":(exclude,literal)$path")
      echo "not in $OLM_GIT, left out: $path"
    fi
  done < <(git --git-dir="$OLM_GIT" ls-tree -rz "$commit")
fi
rm -f "$tmp.absent"
if ! git --git-dir="$OLM_GIT" archive "$commit" -- . ${missing[@]+"${missing[@]}"} > "$tmp.tar" 2> "$tmp.err"; then
  cat "$tmp.err" >&2
  echo "git archive of $commit failed" >&2
  exit 1
fi
# git archive still looks up the blobs it leaves out, and says they are
# invalid; what else it says is shown.
for m in ${missing[@]+"${missing[@]}"}; do printf "for '%s'\n" "${m#:(exclude,literal)}"; done > "$tmp.known"
grep -vF -f "$tmp.known" "$tmp.err" >&2 || true
tar -x -C "$tmp" -f "$tmp.tar"
rm -f "$tmp.tar" "$tmp.err" "$tmp.known"

run() { # label
  local label=$1 start status log="$tmp/.log"
  start=$(date +%s)
  set +e
  (cd "$tmp" && GOFLAGS=-mod=vendor $GO test -count=1 -v $pkgs) > "$log" 2>&1
  status=$?
  set -e
  printf '%-34s %5s tests %6s subtests %4s failed  exit %s  %ss\n' "$label" \
    "$(grep -cE '^--- (PASS|FAIL|SKIP): ' "$log" || true)" "$(grep -cE '^ +--- (PASS|FAIL|SKIP): ' "$log" || true)" \
    "$(grep -cE '^ *--- FAIL: ' "$log" || true)" "$status" "$(( $(date +%s) - start ))"
  if [ "$status" -ne 0 ]; then
    grep -E '^ *--- FAIL|^FAIL|panic|cannot|undefined' "$log" | head -50
    return 1
  fi
}

echo "OLM $VERSION ($commit), packages: $(echo $pkgs)"
run "unpatched"
for p in "$root"/olm/patches/*.patch; do
  (cd "$tmp" && patch -p1 --fuzz=0 -s < "$p")
  run "+ $(basename "$p" | cut -c1-30)"
done
