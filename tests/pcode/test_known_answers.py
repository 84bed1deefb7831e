"""Known answers per instruction family, run on both backends (C and the Python evaluator). Expected values come from the
ISA definition (written out by hand), numpy, or exact arithmetic, never from the code under test."""
import math, struct
from fractions import Fraction
import numpy as np
from mockgpu.pcode import pyeval
from mockgpu.pcode.cabi import PcState, python_hooks
from mockgpu.pcode.state import WIDE, SCALARS, FIELDS

def f2b(x): return struct.unpack("<I", struct.pack("<f", x))[0]
def b2f(b): return struct.unpack("<f", struct.pack("<I", b & 0xffffffff))[0]
def d2b(x): return struct.unpack("<Q", struct.pack("<d", x))[0]
def h2b(x): return int(np.array(x, np.float16).view(np.uint16))
def i32(x): return x & 0xffffffff
M64 = 2**64 - 1
_NAMES = list(WIDE) + list(SCALARS) + [f"{a}_{b}" for a, b in FIELDS]

class R:
  """Result of one entry on both backends (already checked equal): attribute access gives the Python evaluator's value."""
  def __init__(self, st): self.st = st
  def __getattr__(self, n): return getattr(self.st, n)

def both(clib, arch, op, mem=None, vgpr=None, sgpr=None, **kw) -> R:
  lib = clib(arch)
  mem, vgpr, sgpr = mem or {}, vgpr or {}, sgpr or {}
  s = PcState()
  for k, v in kw.items():
    if k in WIDE:
      for i in range(16): getattr(s, k).q[i] = (v >> (64 * i)) & M64
    else: setattr(s, k, v)
  for a in range(0, 256): lib.mem[a] = 0
  for a, v in mem.items(): lib.mem[a] = v
  for (l, r), v in vgpr.items(): lib.vgpr[l * 256 + r] = v
  for r, v in sgpr.items(): lib.sgpr[r] = v
  assert lib.run(op, s) == 0, s.fault_msg
  p = pyeval.run(arch, op, pyeval.State(mem=dict(mem), vgpr=dict(vgpr), sgpr=dict(sgpr), hooks=python_hooks(arch), **kw))
  for n in _NAMES:
    c = sum(getattr(s, n).q[i] << (64 * i) for i in range(16)) if n in WIDE else getattr(s, n)
    assert c == getattr(p, n), f"{op}: backends differ in {n}: C {c:#x} Python {getattr(p, n):#x}"
  for a, v in p.mem.items(): assert lib.mem[a] == v, f"{op}: MEM[{a}] C {lib.mem[a]:#x} Python {v:#x}"
  for (l, r), v in p.vgpr.items(): assert lib.vgpr[l * 256 + r] == v
  return R(p)

def lo32(x): return x & 0xffffffff

# ---- SOP1 / SOP2 / SOPC / SOPK / SOPP
def test_sop1(clib):
  assert lo32(both(clib, "rdna3", "SOP1Op_S_BREV_B32", S0=0x00000001).D0) == 0x80000000
  r = both(clib, "rdna3", "SOP1Op_S_BCNT1_I32_B64", S0=0xf0f0_0000_0000_0001)
  assert (lo32(r.D0), r.SCC) == (9, 1)
  assert lo32(both(clib, "rdna3", "SOP1Op_S_CTZ_I32_B32", S0=0b1000).D0) == 3
  assert lo32(both(clib, "rdna3", "SOP1Op_S_CTZ_I32_B32", S0=0).D0) == 0xffffffff
  assert lo32(both(clib, "rdna3", "SOP1Op_S_SEXT_I32_I8", S0=0x80).D0) == 0xffffff80
  r = both(clib, "rdna3", "SOP1Op_S_AND_SAVEEXEC_B32", S0=0x0000ff00, EXEC=0xffff_0f0f)
  assert (lo32(r.D0), r.EXEC, r.SCC) == (0xffff_0f0f, 0x0f00, 1)
  r = both(clib, "rdna3", "SOP1Op_S_ABS_I32", S0=i32(-5))
  assert (lo32(r.D0), r.SCC) == (5, 1)

