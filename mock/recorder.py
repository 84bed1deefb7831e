"""Driver-side capture for `mockgpu replay capture`: with MOCKGPU_CAPTURE=DIR in the environment, every dispatch a mock AMD
GPU runs (PM4 DISPATCH_DIRECT and AQL KERNEL_DISPATCH, both through `PM4Queue.launch`) is recorded into DIR in the format of
mockgpu.emu.capture (docs/replay.md).

What is recorded comes from what the command processor sees: the Dispatch; the allocation holding the code (tinygrad puts
each code object in its own); the kernel descriptor in it, found by its entry offset, names the user SGPRs (ABI order, as
the CP loads them), so the kernarg segment (the descriptor's kernarg_size bytes), the dispatch packet and the amd_queue_t
are recorded as the windows they point to. Every u64 of the kernarg segment and the dispatch packet that points into a
mapped allocation is a pointer, and that whole allocation is a buffer, recorded before and after the launch (a region that
holds the code or a window as well gets its after state too: on MOCKPCI a mapped span can hold the code object and small
buffers next to it, since tinygrad's AM driver sub-allocates VRAM and the page walker maps contiguous pages as one). The kernel's
name and ELF come from tinygrad's runtime cache (`tinygrad.engine.realize.runtime_cache`, only read) when the program is there."""
from __future__ import annotations
import ctypes, dataclasses, importlib.metadata, os, platform, sys, threading
from tinygrad.runtime.autogen import amdgpu_kd, hsa
from mockgpu.emu.api import Dispatch
from mockgpu.emu.capture import SGPRS, CaptureWriter, Launch, Pointer, Region
from mockgpu.mock.aql import USER_SGPRS

__all__ = ["ENV", "Recorder", "active"]

ENV = "MOCKGPU_CAPTURE"
# user SGPR (a mock.aql.USER_SGPRS name) -> (region role, bytes it points to; None: the descriptor's kernarg_size)
WINDOWS = {"dispatch ptr": ("dispatch packet", ctypes.sizeof(hsa.hsa_kernel_dispatch_packet_t)),
           "queue ptr": ("queue", ctypes.sizeof(hsa.amd_queue_t)), "kernarg ptr": ("kernarg", None)}
# windows searched for pointers -> the byte offsets of the u64s that may hold one (None: all 8-byte aligned ones); only the
# packet's kernel_object and kernarg_address (the rest of it may be stale bytes of earlier kernel arguments)
PKT = hsa.hsa_kernel_dispatch_packet_t
SCANNED = {"kernarg": None, "dispatch packet": (PKT.kernel_object.offset, PKT.kernarg_address.offset)}
DESC = amdgpu_kd.llvm_amdhsa_kernel_descriptor_t

_rec: Recorder | None = None
_lock = threading.Lock()

def active() -> Recorder | None:
  """The process's recorder if MOCKGPU_CAPTURE names a directory, else None (cheap: called at every launch).

  Raises: CaptureError if the directory cannot be written."""
  global _rec
  if _rec is None and (root:=os.environ.get(ENV)):
    with _lock:
      if _rec is None: _rec = Recorder(root)
  return _rec

def _descriptor(image:bytes, base:int, code_addr:int) -> DESC | None:
  """The kernel descriptor (64-byte aligned, anywhere in the code object) whose entry offset points at `code_addr`."""
  for off in range(0, len(image) - 63, 64):
    entry = int.from_bytes(image[off + 16:off + 24], "little", signed=True)
    if entry and base + off + entry == code_addr: return DESC.from_buffer_copy(image[off:off + 64])
  return None

def _version(dist:str) -> str | None:
  try: return importlib.metadata.version(dist)
  except importlib.metadata.PackageNotFoundError: return None

class _Pending:
  """A launch between `Recorder.begin` and `end`: regions with their before states."""
  def __init__(self, rec:Recorder, queue, d:Dispatch, regions:list[Region], pointers:list[Pointer], name:str | None, elf:str | None,
               outs:set[int]):
    self.rec, self.queue, self.d, self.regions, self.pointers, self.name, self.elf = rec, queue, d, regions, pointers, name, elf
    self.outs = outs   # indices of the regions a kernel argument points into: their after states are recorded

  def end(self, error:BaseException | None = None):
    """Record the launch: after states of the regions kernel arguments point into, or the error that stopped it."""
    gpu, w = self.queue.gpu, self.rec.w
    if error is None:
      self.regions = [dataclasses.replace(r, after=w.blob(bytes(gpu.read(r.addr, r.size, "capture", "buffer after")))) if i in self.outs else r
                      for i, r in enumerate(self.regions)]
    w.record(Launch(-1, os.getpid(), gpu.node.node, self.queue.engine, self.name, self.d, tuple(self.regions), tuple(self.pointers), self.elf,
                    None if error is None else f"{type(error).__name__}: {error}").to_json())

