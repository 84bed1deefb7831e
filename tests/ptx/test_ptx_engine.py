"""The PTX engine (mockgpu.mock.ptx) on hand-written PTX. Expected values are worked out by hand from the PTX ISA rules (or
with numpy/struct for IEEE roundings), never by the engine. All kernels live in one module, so the suite compiles once."""
import struct
import numpy as np
import pytest
from mockgpu.emu.errors import GPUFault, WatchdogExpired
from mockgpu.emu.memory import MemoryMap
from mockgpu.mock.errors import PTXError
from mockgpu.mock.ptx import engine
from mockgpu.mock.ptx.parse import TYPES

def f32(x): return struct.unpack("<I", struct.pack("<f", x))[0]
def f16(x): return struct.unpack("<H", struct.pack("<e", x))[0]
def f64(x): return struct.unpack("<Q", struct.pack("<d", x))[0]
NAN32, INF16 = 0x7FC00000, 0x7C00

# (instruction with {d} {a} {b} {c} {p}, input types, inputs as raw bits or ints, output type, expected raw bits or int)
CASES = [
  ("div.s32 {d}, {a}, {b}", "s32 s32", (7, -2), "s32", -3),            # C semantics: truncation toward zero
  ("rem.s32 {d}, {a}, {b}", "s32 s32", (-7, 2), "s32", -1),
  ("div.s32 {d}, {a}, {b}", "s32 s32", (5, 0), "s32", -1),             # modelled: x / 0 = all ones
  ("rem.s32 {d}, {a}, {b}", "s32 s32", (5, 0), "s32", 5),              # modelled: x % 0 = x
  ("div.s32 {d}, {a}, {b}", "s32 s32", (-2**31, -1), "s32", -2**31),   # wraps, no trap
  ("rem.s32 {d}, {a}, {b}", "s32 s32", (-2**31, -1), "s32", 0),
  ("div.u32 {d}, {a}, {b}", "u32 u32", (7, 0), "u32", 0xFFFFFFFF),
  ("div.u16 {d}, {a}, {b}", "u16 u16", (0xFFFF, 3), "u16", 0x5555),
  ("mul.lo.s32 {d}, {a}, {b}", "s32 s32", (0x10000, 0x10001), "s32", 0x10000),
  ("mul.lo.u16 {d}, {a}, {b}", "u16 u16", (0xFFFF, 0xFFFF), "u16", 1),
  ("mad.lo.s64 {d}, {a}, {b}, {c}", "s64 s64 s64", (2**62, 4, 5), "s64", 5),
  ("mul.hi.u32 {d}, {a}, {b}", "u32 u32", (0x80000000, 6), "u32", 3),
  ("add.s16 {d}, {a}, {b}", "s16 s16", (32767, 1), "s16", -32768),
  ("shl.b32 {d}, {a}, {b}", "b32 u32", (1, 33), "b32", 0),             # shift amounts >= width clamp
  ("shl.b64 {d}, {a}, {b}", "b64 u32", (3, 62), "b64", 0xC000000000000000),
  ("shr.s32 {d}, {a}, {b}", "s32 u32", (-8, 40), "s32", -1),
  ("shr.s16 {d}, {a}, {b}", "s16 u32", (-4, 1), "s16", -2),
  ("shr.u32 {d}, {a}, {b}", "u32 u32", (0x80000000, 31), "u32", 1),
  ("max.s32 {d}, {a}, {b}", "s32 s32", (-1, 1), "s32", 1),
  ("max.u32 {d}, {a}, {b}", "u32 u32", (0xFFFFFFFF, 1), "u32", 0xFFFFFFFF),
  ("and.b32 {d}, {a}, {b}", "b32 b32", (0xF0F0, 0xFF00), "b32", 0xF000),
  ("or.b16 {d}, {a}, {b}", "b16 b16", (0xF0F0, 0x0F00), "b16", 0xFFF0),
  ("xor.b64 {d}, {a}, {b}", "b64 b64", (2**64-1, 1), "b64", 2**64-2),
  ("setp.lt.s32 {p}, {a}, {b}; selp.s32 {d}, 1, 0, {p}", "s32 s32", (-1, 1), "s32", 1),
  ("setp.lt.u32 {p}, {a}, {b}; selp.s32 {d}, 1, 0, {p}", "u32 u32", (0xFFFFFFFF, 1), "s32", 0),
  ("cvt.s64.s32 {d}, {a}", "s32", (-5,), "s64", -5),
  ("cvt.u64.u32 {d}, {a}", "u32", (0xFFFFFFFF,), "u64", 0xFFFFFFFF),
  ("cvt.u16.u32 {d}, {a}", "u32", (0x12345,), "u16", 0x2345),
  ("cvt.s8.s32 {d}, {a}", "s32", (0x1FF,), "s16", -1),                 # 8-bit result sign-extended into the s16 register
  ("cvt.u8.s32 {d}, {a}", "s32", (0x1FF,), "u16", 0xFF),
  ("cvt.s32.s8 {d}, {a}", "s16", (0x80,), "s32", -128),
  ("add.f32 {d}, {a}, {b}", "f32 f32", (f32(0.1), f32(0.2)), "f32", f32(np.float32(0.1) + np.float32(0.2))),
  # (1+2^-23)^2 - (1+2^-22) = 2^-46 exactly when fused; a separate mul would round the square to 1+2^-22 and give 0
  ("fma.rn.f32 {d}, {a}, {b}, {c}", "f32 f32 f32", (0x3F800001, 0x3F800001, f32(-(1 + 2**-22))), "f32", f32(2**-46)),
  ("mul.f32 {d}, {a}, {b}; add.f32 {d}, {d}, {c}", "f32 f32 f32", (0x3F800001, 0x3F800001, f32(-(1 + 2**-22))), "f32", 0),
  ("setp.neu.f32 {p}, {a}, {b}; selp.s32 {d}, 1, 0, {p}", "f32 f32", (NAN32, f32(1.0)), "s32", 1),
  ("setp.ne.f32 {p}, {a}, {b}; selp.s32 {d}, 1, 0, {p}", "f32 f32", (NAN32, f32(1.0)), "s32", 0),   # ordered: false on NaN
  ("setp.eq.f32 {p}, {a}, {b}; selp.s32 {d}, 1, 0, {p}", "f32 f32", (NAN32, NAN32), "s32", 0),
  ("setp.lt.f32 {p}, {a}, {b}; selp.s32 {d}, 1, 0, {p}", "f32 f32", (f32(-0.0), f32(0.0)), "s32", 0),
  ("max.f32 {d}, {a}, {b}", "f32 f32", (NAN32, f32(2.0)), "f32", f32(2.0)),
  ("max.f32 {d}, {a}, {b}", "f32 f32", (f32(-0.0), f32(0.0)), "f32", f32(0.0)),
  ("cvt.rzi.s32.f32 {d}, {a}", "f32", (f32(1e10),), "s32", 2**31 - 1),  # float -> int saturates
  ("cvt.rzi.s32.f32 {d}, {a}", "f32", (f32(-1e10),), "s32", -2**31),
  ("cvt.rzi.s32.f32 {d}, {a}", "f32", (NAN32,), "s32", 0),
  ("cvt.rzi.s32.f32 {d}, {a}", "f32", (f32(-2.7),), "s32", -2),
  ("cvt.rzi.u32.f32 {d}, {a}", "f32", (f32(-1.0),), "u32", 0),
  ("cvt.rni.s32.f32 {d}, {a}", "f32", (f32(2.5),), "s32", 2),           # ties to even
  ("cvt.rni.s32.f32 {d}, {a}", "f32", (f32(3.5),), "s32", 4),
  ("cvt.rzi.f32.f32 {d}, {a}", "f32", (f32(-2.75),), "f32", f32(-2.0)),
  ("cvt.rn.f32.s32 {d}, {a}", "s32", (2**24 + 1,), "f32", f32(2.0**24)),  # halfway: to even
  ("cvt.rn.f32.s32 {d}, {a}", "s32", (2**24 + 3,), "f32", f32(2.0**24 + 4)),
  ("cvt.rn.f16.f32 {d}, {a}", "f32", (f32(1 + 2**-11),), "f16", 0x3C00),  # halfway between 1 and 1+2^-10: even
  ("cvt.rn.f16.f32 {d}, {a}", "f32", (f32(1 + 3 * 2**-11),), "f16", 0x3C02),
  ("cvt.rn.f16.f32 {d}, {a}", "f32", (f32(65520.0),), "f16", INF16),     # rounds past the largest half
  ("cvt.f32.f16 {d}, {a}", "f16", (0x3555,), "f32", f32(struct.unpack("<e", b"\x55\x35")[0])),
  ("cvt.rn.f16.f64 {d}, {a}", "f64", (f64(1 + 2**-11 + 2**-40),), "f16", 0x3C01),   # one rounding, not via f32
  ("add.f16 {d}, {a}, {b}", "f16 f16", (0x3C00, f16(2**-11)), "f16", 0x3C00),
  ("add.f16 {d}, {a}, {b}", "f16 f16", (0x3C00, f16(3 * 2**-11)), "f16", 0x3C02),
  ("mul.f16 {d}, {a}, {b}", "f16 f16", (f16(300.0), f16(300.0)), "f16", INF16),
  ("setp.lt.f16 {p}, {a}, {b}; selp.b16 {d}, {a}, {b}, {p}", "f16 f16", (f16(-1.5), f16(0.5)), "f16", f16(-1.5)),
  # f16 arithmetic rounds to f16 after every instruction; numpy's float16 is the oracle (its ops round the exact result once)
  # (1+2^-10)^2 - (1+2^-9) = 2^-20 (a subnormal half) when fused; mul then add rounds the square to 1+2^-9 and gives 0
  ("fma.rn.f16 {d}, {a}, {b}, {c}", "f16 f16 f16", (f16(1 + 2**-10), f16(1 + 2**-10), f16(-(1 + 2**-9))), "f16",
   f16(np.float16(np.float64(1 + 2**-10) ** 2 - (1 + 2**-9)))),
  ("mul.f16 {d}, {a}, {b}; add.f16 {d}, {d}, {c}", "f16 f16 f16", (f16(1 + 2**-10), f16(1 + 2**-10), f16(-(1 + 2**-9))), "f16",
   f16((np.float16(1 + 2**-10) * np.float16(1 + 2**-10)) + np.float16(-(1 + 2**-9)))),
  ("div.rn.f16 {d}, {a}, {b}", "f16 f16", (f16(1.0), f16(3.0)), "f16", f16(np.float16(1) / np.float16(3))),
  ("sub.f16 {d}, {a}, {b}", "f16 f16", (f16(2**-14), f16(2**-14 + 2**-24)), "f16", f16(np.float16(2**-14) - np.float16(2**-14 + 2**-24))),
  ("max.f16 {d}, {a}, {b}", "f16 f16", (0x7E00, f16(-3.0)), "f16", f16(-3.0)),
  # tinygrad's half multiply-accumulate: fma.rn.f32 on the widened halves, then cvt.rn.f16.f32. The two roundings give -164.0
  # here where one rounding of the exact -164.0625049 would give -164.125: the engine must do what the PTX says
  ("cvt.f32.f16 {a}32, {a}; cvt.f32.f16 {b}32, {b}; cvt.f32.f16 {c}32, {c}; fma.rn.f32 {c}32, {a}32, {b}32, {c}32; cvt.rn.f16.f32 {d}, {c}32",
   "f16 f16 f16", (0xBD93, 0xB32D, 0xD923), "f16", f16(np.float16(np.float32(-1.3935546875) * np.float32(-0.2242431640625) + np.float32(-164.375)))),
  ("ex2.approx.f32 {d}, {a}", "f32", (f32(3.0),), "f32", f32(8.0)),
  ("ex2.approx.f32 {d}, {a}", "f32", (f32(-1.0),), "f32", f32(0.5)),
  ("lg2.approx.f32 {d}, {a}", "f32", (f32(1024.0),), "f32", f32(10.0)),
  ("rcp.approx.f32 {d}, {a}", "f32", (f32(4.0),), "f32", f32(0.25)),
  ("rcp.approx.f32 {d}, {a}", "f32", (f32(3.0),), "f32", f32(np.float32(1) / np.float32(3))),
  ("sqrt.approx.f32 {d}, {a}", "f32", (f32(2.0),), "f32", f32(np.sqrt(np.float32(2)))),
  ("sin.approx.f32 {d}, {a}", "f32", (f32(-0.0),), "f32", f32(-0.0)),
  ("add.f64 {d}, {a}, {b}", "f64 f64", (f64(0.1), f64(0.2)), "f64", f64(0.1 + 0.2)),
  ("div.s64 {d}, {a}, {b}", "s64 s64", (-2**63, -1), "s64", -2**63),
  ("mov.b32 {d}, {{{a}, {b}}}", "b16 b16", (0x1234, 0xABCD), "b32", 0xABCD1234),
  ("mov.b32 {d}, {a}", "f32", (f32(-1.0),), "b32", 0xBF800000),
]

