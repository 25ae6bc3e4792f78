"""What the web tests share: a client for the app as the page's own origin sees it (the
fixtures ``store`` and ``client`` are in tests/conftest.py)."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

BASE = "http://127.0.0.1:8000"
"""The address the test clients speak to (a host the app serves)."""


def client_for(app, base: str = BASE, **headers: str) -> TestClient:
    """A client of ``app`` at ``base``; the app's own failures come back as responses."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TestClient(app, base_url=base, headers=headers, raise_server_exceptions=False)
