"""Turn a backend's raw fault record into the structured FaultReport and the right exception (shared by both backends)."""
from __future__ import annotations
from mockgpu.emu.arch import ArchSpec
from mockgpu.emu.errors import Deadlock, FaultReport, GPUFault, InvalidInstruction, WaveTrap, WatchdogExpired, EmuError
from mockgpu.emu.isa import formats
from mockgpu.emu.memory import MemoryMap
from mockgpu.emu import facts
from mockgpu.emu.facts import ST_OK, ST_FAULT, ST_INVALID, ST_WATCHDOG, ST_UNSUPPORTED, ST_TIMEOUT, ST_NOMEM, ST_TRAP, ST_DEADLOCK

__all__ = ["disasm", "pc_fields", "raise_status", "oob_report", "watch_report", "ST_OK", "ST_FAULT", "ST_INVALID", "ST_WATCHDOG", "ST_UNSUPPORTED", "ST_TIMEOUT", "ST_NOMEM", "ST_TRAP", "ST_DEADLOCK"]

# the backends' codes (mockgpu.emu.facts) -> the names FaultReport uses; SP_BUFFER never reaches a report (buffer faults are global)
KINDS = {v: k.lower() for k, v in facts.KINDS.items()}
SPACES = {v: k.lower() for k, v in facts.SPACES.items() if k != "BUFFER"}
WAITS = {v: {"SEMA": "semaphore"}.get(k, k.lower()) for k, v in facts.WAITS.items()}
STRICT_FAULT = "a write or atomic outside every allocation but inside its mapped page faults only in strict mode (MOCKGPU_STRICT=1)"

M64 = (1 << 64) - 1

def pc_fields(code_addr: int, pc: int) -> dict:
  """`pc` (the backends' u64 offset from code_addr, wrapped for a jump below the code) as the signed offset and the real
  64-bit address of the instruction."""
  pc &= M64
  return {"pc": pc - (1 << 64) if pc >> 63 else pc, "pc_addr": (code_addr + pc) & M64}

def disasm(arch: ArchSpec, raw: bytes, fmt: int = -1, op: int = -1) -> str:
  """Best-effort text for an instruction: tinygrad's decode (repr of the DSL instruction), else format + opcode name."""
  fmts = formats(arch.family)
  name = ""
  if 0 <= fmt < len(fmts):
    f = fmts[fmt]
    try: name = f"{f.name} {f.enum(op).name}" if f.enum is not None and op >= 0 else f.name
    except ValueError: name = f"{f.name} op={op} (not a valid opcode)"
  try:
    from tinygrad.renderer.amd import decode_inst
    return f"{decode_inst(raw, arch.family)!r}" + (f" [{name}]" if name else "")
  except Exception:   # the DSL rejects the bytes: fall back to our own table match
    return name or f"no {arch.family} encoding matches word {int.from_bytes(raw[:4].ljust(4, b'0'), 'little'):#010x}"

