"""Run real tinygrad on the mock in a fresh interpreter (`sys.executable`), so DEV is read at start-up as in real use.
The timeout is generous because the first kernel of a fresh machine waits for the emulator's one-time C build."""
import json, os, subprocess, sys, textwrap
import pytest

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