def _alu_kernel() -> str:
  regs, body = [], []
  for j, (text, tin, _, tout, _) in enumerate(CASES):
    ins = tin.split()
    for n, t in zip("abc", ins): regs.append(f".reg .{t} %{n}{j};"); body.append(f"ld.global.b{max(8, TYPES[t][1])} %{n}{j}, [%in+{24*j + 8*'abc'.index(n)}];")
    regs += [f".reg .{tout} %d{j};", f".reg .pred %p{j};"]
    if "}32" in text: regs.append(f".reg .f32 %a{j}32, %b{j}32, %c{j}32;")     # f32 temporaries of a multi-instruction case
    body.append(text.format(a=f"%a{j}", b=f"%b{j}", c=f"%c{j}", d=f"%d{j}", p=f"%p{j}") + ";")
    body.append(f"st.global.b{TYPES[tout][1]} [%out+{8*j}], %d{j};")
  return ".visible .entry alu (.param .u64 out, .param .u64 in)\n{\n.reg .u64 %out, %in;\n" + "\n".join(regs) + \
    "\nld.param.u64 %out, [out+0];\nld.param.u64 %in, [in+0];\n" + "\n".join(body) + "\nret;\n}\n"

KERNELS = r"""
.visible .entry red (.param .u64 out, .param .u64 in)
{
  .reg .u64 %o, %i, %s, %addr, %t64, %addr2; .reg .u32 %tid, %bid, %n, %stride, %other; .reg .s32 %v, %w; .reg .pred %p, %q;
  .shared .align 4 .b8 buf[256];
  ld.param.u64 %o, [out+0]; ld.param.u64 %i, [in+0];
  mov.u32 %tid, %tid.x; mov.u32 %bid, %ctaid.x; mov.u32 %n, %ntid.x;
  mad.lo.u32 %other, %bid, %n, %tid;
  cvt.u64.u32 %t64, %other; mad.lo.u64 %addr, %t64, 4, %i; ld.global.s32 %v, [%addr+0];
  mov.u64 %s, buf; cvt.u64.u32 %t64, %tid; mad.lo.u64 %addr, %t64, 4, %s; st.shared.s32 [%addr+0], %v;
  bar.sync 0;
  shr.u32 %stride, %n, 1;
LOOP:
  setp.lt.u32 %p, %tid, %stride;
  @!%p bra SKIP;
  add.u32 %other, %tid, %stride; cvt.u64.u32 %t64, %other; mad.lo.u64 %addr2, %t64, 4, %s;
  ld.shared.s32 %w, [%addr2+0]; ld.shared.s32 %v, [%addr+0]; add.s32 %v, %v, %w; st.shared.s32 [%addr+0], %v;
SKIP:
  bar.sync 0;
  shr.u32 %stride, %stride, 1;
  setp.ne.u32 %q, %stride, 0;
  @%q bra LOOP;
  setp.eq.u32 %p, %tid, 0;
  @!%p bra END;
  ld.shared.s32 %v, [%s+0];
  cvt.u64.u32 %t64, %bid; mad.lo.u64 %addr, %t64, 4, %o; st.global.s32 [%addr+0], %v;
END:
  ret;
}
.visible .entry ids (.param .u64 out)
{
  .reg .u64 %o, %a; .reg .u32 %x, %y, %z, %bx, %by, %bz, %lin, %v, %t;
  ld.param.u64 %o, [out+0];
  mov.u32 %x, %tid.x; mov.u32 %y, %tid.y; mov.u32 %z, %tid.z; mov.u32 %bx, %ctaid.x; mov.u32 %by, %ctaid.y; mov.u32 %bz, %ctaid.z;
  mov.u32 %t, %nctaid.x; mad.lo.u32 %lin, %bz, 2, %by; mad.lo.u32 %lin, %lin, %t, %bx;
  mad.lo.u32 %lin, %lin, 3, %z; mad.lo.u32 %lin, %lin, 2, %y; mad.lo.u32 %lin, %lin, 4, %x;
  shl.b32 %v, %x, 20; shl.b32 %t, %y, 16; or.b32 %v, %v, %t; shl.b32 %t, %z, 12; or.b32 %v, %v, %t;
  shl.b32 %t, %bx, 8; or.b32 %v, %v, %t; shl.b32 %t, %by, 4; or.b32 %v, %v, %t; or.b32 %v, %v, %bz;
  cvt.u64.u32 %a, %lin; mad.lo.u64 %a, %a, 4, %o; st.global.u32 [%a+0], %v;
  ret;
}
.visible .entry shoob ()
{
  .reg .u64 %s, %a; .reg .u32 %t;
  .shared .align 4 .b8 small[64];
  mov.u32 %t, %tid.x; mov.u64 %s, small; cvt.u64.u32 %a, %t; mad.lo.u64 %a, %a, 4, %s; st.shared.u32 [%a+0], %t;
  ret;
}
.visible .entry diverge ()
{
  .reg .u32 %t; .reg .pred %p;
  mov.u32 %t, %tid.x; setp.eq.u32 %p, %t, 1;
  @%p bra OTHER;
  bar.sync 0;
  ret;
OTHER:
  bar.sync 0;
  ret;
}
.visible .entry spin ()
{
L: bra L;
}
.visible .entry copy (.param .u64 out, .param .u64 in)
{
  .reg .u64 %o, %i, %a; .reg .u32 %t, %v;
  ld.param.u64 %o, [out+0]; ld.param.u64 %i, [in+0];
  mov.u32 %t, %tid.x; cvt.u64.u32 %a, %t; mad.lo.u64 %i, %a, 4, %i; mad.lo.u64 %o, %a, 4, %o;
  ld.global.u32 %v, [%i+0];
  st.global.u32 [%o+0], %v;
  ret;
}
"""

