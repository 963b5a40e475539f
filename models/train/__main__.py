"""``python -m models.train``: see ``models.train.cli``."""

from models.train.cli import main

raise SystemExit(main())
