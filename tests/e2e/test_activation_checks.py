"""The checks run when tinygrad first imports a mockgpu shim (mockgpu.tinygrad.checks): each misconfiguration a user can
reach ends the script with exactly one stderr line, `mockgpu.tinygrad.errors.ActivationError: ...`, that names the fix,
before any kernel is compiled. Also: the pytest header names the installed tinygrad and says whether activation is installed
in the interpreter, and pytest does not warn that it cannot rewrite mockgpu."""
import os, pathlib, re, subprocess, sys, sysconfig, textwrap
import pytest
import tinygrad

ONE_LINER = "from tinygrad import Tensor; print((Tensor([1,2,3])+1).tolist())"
ERR = "mockgpu.tinygrad.errors.ActivationError: "
PLUGINS_OFF = ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:hypothesispytest"]

def run_py(cwd, *args, code=ONE_LINER, **env) -> subprocess.CompletedProcess:
  full = {k: v for k, v in os.environ.items() if k not in ("DEV", "MOCKGPU", "PYTHONPATH", "LLVM_PATH", "MOCKGPU_CC")} | env
  return subprocess.run([sys.executable, *args] if args else [sys.executable, "-c", code], cwd=cwd, env=full, capture_output=True,
                        text=True, timeout=600)

def one_line(p:subprocess.CompletedProcess) -> str:
  """The single stderr line of a failed run, without the error class prefix."""
  assert p.returncode == 1 and p.stdout == "", (p.returncode, p.stdout[-2000:], p.stderr[-4000:])
  lines = p.stderr.splitlines()
  assert len(lines) == 1 and lines[0].startswith(ERR), p.stderr[-4000:]
  return lines[0][len(ERR):]

def test_single_colon_arch_names_the_double_colon_form(tmp_path):
  # tinygrad parses AMD:gfx1201 as renderer=GFX1201 and (before the check) ran the default gfx1100 or failed on the renderer
  msg = one_line(run_py(tmp_path, DEV="MOCKKFD+AMD:gfx1201"))
  assert msg.startswith("DEV=MOCKKFD+AMD:gfx1201: ") and msg.endswith("put the arch in the third field: DEV=MOCKKFD+AMD::gfx1201"), msg

def test_unknown_arch_lists_the_emulated_ones(tmp_path):
  msg = one_line(run_py(tmp_path, DEV="MOCK+AMD:LLVM:gfx9999"))
  assert msg.startswith("DEV=MOCK+AMD:LLVM:gfx9999: mockgpu emulates no gfx9999 GPU") and "gfx1100, gfx1201, gfx950" in msg, msg

def test_no_c_compiler_is_one_line_for_amd_nv_and_cuda(tmp_path):
  for dev in ("MOCKKFD+AMD", "MOCK+NV:PTX", "MOCK+CUDA:PTX"):
    msg = one_line(run_py(tmp_path, DEV=dev, MOCKGPU_CC="no-such-cc"))
    assert msg == (f"DEV={dev}: mockgpu builds its GPU emulator from generated C and has no C compiler ('no-such-cc' from $MOCKGPU_CC "
                   "is not found): install one (apt install gcc) or set MOCKGPU_CC to a C compiler"), msg

def test_unloadable_libllvm(tmp_path):
  (bad:=tmp_path / "libLLVM.so").write_text("not a shared library\n")   # LLVM_PATH is what tinygrad loads when it is a file
  msg = one_line(run_py(tmp_path, DEV="MOCKKFD+AMD", LLVM_PATH=str(bad)))
  assert msg.startswith(f"DEV=MOCKKFD+AMD: tinygrad compiles AMD kernels with libLLVM and LLVM_PATH={bad} does not load: ")
  assert msg.endswith(": apt install libllvm19, or set LLVM_PATH to a libLLVM.so"), msg

def _libllvm(major_ok) -> str|None:
  d = pathlib.Path("/usr/lib") / sysconfig.get_config_var("MULTIARCH")
  libs = sorted((int(m.group(1)), str(p)) for p in d.glob("libLLVM-*.so") if (m:=re.fullmatch(r"libLLVM-(\d+)\.so", p.name)) and major_ok(int(m.group(1))))
  return libs[-1][1] if libs else None

def test_gfx950_with_llvm_19_names_llvm_20(tmp_path):
  # the machine has LLVM 19 (what tinygrad finds by default) and 22; before the check LLVM 19 aborted the process (rc 134)
  old = _libllvm(lambda m: m < 20)
  assert old is not None, "this test needs a libLLVM < 20 (apt install libllvm19)"
  msg = one_line(run_py(tmp_path, DEV="MOCKKFD+AMD::gfx950", LLVM_PATH=old))
  major = re.search(r"libLLVM-(\d+)\.so", old).group(1)   # the version from the library's file name, not from our check
  assert re.fullmatch(rf"DEV=MOCKKFD\+AMD::gfx950: gfx950 needs LLVM >= 20, but tinygrad loads LLVM {major}\.\d+\.\d+ \({re.escape(old)}\): "
                      r"(set LLVM_PATH=\S*libLLVM\S*|apt install libllvm22 and set LLVM_PATH=\S+)", msg), msg
  if (new:=msg.rpartition("set LLVM_PATH=")[2]) and os.path.isfile(new):   # the suggested library is new enough for the check
    assert run_py(tmp_path, code="import tinygrad.runtime.support.hcq", DEV="MOCKKFD+AMD::gfx950", LLVM_PATH=new).returncode == 0