@pytest.fixture(scope="module")
def mod(): return engine.load(".version 7.5\n.target sm_70\n.address_size 64\n" + _alu_kernel() + KERNELS)

def _bufs(*arrays) -> MemoryMap:
  mm = MemoryMap()
  for i, a in enumerate(arrays): mm.add(a.ctypes.data, a.nbytes, f"buf{i}")
  return mm

def test_alu_semantics(mod):
  ins = np.zeros(3 * len(CASES), np.uint64)
  for j, (_, tin, vals, _, _) in enumerate(CASES):
    for n, (t, v) in enumerate(zip(tin.split(), vals)): ins[3*j + n] = v & ((1 << max(8, TYPES[t][1])) - 1)
  out = np.zeros(len(CASES), np.uint64)
  mod.launch("alu", [out.ctypes.data, ins.ctypes.data], (1, 1, 1), (1, 1, 1), _bufs(out, ins))
  bad = []
  for j, (text, _, vals, tout, want) in enumerate(CASES):
    n = TYPES[tout][1]
    got = int(out[j]) & ((1 << n) - 1)
    if got != want & ((1 << n) - 1): bad.append((text, vals, hex(got), hex(want & ((1 << n) - 1))))
  assert not bad, bad

def test_shared_reduction_with_barriers_in_a_loop(mod):
  x = np.arange(-64, 192, dtype=np.int32) * 3
  out = np.zeros(4, np.int32)
  mod.launch("red", [out.ctypes.data, x.ctypes.data], (4, 1, 1), (64, 1, 1), _bufs(out, x))
  assert out.tolist() == x.reshape(4, 64).sum(1).tolist()

