# Each target sets up .venv first (idempotent, fast when already installed).
.PHONY: setup demo test bench validate calibrate

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/hsched demo

test: setup
	.venv/bin/python -m pytest

bench: setup
	.venv/bin/python scripts/bench_planner.py --markdown

validate: setup
	.venv/bin/python scripts/validate.py

calibrate: setup
	.venv/bin/python scripts/calibrate.py