def test_sop2(clib):
  r = both(clib, "rdna3", "SOP2Op_S_ADDC_U32", S0=0xffffffff, S1=0, SCC=1)
  assert (lo32(r.D0), r.SCC) == (0, 1)
  r = both(clib, "rdna3", "SOP2Op_S_SUBB_U32", S0=0, S1=0, SCC=1)
  assert (lo32(r.D0), r.SCC) == (0xffffffff, 1)
  assert both(clib, "rdna3", "SOP2Op_S_LSHL_B64", S0=1, S1=63).D0 & M64 == 1 << 63
  assert lo32(both(clib, "rdna3", "SOP2Op_S_ASHR_I32", S0=0x80000000, S1=4).D0) == 0xf8000000
  r = both(clib, "rdna3", "SOP2Op_S_BFE_U32", S0=0xabcd1234, S1=(8 << 16) | 4)
  assert (lo32(r.D0), r.SCC) == (0x23, 1)
  assert lo32(both(clib, "rdna3", "SOP2Op_S_MIN_I32", S0=i32(-3), S1=2).D0) == i32(-3)
  assert lo32(both(clib, "rdna3", "SOP2Op_S_CSELECT_B32", S0=7, S1=9, SCC=0).D0) == 9
  assert lo32(both(clib, "rdna3", "SOP2Op_S_PACK_LH_B32_B16", S0=0x1111_2222, S1=0x3333_4444).D0) == 0x3333_2222
  assert lo32(both(clib, "rdna3", "SOP2Op_S_MUL_HI_U32", S0=0xffffffff, S1=0xffffffff).D0) == 0xfffffffe

def test_sopc_sopk_sopp(clib):
  assert both(clib, "rdna3", "SOPCOp_S_CMP_LT_I32", S0=i32(-1), S1=0).SCC == 1
  assert both(clib, "rdna3", "SOPCOp_S_CMP_LT_U32", S0=i32(-1), S1=0).SCC == 0
  assert both(clib, "rdna3", "SOPCOp_S_BITCMP1_B32", S0=0x10, S1=4).SCC == 1
  assert lo32(both(clib, "rdna3", "SOPKOp_S_MOVK_I32", SIMM16=0x8000).D0) == 0xffff8000
  r = both(clib, "rdna3", "SOPKOp_S_ADDK_I32", D0=0x7fffffff, SIMM16=1)
  assert (lo32(r.D0), r.SCC) == (0x80000000, 1)
  assert both(clib, "rdna3", "SOPPOp_S_BRANCH", PC=0x1000, SIMM16=0xfffe).PC == 0x1000 + 4 - 8
  assert both(clib, "rdna3", "SOPPOp_S_CBRANCH_SCC0", PC=0x1000, SIMM16=3, SCC=1).PC == 0x1004
  assert both(clib, "rdna3", "SOPPOp_S_CBRANCH_SCC0", PC=0x1000, SIMM16=3, SCC=0).PC == 0x1010