def test_thread_and_block_ids_3d(mod):
  out = np.zeros(5 * 2 * 2 * 3 * 2 * 4, np.uint32)
  mod.launch("ids", [out.ctypes.data], (5, 2, 2), (4, 2, 3), _bufs(out))
  want = [(x << 20) | (y << 16) | (z << 12) | (bx << 8) | (by << 4) | bz
          for bz in range(2) for by in range(2) for bx in range(5) for z in range(3) for y in range(2) for x in range(4)]
  assert out.tolist() == want

def test_global_oob_read_is_a_structured_fault(mod):
  x, out = np.zeros(64 + 5, np.int32), np.zeros(2, np.int32)
  mm = MemoryMap(); mm.add(out.ctypes.data, out.nbytes, "out"); mm.add(x.ctypes.data, 64 * 4, "in")   # only 64 elements registered
  with pytest.raises(GPUFault) as ei: mod.launch("red", [out.ctypes.data, x.ctypes.data], (2, 1, 1), (64, 1, 1), mm)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size) == ("read", "global", x.ctypes.data + 256, 4)
  assert r.workgroup == (1, 0, 0) and r.extra["tid"] == (0, 0, 0) and r.extra["kernel"] == "red"
  assert r.disasm == "cvt.u64.u32 %t64, %other; mad.lo.u64 %addr, %t64, 4, %i; ld.global.s32 %v, [%addr+0];"
  assert r.nearest == ("in", x.ctypes.data, 256) and r.offset == 256

