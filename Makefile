# statuscheck: see README.md. Every target works offline once the module
# cache is warm; `make test` is what CI runs (.ci/run).

GO       ?= go
BIN      ?= bin/statuscheck
PKGS     := ./...
FUZZTIME ?= 30s

.PHONY: all build cross upstream test plain olm olm-native olm-native-test olm-native-upstream-test olm-vendored-test olmv1-native olmv1-native-test race lint vet fmt-check docs demo bench fuzz ci clean image

all: build test

## build: static binaries (CGO_ENABLED=0), as the image's: without libc's dynamic loader and
## pthreads a process of validate starts about 10% faster (docs/development.md).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/statuscheck
	CGO_ENABLED=0 $(GO) build -o $(dir $(BIN))statuscheck-cluster ./cmd/statuscheck-cluster
	CGO_ENABLED=0 $(GO) build -o bin/statuscheck-sdk-validator ./cmd/statuscheck-sdk-validator

## cross: the commands build for the other systems operator authors use, Windows and macOS
## (the binaries are discarded). One architecture each: the code that differs is per system
## (internal/testutil's killat_other.go, the signal handling), and each cold build of the
## Kubernetes libraries for one more target costs CI about six minutes.
cross:
	GOOS=windows GOARCH=amd64 $(GO) build ./cmd/...
	GOOS=darwin GOARCH=arm64 $(GO) build ./cmd/...

## test: lint, then every test (goldens, rule fixtures, the real-bundle corpus, docs/rules.md freshness);
## internal/gcfloor/... again as a toolchain after go1.26 builds it (runtime/debug's functions, not a linkname).
test: lint
	$(GO) test $(PKGS)
	$(GO) test -tags statuscheck_nolinkname ./internal/gcfloor/...

## plain: the tier without OLM (test/plain, a module of its own): a real kube-apiserver with
## ValidatingAdmissionPolicy, the admission guard and statuscheck gate generate writes, and real
## Helm upgrades (Helm's Go SDK) held by the pre-upgrade hook and by the policy.
plain:
	cd test/plain && $(GO) vet ./... && $(GO) test -count=1 ./...

## olm: the real-OLM tier (test/olm, a module of its own): OLM v0.46.0's olm-operator and
## OperatorCondition controllers on a real kube-apiserver, with statuscheck record recording,
## and the bridge sidecar run as a container of the image (make image; podman: .ci/podman)
## as OLM deploys it; with the podman tests of internal/testutil/kubelet.
olm: image
	STATUSCHECK_IMAGE=$(IMAGE) $(GO) test -tags podman -count=1 ./internal/testutil/kubelet
	cd test/olm && $(GO) vet ./... && STATUSCHECK_IMAGE=$(IMAGE) $(GO) test -count=1 ./...

## olm-native: OLM (VERSION, default v0.46.0, from the module cache; with OLM_GIT=GITDIR any
## revision of that git directory, e.g. master) copied to DIR (writable) with the patch series
## olm/patches applied (OLM reads the status source itself), for a
## `replace github.com/operator-framework/operator-lifecycle-manager => DIR`. GATE=on: the copy's
## StatusSource feature gate defaults to on (off otherwise, as the series has it).
OLM_VERSION ?= v0.46.0
GATE ?= off
olm-native:
	@test -n "$(DIR)" || { echo "usage: make olm-native DIR=PATH [VERSION=v0.46.0] [GATE=on]"; exit 2; }
	GO=$(GO) VERSION=$(if $(VERSION),$(VERSION),$(OLM_VERSION)) GATE=$(GATE) OLM_GIT=$(OLM_GIT) bash olm/native.sh "$(DIR)"

## olm-native-test: the patch's unit tests in OLM's package, then test/olm on the patched OLM
## with the feature gate on (a generated go.mod with the replace, -modfile; -tags olmnative):
## the OperatorCondition scenarios unchanged and the tests only the patched OLM passes.
olm-native-test:
	GO=$(GO) bash olm/native-test.sh

## olmv1-native: operator-controller v1.11.0 from the module cache, copied to DIR (writable) with
## the patch series olm/v1patches applied (the status-source gate, feature StatusSourceGate);
## GATE=on turns the feature's default on in the copy.
olmv1-native:
	@test -n "$(DIR)" || { echo "usage: make olmv1-native DIR=PATH [GATE=on]"; exit 2; }
	GO=$(GO) GATE=$(or $(GATE),off) bash olm/v1native.sh "$(DIR)"

## olmv1-native-test: the patch's unit tests, upstream's tests of the touched packages on the
## patched and unpatched trees (counts), and the tier (test/statussource: real kube-apiserver,
## real ClusterExtension reconciler and Helm applier) on both trees. Needs BOXCUTTER_DIR.
olmv1-native-test:
	GO=$(GO) bash olm/v1native-test.sh

## olm-vendored-test: the series on a git revision of OLM that vendors its dependencies (OLM_GIT=GITDIR,
## VERSION, default master): OLM's own tests of the packages it touches, unpatched, then patch by patch.
olm-vendored-test:
	GO=$(GO) OLM_GIT=$(OLM_GIT) VERSION=$(or $(VERSION),master) bash olm/vendored-test.sh

## olm-native-upstream-test: OLM's own tests of every package the series touches, at once on
## five trees (unpatched; patched, gate off and on; first patch alone, gate off and on),
## with the count of tests run in each.
olm-native-upstream-test:
	GO=$(GO) bash olm/upstream-test.sh

## race: every test under the race detector, with -short (testutil.Long: the long model-checking searches, sequential code, are make test's);
## -timeout 30m: under the detector internal/cli's tests, which run whole binaries over the corpus, take about 5 minutes alone
## on 2 cores, and ran past go test's default of 10 with a second make test beside them.
race:
	$(GO) test -race -short -timeout 30m $(PKGS)

