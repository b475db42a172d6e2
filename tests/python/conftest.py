"""Test isolation for engine errors.

As in MXNet, ``waitall`` raises the failure of an operation whose arrays were all
discarded. A test that provokes such a failure and never waits for it would otherwise
make the next test's ``waitall`` raise it; each test therefore ends by draining the
engine, and the tests of that behaviour (``test_errors.py``) assert it explicitly.
"""

import pytest


@pytest.fixture(autouse=True)
def _drain_engine_errors():
    yield
    import ferromx as mx

    try:
        mx.nd.waitall()
    except mx.MXNetError:
        pass
