"""The ``hsched`` command line.

Subcommands:

* ``hsched candidates --model M --cluster C [--max-candidates N] [--json]`` — a job's
  candidates (resource set × best parallelization strategy), fastest first.
* ``hsched models`` / ``hsched clusters [NAME]`` — the catalogs.
* ``hsched demo`` — the end-to-end demo on the embedded default scenario.
* ``hsched train --env hsched/Rank-v0 --algo ppo`` — imitation + PPO training of the ranker
  (``agents.train``; ``hsched_cli.learning``).
* ``hsched evaluate --suite smoke|standard|large --policies pure-lp,topk,ranker:PATH,...`` —
  policies and learned rankers on held-out seeds (``agents.evaluate``).

Errors in the input (unknown names, bad files) exit with status 2 and one line naming what is
wrong; only this package prints. Nothing imports it: it sits on top of ``hsched_env``,
``lp_baseline`` and ``agents`` (``docs/architecture.md``).

Before NumPy is imported, the command sets ``NUMPY_MADVISE_HUGEPAGE=0`` unless the
environment already sets it: NumPy otherwise asks the kernel for transparent huge pages for
every array of 4 MB or more, and where the kernel's THP ``defrag`` setting is ``madvise`` (a
common default) a fault on such memory can stall in synchronous compaction (numpy/numpy#31590).
On this project's machine that doubled the time to build a 2,000-job round's observation
(122 against 66 ms per round) and left the LP's time unchanged (BENCHMARKS.md, session 28).
``NUMPY_MADVISE_HUGEPAGE=1 hsched ...`` restores NumPy's default.
"""

import os as _os
import sys as _sys

if "numpy" not in _sys.modules:
    _os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