## ci: what .ci/run runs: the tests, the race detector, each fuzz target for 10s.
ci: test cross race
	$(MAKE) fuzz FUZZTIME=10s

lint: fmt-check vet

fmt-check:
	@out="$$(gofmt -l cmd internal pkg api test)"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags podman ./internal/testutil/kubelet
	$(GO) vet -tags statuscheck_nolinkname ./internal/gcfloor/... ./internal/cli

## upstream: regenerate internal/upstream's copies of the apiserver's registry strategies and CRD
## validation (and the helpers they use) from the module cache (after a Kubernetes update; a test
## fails until then).
upstream:
	$(GO) generate ./internal/upstream

## docs: regenerate docs/rules.md from the rule registry.
docs:
	$(GO) run ./cmd/statuscheck rules -o markdown > docs/rules.md

## demo: validate the shipped bundles; the good bundle and the failing fixtures show findings (exit 1 is expected there).
demo:
	$(GO) run ./cmd/statuscheck validate testdata/bundles/protected
	-$(GO) run ./cmd/statuscheck validate testdata/bundles/good
	-$(GO) run ./cmd/statuscheck validate testdata/bundles/rules/status-rbac-missing/fail testdata/bundles/rules/conditions-observedgeneration-missing/fail
	$(GO) run ./cmd/statuscheck generate -d testdata/bundles/rules/status-source-missing/fail
	-$(GO) run ./cmd/statuscheck simulate --policy all testdata/traces/seed.yaml
	-$(GO) run ./cmd/statuscheck simulate --explore --bundle testdata/bundles/handshake/request-annotation

## bench: statuscheck against operator-framework/api's loader and validators, same bundles, same run:
## in one process, then as whole processes with their start-up (one per bundle, one for all, --help;
## STATUSCHECK_PREVIOUS=path/to/older/statuscheck adds that binary to the same run).
bench:
	$(GO) test ./pkg/validate -run '^$$' -bench . -benchtime 10x -cpu 1,2
	$(GO) test ./cmd/statuscheck -run '^$$' -bench Process -benchtime 5x -timeout 30m
	$(GO) test ./pkg/simulate -run '^$$' -bench 'ReplayVsDecode|ReplayCRD1M' -benchtime 1x -cpu 1,2 -timeout 60m
	$(GO) test ./pkg/explore -run '^$$' -bench 'Explore/' -benchtime 3x -cpu 1,2

## fuzz: run each fuzz target for FUZZTIME (seed corpora: pkg/*/testdata/fuzz); .ci/fuzz says why a run may end in Go's deadline race and still pass.
fuzz:
	GO=$(GO) .ci/fuzz ./pkg/bundle FuzzLoad $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/bundle FuzzExamples $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/manifest FuzzParse $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/manifest FuzzEmbeddedJSONPos $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/contract FuzzParse $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/generate FuzzSetAnnotation $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/generate FuzzAddAt $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/bridge/sidecar FuzzParse $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/bridge/sidecar FuzzCheckImage $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/trace FuzzReadTrace $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/bridge FuzzDecide $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./internal/jsonobj FuzzEqual $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/simulate FuzzReplayMemo $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./pkg/guard FuzzParse $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./internal/gcfloor FuzzParseLimit $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./internal/gcfloor FuzzMappingStart $(FUZZTIME)
	GO=$(GO) .ci/fuzz ./internal/gcfloor FuzzTHPSettings $(FUZZTIME)

## image: the statuscheck image (build/Containerfile), built offline into podman's local
## store as a manifest list for IMAGE_PLATFORMS from the binary this checkout builds
## (cmd/statuscheck-cluster, every command, installed as statuscheck):
## static, FROM scratch, nothing pulled. IMAGE=localhost/statuscheck:test make image
## IMAGE_PLATFORMS is the host's platform unless set: about 1 min on 2 cores with a warm
## build cache (the binary, then podman). Each other platform cross-compiles every package
## for it from scratch the first time: 15 min or more on 2 cores. For a multi-arch image:
##   make image IMAGE_PLATFORMS="linux/amd64 linux/arm64"
## An image or manifest list already named IMAGE is replaced; a failure to remove it fails.
IMAGE           ?= localhost/statuscheck:dev
IMAGE_PLATFORMS ?= linux/$(shell $(GO) env GOARCH)
PODMAN          ?= podman
IMAGE_VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
image:
	@echo "make image: $(IMAGE) for $(IMAGE_PLATFORMS) (IMAGE_PLATFORMS=... for others; each new one cross-compiles, 15+ min)"
	rm -rf bin/image && mkdir -p bin/image
	cp build/Containerfile bin/image/Containerfile
	for p in $(IMAGE_PLATFORMS); do \
	  arch=$${p#linux/}; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath \
	    -ldflags "-s -w -X github.com/statuscheck/statuscheck/internal/cli.buildVersion=$(IMAGE_VERSION)" \
	    -o bin/image/linux-$$arch/statuscheck-cluster ./cmd/statuscheck-cluster || exit 1; \
	done
	if $(PODMAN) manifest exists $(IMAGE); then $(PODMAN) manifest rm $(IMAGE) >/dev/null; \
	elif $(PODMAN) image exists $(IMAGE); then $(PODMAN) rmi -f $(IMAGE) >/dev/null; fi
	$(PODMAN) build --manifest $(IMAGE) --platform $$(echo $(IMAGE_PLATFORMS) | tr ' ' ',') \
	  --build-arg VERSION=$(IMAGE_VERSION) --build-arg REVISION=$(IMAGE_REVISION) \
	  -f bin/image/Containerfile bin/image

clean:
	rm -rf bin