def test_other_tinygrad_version_is_refused(tmp_path):
  # an installed tinygrad 0.13.0: its dist-info owns the package directory Python imports (the code is 0.14.0's, linked)
  (tmp_path / "site").mkdir()
  (tmp_path / "site" / "tinygrad").symlink_to(pathlib.Path(tinygrad.__file__).parent)
  (info:=tmp_path / "site" / "tinygrad-0.13.0.dist-info").mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinygrad\nVersion: 0.13.0\n")
  msg = one_line(run_py(tmp_path, DEV="MOCKKFD+AMD", PYTHONPATH=str(tmp_path / "site")))
  assert msg.startswith(f"mockgpu 0.1.0 serves tinygrad 0.14.0, but tinygrad 0.13.0 is imported from {tmp_path / 'site' / 'tinygrad'} ")
  assert msg.endswith(": pip install tinygrad==0.14.0"), msg

def test_good_setup_passes_the_checks(tmp_path):
  p = run_py(tmp_path, code="import tinygrad.runtime.support.hcq as h; print(h.FileIOInterface.__name__)", DEV="MOCKKFD+AMD::gfx1201")
  assert p.returncode == 0 and p.stdout.split() == ["MockFileIOInterface"], p.stderr[-3000:]

def test_error_is_a_normal_exception_when_caught(tmp_path):
  code = """
    try: import tinygrad.runtime.support.hcq
    except Exception as e: print(*[c.__name__ for c in type(e).__mro__])"""
  p = run_py(tmp_path, code=textwrap.dedent(code), DEV="MOCKKFD+AMD:gfx1201")
  assert p.returncode == 0 and p.stdout.split() == ["ActivationError", "IntegrationError", "MockGPUError", "Exception", "BaseException", "object"], \
    p.stdout + p.stderr

def _pytest(tmp_path, *args, **env) -> subprocess.CompletedProcess:
  (tmp_path / "test_user.py").write_text("def test_a():\n  assert 1 + 1 == 2\n")
  return run_py(tmp_path, "-m", "pytest", *PLUGINS_OFF, "test_user.py", *args, **env)

def test_pytest_header_names_installed_tinygrad_and_dev(tmp_path):
  p = _pytest(tmp_path, DEV="MOCK+AMD::gfx950")
  assert p.returncode == 0, p.stdout[-3000:]
  assert "mockgpu 0.1.0 (tinygrad 0.14.0); DEV=MOCK+AMD::gfx950; activation on: MOCK+AMD::gfx950 -> gfx950 x6" in p.stdout, p.stdout
  (tmp_path / "site").mkdir()   # the version comes from the installed distribution, not a constant
  (tmp_path / "site" / "tinygrad").symlink_to(pathlib.Path(tinygrad.__file__).parent)
  (info:=tmp_path / "site" / "tinygrad-0.13.0.dist-info").mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinygrad\nVersion: 0.13.0\n")
  p = _pytest(tmp_path, PYTHONPATH=str(tmp_path / "site"))
  assert "(tinygrad 0.13.0 (mockgpu serves 0.14.0: tests will fail)); DEV=<unset>; activation off" in p.stdout, p.stdout

def test_pytest_header_when_dev_is_set_after_start(tmp_path):
  (tmp_path / "conftest.py").write_text("import os\nos.environ['DEV'] = 'MOCKKFD+AMD'\n")   # too late for the .pth hook
  p = _pytest(tmp_path)
  assert "DEV=MOCKKFD+AMD; activation NOT installed in this interpreter (set DEV before Python starts" in p.stdout, p.stdout

def test_pytest_does_not_warn_about_rewriting_mockgpu(tmp_path):
  # an installed wheel lists mockgpu/__init__.py in its RECORD, so pytest marks `mockgpu` for assertion rewriting; with DEV naming
  # a MOCK target the .pth hook has imported it already. Simulated with a distribution whose RECORD lists the same files.
  (info:=tmp_path / "site" / "wheel_like-0.1.0.dist-info").mkdir(parents=True)
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wheel-like\nVersion: 0.1.0\n")
  (info / "RECORD").write_text("mockgpu/__init__.py,,\nmockgpu/__main__.py,,\nwheel_like_plugin.py,,\n")
  (info / "entry_points.txt").write_text("[pytest11]\nwheel_like = wheel_like_plugin\n")
  (tmp_path / "site" / "wheel_like_plugin.py").write_text("")
  p = _pytest(tmp_path, DEV="MOCKKFD+AMD", PYTHONPATH=str(tmp_path / "site"))
  assert p.returncode == 0 and "1 passed" in p.stdout and "wheel-like" in p.stdout, p.stdout[-3000:]
  assert "PytestAssertRewriteWarning" not in p.stdout + p.stderr, p.stdout[-3000:]

@pytest.mark.parametrize("switch,on", [({"MOCKGPU": "0"}, False), ({}, True)])
def test_mockgpu_0_is_the_off_switch_under_pytest(tmp_path, switch, on):
  (tmp_path / "test_user.py").write_text("import sys\ndef test_a():\n  assert any(type(f).__name__ == 'MockGPUFinder' for f in sys.meta_path) is "
                                         f"{on}\n")
  p = run_py(tmp_path, "-m", "pytest", *PLUGINS_OFF, "-p", "no:mockgpu", "test_user.py", DEV="MOCKKFD+AMD", **switch)
  assert p.returncode == 0 and "1 passed" in p.stdout and "mockgpu 0.1.0" not in p.stdout, p.stdout[-3000:]
