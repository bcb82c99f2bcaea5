# Each target sets up .venv first (idempotent, fast when already installed).
.PHONY: setup demo test test-fast bench validate calibrate

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/hsched demo

test: setup
	.venv/bin/python -m pytest

# Everything but the tests marked slow (half a second or more each).
test-fast: setup
	.venv/bin/python -m pytest -m "not slow"

bench: setup
	.venv/bin/python scripts/bench_planner.py --markdown

validate: setup
	.venv/bin/python scripts/validate.py

calibrate: setup
	.venv/bin/python scripts/calibrate.py