# ---- VOP1 / VOP2 / VOP3 / VOP3P / VOPC / VOP3SD
def test_vop1(clib):
  assert lo32(both(clib, "rdna3", "VOP1Op_V_CVT_F32_I32_E32", S0=i32(-7)).D0) == f2b(-7.0)
  for x, want in [(1e10, 0x7fffffff), (-1e10, 0x80000000), (-2.75, i32(-2)), (float("nan"), 0)]:
    assert lo32(both(clib, "rdna3", "VOP1Op_V_CVT_I32_F32_E32", S0=f2b(x)).D0) == want
  assert lo32(both(clib, "rdna3", "VOP1Op_V_RCP_F32_E32", S0=f2b(4.0)).D0) == f2b(0.25)
  assert lo32(both(clib, "rdna3", "VOP1Op_V_RCP_F32_E32", S0=f2b(-0.0)).D0) == f2b(-math.inf)
  assert lo32(both(clib, "rdna3", "VOP1Op_V_SQRT_F32_E32", S0=f2b(2.0)).D0) == f2b(float(np.sqrt(np.float32(2.0))))
  assert lo32(both(clib, "rdna3", "VOP1Op_V_SQRT_F32_E32", S0=f2b(-1.0)).D0) == 0x7fc00000      # canonical quiet NaN
  assert lo32(both(clib, "rdna3", "VOP1Op_V_FRACT_F32_E32", S0=f2b(-1.25)).D0) == f2b(0.75)
  assert lo32(both(clib, "rdna3", "VOP1Op_V_FLOOR_F32_E32", S0=f2b(-0.5)).D0) == f2b(-1.0)
  assert lo32(both(clib, "rdna3", "VOP1Op_V_EXP_F32_E32", S0=f2b(3.0)).D0) == f2b(8.0)
  assert lo32(both(clib, "rdna3", "VOP1Op_V_LOG_F32_E32", S0=f2b(0.125)).D0) == f2b(-3.0)
  assert lo32(both(clib, "rdna3", "VOP1Op_V_CLZ_I32_U32_E32", S0=0x00800000).D0) == 8
  assert lo32(both(clib, "rdna3", "VOP1Op_V_CVT_F32_UBYTE1_E32", S0=0x0000ab00).D0) == f2b(171.0)
  assert lo32(both(clib, "rdna3", "VOP1Op_V_FREXP_EXP_I32_F32_E32", S0=f2b(10.0)).D0) == 4          # 10 = 0.625 * 2^4
  assert lo32(both(clib, "rdna3", "VOP1Op_V_FREXP_MANT_F32_E32", S0=f2b(10.0)).D0) == f2b(0.625)
  assert lo32(both(clib, "rdna3", "VOP1Op_V_CVT_F16_F32_E32", S0=f2b(65520.0)).D0) & 0xffff == 0x7c00  # rounds to inf
  assert lo32(both(clib, "rdna3", "VOP1Op_V_CVT_F64_F32_E32", S0=0x7fa00000).D0) == 0   # low word of sNaN widened exactly
  assert both(clib, "rdna3", "VOP1Op_V_CVT_F64_F32_E32", S0=0x7fa00000).D0 & M64 == 0x7ff4000000000000

def test_vop2(clib):
  rng = np.random.default_rng(7)
  for a, b in rng.standard_normal((8, 2)).astype(np.float32):
    assert lo32(both(clib, "rdna3", "VOP2Op_V_ADD_F32_E32", S0=f2b(a), S1=f2b(b)).D0) == f2b(a + b)
    assert lo32(both(clib, "rdna3", "VOP2Op_V_MUL_F32_E32", S0=f2b(a), S1=f2b(b)).D0) == f2b(a * b)
  assert lo32(both(clib, "rdna3", "VOP2Op_V_SUB_NC_U32_E32", S0=1, S1=2).D0) == 0xffffffff
  assert lo32(both(clib, "rdna3", "VOP2Op_V_LSHLREV_B32_E32", S0=33, S1=1).D0) == 2          # shift amount is S0[4:0]
  assert lo32(both(clib, "rdna3", "VOP2Op_V_MAX_F32_E32", S0=f2b(-0.0), S1=f2b(0.0)).D0) == f2b(0.0)
  assert lo32(both(clib, "rdna3", "VOP2Op_V_MAX_F32_E32", S0=0x7fc00000, S1=f2b(3.0)).D0) == f2b(3.0)
  assert lo32(both(clib, "rdna3", "VOP2Op_V_MIN_I32_E32", S0=i32(-1), S1=1).D0) == i32(-1)
  a = 1 + 2**-12                                            # fused: 2^-11 + 2^-24; unfused would round a*a first to 1 + 2^-11
  assert lo32(both(clib, "rdna3", "VOP2Op_V_FMAC_F32_E32", S0=f2b(a), S1=f2b(a), D0=f2b(-1.0)).D0) == f2b(2.0**-11 + 2.0**-24)
  r = both(clib, "rdna3", "VOP2Op_V_CNDMASK_B32_E32", S0=1, S1=2, VCC=1 << 5, laneId=5)
  assert lo32(r.D0) == 2
  assert lo32(both(clib, "rdna3", "VOP2Op_V_CNDMASK_B32_E32", S0=1, S1=2, VCC=1 << 5, laneId=4).D0) == 1