def raise_status(arch: ArchSpec, status: int, *, code_addr: int, memory: MemoryMap, budget: int, timeout: float | None, pc: int,
                 raw: bytes, fmt: int, op: int, wave: int, wg: tuple, kind: int = 0, space: int = 0, addr: int = 0, size: int = 0,
                 lane: int = -1, limit: int = 0, msg: str = "", info: tuple = ()) -> None:
  """Raise the exception for a non-OK backend status (no-op for ST_OK). `info` (ST_DEADLOCK): wait kind, GWS id or ordered
  index, GWS counter, blocked waves, resident workgroups, ordinal of the wave an ordered count waits for."""
  if status == ST_OK: return
  text = disasm(arch, raw, fmt, op) if raw else "(no instruction)"
  base = dict(arch=arch.name, raw=raw, disasm=text, lane=lane, wave=wave, workgroup=tuple(wg), **pc_fields(code_addr, pc))
  if status == ST_FAULT:
    sp = SPACES.get(space, "none")
    near = off = None
    if sp in ("global", "code") and (r := memory.nearest(addr)) is not None: near, off = (r.name, r.start, r.size), addr - r.start
    strict = sp == "global" and memory.strict and memory.spans()[1].find(addr, max(size, 1)) is not None
    if strict: msg = msg or STRICT_FAULT
    rep = FaultReport(KINDS.get(kind, "access"), sp, addr, size, nearest=near, offset=off,
                      limit=limit if sp in ("lds", "scratch", "code", "gds", "vgpr") else None, extra={"message": msg}, **base)
    hint = {"lds": "the kernel indexes LDS beyond the workgroup's allocation (Dispatch.lds_bytes / RSRC2 LDS_SIZE)",
            "scratch": "the kernel indexes private memory beyond Dispatch.scratch_bytes_per_lane",
            "code": "a branch or s_setpc left the code object; check the jump target",
            "gds": "DS_ORDERED_COUNT's M0[15:0] + 4 * lane must be a dword inside the ordered-count memory",
            "vgpr": "the instruction computes a VGPR index (V_MOVRELS/V_MOVRELD/V_MOVRELSD: the operand's register + M0) past the "
                    "wave's VGPR file (addr = the index, limit = the file's size); check the M0 the kernel sets before it"}.get(sp, "check the kernel's indexing or register the buffer with MemoryMap.add")
    if strict: hint = "fix the kernel's indexing; the hardware would write there silently (" + STRICT_FAULT + ")"
    if kind == 0: raise EmuError(f"emulator fault at pc={base['pc']:#x}: {msg}. Next step: report this kernel (raw={raw.hex()})")
    raise GPUFault(rep, hint)
  if status in (ST_INVALID, ST_UNSUPPORTED):
    rep = FaultReport("invalid", "code", base["pc_addr"], len(raw), extra={"message": msg}, **base)
    raise InvalidInstruction(rep, ("unsupported: " if status == ST_UNSUPPORTED else "") + (msg or "undecodable"))
  if status == ST_TRAP:   # kind 1: S_TRAP with the trap id in addr, 2: the wave halted
    extra = {"message": msg, **({"trap_id": addr} if kind == 1 else {})}
    raise WaveTrap(FaultReport("trap" if kind == 1 else "halt", "none", base["pc_addr"], len(raw), extra=extra, **base))
  if status == ST_DEADLOCK:
    wk, rid, cnt, blocked, nres, waited = info
    fm = formats(arch.family)[fmt] if 0 <= fmt < len(formats(arch.family)) else None
    extra = {"message": msg, "op": fm.enum(op).name if fm is not None and fm.enum is not None else "?", "wait": WAITS.get(wk, "?"),
             "blocked_waves": blocked, "resident_workgroups": nres,
             **({"ordered_index": rid, "waiting_for_wave": waited} if wk == 3 else {"gws_id": rid, "counter": cnt})}
    raise Deadlock(FaultReport("deadlock", "none", base["pc_addr"], len(raw), extra=extra, **base))
  if status in (ST_WATCHDOG, ST_TIMEOUT):
    rep = FaultReport("watchdog", "none", 0, 0, extra={"timeout": timeout if status == ST_TIMEOUT else None}, **base)
    raise WatchdogExpired(rep, budget, timeout if status == ST_TIMEOUT else None)
  raise EmuError(f"emulator error status={status} at pc={base['pc']:#x}: {msg}")

def oob_report(arch: ArchSpec, memory: MemoryMap, code_addr: int, count: int, addr: int, size: int, lane: int, wave: int, wg: tuple, pc: int,
               raw: bytes, fmt: int = -1, op: int = -1) -> FaultReport:
  """The report of a strict-mode read outside every allocation but inside its mapped granules (the first of `count`)."""
  near = memory.nearest(addr)
  return FaultReport("read", "global", addr, size, arch=arch.name, **pc_fields(code_addr, pc), raw=raw,
                     disasm=disasm(arch, raw, fmt, op) if raw else "(no instruction)", lane=lane, wave=wave, workgroup=tuple(wg),
                     nearest=(near.name, near.start, near.size) if near else None, offset=addr - near.start if near else None,
                     extra={"message": "read outside the allocation, inside its mapped page: the hardware performs it (strict mode)",
                            "count": count})

def watch_report(arch: ArchSpec, watch: tuple[int, int], count: int, first: tuple | None, last: tuple | None):
  """api.WatchReport from the backends' records: (addr, size, lane, wave, workgroup, pc, raw, fmt, op) of the first and the
  last store into the watched range."""
  from mockgpu.emu.api import StoreRecord, WatchReport
  def rec(r): return None if r is None else StoreRecord(r[0], r[1], r[2], r[3], tuple(r[4]), r[5], disasm(arch, r[6], r[7], r[8]) if r[6] else "(no instruction)")
  return WatchReport(watch[0], watch[1], count, rec(first), rec(last))
