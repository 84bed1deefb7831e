"""Fault reports: out-of-bounds global (read/write/atomic), LDS and scratch accesses, invalid and unsupported instructions,
instruction fetch past the code, watchdog. The report fields are asserted exactly; host memory outside the ranges is untouched."""
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from mockgpu.emu.errors import GPUFault, InvalidInstruction, WatchdogExpired
from mockgpu.emu.api import run_code
from mockgpu.emu.memory import MemoryMap
from isa_harness import run, Bufs, code

def test_global_write_oob_report():
  buf = np.zeros(40, np.uint32)              # registered: the first 16 words only
  mem = Bufs(); mem.mem.add(buf.ctypes.data, 64, "small")
  with pytest.raises(GPUFault) as ei:
    run([v_lshlrev_b32_e32(v[1], 2, v[0]), v_add_nc_u32_e32(v[2], 7, v[0]), global_store_b32(addr=v[1], data=v[2], saddr=s[0:1])], mem,
        sgprs=(buf.ctypes.data & 0xffffffff, buf.ctypes.data >> 32))
  r = ei.value.report
  assert (r.kind, r.space, r.size, r.lane, r.wave, r.workgroup) == ("write", "global", 4, 16, 0, (0, 0, 0))
  assert r.address == buf.ctypes.data + 64 and r.nearest == ("small", buf.ctypes.data, 64) and r.offset == 64
  assert r.pc == 8 and r.arch == "gfx1100" and "GLOBAL_STORE_B32" in r.disasm and r.raw == global_store_b32(addr=v[1], data=v[2], saddr=s[0:1]).to_bytes()
  np.testing.assert_array_equal(buf[:16], 7 + np.arange(16))
  assert not buf[16:].any()                   # nothing written past the registered range

def test_global_read_and_atomic_oob_kinds():
  mem = Bufs(np.zeros(4, np.uint32))
  with pytest.raises(GPUFault) as ei: run([v_mov_b32_e32(v[1], 0x100), global_load_b32(vdst=v[2], addr=v[1], saddr=s[0:1])], mem)
  assert ei.value.report.kind == "read" and ei.value.report.offset == 0x100 and ei.value.report.lane == 0
  with pytest.raises(GPUFault) as ei: run([v_mov_b32_e32(v[1], 0x40), global_atomic_add_u32(addr=v[1], data=v[1], saddr=s[0:1])], mem)
  assert ei.value.report.kind == "atomic" and ei.value.report.offset == 0x40 and ei.value.report.nearest[0] == "buf0"

def test_unmapped_address_names_no_allocation():
  with pytest.raises(GPUFault, match="no allocation is registered|nearest allocation 'code'") as ei:
    run([v_mov_b32_e32(v[1], 0), v_mov_b32_e32(v[2], 0), global_load_b32(vdst=v[3], addr=v[1:2], saddr=NULL)], sgprs=())
  assert ei.value.report.address == 0 and ei.value.report.space == "global"

def test_lds_oob():
  with pytest.raises(GPUFault) as ei:
    run([v_lshlrev_b32_e32(v[1], 4, v[0]), ds_store_b32(addr=v[1], data0=v[0])], sgprs=(), lds_bytes=256)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.lane, r.limit) == ("write", "lds", 256, 4, 16, 256)

def test_scratch_oob():
  with pytest.raises(GPUFault) as ei:
    run([v_mov_b32_e32(v[1], 16), scratch_load_b32(vdst=v[2], addr=v[1], saddr=NULL, sve=1)], sgprs=(), scratch_bytes_per_lane=16)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.lane, r.limit) == ("read", "scratch", 16, 4, 0, 16)

def test_invalid_instruction():
  with pytest.raises(InvalidInstruction) as ei: run_code(code(s_nop(simm16=0), end=False) + b"\xff\xff\xff\xff" + code(), block=(32, 1, 1))
  r = ei.value.report
  assert r.pc == 4 and r.raw[:4] == b"\xff\xff\xff\xff" and r.arch == "gfx1100" and "gfx1100" in str(ei.value)

