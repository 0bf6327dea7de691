"""Without chromium the browser test skips -- unless KAFKALAB_REQUIRE_BROWSER=1 (CI), where it fails."""
from __future__ import annotations

import pytest

from tests.browser import browser


def test_missing_chromium_skips(monkeypatch):
    monkeypatch.setattr(browser, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.delenv("KAFKALAB_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium"):
        browser.require_browser()


def test_missing_chromium_fails_when_required(monkeypatch):
    monkeypatch.setattr(browser, "CHROMEDRIVER", "/nonexistent/chromedriver")
    monkeypatch.setenv("KAFKALAB_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="KAFKALAB_REQUIRE_BROWSER=1"):
        browser.require_browser()
