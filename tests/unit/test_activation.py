"""Activation (mockgpu.tinygrad.activate): the .pth hook serves tinygrad's `test.mockgpu.*` imports when DEV names a MOCK
interface, wins over a checkout's own test/mockgpu, imports nothing otherwise, and is off with MOCKGPU=0."""
import os, subprocess, sys, textwrap
import pytest
from mockgpu.tinygrad import activate

def run_py(code:str, cwd, **env) -> subprocess.CompletedProcess:
  full = {k: v for k, v in os.environ.items() if k not in ("DEV", "MOCKGPU", "PYTHONPATH")} | env
  return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=full, capture_output=True, text=True, timeout=120)

@pytest.mark.parametrize("env,want", [({}, False), ({"DEV": "AMD"}, False), ({"DEV": "MOCKKFD+AMD"}, True), ({"DEV": "MOCK+AMD"}, True),
                                      ({"DEV": "MOCKKFD+AMD", "MOCKGPU": "0"}, False), ({"DEV": "MOCKKFD+AMD", "MOCKGPU": "1"}, True)])
def test_enabled(env, want): assert activate.enabled(env) is want

def test_nothing_imported_without_mock(tmp_path):
  code = """
    import sys
    print(sorted(m for m in sys.modules if m.startswith(("mockgpu", "tinygrad", "test"))), [type(f).__name__ for f in sys.meta_path])"""
  for env in ({}, {"DEV": "AMD"}, {"DEV": "CPU"}):
    out = run_py(code, tmp_path, **env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("[] ") and "MockGPUFinder" not in out.stdout, (env, out.stdout)

def test_enabled_costs_only_the_finder(tmp_path):
  out = run_py("""
    import sys
    print(type(sys.meta_path[0]).__name__, sorted(m for m in sys.modules if m.startswith(("mockgpu", "tinygrad", "test"))))""",
    tmp_path, DEV="MOCKKFD+AMD")
  assert out.returncode == 0, out.stderr
  finder, mods = out.stdout.split(" ", 1)
  assert finder == "MockGPUFinder"
  assert not [m for m in eval(mods) if m.startswith(("tinygrad", "test", "mockgpu.mock", "mockgpu.emu"))], mods

def test_mockgpu0_disables(tmp_path):
  out = run_py("import tinygrad.runtime.support.hcq", tmp_path, DEV="MOCKKFD+AMD", MOCKGPU="0")
  assert out.returncode != 0 and "test.mockgpu" in out.stderr

def test_hook_wins_over_a_checkouts_test_mockgpu(tmp_path):
  (tmp_path / "test" / "mockgpu").mkdir(parents=True)
  (tmp_path / "test" / "__init__.py").write_text("CHECKOUT = True\n")
  (tmp_path / "test" / "mockgpu" / "mockgpu.py").write_text("raise ImportError('the checkout mock was imported')\n")
  (tmp_path / "test" / "mockgpu" / "usb.py").write_text("raise ImportError('the checkout mock was imported')\n")
  out = run_py("""
    import test, tinygrad.runtime.support.hcq as hcq, tinygrad.runtime.support.usb as usb
    print(getattr(test, "CHECKOUT", False), hcq.FileIOInterface.__module__, usb.USB3.__module__)""",
    tmp_path, DEV="MOCKKFD+AMD", PYTHONPATH=str(tmp_path))
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["True", "mockgpu.tinygrad.compat.fileio", "mockgpu.tinygrad.compat.usb"]

def test_served_from_any_directory_over_the_stdlib_test_package(tmp_path):
  out = run_py("import tinygrad.runtime.support.hcq as hcq; print(hcq.FileIOInterface.__name__)", tmp_path, DEV="MOCK+AMD")
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip() == "MockFileIOInterface"

@pytest.mark.parametrize("dev", ["MOCKPCI+AMD", "MOCKUSB+AMD"])
def test_am_driver_without_firmware_is_one_clear_line(tmp_path, dev):
  out = run_py("from tinygrad import Device; Device['AMD']", tmp_path, DEV=dev, XDG_CACHE_HOME=str(tmp_path / "empty"),
               MOCKGPU_CACHE=os.path.expanduser("~/.cache/mockgpu"))
  lines = [ln for ln in out.stderr.splitlines() if "ActivationError" in ln]
  assert out.returncode != 0 and len(lines) == 1, out.stderr
  for want in ("psp_13_0_12_sos.bin", "sdma_4_4_4.bin", "gc_9_5_0_mec.bin", "gc_9_5_0_rlc.bin", "mockgpu firmware --chip gfx950", "MOCKGPU_FIRMWARE=fetch"):
    assert want in lines[0], want

def test_other_mock_devs_never_probe_host_pci(tmp_path):
  out = run_py("""
    from tinygrad.runtime.support.hcq import FileIOInterface
    FileIOInterface('/sys/bus/pci/devices')""", tmp_path, DEV="MOCKKFD+AMD")
  assert out.returncode != 0 and "only with DEV=MOCKPCI+AMD" in out.stderr and "/sys/bus/pci/devices" in out.stderr

def test_synthetic_test_package_only_when_none_exists(monkeypatch):
  finder = activate.MockGPUFinder()
  assert finder.find_spec("test") is None   # the stdlib (or a checkout) provides one
  monkeypatch.setattr(sys, "meta_path", [finder])
  spec = finder.find_spec("test")
  assert spec is not None and spec.origin == "mockgpu" and spec.submodule_search_locations == []
  assert finder.find_spec("unrelated") is None

def test_install_is_idempotent_and_first(monkeypatch):
  monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
  activate.uninstall()
  f = activate.install()
  assert sys.meta_path[0] is f and activate.install() is f
  assert sum(isinstance(x, activate.MockGPUFinder) for x in sys.meta_path) == 1

@pytest.mark.parametrize("env,want", [({"DEV": "MOCKKFD+AMD"}, "activation on: MOCKKFD+AMD -> gfx1100 x6"),
                                      ({"DEV": "MOCK+AMD:LLVM:gfx1201", "MOCKGPU_GPUS": "2"}, "on: MOCK+AMD:LLVM:gfx1201 -> gfx1201 x2"),
                                      ({"DEV": "MOCK+CUDA:PTX"}, "MOCK+CUDA:PTX -> PTX engine"),
                                      ({"DEV": "MOCK+NV:PTX"}, "MOCK+NV:PTX -> PTX engine"),
                                      ({"DEV": "MOCKKFD+AMD", "MOCKGPU": "0"}, "activation off"), ({}, "DEV=<unset>; activation off")])
def test_pytest_header(env, want):
  from mockgpu.tinygrad.pytest_plugin import describe
  assert want in describe(env)

def test_run_asm_served_for_tinygrads_amd_tests(tmp_path):
  out = run_py("""
    import test.mockgpu.amd, test.mockgpu.amd.emu as emu
    from test.mockgpu.amd.emu import run_asm
    print(run_asm.__module__, sorted(emu.__all__) == sorted(__import__("mockgpu.tinygrad.compat.amd_emu", fromlist=["x"]).__all__))""",
    tmp_path, DEV="MOCKKFD+AMD")
  assert out.returncode == 0, out.stderr
  assert out.stdout.split() == ["mockgpu.tinygrad.compat.amd_emu", "True"]