class Recorder:
  """Records the launches of this process into a capture directory (see the module doc). Called on the device thread."""
  def __init__(self, root:str):
    self.w, self.started, self.programs, self.warned = CaptureWriter(root), False, {}, set()

  def _program(self, code_start:int) -> tuple[str | None, bytes | None]:
    """(name, ELF) of the tinygrad program whose code object is the allocation at `code_start`, from its runtime cache."""
    if code_start not in self.programs:
      cache = getattr(sys.modules.get("tinygrad.engine.realize"), "runtime_cache", {})
      for prg in list(cache.values()):
        if getattr(getattr(prg, "lib_gpu", None), "va_addr", None) == code_start: self.programs[code_start] = (prg.name, bytes(prg.lib))
    return self.programs.get(code_start, (None, None))

  def _warn(self, key, msg:str):
    if key not in self.warned:
      self.warned.add(key)
      print(f"mockgpu capture: {msg}", file=sys.stderr)

  def begin(self, queue, d:Dispatch) -> _Pending | None:
    """Snapshot what launch `d` on `queue` reads. Returns the pending record, None if the code is not mapped (the
    emulator reports that fault itself)."""
    gpu, mem = queue.gpu, queue.gpu.memory
    if not self.started:
      self.started = True
      self.w.record({"type": "process", "pid": os.getpid(), "argv": sys.argv, "source": "mock", "tinygrad": _version("tinygrad"),
                     "mockgpu": _version("mockgpu"), "python": platform.python_version()})
    if (code:=mem.find(d.code_addr)) is None: return None
    image = bytes(gpu.read(code.start, code.size, "capture", "code object"))
    spans, ptrs = [["code", code.start, code.end, code.granule, None, False]], []   # [role, start, end, granule, arg, out]; (where, value)

    def point(where, value:int, role:str, size:int | None, arg:int | None = None):
      if (s:=next((s for s in spans if s[1] <= value < s[2]), None)) is not None:
        s[5] |= role == "buffer"
        ptrs.append((where, value))
      elif (r:=mem.find(value)) is not None:
        end = r.end if size is None else min(value + size, r.end)
        if end > value:
          spans.append([role, r.start if size is None else value, end, r.granule, arg, role == "buffer"])
          ptrs.append((where, value))

    if (desc:=_descriptor(image, code.start, d.code_addr)) is None:
      self._warn(code.start, f"no kernel descriptor found for the code at {d.code_addr:#x}: its kernel arguments and buffers are not recorded")
    else:
      i = 0
      for bit, name, n in USER_SGPRS:
        if not desc.kernel_code_properties & bit: continue
        if name in WINDOWS and i + 1 < len(d.user_sgprs):
          role, size = WINDOWS[name]
          point((SGPRS, i), d.user_sgprs[i] | d.user_sgprs[i + 1] << 32, role, desc.kernarg_size if size is None else size)
        i += n
      for role, start, end, *_ in [s for s in spans if s[0] in SCANNED]:
        data = gpu.read(start, end - start, "capture", role)
        for off in SCANNED[role] or range(-start % 8, end - start - 7, 8):
          if off + 8 > len(data): continue
          point(start + off, int.from_bytes(data[off:off + 8], "little"), "buffer", None, off // 8 if role == "kernarg" else None)

    merged: list[list] = []   # overlapping spans (a buffer allocation holding a window) become one region; a buffer wins
    for s in sorted(spans, key=lambda s: s[1]):
      if merged and s[1] < merged[-1][2]:
        m = merged[-1]
        m[2], m[4], m[5] = max(m[2], s[2]), m[4] if m[4] is not None else s[4], m[5] or s[5]
        if s[0] == "buffer": m[0] = "buffer"
      else: merged.append(list(s))
    merged.sort(key=lambda m: (m[0] != "code", m[0] == "buffer", -1 if m[4] is None else m[4], m[1]))   # code, windows, buffers by argument
    def at(addr:int) -> tuple[int, int]: return next((i, addr - m[1]) for i, m in enumerate(merged) if m[1] <= addr < m[2])
    def contents(role:str, start:int, end:int) -> bytes: return image if start == code.start else bytes(gpu.read(start, end - start, "capture", role))
    regions = [Region(role, start, end - start, gran, self.w.blob(contents(role, start, end)), arg=arg) for role, start, end, gran, arg, _ in merged]
    pointers = [Pointer(where[0], where[1], *at(value)) if isinstance(where, tuple) else Pointer(*at(where), *at(value)) for where, value in ptrs]
    name, elf = self._program(code.start)
    return _Pending(self, queue, d, regions, pointers, name, None if elf is None else self.w.blob(elf), {i for i, m in enumerate(merged) if m[5]})
