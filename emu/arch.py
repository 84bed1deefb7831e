"""Every arch-specific fact the emulator uses, as one frozen dataclass per target. Code branches on these fields, never
on arch-name strings. Rows name every field (the dataclass is keyword-only), so a row reads as the table it is."""
from __future__ import annotations
import dataclasses, functools, re
from dataclasses import dataclass
from tinygrad.runtime.autogen import amdgpu_kd as kd
from mockgpu.emu.errors import UnsupportedDispatch

__all__ = ["ArchSpec", "ARCHS", "get_arch", "library_arch", "unmodelled_ops"]

@dataclass(frozen=True, kw_only=True)
class ArchSpec:
  name: str                 # LLVM target name, e.g. "gfx1100"
  family: str               # tinygrad autogen folder: tinygrad.runtime.autogen.amd.<family>
  wave_sizes: tuple[int, ...]
  num_sgprs: int            # addressable SGPRs s0..s(n-1)
  num_vgprs: int            # VGPRs per lane
  num_agprs: int            # CDNA accumulation VGPRs per lane (0: none)
  max_lds: int              # LDS bytes per workgroup
  max_threads: int          # threads per workgroup
  tgid_in_ttmp: bool        # gfx12: workgroup ids in TTMP9 (x) and TTMP7 (y | z<<16) instead of SGPRs after the user SGPRs
  enc_m0: int               # scalar operand encodings that differ between families
  enc_null: int
  enc_dpp8: int             # src0 value selecting DPP8 (and +1: DPP8 with fetch-inactive), -1 if none
  enc_dpp16: int
  enc_sdwa: int             # -1 if the family has no SDWA
  trap_temps: tuple[int, int] = (108, 124)   # TTMP0..TTMP15 encodings
  vsharp: tuple[str, str] = ("_GFX11", "_GFX11")   # buffer descriptor layout: hsa SQ_BUF_RSRC_WORD1<x> / WORD3<y> (mockgpu.emu.buffer)
  c_backend: bool = True    # the generated-C backend supports this arch
  true16: bool = True       # VOP1/VOP2/VOPC 16-bit VGPR operands: bit 7 of the register field selects the high half (RDNA)
  d16_zero_hi: bool = False # gfx9: a 16-bit VALU result zeroes bits 31:16 (except gen_c.D16_PRESERVE ops, which honour op_sel)
  dpp_gfx9: bool = False    # DPP16 controls of gfx9 (wave_shl/rol/shr/ror, row_bcast15/31; 0x15x = row_newbcast) instead of gfx10+
  dpp_bcast_row0: bool = False  # DPP16 0x142/0x143 (gfx9's row_bcast:15/31): every lane reads lane 0 of its row (gfx11 hardware, issue 10)
  rsrc1_dx10_ieee: bool = True  # RSRC1 has ENABLE_DX10_CLAMP / ENABLE_IEEE_MODE (gfx6-gfx11; gfx12 uses those bits otherwise)
  fp8: str = "ocp"          # the FP8/BF8 formats: "ocp" (E4M3/E5M2, what the pseudocode and emu.matrix model) or "fnuz" (gfx942:
                            # biases 8/16, NaN 0x80, no infinities), whose ops stop as unmodelled (`unmodelled_ops`)
  notes: str = ""

  @property
  def nvregs(self) -> int:
    """VGPR slots per lane: ArchVGPRs, plus AccVGPRs in the gfx90a+ unified file (AccVGPR n is slot ACCUM_OFFSET + n)."""
    return self.num_vgprs + self.num_agprs

  @property
  def isa(self) -> ArchSpec:
    """What the generated C depends on: this row without its name, notes, per-workgroup limits (checked in Python) and the
    ops it stops at dispatch time (`fp8`, `unmodelled_ops`)."""
    return dataclasses.replace(self, name="", notes="", max_lds=0, max_threads=0, fp8="ocp")

  @property
  def default_rsrc1(self) -> int:
    """The RSRC1 float fields LLVM's assembler writes into a kernel descriptor by default (AMDGPUUsage, .amdhsa_* directives):
    round to nearest even, f32 denormals flushed (float_denorm_mode_32 0), f16/f64 kept (float_denorm_mode_16_64 3), and on
    gfx6-gfx11 dx10_clamp 1 and ieee_mode 1 (gfx12 reuses bits 21/23 as WG_RR_EN / DISABLE_PERF, default 0). MODE 0x3c0 / 0xc0."""
    r = 3 << kd.COMPUTE_PGM_RSRC1_FLOAT_DENORM_MODE_16_64_SHIFT
    if self.rsrc1_dx10_ieee:
      r |= 1 << kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_DX10_CLAMP_SHIFT | 1 << kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_IEEE_MODE_SHIFT
    return r

  def initial_mode(self, rsrc1: int) -> int:
    """The MODE register (hwreg 1) a wave starts with: RSRC1.FLOAT_MODE (FP_ROUND, FP_DENORM) is MODE[7:0], DX10_CLAMP
    MODE[8], IEEE_MODE MODE[9] (bit positions from tinygrad's amdgpu_kd)."""
    m = (rsrc1 >> kd.COMPUTE_PGM_RSRC1_FLOAT_ROUND_MODE_32_SHIFT) & 0xff
    if self.rsrc1_dx10_ieee:
      m |= (rsrc1 >> kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_DX10_CLAMP_SHIFT & 1) << 8 | (rsrc1 >> kd.COMPUTE_PGM_RSRC1_GFX6_GFX11_ENABLE_IEEE_MODE_SHIFT & 1) << 9
    return m

