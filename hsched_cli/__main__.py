"""``python -m hsched_cli`` runs the ``hsched`` command line."""

import sys

from hsched_cli.main import main

sys.exit(main())
