"""Wave control: S_TRAP and S_SETHALT/S_SENDMSGHALT stop the dispatch with a structured report (no trap handler is installed),
S_SETKILL ends the wave, S_SENDMSG (MSG_DEALLOC_VGPRS) and S_SENDMSG_RTN_B32/B64 return values; both backends, RDNA3 and RDNA4."""
import pytest
from tinygrad.runtime.autogen.amd.rdna3 import ins as R3
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from mockgpu.emu.api import run_code
from mockgpu.emu.errors import InvalidInstruction, WaveTrap

ARCHS = [("gfx1100", R3), ("gfx1201", R4)]
BACKENDS = ["c", "python"]

def prog(I, *insts) -> bytes: return b"".join(i.to_bytes() for i in insts) + I.s_endpgm().to_bytes()

def msg(I, op, sdst, m):
  # the message id sits in the raw SSRC0 field (ISA: SSRC0 = message); the DSL encodes the inline integer n as 128 + n
  return op(sdst, m - 128)

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch,I", ARCHS)
def test_trap_report(arch, I, backend):
  # only workgroup x=2 traps; wgs are run in order, so (0,0,0) and (1,0,0) completed; the trap reports PC, id, wave, workgroup
  rsrc2 = 0 if arch == "gfx1201" else 1 << 7        # gfx11: TGID_X in s0; gfx12: in TTMP9
  wgx = I.ttmp[9] if arch == "gfx1201" else I.s[0]
  insts = [I.s_cmp_eq_u32(wgx, 2), I.s_cbranch_scc0(simm16=1), I.s_trap(simm16=0x42)]
  code = prog(I, *insts)
  with pytest.raises(WaveTrap, match="S_TRAP 0x42") as ei:
    run_code(code, arch=arch, grid=(4, 1, 1), block=(64, 1, 1), rsrc2=rsrc2, backend=backend)
  r = ei.value.report
  pc = len(insts[0].to_bytes()) + len(insts[1].to_bytes())
  assert (r.kind, r.space, r.extra["trap_id"], r.pc, r.wave, r.workgroup, r.arch) == ("trap", "none", 0x42, pc, 0, (2, 0, 0), arch)
  assert r.address == r.pc_addr and r.raw == insts[2].to_bytes() and "S_TRAP" in r.disasm

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch,I", ARCHS)
def test_halt_and_kill(arch, I, backend):
  with pytest.raises(WaveTrap, match="halted") as ei:
    run_code(prog(I, I.s_sethalt(simm16=0), I.s_nop(simm16=0), I.s_sethalt(simm16=1)), arch=arch, backend=backend)
  assert (ei.value.report.kind, ei.value.report.pc, ei.value.report.wave) == ("halt", 8, 0)
  # S_SETKILL 1 ends wave 0 before its store; wave 1 still runs; S_SETKILL 0 does nothing
  st = run_code(prog(I, I.s_setkill(simm16=0), I.s_mov_b32(I.s[5], 7), I.s_setkill(simm16=1), I.s_mov_b32(I.s[5], 9)), arch=arch,
                block=(64, 1, 1), backend=backend, op_counts=True)
  assert st.instructions == 2 * 3 and st.waves == 2

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch,I", ARCHS)
def test_sendmsg_rtn(arch, I, backend):
  # REALTIME is the emulated clock: wave-instructions the dispatch executed so far, this one included (here: 1 and 3)
  st = run_code(prog(I, msg(I, I.s_sendmsg_rtn_b32, I.s[4], 131), I.s_mov_b32(I.s[6], -1), msg(I, I.s_sendmsg_rtn_b64, I.s[6:7], 131),
                     msg(I, I.s_sendmsg_rtn_b64, I.s[8:9], 130), msg(I, I.s_sendmsg_rtn_b32, I.s[10], 133), I.s_sendmsg(simm16=3)),
                arch=arch, backend=backend, capture=True)
  s = st.state.sgprs
  assert (s[4], s[6], s[7], s[8], s[9], s[10]) == (1, 3, 0, 0, 0, 0)
  with pytest.raises(InvalidInstruction, match="S_SENDMSG_RTN message 132"):
    run_code(prog(I, msg(I, I.s_sendmsg_rtn_b32, I.s[4], 132)), arch=arch, backend=backend)
  with pytest.raises(InvalidInstruction, match="S_SENDMSG message 1 "):
    run_code(prog(I, I.s_sendmsg(simm16=1)), arch=arch, backend=backend)

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("arch,I", ARCHS)
def test_shader_cycles_is_the_emulated_clock(arch, I, backend):
  # S_GETREG of the cycle counter reads the same deterministic clock as GET_REALTIME (RDNA3: SHADER_CYCLES, 20 bits at
  # id 29; RDNA4: SHADER_CYCLES_LO / _HI at 29 / 30); simm16 = id | offset << 6 | (size - 1) << 11
  regs = [I.s_getreg_b32(I.s[4], simm16=29 | 31 << 11), I.s_nop(simm16=0), I.s_getreg_b32(I.s[5], simm16=29 | 31 << 11)]
  if arch == "gfx1201": regs.append(I.s_getreg_b32(I.s[6], simm16=30 | 31 << 11))
  st = run_code(prog(I, *regs, msg(I, I.s_sendmsg_rtn_b32, I.s[7], 131)), arch=arch, backend=backend, capture=True)
  s = st.state.sgprs
  assert (s[4], s[5], s[6], s[7]) == (1, 3, 0, len(regs) + 1)
