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
"""

