#!/usr/bin/env bash
# olm/v1native-test.sh: operator-controller v1.11.0 with olm/v1patches
# (olm/v1native.sh, into a temporary directory), then
#  1. the unit tests of the new package (internal/operator-controller/statussource);
#  2. upstream's tests of the packages the series touches (api/v1,
#     internal/operator-controller/controllers, /features, /conditionsets,
#     cmd/operator-controller) on the patched and on the unpatched tree, with
#     counts. internal/operator-controller/controllers' TestMain starts envtest:
#     it runs only when KUBEBUILDER_ASSETS names kube-apiserver and etcd
#     binaries (they cannot be downloaded here), else it is reported as not run;
#  3. the tier (test/statussource, -tags statussourcetier) on the patched
#     tree, then the same scenarios on the unpatched tree, where each must fail.
#
# operator-controller requires pkg.package-operator.run/boxcutter v0.14.0,
# which the Go module proxy refuses (403): BOXCUTTER_DIR must name its
# source (github.com/package-operator/boxcutter at tag v0.14.0), unless the
# module cache already holds it. The tier's go.mod is olm/v1patches/tier.mod
# (operator-controller's go.mod plus k8s.io/kubernetes v1.36.2 and its
# staging replaces), used with go -modfile.
set -euo pipefail
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
TAGS=containers_image_openpgp
bc_cache="$($GO env GOMODCACHE)/pkg.package-operator.run/boxcutter@v0.14.0"
BOXCUTTER_DIR=${BOXCUTTER_DIR:-}
if [ -z "$BOXCUTTER_DIR" ] && [ -f "$bc_cache/go.mod" ]; then BOXCUTTER_DIR=$bc_cache; fi
if [ -z "$BOXCUTTER_DIR" ] || [ ! -f "$BOXCUTTER_DIR/go.mod" ]; then
  echo "olmv1-native-test: pkg.package-operator.run/boxcutter v0.14.0 is not available (the module proxy refuses it): set BOXCUTTER_DIR to its source" >&2
  exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/olmv1-native.XXXXXX")
cleanup() { chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

bash "$root/olm/v1native.sh" "$tmp/patched"
# The unpatched tree gets only the tier's test files (patch 0002).
mkdir -p "$tmp/unpatched"
cp -R "$($GO env GOMODCACHE)/github.com/operator-framework/operator-controller@v1.11.0/." "$tmp/unpatched/"
chmod -R u+w "$tmp/unpatched"
patch -p1 -s -N --fuzz=0 -d "$tmp/unpatched" < "$root"/olm/v1patches/0002-*.patch

for tree in patched unpatched; do
  d="$tmp/$tree"
  cp "$d/go.mod" "$tmp/$tree.dev.mod"; cp "$d/go.sum" "$tmp/$tree.dev.sum"
  $GO mod edit -replace="pkg.package-operator.run/boxcutter=$BOXCUTTER_DIR" "$tmp/$tree.dev.mod"
  cp "$root/olm/v1patches/tier.mod" "$tmp/$tree.tier.mod"; cp "$root/olm/v1patches/tier.sum" "$tmp/$tree.tier.sum"
  $GO mod edit -replace="pkg.package-operator.run/boxcutter=$BOXCUTTER_DIR" "$tmp/$tree.tier.mod"
done

count() { # tree pkgs...: runs upstream's tests, prints counts
  local tree=$1; shift
  (cd "$tmp/$tree" && $GO test -modfile="$tmp/$tree.dev.mod" -tags "$TAGS" -count=1 -v "$@" 2>&1) > "$tmp/$tree.unit.log" || true
  printf '%-9s run %4d  pass %4d  fail %4d  skip %4d   packages ok %d, FAIL %d\n' "$tree" \
    "$(grep -c '^=== RUN' "$tmp/$tree.unit.log")" "$(grep -c -- '--- PASS' "$tmp/$tree.unit.log")" \
    "$(grep -c -- '--- FAIL' "$tmp/$tree.unit.log")" "$(grep -c -- '--- SKIP' "$tmp/$tree.unit.log")" \
    "$(grep -c '^ok' "$tmp/$tree.unit.log")" "$(grep -c '^FAIL' "$tmp/$tree.unit.log")"
}

echo "== 1. the patch's own unit tests"
(cd "$tmp/patched" && $GO test -modfile="$tmp/patched.dev.mod" -tags "$TAGS" -count=1 ./internal/operator-controller/statussource/)

PKGS="./api/v1/ ./internal/operator-controller/features/ ./internal/operator-controller/conditionsets/ ./cmd/operator-controller/"
if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
  PKGS="$PKGS ./internal/operator-controller/controllers/"
else
  echo "(internal/operator-controller/controllers not run: its TestMain needs envtest binaries; set KUBEBUILDER_ASSETS)"
fi
echo "== 2. upstream's tests of the touched packages: $PKGS"
count unpatched $PKGS
count patched $PKGS
grep -E '^(FAIL|ok|---) ' "$tmp/patched.unit.log" | grep -v -- '--- PASS' | head -40 || true

echo "== 3. the tier on the patched tree"
(cd "$tmp/patched" && $GO test -modfile="$tmp/patched.tier.mod" -tags "statussourcetier,$TAGS" -count=1 -v -timeout 20m ./test/statussource/ 2>&1) | tee "$tmp/tier.log" | grep -E --line-buffered '^(=== RUN|\s*--- |PASS|FAIL|ok)|release latency'
echo "== 3b. the same scenarios on unpatched operator-controller (each must fail)"
set +e
(cd "$tmp/unpatched" && $GO test -modfile="$tmp/unpatched.tier.mod" -tags "statussourcetier,statussource_unpatched,$TAGS" -count=1 -v -timeout 20m ./test/statussource/ 2>&1) > "$tmp/tier-unpatched.log"
set -e
grep -E '^\s*--- (PASS|FAIL)' "$tmp/tier-unpatched.log"
if grep -E '^\s*--- PASS: TestStatusSourceGate/' "$tmp/tier-unpatched.log" | grep -v 'repair'; then
  echo "olmv1-native-test: the scenarios above pass on unpatched operator-controller" >&2
  exit 1
fi
echo "every gating scenario fails on unpatched operator-controller (the repair scenario is the control that passes on both)"