def _granular(strict:bool, n_in:int, n_out:int):
  """Host memory of 4 KiB; `in` (n_in words at +0) and `out` (n_out words at +1024) registered with a 256-byte granule."""
  host = np.arange(1024 + 64, dtype=np.uint32) * 7 + 1
  base = (-host.ctypes.data % 256) // 4                     # both allocations start 256-byte aligned, as cuMemAlloc's do
  mm = MemoryMap(strict=strict)
  a_in, a_out = host.ctypes.data + 4 * base, host.ctypes.data + 4 * (base + 256)
  mm.add(a_in, 4 * n_in, "in", granule=256); mm.add(a_out, 4 * n_out, "out", granule=256)
  return host, base, mm, a_in, a_out

def test_reads_inside_the_granule_do_not_fault(mod):
  host, base, mm, a_in, a_out = _granular(False, 3, 8)
  st = mod.launch("copy", [a_out, a_in], (1, 1, 1), (8, 1, 1), mm)      # 5 threads read past the 12-byte `in`, inside its granule
  assert host[base + 256:base + 264].tolist() == (np.arange(base, base + 8) * 7 + 1).tolist()
  assert st.oob_reads == 0 and st.oob_report is None

def test_strict_mode_reports_reads_past_an_allocation_and_faults_writes(mod):
  host, base, mm, a_in, a_out = _granular(True, 3, 8)
  st = mod.launch("copy", [a_out, a_in], (1, 1, 1), (8, 1, 1), mm)      # the reads are performed, as on a GPU, and counted
  assert host[base + 256:base + 264].tolist() == (np.arange(base, base + 8) * 7 + 1).tolist()
  r = st.oob_report
  assert st.oob_reads == 5 and (r.kind, r.space, r.address, r.size, r.extra["tid"], r.nearest) == ("read", "global", a_in + 12, 4, (3, 0, 0), ("in", a_in, 12))
  host, base, mm, a_in, a_out = _granular(True, 8, 3)
  with pytest.raises(GPUFault, match="faults only in strict mode") as ei: mod.launch("copy", [a_out, a_in], (1, 1, 1), (8, 1, 1), mm)
  assert (ei.value.report.kind, ei.value.report.address, ei.value.report.extra["tid"]) == ("write", a_out + 12, (3, 0, 0))
  host, base, mm, a_in, a_out = _granular(False, 8, 3)
  assert mod.launch("copy", [a_out, a_in], (1, 1, 1), (8, 1, 1), mm).oob_reads == 0   # not strict: the GPU writes there silently
  assert host[base + 256 + 3:base + 264].tolist() == (np.arange(base + 3, base + 8) * 7 + 1).tolist()