def test_fma_is_fused(clib):
  a, b, c = 1 + 2**-23, 1 - 2**-23, -1.0
  exact = Fraction(a) * Fraction(b) + Fraction(c)          # -2^-46, lost by an unfused multiply-add
  assert lo32(both(clib, "rdna3", "VOP3Op_V_FMA_F32", S0=f2b(a), S1=f2b(b), S2=f2b(c)).D0) == f2b(float(exact)) == f2b(-2.0**-46)
  x, y, z = 1 + 2**-52, 1 - 2**-52, -1.0
  assert both(clib, "rdna3", "VOP3Op_V_FMA_F64", S0=d2b(x), S1=d2b(y), S2=d2b(z)).D0 & M64 == d2b(-2.0**-104)
  h = both(clib, "rdna3", "VOP3Op_V_FMA_F16", S0=h2b(1 + 2**-10), S1=h2b(1 - 2**-10), S2=h2b(-1.0)).D0 & 0xffff
  assert h == h2b(-2.0**-20)

def test_vop3(clib):
  assert lo32(both(clib, "rdna3", "VOP3Op_V_MAD_U32_U24", S0=0xff_ffffff, S1=2, S2=1).D0) == (0xffffff * 2 + 1) & 0xffffffff
  assert lo32(both(clib, "rdna3", "VOP3Op_V_BFE_I32", S0=0x000000f0, S1=4, S2=4).D0) == 0xffffffff
  assert lo32(both(clib, "rdna3", "VOP3Op_V_BFE_I32", S0=0x00000070, S1=4, S2=4).D0) == 7
  assert lo32(both(clib, "rdna3", "VOP3Op_V_ALIGNBIT_B32", S0=0x12345678, S1=0x9abcdef0, S2=8).D0) == 0x789abcde
  assert lo32(both(clib, "rdna3", "VOP3Op_V_MED3_I32", S0=5, S1=i32(-2), S2=9).D0) == 5
  assert lo32(both(clib, "rdna3", "VOP3Op_V_MED3_F32", S0=f2b(5.0), S1=f2b(-2.0), S2=f2b(9.0)).D0) == f2b(5.0)
  assert lo32(both(clib, "rdna3", "VOP3Op_V_MUL_HI_I32", S0=i32(-2), S1=0x40000000).D0) == 0xffffffff
  assert lo32(both(clib, "rdna3", "VOP3Op_V_ADD3_U32", S0=0xffffffff, S1=1, S2=5).D0) == 5
  assert lo32(both(clib, "rdna3", "VOP3Op_V_LSHL_ADD_U32", S0=3, S1=4, S2=1).D0) == 49
  r = both(clib, "rdna3", "VOP3Op_V_CVT_PK_RTZ_F16_F32_E64", S0=f2b(1 + 2**-11 + 2**-20), S1=f2b(-65536.0))
  assert lo32(r.D0) == (0xfbff << 16) | 0x3c00                  # toward zero: 1.0 and -65504 (not -inf)

