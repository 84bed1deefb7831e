"""The generated C decoder agrees with the wheel's DSL: for every valid opcode of every RDNA3 format, an instruction
assembled with the DSL decodes to the same format, opcode and size (literal and DPP forms included)."""
import ctypes
from tinygrad.runtime.autogen.amd.rdna3 import ins as I
from mockgpu.emu.arch import get_arch
from mockgpu.emu.cbackend import load
from mockgpu.emu.isa import formats

ARCH = get_arch("gfx1100")

def decode(raw: bytes) -> tuple[int, int, int, int, int]:
  dll, _ = load(ARCH)
  words = (ctypes.c_uint32 * 4).from_buffer_copy(raw.ljust(16, b"\0")[:16])
  out = (ctypes.c_int32 * 4)()
  r = dll.emu_decode_one(words, max(1, len(raw) // 4), out)
  return r, *out

def samples():
  fmts = {f.name: i for i, f in enumerate(formats("rdna3"))}
  for f in formats("rdna3"):
    cls = getattr(I, f.name)
    if f.op_field is None or f.name in ("EXP", "LDSDIR", "MIMG", "VINTERP"): continue
    for op in sorted(f.valid):
      member = f.enum(op)
      kw = {"literal": 0x1234} if op in f.lit_only else {}
      try: inst = cls(member, **kw) if not kw else getattr(I, f.name + "_LIT")(member, **kw)
      except Exception: continue     # the DSL cannot build this opcode without explicit operands
      yield f.name, fmts[f.name], op, inst.to_bytes()

def test_every_opcode_decodes_like_the_dsl():
  n = 0
  for name, fi, op, raw in samples():
    r, fmt, dop, size, _ = decode(raw)
    assert (r, fmt, dop, size) == (1, fi, op, len(raw)), f"{name} op={op} raw={raw.hex()}"
    n += 1
  assert n > 1000

def test_literal_dpp_and_vopd_sizes():
  assert decode(I.v_mov_b32_e32(I.v[1], 0x12345678).to_bytes())[3] == 8
  assert decode(I.s_add_u32(I.s[1], I.s[2], 1000).to_bytes())[3] == 8
  dpp = I.VOP1_DPP16(I.VOP1Op.V_MOV_B32_E32, vdst=I.v[1], src0=I.DPP, vsrc0=I.v[2], dpp=0x111, row_mask=15, bank_mask=15).to_bytes()
  assert decode(dpp)[3] == 8
  vopd = I.v_dual_mul_f32(I.VOPDOp.V_DUAL_ADD_F32, vdstx=I.v[5], vdsty=I.v[6], srcx0=I.v[2], vsrcx1=I.v[3], srcy0=1.0, vsrcy1=I.v[3]).to_bytes()
  assert decode(vopd)[:4] == (1, 0, 3, 8)
  assert decode(b"\xff\xff\xff\xff")[0] == 0
  assert decode(I.v_mov_b32_e32(I.v[1], 0x12345678).to_bytes()[:4])[0] == -1     # literal missing
