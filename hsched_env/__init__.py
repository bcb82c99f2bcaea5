"""HeteroSched world model: catalogs, clusters, cost model and the candidate planner.

Importing this package is cheap: it pulls in numpy only. The Gymnasium environments are
registered here once they exist (see the environments issue).
"""

from hsched_env.errors import ConfigError, HSchedError, TraceError, UnknownNameError

__all__ = ["ConfigError", "HSchedError", "TraceError", "UnknownNameError"]
__version__ = "0.1.0"
