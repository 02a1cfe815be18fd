"""Fixtures shared by the sweep tests."""

from __future__ import annotations

import contextlib

import pytest

from loom_explorer.sweep import run as sweep_run


@pytest.fixture
def no_cluster(monkeypatch):
    """Fail the test if ``run_sweep`` ever tries to start (or connect to) a Dask cluster."""

    @contextlib.contextmanager
    def refuse(*args, **kwargs):
        raise AssertionError("a Dask cluster was started")
        yield  # pragma: no cover

    monkeypatch.setattr(sweep_run, "dask_client", refuse)
