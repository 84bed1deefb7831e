"""Run Tensor programs on a mock GPU named by DEV (e.g. `MOCK+NV:PTX`, the mock NVIDIA GPU with tinygrad's PTX renderer) in
a persistent worker process: activation is per process (the `.pth` hook activates the mock at interpreter start when DEV
names it), so the parent never imports the mock.

Protocol: one length-prefixed pickle per command `(module, function, args)`, one per reply: `("ok", result)` or
`("raised", "<Type>: message")` when the function raised (a tinygrad error is a result, not a worker failure). The worker
calls `function(Device.DEFAULT, *args)`. A worker that dies or does not answer within `TIMEOUT` seconds raises
`ExecutorCrashed` and is restarted on the next call.
"""
from __future__ import annotations
import os, pickle, select, struct, subprocess, sys, tempfile
from mockgpu.tinygrad.fuzz.errors import ExecutorCrashed

__all__ = ["DevWorker", "TIMEOUT"]

TIMEOUT = 180.0

def _read(f) -> object|None:
  hdr = f.read(8)
  return None if len(hdr) < 8 else pickle.loads(f.read(struct.unpack("<Q", hdr)[0]))
def _write(f, obj) -> None:
  data = pickle.dumps(obj)
  f.write(struct.pack("<Q", len(data)) + data)
  f.flush()

class DevWorker:
  """A lazily started worker process whose tinygrad runs with `DEV=dev`.

  Args: dev: the DEV value (`MOCK+NV:PTX`). Attributes: starts: how many worker processes were started."""
  def __init__(self, dev:str): self.dev, self.proc, self.log, self.starts = dev, None, None, 0
  def close(self) -> None:
    """Stop the worker (it is restarted on the next call)."""
    if self.proc is not None:
      self.proc.kill()
      self.proc.wait()
      self.proc = None
  def call(self, module:str, fn:str, *args) -> tuple[str, object]:
    """Run `module.fn(Device.DEFAULT, *args)` in the worker.

    Returns: ("ok", result) or ("raised", "<Type>: message").
    Raises: ExecutorCrashed: the worker died or hung."""
    if self.proc is None or self.proc.poll() is not None:
      self.log = tempfile.TemporaryFile()
      self.proc = subprocess.Popen([sys.executable, "-m", "mockgpu.tinygrad.fuzz.devworker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=self.log, env={**os.environ, "DEV": self.dev})
      self.starts += 1
    reply = None
    try:
      _write(self.proc.stdin, (module, fn, args))
      reply = _read(self.proc.stdout) if select.select([self.proc.stdout], [], [], TIMEOUT)[0] else None
    except (BrokenPipeError, EOFError, pickle.UnpicklingError): pass
    if reply is None:
      self.close()
      self.log.seek(0)
      tail = self.log.read().decode(errors="replace").strip().splitlines()[-3:]
      raise ExecutorCrashed(self.dev, f"the worker died or hung (no reply within {TIMEOUT:.0f} s); its stderr ended: {' | '.join(tail) or '(empty)'}")
    return reply

def worker() -> None:
  """The worker's main loop (DEV is set by the parent): read commands from stdin, reply on stdout."""
  import importlib
  from tinygrad.device import Device
  out = os.fdopen(os.dup(1), "wb")
  os.dup2(2, 1)  # tinygrad's own prints must not corrupt the protocol
  inp = os.fdopen(os.dup(0), "rb")
  while (cmd:=_read(inp)) is not None:
    module, fn, args = cmd
    try: reply = ("ok", getattr(importlib.import_module(module), fn)(Device.DEFAULT, *args))
    except Exception as e: reply = ("raised", f"{type(e).__name__}: {e}")  # tinygrad's failures are findings, reported to the parent
    _write(out, reply)
  out.close()
  os._exit(0)

if __name__ == "__main__": worker()
