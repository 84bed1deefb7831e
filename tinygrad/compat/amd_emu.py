"""`test.mockgpu.amd.emu.run_asm`: tinygrad's AMD assembler tests (its test/amd) run raw instruction bytes on the emulator
with this call, passing plain ctypes buffers whose addresses appear only inside the kernel arguments.

So the kernel may touch any host memory the process has mapped read-write, as on a GPU sharing the process's address
space: each call builds a MemoryMap from /proc/self/maps (read-write mappings, file-backed ones clipped to the file's end).
An access to anything else (unmapped, read-only, guard pages) is a clean GPUFault with the emulator's report, never a signal.
Return value: 0 when every wave reached S_ENDPGM, else the code in STATUS for what stopped the kernel (its report is printed
to stderr and kept in last_error()). Wrong arguments (unknown arch, empty code, a block the arch cannot run) raise RunAsmError."""
from __future__ import annotations
import ctypes, os, stat, sys
from mockgpu.emu.api import Dispatch, run
from mockgpu.emu.arch import get_arch
from mockgpu.emu.errors import EmuError, GPUFault, InvalidInstruction, WaveTrap, WatchdogExpired, Deadlock, UnsupportedDispatch, BackendUnavailable
from mockgpu.emu.memory import MemoryMap
from mockgpu.tinygrad.errors import RunAsmError

__all__ = ["run_asm", "last_error", "host_memory", "ARCHS", "STATUS", "OTHER"]

ARCHS = {"rdna3": "gfx1100", "rdna4": "gfx1201", "cdna": "gfx950"}   # run_asm's arch names -> emulator targets
STATUS: dict[type, int] = {GPUFault: 1, InvalidInstruction: 2, WaveTrap: 3, WatchdogExpired: 4, Deadlock: 5}
OTHER = 6   # any other emulator error raised while the kernel ran
PAGE = os.sysconf("SC_PAGE_SIZE")
_last: list[EmuError | None] = [None]

def last_error() -> EmuError | None:
  """The emulator error of the last run_asm call that returned non-zero (None after a successful call)."""
  return _last[0]

def _mappings(path:str):
  """(start, end, perms, name) of each mapping that can be touched without a signal: a file-backed mapping ends at the page
  holding the file's last byte (past it is SIGBUS), mappings of devices and the kernel's [vvar]/[vdso]/[vsyscall] are left out."""
  with open(path) as f: lines = f.read().splitlines()
  for line in lines:
    rng, perms, off, _, inode, *name = line.split(maxsplit=5)
    lo, hi = (int(x, 16) for x in rng.split("-"))
    name = name[0].strip() if name else ""
    if name.startswith("[v") or perms[0] != "r": continue
    if inode != "0":
      try: st = os.stat(f"/proc/self/map_files/{rng}")
      except OSError: continue
      if not stat.S_ISREG(st.st_mode): continue
      hi = min(hi, lo + (max(0, st.st_size - int(off, 16)) + PAGE - 1) // PAGE * PAGE)
      if hi <= lo: continue
    yield lo, hi, perms, name or "anonymous"

def host_memory(path:str="/proc/self/maps", writable:bool=True) -> MemoryMap:
  """A MemoryMap of the process's readable (and, by default, writable) mappings, adjacent ones merged, named `host <name>`.

  Args: path: the maps file to read. writable: keep only read-write mappings (what a kernel may be given: the emulator does not
    distinguish loads from stores per range).
  Returns: the MemoryMap."""
  mem, cur = MemoryMap(), None
  for lo, hi, perms, name in _mappings(path):
    if writable and perms[1] != "w": continue
    if cur is not None and cur[1] == lo: cur[1] = hi
    else:
      if cur is not None: mem.add(cur[0], cur[1] - cur[0], cur[2])
      cur = [lo, hi, f"host {name}"]
  if cur is not None: mem.add(cur[0], cur[1] - cur[0], cur[2])
  return mem

def _int(x) -> int: return x if isinstance(x, int) else (x.value or 0)

def run_asm(lib, lib_sz, gx, gy, gz, lx, ly, lz, args_ptr, rsrc2=0x19c, scratch_size=0, arch="rdna3", user_data=None) -> int:
  """Run `lib_sz` bytes of instructions at host address `lib` as one dispatch and wait for it.

  Args:
    lib, lib_sz: host address of the first instruction and the code's size in bytes.
    gx, gy, gz: workgroups; lx, ly, lz: threads per workgroup (wave32 on rdna3/rdna4, wave64 on cdna).
    args_ptr: 64-bit kernel-argument address, loaded into s0 (low) and s1 (high) unless `user_data` is given.
    rsrc2: COMPUTE_PGM_RSRC2 (USER_SGPR_COUNT, SCRATCH_EN, TGID_*_EN, TIDIG_COMP_CNT, LDS_SIZE); with LDS_SIZE 0 a workgroup
      gets the arch's whole LDS, since run_asm has no group-segment size.
    scratch_size: private memory bytes per lane.
    arch: "rdna3" (gfx1100), "rdna4" (gfx1201) or "cdna" (gfx950).
    user_data: the user SGPR values (u32 each, masked) instead of args_ptr.
  Returns: 0 if the kernel ran to S_ENDPGM, else STATUS[type of the error] (OTHER for other emulator errors); the report is
    printed to stderr and kept in last_error().
  Raises: RunAsmError for an unknown arch, empty code or a dispatch the emulator rejects (block too large, ...), naming it."""
  if arch not in ARCHS: raise RunAsmError(f"run_asm arch={arch!r}: choose one of {', '.join(ARCHS)} (emulated as {', '.join(ARCHS.values())})")
  spec, lib, lib_sz, _last[0] = get_arch(ARCHS[arch]), _int(lib), int(lib_sz), None
  if lib_sz <= 0: raise RunAsmError(f"run_asm lib_sz={lib_sz}: the code must be at least one instruction long")
  sgprs = tuple(int(x) & 0xffffffff for x in user_data) if user_data is not None else (_int(args_ptr) & 0xffffffff, _int(args_ptr) >> 32 & 0xffffffff)
  mem, keep = host_memory(), None
  if mem.find(lib, lib_sz) is None and host_memory(writable=False).find(lib, lib_sz) is not None:
    # code in a read-only mapping: run a copy, since a range the kernel may fetch from is one it may also store to
    keep = ctypes.create_string_buffer(lib_sz + 256)
    ctypes.memmove(addr := (ctypes.addressof(keep) + 255) & ~255, lib, lib_sz)
    lib, mem = addr, host_memory()
  d = Dispatch(spec.name, lib, grid=(gx, gy, gz), block=(lx, ly, lz), user_sgprs=sgprs, rsrc2=rsrc2, wave64=spec.wave_sizes[0] == 64,
               lds_bytes=0 if rsrc2 >> 15 & 0x1ff else spec.max_lds, scratch_bytes_per_lane=scratch_size)
  try: run(d, mem)
  except (UnsupportedDispatch, BackendUnavailable) as e: raise RunAsmError(f"run_asm arch={arch}: {e}") from e
  except EmuError as e:
    _last[0] = e
    hint = ("\nrun_asm: the kernel may touch every read-write mapping of this process and this address lies in none; check the "
            "pointers in the kernel arguments") if isinstance(e, GPUFault) and e.report.space == "global" else ""
    print(f"run_asm arch={arch} ({spec.name}): {type(e).__name__}: {e}{hint}", file=sys.stderr)
    return next((c for t, c in STATUS.items() if isinstance(e, t)), OTHER)
  return 0