@pytest.mark.parametrize("strict", [False, True])
def test_access_past_the_granule_faults(mod, strict):
  host, base, mm, a_in, a_out = _granular(strict, 3, 256)
  with pytest.raises(GPUFault) as ei: mod.launch("copy", [a_out, a_in], (1, 1, 1), (65, 1, 1), mm)
  assert (ei.value.report.kind, ei.value.report.address, ei.value.report.extra["tid"]) == ("read", a_in + 256, (64, 0, 0))

def test_shared_oob_write_is_a_structured_fault(mod):
  with pytest.raises(GPUFault) as ei: mod.launch("shoob", [], (1, 1, 1), (17, 1, 1), MemoryMap())
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.limit, r.lane, r.extra["tid"]) == ("write", "shared", 64, 4, 64, 16, (16, 0, 0))

def test_divergent_barrier_is_reported(mod):
  with pytest.raises(GPUFault, match="different bar.sync"): mod.launch("diverge", [], (1, 1, 1), (4, 1, 1), MemoryMap())

def test_watchdog(mod):
  with pytest.raises(WatchdogExpired) as ei: mod.launch("spin", [], (1, 1, 1), (1, 1, 1), MemoryMap(), budget=1000)
  assert ei.value.report.kind == "watchdog" and ei.value.report.extra["kernel"] == "spin"

