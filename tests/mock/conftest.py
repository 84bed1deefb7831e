"""Fixtures over the user-space test driver in kfd_driver.py (test modules import helpers from there, never from conftest)."""
import pytest
from kfd_driver import Driver

@pytest.fixture
def drv(): return Driver()

@pytest.fixture
def make_driver():
  """Driver factory for tests that configure the model before the first queue."""
  return Driver
