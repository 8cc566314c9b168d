# Every target sets up what it needs: the venv (from requirements-dev.txt) and the pinned CDK CLI.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The bench times cold starts in a venv with only what the Lambda runtime and layer provide.
BENCH_VENV := .bench-venv
BENCH_STAMP := $(BENCH_VENV)/.installed
# LocalStack's SQS and SNS providers for `make conformance`, in its own venv from a Python 3.12+ interpreter
# (found by tests/conformance/find-python; `make conformance LOCALSTACK_PYTHON=...` names one).
LOCALSTACK_VENV := .localstack-venv
LOCALSTACK_STAMP := $(LOCALSTACK_VENV)/.installed
LOCALSTACK_REQUIREMENTS := tests/conformance/localstack-requirements.txt
LOCALSTACK_PYTHON ?=
CDK := node_modules/.bin/cdk
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := 1
export CDK_HOME := $(CURDIR)/.cdk-home

.PHONY: install browser dist test checks suite conformance localstack-venv lint synth deploy destroy demo bench bench-recovery bench-cost bench-million bench-venv readme clean

install: $(STAMP)

# The project itself is installed editable (`-e .` in requirements.txt, which requirements-dev.txt
# includes): its import root, sqs_redriver, is then the same in the repository as installed from the
# wheel (the part folders infra/, lambdas/, console/ on the path).
# No byte-compiling at install (here and for LocalStack's venv): Python compiles what it imports, a
# quarter of aws-cdk-lib; compiling all of it cost more CPU than the rest of the install. Both venvs
# get the newest pip first: with the pip Python 3.13 ships, LocalStack's took 77 CPU-seconds to
# install, with the newest 37.
# pip runs quietly (its own output is hundreds of lines): a line first says what it installs and for how long.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	@echo "Installing into $(VENV), once (again only when requirements*.txt or pyproject.toml change):" \
		"the CDK (aws-cdk-lib), boto3, moto, Powertools, pytest, ruff, mypy, Playwright and this project," \
		"about 720 MB; about a minute, more on a slow network, quiet meanwhile."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --no-compile -r requirements-dev.txt
	touch $(STAMP)
	@echo "Installed into $(VENV)."

# The web console's browser tests (tests/e2e/test_console_browser.py) drive Debian's Chromium through
# Playwright. Missing, it is installed when apt-get can (root, as in CI or a container); otherwise
# one line names the command. Playwright needs no chromium-driver.
CHROMIUM := /usr/bin/chromium
APT_GET := apt-get
browser:
	@test -x $(CHROMIUM) || { \
		if [ "$$(id -u)" = 0 ] && command -v $(APT_GET) >/dev/null; then \
			DEBIAN_FRONTEND=noninteractive $(APT_GET) update && \
			DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y chromium; \
		else \
			echo "make test needs Chromium at $(CHROMIUM) for the web console's browser tests: run sudo apt-get install -y chromium" >&2; \
			exit 1; \
		fi; }

bench-venv: $(BENCH_STAMP)

$(BENCH_STAMP): bench/runtime-requirements.txt | $(STAMP)
	test -x $(BENCH_VENV)/bin/python || $(BIN)/python -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet -r bench/runtime-requirements.txt
	touch $(BENCH_STAMP)

localstack-venv: $(LOCALSTACK_STAMP)

$(LOCALSTACK_STAMP): $(LOCALSTACK_REQUIREMENTS)
	test -x $(LOCALSTACK_VENV)/bin/python || { \
		python=$$(tests/conformance/find-python $(LOCALSTACK_PYTHON)) && $$python -m venv $(LOCALSTACK_VENV); }
	$(LOCALSTACK_VENV)/bin/pip install --quiet --upgrade pip
	$(LOCALSTACK_VENV)/bin/pip install --quiet --no-compile -r $(LOCALSTACK_REQUIREMENTS)
	touch $(LOCALSTACK_STAMP)

$(CDK): package.json
	npm install --no-audit --no-fund --silent
	touch $(CDK)

# The wheel (dist/sqs_smart_redriver-*.whl): the construct, the consumer kit, the tool and the Lambda
# code, all under sqs_redriver.
dist: $(STAMP)
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .

# The static checks (one process, mypy the longest) beside the suite (pytest on every core); each
# prints as a block when it ends, and a failure of one lets the others finish. CI (.ci/run) adds
# the conformance run as a third job, make test CONFORMANCE=1: it mostly waits on its 1 s
# visibility timeouts, and LocalStack's venv is built while .venv is.
TEST_JOBS := checks suite $(if $(CONFORMANCE),conformance)
test:
	$(MAKE) --no-print-directory --jobs=3 --keep-going --output-sync=target $(TEST_JOBS)

