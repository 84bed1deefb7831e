"""The mock AMD GPU (gfx1100 emulator behind tinygrad's `DEV=MOCKKFD+AMD`) as a fuzz executor, in a persistent worker process.

Activation is per process and a GPU that faulted stays in tinygrad's error state, so the kernels run in a child process
(`python -m mockgpu.tinygrad.fuzz.amdexec`, started lazily on the first run) that the parent drives over a pipe: one
length-prefixed pickle per command, one per reply. The parent lowers and compiles (AMDLLVMRenderer, LLVM's AMDGPU target);
the worker only loads the ELF and runs it. After a fault the worker retires that GPU and continues on the next of its
`GPUS` mock GPUs; when none is left, or it crashed or hung, the parent starts a new worker for the next command.

Buffers are USERPTR allocations placed as close to the end of their GPU mapping as the 32-byte alignment tinygrad's IR
promises (`align 32`) allows, with `GUARD` bytes of unmapped address space on both sides: an index past the end faults once
it leaves the alignment padding, one before the start once it leaves the page slack in front (`slack`), and anything up to
`GUARD` away faults for sure. The fault report the mock prints to stderr is captured in the worker and parsed
(`parse_fault`).
"""
from __future__ import annotations
import ctypes, io, mmap, os, pickle, re, select, struct, subprocess, sys, tempfile, traceback
from dataclasses import dataclass
import numpy as np
from mockgpu.tinygrad.fuzz.errors import ExecFault, ExecutorCrashed

__all__ = ["AmdWorker", "FaultInfo", "parse_fault", "parse_strict_read", "slack", "strict_slack", "lds_slack", "worker", "GUARD", "GPUS",
           "PAGE", "TIMEOUT", "LDS_GRANULE"]

PAGE, GUARD, GPUS, TIMEOUT = 0x1000, 1 << 20, 8, 120.0
LDS_GRANULE = 512  # bytes: a PM4 dispatch's LDS is RSRC2.LDS_SIZE granules (emu `Dispatch.lds_size`), LLVM rounds the group segment up
_FAULTS = ("MMU fault", "HW fault", "Wait timeout")  # how tinygrad reports a GPU fault

def _align32(n:int) -> int: return (n + 31) // 32 * 32
def slack(nbytes:int) -> tuple[int, int, int]:
  """Returns: (bytes before, bytes after) a buffer of `nbytes` that an access can touch without faulting on this executor, and
  the size of the unmapped guard beyond them, where every access faults."""
  n = max(nbytes, 1)
  return (-_align32(n)) % PAGE, _align32(n) - n, GUARD

def strict_slack(nbytes:int) -> tuple[int, int, int]:
  """Returns: `slack` of a strict-mode worker: no byte outside the buffer is free, the unmapped guard starts past its page."""
  return 0, 0, GUARD

def lds_slack(nbytes:int) -> tuple[int, int, int]:
  """Returns: (0, bytes after, guard) for a kernel whose only LDS is a buffer of `nbytes`: the emulator faults every DS access
  outside the workgroup's LDS, which is the group segment rounded up to `LDS_GRANULE` (a negative index wraps to a huge
  address); nothing precedes the buffer."""
  return 0, -max(nbytes, 1) % LDS_GRANULE, 1 << 31

@dataclass(frozen=True)
class FaultInfo:
  """A GPU fault as the worker saw it: the MMU fault address tinygrad raised and, when the mock printed one, the emulator's
  report (kind `read`/`write`, space, address, lane, pc, instruction)."""
  message: str
  addr: int|None = None
  kind: str = ""
  lane: int|None = None
  pc: int|None = None
  inst: str = ""
  space: str = ""
  def __str__(self) -> str:
    if self.kind: return f"{self.kind} fault at addr=0x{self.addr:x} lane={self.lane} pc=0x{self.pc:x} inst={self.inst}"
    return self.message

