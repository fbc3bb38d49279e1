"""The smoke suite, built once per test session into a temporary folder."""

from __future__ import annotations

import pytest

from tests.eval.smoke import build_suite


@pytest.fixture(scope="session")
def suite(tmp_path_factory):
    """(tasks file, reference fixes folder) of the shipped smoke suite, built from its sources."""
    return build_suite(tmp_path_factory.mktemp("smoke"))