def test_vop3p(clib):
  a, b = np.array([1.5, -2.0], np.float16), np.array([0.25, 4096.0], np.float16)
  want = int(np.concatenate([a + b]).view(np.uint32)[0])
  assert lo32(both(clib, "rdna3", "VOP3POp_V_PK_ADD_F16", S0=int(a.view(np.uint32)[0]), S1=int(b.view(np.uint32)[0])).D0) == want
  assert lo32(both(clib, "rdna3", "VOP3POp_V_PK_MUL_LO_U16", S0=0x0003_ffff, S1=0x0005_0002).D0) == 0x000f_fffe
  dot = float(np.float32(np.float32(3.0) + np.float32(1.5 * 0.25)) + np.float32(-2.0 * 4096.0))
  assert lo32(both(clib, "rdna3", "VOP3POp_V_DOT2_F32_F16", S0=int(a.view(np.uint32)[0]), S1=int(b.view(np.uint32)[0]), S2=f2b(3.0)).D0) == f2b(dot)
  assert lo32(both(clib, "rdna3", "VOP3POp_V_DOT4_U32_U8", S0=0x01020304, S1=0x05060708, S2=10).D0) == 10 + 5 + 12 + 21 + 32

def test_vopc(clib):
  r = both(clib, "rdna3", "VOPCOp_V_CMP_GT_F32_E32", S0=0x7fc00000, S1=f2b(1.0), laneId=3, D0=0xff)
  assert r.D0 & M64 == 0xf7                               # NaN compares false; only this lane's bit changes
  r = both(clib, "rdna3", "VOPCOp_V_CMP_NEQ_F32_E32", S0=0x7fc00000, S1=f2b(1.0), laneId=3, D0=0)
  assert r.D0 & M64 == 0x8
  r = both(clib, "rdna3", "VOPCOp_V_CMPX_EQ_U32_E32", S0=4, S1=4, laneId=40, EXEC=0)
  assert r.EXEC == 1 << 40
  r = both(clib, "rdna3", "VOPCOp_V_CMP_CLASS_F64_E32", S0=d2b(-0.0), S1=1 << 5, laneId=0)   # bit 5: -0
  assert r.D0 & 1 == 1

def test_vop3sd(clib):
  r = both(clib, "rdna3", "VOP3SDOp_V_ADD_CO_U32", S0=0xffffffff, S1=1, laneId=2, VCC=0)
  assert (lo32(r.D0), r.VCC) == (0, 4)
  r = both(clib, "rdna3", "VOP3SDOp_V_MAD_I64_I32", S0=i32(-3), S1=5, S2=2)
  assert r.D0 & M64 == (-13) & M64

# ---- memory: DS, FLAT/GLOBAL, SMEM (rdna3 computes addresses outside the pseudocode: ADDR is an input)
def test_ds(clib):
  r = both(clib, "rdna3", "DSOp_DS_ADD_U32", ADDR=16, DATA=5, mem={16: 0xff, 17: 0xff, 18: 0xff, 19: 0xff})
  assert lo32(r.RETURN_DATA) == 0xffffffff and [r.mem[16 + i] for i in range(4)] == [4, 0, 0, 0]
  r = both(clib, "rdna3", "DSOp_DS_LOAD_B64", ADDR=8, OFFSET=4, mem={12 + i: i + 1 for i in range(8)})
  assert r.RETURN_DATA & M64 == 0x0807060504030201
  r = both(clib, "rdna3", "DSOp_DS_STORE_B8", ADDR=3, DATA=0x1234)
  assert r.mem[3] == 0x34 and 4 not in r.mem
  r = both(clib, "rdna3", "DSOp_DS_CMPSTORE_B32", ADDR=0, DATA=9, DATA2=7, mem={0: 7})
  assert r.mem[0] == 9 and lo32(r.RETURN_DATA) == 7

