"""The backend factory's refusals: an unknown backend name, and an engine that is not installed.

A missing engine cannot be caused for real here (every engine is installed in the test
environment), so it is simulated by pointing the table at a module name that does not exist.
"""

import dataclasses
import sys

import pytest

from agents.backends import factory


def test_unknown_backend_name_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="unknown backend 'nope': one of hf, vllm, openai"):
        factory.engine_installed("nope")
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        factory.engine_class("nope")


def test_missing_engine_is_seen_without_import_and_its_error_names_the_extra(monkeypatch):
    missing = dataclasses.replace(factory.ENGINES["hf"], module="agents.backends.no_such_engine")
    monkeypatch.setitem(factory.ENGINES, "hf", missing)
    assert not factory.engine_installed("hf")
    with pytest.raises(ModuleNotFoundError, match=r"backend 'hf' needs agents\.backends\.no_such_engine.*"
                                                  r"pip install 'catallax\[llm\]'"):
        factory.engine_class("hf")
    with pytest.raises(ValueError, match=r"wordmath\.llm\.backend = 'hf': backend 'hf' needs"):
        factory.require_engine("hf", "wordmath.llm.backend")
    factory.require_engine("openai", "wordmath.llm.backend")  # installed: nothing to say


def test_installed_engine_is_reported_without_importing_it():
    loaded = "agents.backends.openai" in sys.modules
    assert factory.engine_installed("openai")
    assert ("agents.backends.openai" in sys.modules) == loaded
