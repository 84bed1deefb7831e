"""Run real tinygrad on the mock in a fresh interpreter (`sys.executable`), so DEV is read at start-up as in real use.
The timeout is generous because the first kernel of a fresh machine waits for the emulator's one-time C build."""
import json, os, subprocess, sys, textwrap
import pytest
from mockgpu.cbuild import cache_dir
from mockgpu.tinygrad.checks import find_libllvm

MARK = "@@mockgpu-result@@ "

def tinygrad(code:str, dev:str="MOCKKFD+AMD", timeout:float=900, check:bool=True, **env) -> subprocess.CompletedProcess:
  """Run `code` with DEV=`dev`; the code reports through `out(obj)` (a marked JSON line on stdout) -> `.result`."""
  full = {k: v for k, v in os.environ.items() if k not in ("DEV", "MOCKGPU")} | {"DEV": dev, "PYTHONUNBUFFERED": "1"} | env
  prog = "import json, sys\ndef out(obj): print('\\n" + MARK + "' + json.dumps(obj))\n" + textwrap.dedent(code)
  p = subprocess.run([sys.executable, "-c", prog], env=full, capture_output=True, text=True, timeout=timeout, cwd=os.path.dirname(__file__))
  if check: assert p.returncode == 0, f"exit {p.returncode}\n--- stdout\n{p.stdout[-3000:]}\n--- stderr\n{p.stderr[-6000:]}"
  res = [l[len(MARK):] for l in p.stdout.splitlines() if l.startswith(MARK)]
  p.result = json.loads(res[-1]) if res else None
  return p

@pytest.fixture
def run(): return tinygrad

def _libllvm() -> str:
  p = find_libllvm(20)
  assert p, "no libLLVM >= 20: gfx950 needs it; apt-get install libllvm22 (./dev.sh does)"
  return p

@pytest.fixture(scope="module")
def fw_env(tmp_path_factory):
  """Env for a MOCKPCI or MOCKUSB run of a CDNA chip (tinygrad's AM driver): XDG_CACHE_HOME holding the gfx950 and gfx942
  firmware; the emulator cache stays the usual one."""
  tmp = tmp_path_factory.mktemp("am-fw")
  env = {**os.environ, "XDG_CACHE_HOME": str(tmp), "MOCKGPU_CACHE": str(cache_dir())}
  src = ["--deb", deb] if (deb:=os.environ.get("MOCKGPU_FIRMWARE_DEB")) else []
  r = subprocess.run([sys.executable, "-m", "mockgpu.tinygrad.firmware", "--chip", "gfx950", "--chip", "gfx942", *src], env=env, capture_output=True, text=True)
  if r.returncode != 0:
    pytest.skip(f"no source of gfx950's and gfx942's firmware on this machine (set MOCKGPU_FIRMWARE_DEB to a firmware-amd-graphics .deb, or install "
                f"firmware-amd-graphics): {r.stdout.strip().splitlines()[-4:] if r.stdout.strip() else r.stderr.strip()}")
  return {"XDG_CACHE_HOME": str(tmp), "MOCKGPU_CACHE": str(cache_dir()), "LLVM_PATH": _libllvm()}
