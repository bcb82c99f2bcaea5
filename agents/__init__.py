"""Learned policies: candidate ranker, SB3 training, evaluation (see the agents issue)."""
