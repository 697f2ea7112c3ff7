# The two commands: `make up` brings up the local cloud with kuryr on it,
# `make test` runs the whole test suite (unit, then the e2e tests against a
# local cloud it brings up and tears down).
SHELL := /bin/bash
CLOUD := hack/local-cloud

.PHONY: up down status test

up:
	@bash $(CLOUD)/up.sh

down:
	@bash $(CLOUD)/down.sh

status:
	@bash $(CLOUD)/status.sh