def test_unsupported_instruction_names_it():
  with pytest.raises(InvalidInstruction, match="unsupported") as ei: run([s_sendmsg(simm16=1)], sgprs=())
  assert "S_SENDMSG" in ei.value.report.disasm and ei.value.report.pc == 0

def test_fetch_past_code_end():
  with pytest.raises(GPUFault) as ei: run([s_mov_b32(s[0], 1)], end=False, sgprs=())
  r = ei.value.report
  assert (r.kind, r.space, r.address - r.nearest[1]) == ("fetch", "code", 4)

def test_watchdog():
  with pytest.raises(WatchdogExpired) as ei: run([s_branch(simm16=0xffff)], sgprs=(), budget=10_000)
  assert ei.value.budget == 10_000 and ei.value.report.pc == 0 and "S_BRANCH" in ei.value.report.disasm

@pytest.mark.parametrize("backend", ["c", "python"])
def test_timeout_names_the_wall_clock_limit(backend):
  """run(..., timeout=S) on an endless loop: WatchdogExpired says the S-second wall-clock timeout expired, not a budget."""
  with pytest.raises(WatchdogExpired, match=r"wall-clock timeout of 0\.05 s expired at pc=0x0 ") as ei:
    run([s_branch(simm16=0xffff)], sgprs=(), timeout=0.05, backend=backend)
  assert ei.value.timeout == 0.05 and ei.value.report.extra["timeout"] == 0.05 and "budget" not in str(ei.value).split("Next step")[0]
  with pytest.raises(WatchdogExpired, match="budget of 1000 wave-instructions per workgroup exceeded") as ei:
    run([s_branch(simm16=0xffff)], sgprs=(), budget=1000, timeout=60, backend=backend)
  assert ei.value.timeout is None and ei.value.budget == 1000

def test_code_not_mapped():
  from mockgpu.emu.api import Dispatch, run as erun
  with pytest.raises(GPUFault, match="register the code object"): erun(Dispatch("gfx1100", 0x1000), MemoryMap())

@pytest.mark.parametrize("backend", ["c", "python"])
@pytest.mark.parametrize("op,m0,kind,index", [(v_movrels_b32_e32(v[1], v[10]), 250, "read", 260), (v_movreld_b32_e32(v[0], v[1]), 256, "write", 256),
                                              (v_movrelsd_b32_e32(v[1], v[2]), 0x7fff, "read", 0x8001), (v_movrelsd_2_b32_e32(v[250], v[3]), 9 << 16, "write", 259)])
def test_movrel_past_the_vgpr_file(op, m0, kind, index, backend):
  """V_MOVREL* address VGPRs as the operand's register + M0 (MOVRELSD_2: M0[9:0] for the source, M0[25:16] for the
  destination); past the wave's 256 VGPRs (gfx1100) the wave faults in space "vgpr" naming the index and the file size."""
  with pytest.raises(GPUFault, match="VGPR index") as ei: run([s_mov_b32(M0, m0), op], sgprs=(), backend=backend)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.lane, r.limit, r.pc) == (kind, "vgpr", index, 4, 0, 256, 8)
  assert op.op.name in r.disasm and r.raw == op.to_bytes()

@pytest.mark.parametrize("backend", ["c", "python"])
def test_setpc_below_the_code_reports_the_real_address(backend):
  """S_SETPC_B64 to 0x100 bytes before the S_GETPC result (code + 4): the fetch faults at that 64-bit address, `pc_addr`
  is the same address (not + 2^64) and `pc` the negative offset from the code."""
  with pytest.raises(GPUFault) as ei:
    run([s_getpc_b64(s[0:1]), s_sub_u32(s[0], s[0], 0x100), s_subb_u32(s[1], s[1], 0), s_setpc_b64(s[0:1])], sgprs=(), backend=backend)
  r = ei.value.report
  code_addr = r.nearest[1]
  assert (r.kind, r.space, r.address, r.pc_addr, r.pc, r.offset) == ("fetch", "code", code_addr + 4 - 0x100, code_addr + 4 - 0x100, 4 - 0x100, 4 - 0x100)
  assert f"pc=-0xfc (abs {code_addr - 0xfc:#x})" in str(ei.value)
