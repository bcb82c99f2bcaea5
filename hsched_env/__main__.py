"""``python -m hsched_env`` runs the ``hsched`` command line."""

import sys

from hsched_env.cli import main

sys.exit(main())