_REPORT = re.compile(r"GPUFault: (\w+) fault in (\w+): addr=0x([0-9a-f]+) .*?pc=0x([0-9a-f]+) .*?lane=(\d+) .*?inst='([^']*)'")
def parse_fault(message:str, stderr:str) -> FaultInfo:
  """Args: message: tinygrad's RuntimeError text (`MMU fault: 0x<va> | ...` or `HW fault: ...`). stderr: what the mock printed.
  Returns: the fault, with the emulator's report fields when stderr holds one."""
  addr = int(m.group(1), 16) if (m:=re.search(r"MMU fault: 0x([0-9A-Fa-f]+)", message)) else None
  if (r:=_REPORT.search(stderr)) is None: return FaultInfo(message.splitlines()[0] if message else "fault", addr)
  return FaultInfo(message.splitlines()[0], int(r.group(3), 16), r.group(1), int(r.group(5)), int(r.group(4), 16), r.group(6), r.group(2))

# *** the worker process ***

_STRICT_READ = re.compile(r"read\(s\) outside every allocation but inside its mapped page \(strict mode\); the first: \w+ fault in (\w+): "
                          r"addr=0x([0-9a-f]+) .*?pc=0x([0-9a-f]+) .*?lane=(\d+) .*?inst='([^']*)'")
def parse_strict_read(stderr:str) -> FaultInfo|None:
  """Returns: the first read a strict-mode (`MOCKGPU_STRICT=1`) mock GPU reported outside every allocation but inside its
  mapped page (the kernel went on: the hardware performs such reads), as a FaultInfo of kind `strict-read`; None if none."""
  if (m:=_STRICT_READ.search(stderr)) is None: return None
  return FaultInfo(m.group(0), int(m.group(2), 16), "strict-read", int(m.group(4)), int(m.group(3), 16), m.group(5), m.group(1))

class _Runner:
  def __init__(self): self.gpu, self.dev, self.strict = 0, None, os.environ.get("MOCKGPU_STRICT", "0") not in ("", "0")
  def device(self):
    from tinygrad.device import Device
    name = os.environ.get("MOCKGPU_FUZZ_DEVICE", "AMD")  # another mock device (NV) for AmdWorker(env=...)'s `call`
    if self.dev is None: self.dev = Device[name if self.gpu == 0 else f"{name}:{self.gpu}"]
    return self.dev
  def alloc(self, arr:np.ndarray):
    from tinygrad.runtime.support.hcq import FileIOInterface
    nbytes = max(arr.nbytes, 1)
    size = (nbytes + PAGE - 1) // PAGE * PAGE
    base = FileIOInterface.anon_mmap(0, size + 2*GUARD, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | mmap.MAP_ANONYMOUS, 0)
    off = size - _align32(nbytes)
    if self.strict:  # the allocation is the buffer itself (byte-exact checks); the driver still maps its whole page
      buf = self.device().iface.alloc(nbytes, host=True, cpu_addr=base + GUARD + off)
      ctypes.memmove(base + GUARD + off, arr.ctypes.data, arr.nbytes)
      return base, size, buf, buf
    buf = self.device().iface.alloc(size, host=True, cpu_addr=base + GUARD)
    ctypes.memmove(base + GUARD + off, arr.ctypes.data, arr.nbytes)
    return base, size, buf, buf.offset(off, nbytes)
  def free(self, base:int, size:int, buf) -> None:
    from tinygrad.runtime.support.hcq import FileIOInterface
    self.device().iface.free(buf)
    if self.strict: FileIOInterface.munmap(base + GUARD, size)  # tinygrad's free unmaps only the (unaligned) buffer
    FileIOInterface.munmap(base, GUARD)
    FileIOInterface.munmap(base + GUARD + size, GUARD)
  def run(self, elf, global_size, local_size, vals, arrays:dict[int, np.ndarray], strict:bool|None=None) -> tuple:
    dev = self.device()
    if strict is not None: self.mode(strict)
    rt, held = dev.runtime(elf), {i: self.alloc(a) for i, a in arrays.items()}
    def go():
      rt(*[held[i][3] for i in arrays], global_size=global_size, local_size=local_size, vals=vals, wait=True)
      for i, a in arrays.items(): ctypes.memmove(a.ctypes.data, held[i][3].va_addr, a.nbytes)
      for base, size, buf, _ in held.values(): self.free(base, size, buf)
      return arrays
    return self.guarded(go)
  def mode(self, strict:bool) -> None:
    # the memory mode of the next kernels: the mock reads MemoryMap.strict at every dispatch
    from mockgpu.mock.kfd import system
    self.strict = strict
    for gpu in system().gpus.values(): gpu.memory.strict = strict
  def call(self, module:str, fn:str, args:tuple) -> tuple:
    import importlib
    if self.strict: self.mode(False)  # whole programs run as the faithful mock does
    f = getattr(importlib.import_module(module), fn)
    def go():
      try: return f(self.device().device, *args)
      except Exception as e:
        if isinstance(e, RuntimeError) and str(e).startswith(_FAULTS): raise
        return _Raised(type(e).__name__, str(e))
    return self.guarded(go)
  def guarded(self, go) -> tuple:
    err = io.StringIO()
    sys.stderr = err
    try:
      ret = go()
      # strict mode: a read outside the buffer inside its page is performed and reported, the GPU stays usable
      if self.strict and (info:=parse_strict_read(err.getvalue())) is not None: return ("fault", info, True)
      return ("ok", ret)
    except RuntimeError as e:
      if not str(e).startswith(_FAULTS): raise
      self.gpu, self.dev = self.gpu + 1, None  # this GPU stays in error state: its buffers are abandoned with it
      return ("fault", parse_fault(str(e), err.getvalue()), self.gpu < int(os.environ.get("MOCKGPU_GPUS", GPUS)))
    finally: sys.stderr = sys.__stderr__

