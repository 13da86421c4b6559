"""The ``stress`` marker: fault tests that the normal suite runs briefly and a developer runs
long (``EMBER_STRESS=50 python -m pytest -m stress tests/data``)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "stress: fault cases repeated under CPU load; EMBER_STRESS=N repeats each "
                   "N times (default 1)")
