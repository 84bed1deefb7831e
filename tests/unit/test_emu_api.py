"""mockgpu.emu.api argument checks and the per-arch table (no execution, no build)."""
import pytest
from dataclasses import replace
from mockgpu.emu.build import build
from mockgpu.emu.api import Dispatch, run, check_dispatch
from mockgpu.emu.arch import ARCHS, ArchSpec, get_arch, library_arch
from mockgpu.emu.errors import UnsupportedDispatch, BackendUnavailable
from mockgpu.emu.memory import MemoryMap

def test_dispatch_derived_fields():
  d = Dispatch("gfx1100", 0x1000, rsrc2=(15 << 1) | (3 << 15), wave64=False)
  assert (d.user_sgpr_count, d.wave_size, d.lds_size) == (15, 32, 3 * 512)
  assert Dispatch("gfx1100", 0, lds_bytes=100, rsrc2=3 << 15).lds_size == 100

@pytest.mark.parametrize("kw,match", [({"arch": "gfx9999"}, "unknown arch 'gfx9999'"), ({"block": (2048, 1, 1)}, "2048 threads > 1024"),
                                      ({"grid": (0, 1, 1)}, "three positive dims"), ({"wave64": True, "arch": "gfx950", "lds_bytes": 1 << 20}, "lds="),
                                      ({"user_sgprs": (1 << 32,)}, "each must be a u32"), ({"arch": "gfx950", "wave64": False}, "no wave32")])
def test_bad_dispatches_are_named(kw, match):
  with pytest.raises(UnsupportedDispatch, match=match): check_dispatch(Dispatch(**{"arch": "gfx1100", "code_addr": 0x1000, **kw}))

def test_backend_choices():
  with pytest.raises(BackendUnavailable, match="choose 'c' or 'python'"): run(Dispatch("gfx1100", 0x1000), MemoryMap(), backend="gpu")
  with pytest.raises(BackendUnavailable, match="arch=gfx950: the C backend does not support it"): build(replace(get_arch("gfx950"), c_backend=False))

def test_arch_table_is_the_one_place_for_arch_facts():
  assert get_arch("gfx1201").tgid_in_ttmp and not get_arch("gfx1100").tgid_in_ttmp
  assert get_arch("gfx950").wave_sizes == (64,) and get_arch("gfx950").num_agprs == 256 and get_arch("gfx950").nvregs == 512
  assert get_arch("gfx1100").nvregs == 256 and get_arch("gfx1100").true16 and not get_arch("gfx950").true16
  assert {a.family for a in ARCHS.values()} == {"rdna3", "rdna4", "cdna"}

def test_gfx942_is_gfx950_with_64k_of_lds_on_one_library():
  # MI300X (CDNA3) has 64 KiB of LDS per workgroup, MI350X (CDNA4) 160 KiB; everything the generated C reads is the same
  g942, g950 = get_arch("gfx942"), get_arch("gfx950")
  assert (g942.max_lds, g950.max_lds) == (65536, 163840) and g942.isa == g950.isa and library_arch(g942) is g950
  assert library_arch(get_arch("gfx1100")) is get_arch("gfx1100") and library_arch(get_arch("gfx1201")) is get_arch("gfx1201")
  check_dispatch(Dispatch("gfx950", 0x1000, wave64=True, lds_bytes=96 << 10))
  with pytest.raises(UnsupportedDispatch, match="lds=98304 bytes > 65536 per workgroup on gfx942"):
    check_dispatch(Dispatch("gfx942", 0x1000, wave64=True, lds_bytes=96 << 10))

def test_arch_rows_name_every_field():
  with pytest.raises(TypeError): ArchSpec("gfx0", "rdna3", (32,), 106, 256, 0, 65536, 1024, False, 125, 124, 233, 250, -1)   # keyword-only
  r3, r4, cd = get_arch("gfx1100"), get_arch("gfx1201"), get_arch("gfx950")
  # ISA manuals: RDNA3/4 address s0..s105 and encode M0 as 125, NULL as 124, DPP8 as 233, DPP16 as 250 (no SDWA); CDNA3 has
  # s0..s101, M0 = 124, SDWA = 249, DPP16 = 250; RDNA4 delivers workgroup ids in TTMP registers
  assert [(a.wave_sizes, a.num_sgprs, a.enc_m0, a.enc_null, a.enc_dpp8, a.enc_dpp16, a.enc_sdwa, a.tgid_in_ttmp) for a in (r3, r4, cd)] == [
    ((32, 64), 106, 125, 124, 233, 250, -1, False), ((32, 64), 106, 125, 124, 233, 250, -1, True), ((64,), 102, 124, -1, -1, 250, 249, False)]