@dataclass(frozen=True)
class _Raised:
  type: str
  message: str

def _read(f) -> object|None:
  hdr = f.read(8)
  if len(hdr) < 8: return None
  return pickle.loads(f.read(struct.unpack("<Q", hdr)[0]))
def _write(f, obj) -> None:
  data = pickle.dumps(obj)
  f.write(struct.pack("<Q", len(data)) + data)
  f.flush()

def worker() -> None:
  """The worker's main loop (DEV=MOCKKFD+AMD must be set before it starts): read commands from stdin, reply on stdout.

  Commands: `("run", elf, global_size, local_size, vals, {slot: array}[, strict])` (strict: run this kernel in strict mode),
  `("call", module, function, args)` (runs
  `function(device, *args)` with the AMD device name, e.g. a Tensor program). Replies: `("ok", {slot: array} | result)`,
  `("fault", FaultInfo, alive)` (alive: a fresh GPU is left), `("error", text)` (anything else the run raised)."""
  out = os.fdopen(os.dup(1), "wb")
  os.dup2(2, 1)  # tinygrad's own prints must not corrupt the protocol
  inp, runner = os.fdopen(os.dup(0), "rb"), _Runner()
  while (cmd:=_read(inp)) is not None:
    try: reply = runner.run(*cmd[1:]) if cmd[0] == "run" else runner.call(*cmd[1:])
    except Exception: reply = ("error", traceback.format_exc(limit=4))
    _write(out, reply)
    if reply[0] == "fault" and not reply[2]: break
  out.close()
  os._exit(0)  # tinygrad's finalizers would synchronize the faulted GPUs

# *** the parent side ***