def test_global_and_smem(clib):
  assert lo32(both(clib, "rdna3", "GLOBALOp_GLOBAL_LOAD_I8", ADDR=5, mem={5: 0x80}).VDATA) == 0xffffff80
  r = both(clib, "rdna3", "GLOBALOp_GLOBAL_STORE_B16", ADDR=6, VDATA=0xabcd1234)
  assert (r.mem[6], r.mem[7], 8 in r.mem) == (0x34, 0x12, False)
  r = both(clib, "rdna3", "GLOBALOp_GLOBAL_LOAD_B128", ADDR=32, mem={32 + i: i for i in range(16)})
  assert r.VDATA & (2**128 - 1) == int.from_bytes(bytes(range(16)), "little")
  r = both(clib, "rdna3", "SMEMOp_S_LOAD_B64", ADDR=40, mem={40 + i: 0x10 + i for i in range(8)})
  assert r.SDATA & M64 == int.from_bytes(bytes(range(0x10, 0x18)), "little")

def test_lane_ops(clib):
  r = both(clib, "rdna3", "VOP3Op_V_READLANE_B32", S1=35, SRC0=7, WAVE64=1, vgpr={(35, 7): 0xdead})
  assert lo32(r.D0) == 0xdead
  r = both(clib, "rdna3", "VOP3Op_V_READLANE_B32", S1=35, SRC0=7, WAVE64=0, vgpr={(3, 7): 0xbeef})   # wave32 uses lane[4:0]
  assert lo32(r.D0) == 0xbeef

# ---- other archs
def test_rdna4_and_cdna(clib):
  assert lo32(both(clib, "rdna4", "VOP2Op_V_ADD_F32_E32", S0=f2b(1.0), S1=f2b(2.0)).D0) == f2b(3.0)
  assert lo32(both(clib, "rdna4", "VOP3Op_V_MINIMUM_F32", S0=0x7fc00000, S1=f2b(1.0)).D0) == 0x7fc00000
  assert lo32(both(clib, "rdna4", "VOP3Op_V_MINIMUM_F32", S0=f2b(-0.0), S1=f2b(0.0)).D0) == f2b(-0.0)
  assert lo32(both(clib, "cdna", "VOP2Op_V_ADD_F32_E32", S0=f2b(1.0), S1=f2b(2.0)).D0) == f2b(3.0)
  assert lo32(both(clib, "cdna", "SOP2Op_S_MUL_I32", S0=i32(-3), S1=7).D0) == i32(-21)
  assert lo32(both(clib, "cdna", "VOP1Op_V_CVT_F32_FP8_E32", S0=0x38, SDWA_SRC0_SEL=0).D0) == f2b(1.0)   # E4M3 1.0
  assert lo32(both(clib, "cdna", "VOP1Op_V_CVT_F32_BF8_E32", S0=0x3c00, SDWA_SRC0_SEL=1).D0) == f2b(1.0)  # E5M2 byte 1
  assert lo32(both(clib, "cdna", "VOP1Op_V_CVT_F32_FP8_E32", S0=0x7e, SDWA_SRC0_SEL=0).D0) == f2b(448.0)  # E4M3 max

# ---- remaining memory and interpolation families (the harness defines Calc*Addr as the sum of its arguments)
def test_flat_scratch_buffer_image_rdna3(clib):
  assert lo32(both(clib, "rdna3", "FLATOp_FLAT_LOAD_B32", ADDR=64, mem={64: 1, 65: 2, 66: 3, 67: 4}).VDATA) == 0x04030201
  r = both(clib, "rdna3", "FLATOp_FLAT_ATOMIC_CMPSWAP_B32", ADDR=0, DATA=(7 << 32) | 9, mem={0: 7})
  assert (r.mem[0], lo32(r.RETURN_DATA)) == (9, 7)
  r = both(clib, "rdna3", "SCRATCHOp_SCRATCH_STORE_B32", ADDR=8, VDATA=0x11223344)
  assert [r.mem[8 + i] for i in range(4)] == [0x44, 0x33, 0x22, 0x11]
  assert lo32(both(clib, "rdna3", "MUBUFOp_BUFFER_LOAD_B32", ADDR=4, mem={4: 0xff, 7: 0x80}).VDATA) == 0x800000ff
  r = both(clib, "rdna3", "MIMGOp_IMAGE_ATOMIC_ADD", ADDR=12, DATA=3, mem={12: 250})
  assert (r.mem[12], r.mem[13], lo32(r.RETURN_DATA)) == (253, 0, 250)

