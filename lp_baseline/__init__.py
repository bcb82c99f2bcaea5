"""LP co-optimizer and non-learned baselines (see the simulator/LP issue)."""