class AmdWorker:
  """A lazily started worker process running kernels on the mock AMD GPU.

  Args:
    arch: the emulated target (`gfx1100`).
    gpus: mock GPUs per worker process; each fault retires one, so a worker survives `gpus - 1` faults.
    env: extra environment of the worker (e.g. `DEV=MOCK+NV:PTX` with `MOCKGPU_FUZZ_DEVICE=NV` for another mock device, whose
      kernels then run through `call`; `LLVM_PATH` for a target the parent's libLLVM cannot compile).
    strict: run kernels in the mock's strict mode (MemoryMap.strict, as `MOCKGPU_STRICT=1`) with every buffer its own
      byte-exact allocation: a write outside it faults, a read outside it inside its page is reported as an ExecFault of kind
      `strict-read` (the GPU stays usable). The default of `run`, which can pick the mode per kernel.
  Attributes:
    starts, faults: how many worker processes were started and how many runs faulted (for reports and tests).
  """
  def __init__(self, arch:str="gfx1100", gpus:int=GPUS, env:dict[str, str]|None=None, strict:bool=False):
    self.arch, self.gpus, self.strict, self.proc, self.starts, self.faults, self.log = arch, gpus, strict, None, 0, 0, None
    self.env = dict(env or {})
  def _start(self) -> subprocess.Popen:
    env = {**os.environ, "DEV": f"MOCKKFD+AMD::{self.arch}", "MOCKGPU_GPUS": str(self.gpus), "MOCKGPU_STRICT": "1" if self.strict else "0",
           **self.env}
    self.log = tempfile.TemporaryFile()  # the worker's stderr outside kernel runs: why it died, if it does
    self.proc = subprocess.Popen([sys.executable, "-m", "mockgpu.tinygrad.fuzz.amdexec"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=self.log, env=env)
    self.starts += 1
    return self.proc
  def start(self) -> None:
    """Start the worker process now, if none is running, without waiting for it to be ready (its set-up overlaps the caller's
    work; the first run waits for it)."""
    if self.proc is None or self.proc.poll() is not None: self._start()
  def close(self) -> None:
    """Stop the worker (it is restarted on the next run)."""
    if self.proc is not None:
      self.proc.kill()
      self.proc.wait()
      self.proc = None
  def run(self, prg, arrays:list[np.ndarray], strict:bool|None=None) -> None:
    """Run the compiled PROGRAM UOp `prg` on `arrays` (one per PARAM slot, updated in place); `strict` (default: the
    worker's mode) runs it in strict mode, so one worker serves both modes.

    Raises:
      ExecFault: the GPU faulted (out-of-bounds access, invalid instruction, watchdog); the detail is the parsed report.
      ExecutorCrashed: the worker raised something else, died or did not answer within `TIMEOUT` seconds.
    """
    cmd = ("run", prg.to_elf(), tuple(prg.arg.global_size), tuple(prg.arg.local_size or (1, 1, 1)), tuple(prg.arg.vals({})),
           {i: arrays[i] for i in prg.arg.globals}, self.strict if strict is None else strict)
    for i, a in self._send(cmd).items(): arrays[i][...] = a
  def call(self, module:str, fn:str, *args) -> tuple[str, object]:
    """Run `module.fn(device, *args)` in the worker, `device` being its current AMD device name (`AMD`, `AMD:1`, ...).

    Returns: ("ok", the result) or ("raised", "<Type>: message") when the function raised (e.g. tinygrad's lowering).
    Raises: ExecFault, ExecutorCrashed as `run`."""
    r = self._send(("call", module, fn, args))
    return ("raised", f"{r.type}: {r.message}") if isinstance(r, _Raised) else ("ok", r)
  def _send(self, cmd:tuple):
    reply = None
    for _ in range(2):  # a worker that died between commands (the write fails) is replaced once
      proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
      try: _write(proc.stdin, cmd)
      except BrokenPipeError:
        self.close()
        continue
      try: reply = _read(proc.stdout) if select.select([proc.stdout], [], [], TIMEOUT)[0] else None
      except (EOFError, pickle.UnpicklingError): reply = None
      break
    if reply is None:
      self.close()
      self.log.seek(0)
      tail = self.log.read().decode(errors="replace").strip().splitlines()[-3:]
      raise ExecutorCrashed("AMD", f"the worker died or hung (no reply within {TIMEOUT:.0f} s); its stderr ended: {' | '.join(tail) or '(empty)'}")
    if reply[0] == "error":
      raise ExecutorCrashed("AMD", reply[1])
    if reply[0] == "fault":
      self.faults += 1
      if not reply[2]: self.close()
      raise ExecFault("AMD", str(reply[1]), reply[1])
    return reply[1]

if __name__ == "__main__":
  from mockgpu.tinygrad.fuzz.amdexec import worker as _main  # the module's classes, not __main__'s, go into the replies
  _main()