def test_vinterp_rdna3(clib):
  vg = {(4, 10): f2b(2.0), (5, 10): f2b(3.0)}          # lane 6's quad starts at lane 4: P0 in lane 4, P10 in lane 5
  r = both(clib, "rdna3", "VINTERPOp_V_INTERP_P10_F32", laneId=6, SRC0=10, SRC2=10, S1=f2b(0.5), vgpr=vg)
  assert lo32(r.D0) == f2b(3.0 * 0.5 + 2.0)

def test_rdna4_memory_and_vopd(clib):
  assert lo32(both(clib, "rdna4", "VGLOBALOp_GLOBAL_LOAD_B32", v_addr=100, s_saddr=20, mem={120: 0x2a}).VDATA) == 0x2a
  r = both(clib, "rdna4", "VBUFFEROp_BUFFER_STORE_B16", vgpr_a=30, sgpr_o=2, VDATA=0xbeef)
  assert (r.mem[32], r.mem[33]) == (0xef, 0xbe)
  assert lo32(both(clib, "rdna4", "VFLATOp_FLAT_LOAD_U8", v_addr=5, flat_scratch=0, mem={5: 0xfe}).VDATA) == 0xfe
  assert lo32(both(clib, "rdna4", "VSCRATCHOp_SCRATCH_LOAD_I16", v_addr_off=2, s_saddr_off=2, mem={4: 0x00, 5: 0x80}).VDATA) == 0xffff8000
  r = both(clib, "rdna4", "VIMAGEOp_IMAGE_ATOMIC_ADD_UINT", v_addr=40, DATA=1, mem={40: 0xff, 41: 0xff, 42: 0xff, 43: 0xff})
  assert [r.mem[40 + i] for i in range(4)] == [0, 0, 0, 0]
  assert lo32(both(clib, "rdna4", "VOPDOp_V_DUAL_FMAC_F32", S0=f2b(2.0), S1=f2b(3.0), D0=f2b(1.0)).D0) == f2b(7.0)
  assert lo32(both(clib, "rdna4", "VOPDOp_V_DUAL_FMAAK_F32", S0=f2b(2.0), S1=f2b(3.0), SIMM32=f2b(0.5)).D0) == f2b(6.5)

def test_cdna_memory(clib):
  assert lo32(both(clib, "cdna", "GLOBALOp_GLOBAL_LOAD_DWORD", ADDR=40, SADDR=6, OFFSET=4, mem={50: 9}).VDATA) == 9
  r = both(clib, "cdna", "DSOp_DS_WRITE_B32", ADDR=16, DATA=0xcafe)
  assert (r.mem[16], r.mem[17]) == (0xfe, 0xca)

def test_stochastic_rounding_cdna(clib):
  x = f2b(1 + 2**-11)                                      # halfway between f16 1.0 (0x3c00) and 1 + 2^-10 (0x3c01)
  for rnd, want in [(0, 0x3c00), (0x7fffffff, 0x3c00), (0x80000000, 0x3c01), (0xffffffff, 0x3c01)]:
    r = both(clib, "cdna", "VOP3Op_V_CVT_SR_F16_F32", S0=x, S1=rnd, OPSEL=0, VDST=3, laneId=1, vgpr={(1, 3): 0xabcd0000})
    assert r.vgpr[(1, 3)] == 0xabcd0000 | want             # the high half is preserved
  r = both(clib, "cdna", "VOP3Op_V_CVT_SCALEF32_SR_FP8_F32", S0=f2b(3.0), S1=0, S2=f2b(2.0), OPSEL=0, VDST=0, laneId=0,
           vgpr={(0, 0): 0})
  assert r.vgpr[(0, 0)] & 0xff == 0x3c                     # 3.0 / 2^(128-127) = 1.5 -> E4M3 0x3c; scale = exponent(2.0) = 128