_RDNA = dict(wave_sizes=(32, 64), num_sgprs=106, num_vgprs=256, num_agprs=0, max_lds=65536, max_threads=1024,
             enc_m0=125, enc_null=124, enc_dpp8=233, enc_dpp16=250, enc_sdwa=-1)
_CDNA = dict(wave_sizes=(64,), num_sgprs=102, num_vgprs=256, num_agprs=256, max_threads=1024, tgid_in_ttmp=False, enc_m0=124,
             enc_null=-1, enc_dpp8=-1, enc_dpp16=250, enc_sdwa=249, vsharp=("", ""), true16=False, d16_zero_hi=True, dpp_gfx9=True)
ARCHS: dict[str, ArchSpec] = {a.name: a for a in (
  ArchSpec(name="gfx1100", family="rdna3", **_RDNA, tgid_in_ttmp=False, dpp_bcast_row0=True),
  ArchSpec(name="gfx1201", family="rdna4", **_RDNA, tgid_in_ttmp=True, vsharp=("_GFX11", "_GFX12"), rsrc1_dx10_ieee=False,
           notes="RDNA4: VSAMPLE, VIMAGE BVH_DUAL/BVH8 not modelled (docs/emu.md)"),
  ArchSpec(name="gfx950", family="cdna", **_CDNA, max_lds=163840, notes="CDNA4 gfx950, wave64 only (what is not modelled: docs/emu.md)"),
  ArchSpec(name="gfx942", family="cdna", **_CDNA, max_lds=65536, fp8="fnuz",
           notes="CDNA3 gfx942, wave64 only; decodes the wheel's CDNA tables, which include gfx950's additions (docs/emu.md)"),
)}

def get_arch(name: str) -> ArchSpec:
  """The ArchSpec for an LLVM target name. Raises UnsupportedDispatch naming the known targets."""
  if name not in ARCHS: raise UnsupportedDispatch(f"unknown arch {name!r}; known: {', '.join(ARCHS)}")
  return ARCHS[name]

def library_arch(arch: ArchSpec) -> ArchSpec:
  """The row whose emulator library `arch` runs on: the first in ARCHS with the same `isa` (gfx942 runs on gfx950's library,
  whose generated C would be identical), so one build serves both."""
  return next((a for a in ARCHS.values() if a.isa == arch.isa), arch)

FNUZ_MSG = ("FP8/BF8 on this arch are the FNUZ formats (E4M3 bias 8, E5M2 bias 16, NaN 0x80, no infinities); the emulator models the "
            "OCP ones (gfx950), so it stops instead of computing other values")

@functools.cache
def unmodelled_ops(arch: ArchSpec) -> dict[str, str]:
  """{mnemonic (no _E32/_E64): why} for the ops `arch` decodes but the emulator's shared semantics would get wrong, which both
  backends stop at (ST_UNSUPPORTED): on an `fp8="fnuz"` arch every op whose pseudocode handles fp8/bf8 values and every matrix op
  with FP8/BF8 (or F8F6F4) inputs."""
  if arch.fp8 != "fnuz": return {}
  from mockgpu.emu import matrix
  from mockgpu.emu.fidelity import mnemonic
  from mockgpu.pcode.tables import entries
  small = re.compile(r"(?<![A-Za-z0-9])\w*(fp8|bf8)\w*")   # the pseudocode's fp8/bf8 types and conversion built-ins
  names = {mnemonic(n) for n, e in entries(arch.family).items() if small.search(e.text)}
  names |= {n for n, op in matrix.ops(arch.family).items() if {op.a, op.b} & {"fp8", "bf8", "f8f6f4"}}
  return dict.fromkeys(sorted(names), FNUZ_MSG)
