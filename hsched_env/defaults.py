"""The simulation defaults every entry point shares (simulator, environments, command line,
evaluation suites, training), written once."""

#: Length of a scheduling round, seconds (Gavel's and Sia's simulators use 360 s and 60 s).
ROUND_S = 300.0
#: Cost of a restart (checkpoint, reschedule, warm-up), seconds of no progress, GPUs held.
RESTART_S = 60.0
#: Candidates the planner keeps per job (the most efficient ones, and the fastest).
JOB_CANDIDATES = 16
#: A ``gavel:`` spec's item for the jobs the generator drew before session 45 (Recommendation
#: on 2-8 GPUs too; since then it draws Recommendation at one GPU, as Gavel does:
#: docs/workloads.md). The registered environments, the evaluation suites, the ranker's
#: training regimes and the demo keep those jobs, so their figures stay reproducible.
EARLIER_DRAWS = "multi_gpu_recommendation=1"
#: The environments' default scenario's jobs (on ``sia-64``): 100 of Gavel's generator at 4/h,
#: the draws the environments were registered with.
ENV_WORKLOAD = f"gavel:rate=4,jobs=100,{EARLIER_DRAWS}"
