"""Front end: every entry of the three archs parses and type-checks or is listed in PROSE; malformed text gives PcodeError."""
import pytest
from mockgpu.errors import MockGPUError
from mockgpu.pcode.tables import ARCHS, entries
from mockgpu.pcode.compile import try_program
from mockgpu.pcode.parser import parse
from mockgpu.pcode.typecheck import check
from mockgpu.pcode.nodes import Ty, Slice, Binary, Concat, Cast, Lambda, For, While, If, Index, Name
from mockgpu.pcode.errors import PcodeError, PcodeSyntaxError, PcodeTypeError
from mockgpu.pcode.prose import prose, RULES, PROSE

@pytest.mark.parametrize("arch", ARCHS)
def test_every_entry_compiles_or_is_prose(arch):
  bad = []
  for name in entries(arch):
    prog, err = try_program(arch, name)
    if (err is None) == (name in prose(arch)): bad.append((name, err))
  assert bad == []

def test_prose_rules_all_used_and_reasoned():
  import re
  for rx, archs, reason, impl in RULES:
    assert any(re.fullmatch(rx, n) for _, n in PROSE), rx
    assert reason and impl.startswith("mockgpu.emu")

def test_counts_are_plausible():
  assert {a: len(entries(a)) for a in ARCHS} == {"rdna3": 1392, "rdna4": 1441, "cdna": 1441}

def first(src): return parse(src).body[0]

def test_slices_and_partselect():
  s = first("D0.u32[31 : 0] = S0.u32[0 : 31]")
  assert isinstance(s.lhs, Slice) and isinstance(s.rhs, Slice)
  p = check(parse("D0.u32[31 : 0] = S0.u32[0 : 31]"), "t", "t")
  assert p.body[0].rhs.rev is True and p.body[0].rhs.width == 32 and p.body[0].lhs.rev is False
  p = check(parse("D0.u32 = S0.u32[4 * 2 +: 4]"), "t", "t")
  assert p.body[0].rhs.width == 4 and p.body[0].rhs.ty == Ty("b", 4)

def test_sized_literals_and_casts():
  s = first("D0.u64 = 64'U(S0.u32) + 16'4 + 1'1U")
  assert isinstance(s.rhs.a.a, Cast) and s.rhs.a.a.to == Ty("u", 64)
  assert (s.rhs.a.b.val, s.rhs.a.b.ty0) == (4, Ty("b", 16)) and (s.rhs.b.val, s.rhs.b.ty0) == (1, Ty("u", 1))
  assert first("D0.f32 = 32'F(0xffc00000)").rhs.to == Ty("f", 32)

def test_concat_ternary_control_flow_lambda():
  prog = parse("F = lambda(a, b) (a > b ? a : b);\nfor i in 0 : 3 do\nif i == 2 then\nbreak\nelsif i == 1 then\nD0.u32 = 1\nelse\n"
               "D0.u32 = { 16'0U, S0.u16 }\nendif\nendfor;\nwhile SCC do\nSCC = 1'0U\nendwhile")
  lam, loop, wh = prog.body
  assert isinstance(lam, Lambda) and lam.params == ["a", "b"] and isinstance(loop, For) and isinstance(wh, While)
  assert isinstance(loop.body[0], If) and len(loop.body[0].arms) == 2 and isinstance(loop.body[0].orelse[0].rhs, Concat)

def test_chained_assignment_and_compound():
  a, b = parse("EXEC.u64[laneId] = D0.u64[laneId] = S0.u32 < S1.u32").body
  assert isinstance(a.lhs, Index) and a.lhs.x.x.name == "D0" and isinstance(a.rhs, Binary) and a.rhs.op == "<"
  assert isinstance(b.lhs, Index) and b.lhs.x.x.name == "EXEC" and b.rhs is a.lhs and isinstance(b.lhs.idx, Name)
  c = check(parse("tmp = 0;\ntmp += 1;\nD0.i32 = tmp"), "t", "t").body[1]
  assert isinstance(c.rhs, Binary) and c.rhs.op == "+"

def test_types_of_expressions():
  p = check(parse("D0.u32 = S0.u32 + S1.u16;\nSCC = S0.i32 < 0;\nD1.f32 = S0.f32 * 2.0"), "t", "t")
  assert p.body[0].rhs.ty == Ty("u", 32) and p.body[1].rhs.ty == Ty("u", 1) and p.body[1].rhs.opty == Ty("i", 32)
  assert p.body[2].rhs.ty == Ty("f", 32)      # an unsuffixed float literal adopts the other operand's format
  info = p.info["op"]
  assert {"S0", "S1"} <= info.reads and {"D0", "SCC", "D1"} <= info.writes

@pytest.mark.parametrize("src, cls, line, col", [
  ("D0.u32 = S0.u32 +", PcodeSyntaxError, 1, 18),
  ("D0.u32 = (S0.u32", PcodeSyntaxError, 1, 17),
  ("if SCC then\nD0.u32 = 1\n", PcodeSyntaxError, 3, 1),
  ("D0.u32 = S0.u32 @ 2", PcodeSyntaxError, 1, 17),
  ("D0.u32 = NOPE.u32", PcodeTypeError, 1, 10),
  ("D0.u32 = frobnicate(S0.u32)", PcodeTypeError, 1, 10),
  ("D0.u32 = S0.u32[S1.u32 : 0]", PcodeTypeError, 1, 10),
])
def test_malformed_input_gives_precise_error(src, cls, line, col):
  with pytest.raises(cls) as ei: check(parse(src), "rdna3", "VOP1Op_V_TEST")
  e = ei.value
  assert isinstance(e, MockGPUError) and isinstance(e, PcodeError) and (e.line, e.col) == (line, col)
  assert f"line={line} col={col}" in str(e)

def test_error_names_op_and_arch():
  from mockgpu.pcode.compile import program
  with pytest.raises(PcodeError) as ei: program("cdna", "SOPPOp_S_SLEEP")
  assert ei.value.op == "SOPPOp_S_SLEEP" and ei.value.arch == "cdna" and "op=SOPPOp_S_SLEEP arch=cdna line=1" in str(ei.value)

@pytest.mark.parametrize("src, bits, only", [
  ("tmp = 64'U(S0.u32) + VCC.u64[laneId].u64;\nVCC.u64[laneId] = tmp >= 0x100000000ULL ? 1'1U : 1'0U;\nD0.u32 = tmp.u32", {"VCC"}, True),
  ("D0.u64[laneId] = S0.u32 < S1.u32", {"D0"}, True),
  ("VCC.u64[laneId] = 1'1U;\nD0.u32 = VCC.u32", set(), False),                       # the whole mask is read too
  ("VCC.u64[laneId] = S0.u32 > 0;\nD0.u32 = VCC.u64[0].u32", set(), False),           # another lane's bit
  ("VCC.u64[laneId] = S0.u32 > 0;\nD0.u32 = laneId", {"VCC"}, False),                 # laneId read beyond the bit index
])
def test_lane_bits_finds_members_touched_only_as_the_lanes_bit(src, bits, only):
  # the C backend runs such entries' full-wave loops with every lane on the incoming mask (emu/gen_c.py _lane_loop)
  from mockgpu.pcode.cemit import lane_bits
  assert lane_bits(check(parse(src), "t", "t")) == (frozenset(bits), only)
