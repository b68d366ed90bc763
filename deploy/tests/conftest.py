"""Load the stack plugin unless the root conftest already registered it."""

from __future__ import annotations

import pytest

PLUGIN = "weir_deploy.pytest_plugin"


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin(PLUGIN):
        config.pluginmanager.import_plugin(PLUGIN)
