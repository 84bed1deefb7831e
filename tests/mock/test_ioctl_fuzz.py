"""The mock drivers survive random ioctl arguments, packets and CPU unmaps (ioctl_fuzz.py): no crash, hang or unexpected
error, for the KFD driver and the NVIDIA driver. The long campaigns are `pytest -m slow tests/mock/test_ioctl_fuzz.py`."""
import pytest
from ioctl_fuzz import campaign

def _clean(res, n):
  assert (res.crashes, res.hangs, res.unexpected) == ([], [], [])
  assert res.cases == n

@pytest.mark.parametrize("target, n", [("kfd", 150), ("nv", 100)])
def test_short_campaign_has_no_crash(target, n): _clean(campaign(seed=11, n=n, target=target), n)

@pytest.mark.parametrize("target", ["kfd", "nv"])
def test_campaign_counts_the_crashes_of_an_unchecked_driver(target):
  res = campaign(seed=11, n=12, unchecked=True, target=target)
  assert res.crashes and all(rc < 0 for _, rc, _ in res.crashes)   # killed by a signal (SIGSEGV/SIGBUS), then the campaign went on
  assert res.cases == 12 and res.hangs == []

@pytest.mark.slow
@pytest.mark.parametrize("target", ["kfd", "nv"])
def test_long_campaign_has_no_crash(target):
  for seed in (1, 2, 3): _clean(campaign(seed=seed, n=5000, target=target), 5000)