checks: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

# xdist: tests sharing a module's fixture (a synthesized app, a deployed world) stay on one worker
# (tests/conftest.py groups them), the others spread one by one, in collection order (slow e2e first).
suite: $(STAMP) browser
	$(BIN)/pytest --numprocesses=auto --dist=loadgroup --no-loadscope-reorder

# The re-drive cycle against a second SQS implementation, and an SNS subscription's dead letters:
# LocalStack's SQS and SNS providers (DynamoDB on moto).
conformance: $(STAMP) $(LOCALSTACK_STAMP)
	LOCALSTACK_VENV_PYTHON=$(CURDIR)/$(LOCALSTACK_VENV)/bin/python $(BIN)/pytest tests/conformance -m conformance

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

synth: $(STAMP) $(CDK)
	PATH=$(CURDIR)/$(BIN):$$PATH $(CDK) synth --no-notices --quiet

deploy: $(STAMP) $(CDK)
	PATH=$(CURDIR)/$(BIN):$$PATH $(CDK) deploy --no-notices

destroy: $(STAMP) $(CDK)
	PATH=$(CURDIR)/$(BIN):$$PATH $(CDK) destroy --no-notices

# The whole loop locally: synthesize with the demo profile, deploy into an embedded moto server,
# run the real handlers. Options: make demo ARGS="--orders 80 --outage-seconds 30 --json"; KEEP=1 keeps
# act 1's local AWS, its consumer and schedule running, and serves the web console on it, until Ctrl-C.
demo: $(STAMP)
	$(BIN)/python -m demo $(if $(KEEP),--keep) $(ARGS)

# Published design vs this re-driver on one moto server: make bench ARGS="--sizes 200 500 --repeats 3";
# then, in simulated time (also alone: make bench-recovery), the recovery scenarios with and
# without the consumer kit, SCENARIO_ARGS="--scenarios outage-60 poison-then-fresh --kits off on",
# the recovery benchmark against the baselines, RECOVERY_ARGS="--backlogs 500 1000 --outage-minutes 90 --json", and the backlog drains,
# DRAIN_ARGS="--drain-sizes 1200 3000 --json", and the operator's tool on a parking lot,
# OPERATOR_ARGS="--lot-sizes 200 1000 --replay-rate 50 --json", and SQS's own redrive (StartMessageMoveTask)
# in the situations where it and this re-driver part ways, MOVE_TASK_ARGS="--scenarios early poison --json";
# and what a deployment costs a month: make bench-cost COST_ARGS="--dead-letters 0 10000 1000000";
# and a million dead letters: make bench-million MILLION_ARGS="--scenarios fast slow" WORKERS_ARGS="--workers 1 4 16"
bench: $(STAMP) $(BENCH_STAMP)
	$(BIN)/python -m bench $(ARGS)
	$(MAKE) --no-print-directory bench-recovery
	$(MAKE) --no-print-directory bench-cost
	$(MAKE) --no-print-directory bench-million

# A million dead letters drained by the default stack's workers, in simulated time (bench.million:
# the re-driver's pace, width, slow start and breaker over a model of SQS and the consumer, a worker
# bound by the CPU a re-drive costs it, measured first by bench.worker_cpu), then the move rate of
# 1, 4 and 16 real workers side by side on one moto server (bench.workers).
bench-million: $(STAMP)
	$(BIN)/python -m bench.million $(MILLION_ARGS)
	$(BIN)/python -m bench.workers $(or $(WORKERS_ARGS),--latency-ms 20 200)

# docs/cost.md's table: the default stack's resources, a measured idle run, the published prices.
bench-cost: $(STAMP)
	$(BIN)/python -m bench.cost $(COST_ARGS)

bench-recovery: $(STAMP)
	$(BIN)/python -m bench --recovery $(SCENARIO_ARGS)
	$(BIN)/python -m bench --baselines $(RECOVERY_ARGS)
	$(BIN)/python -m bench --backlog-drains $(DRAIN_ARGS)
	$(BIN)/python -m bench --operator $(OPERATOR_ARGS)
	$(BIN)/python -m bench.move_task $(MOVE_TASK_ARGS)
	$(BIN)/python -m bench.dead_letters $(DEAD_LETTER_ARGS)

# What the settings schema (lambdas/sqs_redriver/protocol/settings.py) generates: docs/configuration.md's
# settings table and the fields of the Lambda's and the construct's typed settings.
readme: $(STAMP)
	$(BIN)/python -m sqs_redriver.cdk.settings_table

clean:
	rm -rf cdk.out build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache $(LOCALSTACK_VENV)
