# The two commands: `make up` brings up the local cloud with kuryr on it;
# `make test` runs the whole suite: lint, unit tests, then the end-to-end
# tests against a local cloud (brought up and torn down by the run unless one
# is already up).
SHELL := /bin/bash
CLOUD := hack/local-cloud
CACHE ?= /var/cache/kuryr-cloud
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CACHE)/bin/staticcheck-$(STATICCHECK_VERSION)
CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(CACHE)/bin/controller-gen-$(CONTROLLER_GEN_VERSION)

.PHONY: up down status deps test lint layout unit e2e generate verify-generated build image bench bench-scale release

up:
	@bash $(CLOUD)/up.sh

down:
	@bash $(CLOUD)/down.sh

status:
	@bash $(CLOUD)/status.sh

test: verify-generated lint layout unit e2e

# CRD manifests and deep-copy functions come from the Go types in api/.
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=deploy/helm/kuryr/files/crds
	go run ./cmd/kuryr-controller --help-config > etc/kuryr.conf.sample
	@bash hack/render-base.sh

verify-generated: generate
	@git diff --exit-code -- api/v1/zz_generated.deepcopy.go deploy/helm/kuryr/files/crds deploy/base/kuryr.yaml etc || { echo "generated files are stale: run make generate and commit"; exit 1; }
	@[ -z "$$(git status --porcelain -- api/v1/zz_generated.deepcopy.go deploy/helm/kuryr/files/crds deploy/base/kuryr.yaml etc)" ] || { echo "untracked generated files: commit them"; exit 1; }

# bin/kuryr-bench is the benchmarks (test/bench), not shipped in the image.
build:
	@mkdir -p bin
	CGO_ENABLED=0 go build -ldflags "$$(bash hack/ldflags.sh)" -o bin/ ./cmd/...
	CGO_ENABLED=0 go build -o bin/kuryr-bench ./test/bench

# kuryr's container image as an OCI archive (_output/images/kuryr.tar).
image:
	@bash hack/image.sh

# A release from this commit, offline: the multi-arch image, its SBOM, the
# pinned chart and manifests, kubectl-kuryr for four platforms
# (_output/release/VERSION; hack/release.sh, docs/release.md).
release:
	@bash hack/release.sh

# With the e2e tags: every package and file (no file is built only without
# them), so one pass each.
lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed: $$out"; exit 1; }
	go vet -tags e2e,destructive ./...
	$(STATICCHECK) -tags e2e,destructive ./...

$(CONTROLLER_GEN):
	@mkdir -p $(CACHE)/bin
	GOBIN=$(CACHE)/bin go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(CACHE)/bin/controller-gen $@

$(STATICCHECK):
	@mkdir -p $(CACHE)/bin
	GOBIN=$(CACHE)/bin go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(CACHE)/bin/staticcheck $@

# The README's layout table names every package; "kuryr-..." names live in one file.
layout:
	@bash hack/check-layout.sh

# The Debian packages the tests and the local cloud use (ovsdb-server for
# pkg/ovs's tests, iproute2 and nftables for the netns tests, ...).
deps:
	@bash $(CLOUD)/install-packages.sh

unit: deps
	go test -count=1 ./...

e2e:
	@bash hack/e2e.sh

# Benchmarks print figures against their targets; they need `make up` first.
bench: build
	@bash hack/bench.sh

# The scale tier: pods by the thousand on simulated nodes (hack/bench-scale.sh).
bench-scale: build
	@bash hack/bench-scale.sh
