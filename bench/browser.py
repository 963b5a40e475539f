"""What the bench's browser runs share: a free port for the app they launch, and Chromium's flags for this machine."""

from __future__ import annotations

import socket

CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
"""As root in a container, offline: no sandbox, no GPU, no calls home."""


def free_port() -> int:
    """A TCP port free on localhost now, for the app a bench starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
