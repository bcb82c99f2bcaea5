# Each target sets up .venv first (idempotent, fast when already installed).
.PHONY: setup demo test test-fast bench validate calibrate

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/hsched demo

# The suite runs on TEST_WORKERS pytest-xdist workers (default: one per logical CPU; 0 runs it in this
# process, one test after the other). --dist loadgroup keeps each xdist_group (the Ray tests)
# in one worker.
TEST_WORKERS ?= logical

test: setup
	.venv/bin/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# Everything but the tests marked slow (half a second or more each).
test-fast: setup
	.venv/bin/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not slow"

bench: setup
	.venv/bin/python scripts/bench_planner.py --markdown

validate: setup
	.venv/bin/python scripts/validate.py

calibrate: setup
	.venv/bin/python scripts/calibrate.py
