"""Constants: 2/PI bits (V_TRIG_PREOP_F64) against the published hex expansion; the table in pcode_math.h regenerates."""
import os, re, struct
from mockgpu.pcode.constants import two_over_pi_fraction_bits, two_over_pi_segment
from mockgpu.pcode.cabi import HEADER_DIR
from mockgpu.pcode.corrections import FIXES
from mockgpu.pcode.tables import entries

# 2/PI = 0x0.A2F9836E4E441529FC2757D1F534DDC0DB6295993C439041FE51... (published, e.g. in fdlibm's k_rem_pio2 table)
PUBLISHED = "A2F9836E4E441529FC2757D1F534DDC0DB6295993C439041FE51"

def test_two_over_pi_matches_published_digits():
  n = 4 * len(PUBLISHED)
  assert two_over_pi_fraction_bits() >> (1201 - n) == int(PUBLISHED, 16)
  bits = int(PUBLISHED, 16)
  assert two_over_pi_segment(0) == bits >> (n - 53) and two_over_pi_segment(53) == (bits >> (n - 106)) & (2**53 - 1)

def test_header_table_regenerates():
  with open(os.path.join(HEADER_DIR, "pcode_math.h")) as f: src = f.read()
  words = [int(w, 16) for w in re.findall(r"0x([0-9a-f]{8})u", re.search(r"PC_TWO_OVER_PI\[38\] = \{(.*?)\};", src, re.S).group(1))]
  assert sum(w << (32 * i) for i, w in enumerate(words)) == two_over_pi_fraction_bits()

def test_fix_applied_with_reason_and_source():
  # each entry's fixes apply in order, each to the text the ones before it left; every fix names its reason and its source
  import importlib
  from mockgpu.pcode.corrections import ISA_TEXT, HW_ISSUE10, HW_FDIV
  for (arch, name), fixes in FIXES.items():
    e = entries(arch)[name]
    text = importlib.import_module(f"tinygrad.runtime.autogen.amd.{arch}.str_pcode").PCODE[e.op]
    for fix in fixes:
      assert fix.reason and fix.source in (ISA_TEXT, HW_ISSUE10, HW_FDIV) and fix.old in text, (arch, name, fix.old)
      text = text.replace(fix.old, fix.new)
    assert e.text == text and e.fixes == fixes and e.fixed

def test_stale_fix_is_reported_with_its_index(monkeypatch):
  from mockgpu.pcode import corrections, tables
  from mockgpu.pcode.errors import PcodeError
  import pytest
  key = ("rdna3", "VOP3Op_V_TRIG_PREOP_F64")
  monkeypatch.setitem(corrections.FIXES, key, FIXES[key] + (corrections.Fix("no such text", "x", "r", corrections.ISA_TEXT),))
  tables.entries.cache_clear()
  try:
    with pytest.raises(PcodeError, match="entry 1 is stale"): tables.entries("rdna3")
  finally: tables.entries.cache_clear()

def test_trig_preop_known_answer(clib):
  from test_known_answers import both
  d = lambda b: struct.unpack("<d", struct.pack("<Q", b & (2**64 - 1)))[0]
  bits = int(PUBLISHED, 16)
  for sel, shift in ((0, 0), (1, 53)):
    r = both(clib, "rdna3", "VOP3Op_V_TRIG_PREOP_F64", S0=struct.unpack("<Q", struct.pack("<d", 1.0))[0], S1=sel)
    want = ((bits >> (4 * len(PUBLISHED) - 53 - shift)) & (2**53 - 1)) * 2.0 ** (-53 - shift)
    assert d(r.D0) == want
