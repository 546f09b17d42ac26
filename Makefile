# Every target sets itself up: a fresh clone needs only python3 (3.11+) on PATH.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test bench docs clean

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

bench: $(STAMP)
	$(PY) bench/lint.py

docs: $(STAMP)
	$(PY) -m ampsctl.cli.docgen

clean:
	rm -rf $(VENV) .pytest_cache bench/out
