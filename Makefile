# The two commands: `make up` brings up the local cloud with kuryr on it;
# `make test` runs the whole suite: lint, unit tests, then the end-to-end
# tests against a local cloud (brought up and torn down by the run unless one
# is already up).
SHELL := /bin/bash
CLOUD := hack/local-cloud
CACHE ?= /var/cache/kuryr-cloud
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CACHE)/bin/staticcheck-$(STATICCHECK_VERSION)

.PHONY: up down status test lint unit e2e

up:
	@bash $(CLOUD)/up.sh

down:
	@bash $(CLOUD)/down.sh

status:
	@bash $(CLOUD)/status.sh

test: lint unit e2e

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed: $$out"; exit 1; }
	go vet ./...
	go vet -tags e2e ./...
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e ./...

$(STATICCHECK):
	@mkdir -p $(CACHE)/bin
	GOBIN=$(CACHE)/bin go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(CACHE)/bin/staticcheck $@

unit:
	go test -count=1 ./...

e2e:
	@bash hack/e2e.sh
