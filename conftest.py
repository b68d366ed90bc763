"""Root conftest: the session-wide stack of real engines (started only when a test asks)."""

pytest_plugins = ["weir_deploy.pytest_plugin"]
