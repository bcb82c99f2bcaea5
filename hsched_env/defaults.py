"""The simulation defaults every entry point shares (simulator, environments, command line,
evaluation suites, training), written once."""

#: Length of a scheduling round, seconds (Gavel's and Sia's simulators use 360 s and 60 s).
ROUND_S = 300.0
#: Cost of a restart (checkpoint, reschedule, warm-up), seconds of no progress, GPUs held.
RESTART_S = 60.0
#: Candidates the planner keeps per job (the most efficient ones, and the fastest).
JOB_CANDIDATES = 16
#: The environments' default scenario's jobs (on ``sia-64``): 100 of Gavel's generator at 4/h,
#: with the draws the environments were registered with — ``multi_gpu_recommendation=1``, since
#: session 45 the generator draws Recommendation at one GPU, as Gavel does (docs/workloads.md).
ENV_WORKLOAD = "gavel:rate=4,jobs=100,multi_gpu_recommendation=1"