def test_launch_argument_errors(mod):
  with pytest.raises(PTXError, match="'nope' is not in this PTX module"): mod.launch("nope", [], (1, 1, 1), (1, 1, 1), MemoryMap())
  with pytest.raises(PTXError, match="takes 2 parameters, got 1"): mod.launch("red", [0], (1, 1, 1), (1, 1, 1), MemoryMap())
  with pytest.raises(PTXError, match="more than 1024 threads"): mod.launch("shoob", [], (1, 1, 1), (1025, 1, 1), MemoryMap())

@pytest.mark.parametrize("body,match", [
  ("atom.global.add.u32 %r, [%a+0], 1;", r"line 6: instruction atom.global.add.u32 is not modelled: 'atom.global.add.u32 %r, \[%a\+0\], 1'"),
  ("add.rz.f32 %f, %f, %f;", r"qualifier\(s\) .rz not modelled"),
  ("bra NOWHERE;", "branch target 'NOWHERE' is not a label"),
  ("mov.u32 %r, %undeclared;", "operand '%undeclared' is not a register"),
  (".reg .f16x2 %h;", r"register type .f16x2 is not supported")])
def test_unmodelled_ptx_names_the_line(body, match):
  src = f".version 7.5\n.target sm_70\n.address_size 64\n.visible .entry k (.param .u64 p)\n{{ .reg .u32 %r; .reg .u64 %a; .reg .f32 %f;\n{body}\nret; }}"
  with pytest.raises(PTXError, match=match): engine.load(src)

def test_not_ptx():
  with pytest.raises(PTXError, match="no '.entry' kernel"): engine.load(b"\x7fELF\0\0")