def test_narrow_integer_promotion_and_division_helpers(clib):
  # V_LERP_U8: per byte (a + b + round bit) >> 1, the 9-bit sum must not wrap at 8 bits
  assert lo32(both(clib, "rdna3", "VOP3Op_V_LERP_U8", S0=0x10203040, S1=0x30405060, S2=0x01000100).D0) == 0x20304050
  assert lo32(both(clib, "rdna3", "VOP3Op_V_LERP_U8", S0=0xffffffff, S1=0xffffffff, S2=0x01010101).D0) == 0xffffffff
  r = both(clib, "rdna3", "VOP3SDOp_V_DIV_SCALE_F32", S0=f2b(1.0), S1=f2b(3.0), S2=f2b(1.0))
  assert (lo32(r.D0), r.VCC) == (f2b(1.0), 0)                             # no scaling needed: S0 unchanged (corrections.FIXES)
  assert lo32(both(clib, "rdna3", "VOP3SDOp_V_DIV_SCALE_F32", S0=f2b(1.0), S1=0, S2=f2b(1.0)).D0) == 0x7fc00000   # NAN.f32
  r = both(clib, "rdna3", "VOP3SDOp_V_DIV_SCALE_F64", S0=d2b(2.0), S1=d2b(3.0), S2=d2b(2.0))
  assert r.D0 & M64 == d2b(2.0)

def test_saturating_integer_packs(clib):
  assert lo32(both(clib, "rdna3", "VOP3Op_V_CVT_PK_I16_I32", S0=0x7fffffff, S1=0x80000000).D0) == 0x8000_7fff
  assert lo32(both(clib, "rdna3", "VOP3Op_V_CVT_PK_I16_I32", S0=i32(-5), S1=7).D0) == 0x0007_fffb
  assert lo32(both(clib, "rdna3", "VOP3Op_V_CVT_PK_U16_U32", S0=0x10000, S1=0x1234).D0) == 0x1234_ffff

def test_mixed_precision_fma(clib):
  # OPSEL_HI bit i set: source i is an f16 (OPSEL bit i picks the high half), clear: an f32 (corrections.FIXES fills S[i])
  h = lambda x: h2b(x)
  assert lo32(both(clib, "rdna3", "VOP3POp_V_FMA_MIX_F32", S0=h(1.5), S1=h(2.0) << 16, S2=f2b(0.25), OPSEL=0b010, OPSEL_HI=0b011).D0) == f2b(3.25)
  r = both(clib, "rdna3", "VOP3POp_V_FMA_MIXLO_F16", S0=f2b(2.0), S1=f2b(3.0), S2=f2b(1.0), OPSEL=0, OPSEL_HI=0, D0=0xabcd0000)
  assert lo32(r.D0) == 0xabcd0000 | h(7.0)
  assert lo32(both(clib, "cdna", "VOP3POp_V_MAD_MIX_F32", S0=h(-1.0), S1=h(4.0), S2=h(0.5), OPSEL=0, OPSEL_HI=0b111).D0) == f2b(-3.5)

def test_cvt_off_table(clib):
  for arch in ("rdna3", "cdna"):
    for n in range(16):
      want = f2b((n if n < 8 else n - 16) / 16)          # signed 4-bit n -> n / 16 (corrections.FIXES fills the table)
      assert lo32(both(clib, arch, "VOP1Op_V_CVT_OFF_F32_I4_E32", S0=0xf0 | n).D0) == want
