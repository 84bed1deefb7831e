"""pytest plugin (entry point `mockgpu`): reports which mock targets are active in the session header."""
import os
import mockgpu

def pytest_report_header(config):
  dev = os.environ.get("DEV", "")
  active = "MOCK" in dev and os.environ.get("MOCKGPU", "1") != "0"
  return f"mockgpu {mockgpu.__version__} (tinygrad {mockgpu.TINYGRAD_VERSION}); DEV={dev or '<unset>'}; activation {'on' if active else 'off'}"
