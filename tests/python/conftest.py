# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fixtures of the Python suite: a scratch directory and a lock path."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def lockpath(tmp_path) -> str:
    """A path in a fresh directory of its own, with nothing at it."""
    return str(tmp_path / "a.lock")
