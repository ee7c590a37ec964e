#!/usr/bin/env bash
# olm/native.sh DIR: OLM v0.46.0's module, from the Go module cache, copied
# to DIR (made writable) with the patch series olm/patches/*.patch applied,
# so that `replace github.com/operator-framework/operator-lifecycle-manager
# => DIR` builds the patched OLM. Offline once the module cache is warm
# (cd test/olm && go mod download). `make olm-native DIR=...` runs it.
set -euo pipefail
GO=${GO:-go}
MODULE=github.com/operator-framework/operator-lifecycle-manager
VERSION=v0.46.0
here=$(cd "$(dirname "$0")" && pwd)

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

src="$($GO env GOMODCACHE)/$MODULE@$VERSION"
if [ ! -f "$src/go.mod" ]; then
  # The module cache is cold: fetch the version test/olm requires.
  (cd "$here/../test/olm" && $GO mod download "$MODULE")
fi
if [ ! -f "$src/go.mod" ]; then
  echo "$MODULE@$VERSION is not in the module cache ($src): run cd test/olm && go mod download" >&2
  exit 1
fi

mkdir -p "$dir"
cp -R "$src/." "$dir/"
chmod -R u+w "$dir"
dir=$(cd "$dir" && pwd)
for p in "$here"/patches/*.patch; do
  # Exactly, no fuzz: what the tier tested is what DIR holds.
  if command -v patch >/dev/null; then
    patch -p1 -s -N --fuzz=0 -d "$dir" < "$p" && continue
  else
    # git apply outside any repository that encloses DIR.
    (cd "$dir" && GIT_CEILING_DIRECTORIES=$(dirname "$dir") git apply -p1 "$p") && continue
  fi
  echo "olm-native: $(basename "$p") does not apply to $MODULE@$VERSION" >&2
  exit 1
done
printf '%s@%s with olm/patches applied:\n' "$MODULE" "$VERSION" > "$dir/$marker"
(cd "$here/patches" && ls ./*.patch) >> "$dir/$marker"
echo "patched $MODULE@$VERSION in $dir:"
sed -n '2,$p' "$dir/$marker" | sed 's/^/  /'
echo "use it with: replace $MODULE => $dir"
