# Every target sets itself up: a fresh clone needs only python3 (3.11+) on PATH.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench bench-filter bench-delta bench-affinity bench-journal bench-sow bench-broker bench-pipeline jq redis docs clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ampsctl needs Python 3.11+")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,spark]'
	@touch $(STAMP)

demo: $(STAMP)
	@bash scripts/demo.sh

test: $(STAMP)
	@command -v java >/dev/null || { echo "error: java not found; the Spark tests need Java 17 (apt-get install openjdk-17-jre-headless)"; exit 4; }
	$(PY) -m pytest

# The benchmarks' peers (xmllint, jq, redis) are installed when we can (root), otherwise
# scripts/require-tool.sh says how and exits 4.
bench: $(STAMP) jq redis
	@scripts/require-tool.sh libxml2-utils xmllint
	$(PY) bench/lint.py
	$(PY) bench/filter.py
	$(PY) bench/delta.py
	$(PY) bench/affinity.py
	$(PY) bench/journal.py
	$(PY) bench/sow_query.py
	$(PY) bench/broker.py
	$(PY) bench/pipeline.py

# jq is the peer of bench/delta.py (Debian package jq), installed like xmllint above.
jq:
	@scripts/require-tool.sh jq jq

# The delta benchmark alone: ampsctl delta merge --stream against jq's recursive merge (*).
bench-delta: $(STAMP) jq
	$(PY) bench/delta.py

# The filter benchmark alone (no peer tool to install): compiled vs interpreted filter.
bench-filter: $(STAMP)
	$(PY) bench/filter.py

# The faucet engine alone: 1M subscription events (no peer tool to install).
bench-affinity: $(STAMP)
	$(PY) bench/affinity.py

# The journal alone: 1M group-commit appends and scans against orjson JSON Lines (no tool to install).
bench-journal: $(STAMP)
	$(PY) bench/journal.py

# SOW queries on 1M records against DuckDB over the same data as JSONL (duckdb is in the dev extra).
bench-sow: $(STAMP)
	$(PY) bench/sow_query.py

# redis-server and redis-benchmark are the peers of bench/broker.py (Debian package redis-server), installed like jq.
redis:
	@scripts/require-tool.sh redis-server redis-server redis-benchmark

# The broker over loopback (ingest, delivery, latency, SOW query) against a redis-server started for the run.
bench-broker: $(STAMP) redis
	$(PY) bench/broker.py

# Journal compaction: the local engine, Spark on local[2] and DuckDB over Parquet (issue 8).
bench-pipeline: $(STAMP)
	$(PY) bench/pipeline.py

docs: $(STAMP)
	$(PY) -m ampsctl.cli.docgen

clean:
	rm -rf $(VENV) .pytest_cache bench/out
