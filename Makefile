# The two quick-start commands: `make demo` (record demo runs, serve the workbench on
# 127.0.0.1:8050) and `make test` (every test, browser tests included). Both create the
# virtual environment on first use.
VENV      ?= .venv
PYTHON    ?= python3
# The CPU build that lies on this machine's disk; never let pip pick a (multi-GB CUDA) torch.
TORCH_SPEC ?= torch==2.13.0
BIN        = $(VENV)/bin
STAMP      = $(VENV)/.installed

.PHONY: demo test setup lint bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/workbench demo --logdir runs

test: $(STAMP)
	scripts/ensure-chromium.sh
	$(BIN)/python -m pytest --headless -q -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check engine viz workbench tests bench

bench: $(STAMP)
	$(BIN)/python bench/bench_engine.py

clean:
	rm -rf $(VENV) runs
