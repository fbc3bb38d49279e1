# Everything installs from nothing: a venv, then the pinned lock, then autodev itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast lint bench bench-peers clean soak real-agents

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip==24.3.1
	$(BIN)/python -m pip install -q -r requirements.lock
	# the distribution was called autodev before it became autodev-team: drop that old install
	$(BIN)/python -m pip uninstall -q -y autodev 2>/dev/null || true
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/autodev demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/basedpyright

# Tests run on two workers: most of the end-to-end time is spent waiting on subprocesses.
test: $(STAMP) lint
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $${AUTODEV_TEST_WORKERS:-2} tests

# Everything but the tests that run autodev (or a server of ours) as a subprocess: seconds, not minutes.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $${AUTODEV_TEST_WORKERS:-2} -m "not e2e" tests

# The kill -9 fault suite with many trials (README reports the figures of the last soak).
soak: $(STAMP)
	AUTODEV_FAULT_TRIALS=40 $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/e2e/test_faults.py

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Side by side with AutoGen AgentChat, installed into its own .venv-peers (bench/peers-requirements.txt).
bench-peers: $(STAMP)
	$(BIN)/python bench/run.py peers

# The real coding-agent CLIs at the versions the adapters were checked against (README, "Versions"),
# installed with npm into .agents-cli/, each run for real against a local model server (offline;
# opt-in: the download is about 1 GB). AUTODEV_RECORD_FIXTURES=DIR keeps their raw streams.
AGENT_CLIS := @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 @github/copilot@1.0.102
AGENTS_PREFIX ?= .agents-cli

real-agents: $(STAMP)
	npm install --prefix $(AGENTS_PREFIX) --no-save --no-audit --no-fund --loglevel=error $(AGENT_CLIS)
	AUTODEV_REAL_AGENTS_BIN=$(abspath $(AGENTS_PREFIX))/node_modules/.bin \
		$(BIN)/python -m pytest -q -p no:cacheprovider -rs tests/agents/test_real_cli.py

clean:
	rm -rf $(VENV) .venv-peers .agents-cli build dist *.egg-info
