import pytest

from skills import SkillLibrary


@pytest.fixture
def library(tmp_path) -> SkillLibrary:
    """An empty library in a fresh SQLite file."""
    return SkillLibrary.open(f"sqlite:///{tmp_path / 'skills.db'}", "test")
