#!/usr/bin/env bash
# olm/native.sh DIR: OLM v0's module, copied to DIR (made writable) with the
# patch series olm/patches/*.patch applied, so that `replace
# github.com/operator-framework/operator-lifecycle-manager => DIR` builds
# the patched OLM. `make olm-native DIR=... [VERSION=...] [GATE=on]` runs
# it.
#
# VERSION (default v0.46.0) is a released version, taken from the Go
# module cache (or fetched through the module proxy); with OLM_GIT set to
# a git directory of OLM's repository, any revision of it (master, a
# commit), exported without vendor/ (the module proxy serves no
# unreleased OLM).
#
# NOPATCH=1 copies OLM without the series (the baseline of
# olm/upstream-test.sh); PATCHES=N applies only its first N patches.
#
# GATE=on writes a copy whose StatusSource feature gate defaults to on
# (the test tiers use it); GATE=off (the default) leaves it off, as the
# series has it: the patched OLM then behaves as upstream's until started
# with --feature-gates=StatusSource=true.
set -euo pipefail
GO=${GO:-go}
MODULE=github.com/operator-framework/operator-lifecycle-manager
VERSION=${VERSION:-v0.46.0}
GATE=${GATE:-off}
here=$(cd "$(dirname "$0")" && pwd)

case "$GATE" in
  on|off) ;;
  *) echo "GATE=$GATE: want on or off" >&2; exit 2 ;;
esac
dir=${1:-}
if [ -z "$dir" ]; then
  echo "usage: $0 DIR (make olm-native DIR=PATH)" >&2
  exit 2
fi
marker=.statuscheck-olm-native
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  if [ ! -e "$dir/$marker" ]; then
    echo "$dir exists and is not empty (and is not an earlier olm-native copy): refusing to overwrite it" >&2
    exit 2
  fi
  chmod -R u+w "$dir"
  rm -rf "$dir"
fi

mkdir -p "$dir"
if [ -n "${OLM_GIT:-}" ]; then
  # Any revision of a git directory of OLM (e.g. the fetch of master).
  if ! git --git-dir="$OLM_GIT" rev-parse --verify -q "$VERSION^{commit}" >/dev/null; then
    echo "$VERSION is not a revision of $OLM_GIT" >&2
    exit 2
  fi
  git --git-dir="$OLM_GIT" archive "$VERSION" -- . ':(exclude)vendor' | tar -x -C "$dir"
  VERSION="$VERSION ($(git --git-dir="$OLM_GIT" rev-parse "$VERSION^{commit}"))"
else
  src="$($GO env GOMODCACHE)/$MODULE@$VERSION"
  if [ ! -f "$src/go.mod" ]; then
    # The module cache is cold: fetch the version (test/olm requires
    # v0.46.0; the module proxy serves other released versions when asked
    # for them exactly).
    # Outside any module, so that no go.mod or go.sum changes.
    (cd / && GO111MODULE=on GOFLAGS=-mod=mod $GO mod download "$MODULE@$VERSION" >/dev/null)
  fi
  if [ ! -f "$src/go.mod" ]; then
    echo "$MODULE@$VERSION is not in the module cache ($src): run cd test/olm && go mod download $MODULE@$VERSION" >&2
    exit 1
  fi
  cp -R "$src/." "$dir/"
fi
chmod -R u+w "$dir"
dir=$(cd "$dir" && pwd)
patches=("$here"/patches/*.patch)
if [ "${NOPATCH:-}" = 1 ]; then
  # The unpatched baseline (olm/upstream-test.sh).
  patches=()
elif [ -n "${PATCHES:-}" ]; then
  # The first PATCHES patches only: each patch must build and pass on its
  # own (olm/upstream-test.sh).
  case "$PATCHES" in
    ''|*[!0-9]*) echo "PATCHES=$PATCHES: want a number of patches" >&2; exit 2 ;;
  esac
  PATCHES=$((10#$PATCHES))
  if [ "$PATCHES" -eq 0 ]; then
    echo "PATCHES=0: for OLM without the series, set NOPATCH=1" >&2
    exit 2
  fi
  if [ "$PATCHES" -gt "${#patches[@]}" ]; then
    echo "PATCHES=$PATCHES: the series has ${#patches[@]} patches" >&2
    exit 2
  fi
  patches=("${patches[@]:0:$PATCHES}")
fi
for p in "${patches[@]}"; do
  # Exactly, no fuzz: what the tier tested is what DIR holds.
  if command -v patch >/dev/null; then
    patch -p1 -s -N --fuzz=0 --no-backup-if-mismatch -d "$dir" < "$p" && continue
  else
    # git apply outside any repository that encloses DIR.
    (cd "$dir" && GIT_CEILING_DIRECTORIES=$(dirname "$dir") git apply -p1 "$p") && continue
  fi
  echo "olm-native: $(basename "$p") does not apply to $MODULE@$VERSION" >&2
  exit 1
done
feature="$dir/pkg/feature/feature.go"
if [ "$GATE" = on ]; then
  # Exactly one line changes, or nothing is written.
  before=$(grep -c 'StatusSource: *{Default: false,' "$feature" || true)
  if [ "$before" != 1 ]; then
    echo "olm-native: GATE=on: $feature has no single StatusSource default to turn on" >&2
    exit 1
  fi
  sed -i 's/\(StatusSource: *{Default: \)false,/\1true,/' "$feature"
fi
printf '%s@%s with olm/patches applied, feature gate StatusSource %s by default:\n' "$MODULE" "$VERSION" "$GATE" > "$dir/$marker"
for p in "${patches[@]}"; do echo "./$(basename "$p")"; done >> "$dir/$marker"
echo "patched $MODULE@$VERSION in $dir:"
sed -n '2,$p' "$dir/$marker" | sed 's/^/  /'
echo "use it with: replace $MODULE => $dir"
