# schedweb: `make run` (demo server on 127.0.0.1:8000) and `make test` (ruff + pytest on PostgreSQL).

SHELL := /bin/bash
PY := .venv/bin/python

# Scheduler hook: scripts/run.sh starts this in the background when `manage.py run_scheduler`
# exists (added by schedweb.scheduling). Override with `make run SCHEDULER_CMD=...` or empty it.
SCHEDULER_CMD ?= $(PY) manage.py run_scheduler

TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/schedweb
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
PYTEST_ARGS ?=

.PHONY: run test lint venv services bench soak clean distclean

venv:
	@scripts/ensure_venv.sh

# `make run PORT=8123 HOST=0.0.0.0`: where the demo server listens (default 127.0.0.1:8000).
HOST ?= 127.0.0.1
PORT ?= 8000
run: venv
	@SCHEDULER_CMD="$(SCHEDULER_CMD)" HOST="$(HOST)" PORT="$(PORT)" scripts/run.sh

services:
	@scripts/ensure_services.sh

# pytest exits 5 when it collects no tests; make treats any non-zero exit as a failure.
# Deterministic: property tests derandomized, schemathesis on a fixed seed (tests/conftest.py).
# Two parts: everything on TEST_WORKERS pytest-xdist workers (each its own test database and Redis
# database: tests/xdist_env.py), then, alone, the tests that stop a shared service (`exclusive`).
# TEST_WORKERS=0 runs the first part in one process. xdist's default distribution hands each
# worker tests in collection order, which keeps pytest-django's order (transactional tests, whose
# flush also removes what data migrations made, such as the default queue, after the others);
# --dist loadfile would not.
TEST_WORKERS ?= 2
TEST_ENV = DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) HYPOTHESIS_PROFILE=deterministic
test: services venv lint
	$(TEST_ENV) $(PY) -m pytest -p tests.xdist_env -n $(TEST_WORKERS) \
		-m "not soak and not exclusive" $(PYTEST_ARGS)
	$(TEST_ENV) $(PY) -m pytest -m "exclusive and not soak" $(PYTEST_ARGS)

lint: venv
	.venv/bin/ruff check .

# Benchmarks (not part of `make test`): in-memory sessions, the full cycle on PostgreSQL (own
# database BENCH_DATABASE_URL), API latency with cycles running. Tables on stdout, JSON in var/bench/.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/schedweb_bench
# Production-like API bench: the shared cache (prebuilt bodies, claims) lives in Redis.
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/11
bench: services venv
	@command -v wrk >/dev/null || { echo "bench: wrk (the API load) missing: apt-get install -y wrk"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y wrk || echo "bench: no wrk: Python clients load the API"; }
	$(PY) -m scheduler_core.bench.session_bench
	BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) -m schedweb.bench.db_bench --split
	-BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) -m schedweb.bench.shard_bench  # 1 leader vs 2 shards, L steady
	BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) BENCH_REDIS_URL=$(BENCH_REDIS_URL) $(PY) -m schedweb.bench.api_bench
	BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) -m schedweb.bench.submit_bench
	BENCH_DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) -m schedweb.bench.forecast_bench

# Soak (minutes, not part of `make test`): the soak-marked fault/load tests of tests/reliability
# and the scheduler tests on bench-sized (M) clusters
# (kill -9 of the worker, PostgreSQL restarts, a Redis outage, two beats, 64 clients), then, at
# random (HYPOTHESIS_PROFILE=soak), every property test with 5x its examples and schemathesis
# over the whole API with a bigger budget and a new seed. Each writes its counts to var/soak/;
# scripts/soak_summary.py prints the table. Own database and Redis db: no clash with `make test`.
SOAK_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/schedweb_soak
SOAK_ENV = DATABASE_URL=$(SOAK_DATABASE_URL) REDIS_URL=redis://127.0.0.1:6379/12 SOAK_REPORT_DIR=var/soak \
	HYPOTHESIS_PROFILE=soak
soak: services venv
	@rm -rf var/soak && mkdir -p var/soak && date +%s > var/soak/started
	@status=0; \
	$(SOAK_ENV) $(PY) -m pytest tests/reliability tests/scheduler_core -m soak -p no:cacheprovider $(PYTEST_ARGS) || status=1; \
	$(SOAK_ENV) SOAK_REPORT_NAME=properties $(PY) -m pytest -q -p no:cacheprovider -m "hypothesis and not soak" \
		-p tests.reliability.soak_plugin tests/scheduler_core tests/schedweb tests/schedctl \
		--deselect tests/schedweb/security/test_schemathesis.py::test_no_operation_answers_5xx \
		--deselect tests/schedweb/security/test_schemathesis.py::test_stateful_workflows_never_answer_5xx \
		|| status=1; \
	$(SOAK_ENV) SCHEMATHESIS_MAX_EXAMPLES=$${SCHEMATHESIS_MAX_EXAMPLES:-12} $(PY) -m pytest -q -p no:cacheprovider \
		-p tests.reliability.soak_plugin tests/schedweb/security/test_schemathesis.py || status=1; \
	$(PY) scripts/soak_summary.py var/soak || status=1; \
	exit $$status

clean:
	rm -rf var staticfiles .pytest_cache .ruff_cache .hypothesis
	find . -path ./.venv -prune -o -name __pycache__ -type d -exec rm -rf {} +

distclean: clean
	rm -rf .venv
