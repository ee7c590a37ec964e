#!/usr/bin/env bash
# olm/v1native.sh DIR: operator-controller v1.11.0's module, from the Go
# module cache, copied to DIR (made writable) with the patch series
# olm/v1patches/*.patch applied: the status-source gate (StatusSourceGate,
# Alpha, off by default) and its tier's test files (test/statussource,
# build tag statussourcetier). GATE=on also turns the feature gate's
# default on in the copy. `make olmv1-native DIR=...` runs it.
set -euo pipefail
GO=${GO:-go}
MODULE=github.com/operator-framework/operator-controller
VERSION=v1.11.0
here=$(cd "$(dirname "$0")" && pwd)

dir=${1:-}
if [ -z "$dir" ]; then
  echo "usage: $0 DIR (make olmv1-native DIR=PATH [GATE=on])" >&2
  exit 2
fi
case "${GATE:-off}" in on|off) ;; *) echo "GATE must be on or off, not ${GATE}" >&2; exit 2;; esac
marker=.statuscheck-olmv1-native
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  if [ ! -e "$dir/$marker" ]; then
    echo "$dir exists and is not empty (and is not an earlier olmv1-native copy): refusing to overwrite it" >&2
    exit 2
  fi
  chmod -R u+w "$dir"
  rm -rf "$dir"
fi

src="$($GO env GOMODCACHE)/$MODULE@$VERSION"
if [ ! -f "$src/go.mod" ]; then
  (cd "$(mktemp -d)" && GOFLAGS=-mod=mod $GO mod download "$MODULE@$VERSION")
fi
if [ ! -f "$src/go.mod" ]; then
  echo "$MODULE@$VERSION is not in the module cache ($src) and could not be downloaded" >&2
  exit 1
fi

mkdir -p "$dir"
cp -R "$src/." "$dir/"
chmod -R u+w "$dir"
dir=$(cd "$dir" && pwd)
for p in "$here"/v1patches/*.patch; do
  # Exactly, no fuzz: what the tier tested is what DIR holds.
  if command -v patch >/dev/null; then
    patch -p1 -s -N --fuzz=0 -d "$dir" < "$p" && continue
  else
    (cd "$dir" && GIT_CEILING_DIRECTORIES=$(dirname "$dir") git apply -p1 "$p") && continue
  fi
  echo "olmv1-native: $(basename "$p") does not apply to $MODULE@$VERSION" >&2
  exit 1
done
features="$dir/internal/operator-controller/features/features.go"
if [ "${GATE:-off}" = on ]; then
  # The one Default of the StatusSourceGate entry.
  perl -0pi -e 's/(\tStatusSourceGate: \{\n\t\tDefault:\s+)false/${1}true/' "$features"
  grep -Pzq 'StatusSourceGate: \{\n\t\tDefault:\s+true' "$features" || { echo "olmv1-native: could not turn StatusSourceGate on" >&2; exit 1; }
fi
printf '%s@%s with olm/v1patches applied (StatusSourceGate default %s):\n' "$MODULE" "$VERSION" "${GATE:-off}" > "$dir/$marker"
(cd "$here/v1patches" && ls ./*.patch) >> "$dir/$marker"
echo "patched $MODULE@$VERSION in $dir:"
sed -n '2,$p' "$dir/$marker" | sed 's/^/  /'
