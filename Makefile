# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
JARS   := $(BIN)/python -m dtcli.engine.launch.jars provision
# two workers: one pytest process keeps two cores about two-thirds busy (one JVM's driver thread,
# subprocesses, sleeps); two fill them. Longest modules first: tests/conftest.py
# --durations: every run (CI's too) names its slowest tests, so the suite's time has a record.
PYTEST_ARGS ?= -n 2 --dist loadfile --no-loadscope-reorder --durations=30

.PHONY: setup jars browser demo test acceptance lint unit bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

jars: $(STAMP)
	$(JARS) > /dev/null

setup: $(STAMP) jars

demo: setup
	bash scripts/demo.sh

lint: $(STAMP)
	$(BIN)/python -m ruff check dtcli tests benchmarks scripts

# Debian's chromium, for tests/browser only (the site of `dt docs` as a person sees it): installed
# when missing and this is a Debian machine run as root; otherwise those tests skip, saying why.
browser:
	@command -v chromium > /dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null 2>&1 \
	  && { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core; } > /dev/null 2>&1; } \
	  || echo "chromium is not installed (needs apt-get as root): tests/browser will be skipped"

# `make test`: what a change is tested with; `make acceptance`: the long end-to-end tier
# (tests/conftest.py ACCEPTANCE), which CI runs after it (.ci/run)
test: setup lint browser
	$(BIN)/python -m pytest -q $(PYTEST_ARGS) -m "not acceptance"

acceptance: setup browser
	DT_TPCH_BATCHES=$${DT_TPCH_BATCHES:-1} $(BIN)/python -m pytest -q $(PYTEST_ARGS) -m acceptance

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

bench: setup
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf example_project/warehouse example_project/target .pytest_cache
