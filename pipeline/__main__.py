"""``python -m pipeline``: see ``pipeline.cli``."""

from pipeline.cli import main

raise SystemExit(main())
