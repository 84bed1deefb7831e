"""Per-architecture GPU profiles as data: topology properties, IP versions and the register facts the GPU model needs.
The KFD model picks one from DEV's arch (`DEV=MOCKKFD+AMD::gfx1201`); gfx1100 is the default."""
from __future__ import annotations
import functools, importlib
from dataclasses import dataclass
from mockgpu.mock.errors import UnknownArchError

__all__ = ["GPUProfile", "PROFILES", "profile_for", "mock_arch", "PCI_DEFAULT_ARCH"]

@dataclass(frozen=True)
class GPUProfile:
  """One emulated GPU model. `props` are the KFD topology `properties` lines (docs/contracts/kfd.md section 2.1)."""
  arch: str                                   # gfx1100, gfx1201, gfx950, gfx942 (what code is compiled for)
  name: str                                   # marketing name, for reports
  gfx_target_version: int                     # topology value; tinygrad derives its arch from it
  device_id: int                              # PCI device id
  gc: tuple[int, int, int]                    # IP versions published in ip_discovery
  sdma: tuple[int, int, int]
  nbif: tuple[int, int, int]
  mp0: tuple[int, int, int]                   # PSP; with MP1 (SMU) it names the firmware tinygrad's AM driver loads (tinygrad/firmware.py)
  mp1: tuple[int, int, int]
  props: tuple[tuple[str, int], ...]          # shader-engine geometry etc.
  wave_size: int                              # 32 (RDNA, CS_W32_EN) or 64 (CDNA)
  vram_bytes: int
  mmhub: tuple[int, int, int]                 # the rest of the IP set tinygrad's AM driver reads from the discovery table (MOCKPCI)
  hdp: tuple[int, int, int]
  osssys: tuple[int, int, int]

  @property
  def family(self) -> int: return self.gfx_target_version // 10000
  @property
  def pm4(self): return importlib.import_module(f"tinygrad.runtime.autogen.am.pm4_{'soc15' if self.family == 9 else 'nv'}")
  @property
  def soc(self): return importlib.import_module(f"tinygrad.runtime.autogen.am.soc_{self.family}")
  @functools.cached_property
  def gc_regs(self):
    """tinygrad's own register map for this GC version (`AMDIP`), so addresses come from the autogen tables."""
    from tinygrad.runtime.support.amd import AMDIP
    off = importlib.import_module(f"tinygrad.runtime.autogen.am.{'vega' if self.family == 9 else 'navi'}_offsets")
    return AMDIP('gc', self.gc, bases={i: tuple(getattr(off, f'GC_BASE__INST{i}_SEG{s}', 0) for s in range(6)) for i in range(6)})
  @functools.cached_property
  def nbif_regs(self):
    from tinygrad.runtime.support.amd import AMDIP
    off = importlib.import_module(f"tinygrad.runtime.autogen.am.{'vega' if self.family == 9 else 'navi'}_offsets")
    return AMDIP('nbio' if self.family < 12 else 'nbif', self.nbif,
                 bases={i: tuple(getattr(off, f'NBIO_BASE__INST{i}_SEG{s}', 0) for s in range(9)) for i in range(6)})
  @functools.cached_property
  def _reg_addrs(self) -> dict[str, int]: return {}
  def reg(self, name:str) -> int:
    """Absolute dword address of GC register `name` (e.g. "regCOMPUTE_PGM_LO"); cached (a dispatch reads ~30)."""
    if (r:=self._reg_addrs.get(name)) is None: r = self._reg_addrs[name] = getattr(self.gc_regs, name).addr[0]
    return r
  def nbif_reg(self, name:str) -> int|None:
    """Absolute dword address of NBIO/NBIF register `name`, None if this IP version has no such register."""
    try: return getattr(self.nbif_regs, name).addr[0]
    except AttributeError: return None
  @property
  def scratch_granule(self) -> int: return 1024 if self.family == 9 else 256   # COMPUTE_TMPRING_SIZE.WAVESIZE unit in bytes
  def properties(self, node:int, gpu_id:int, render_minor:int) -> dict[str, int]:
    """The full `properties` file of topology node `node`."""
    return {"cpu_cores_count": 0, **dict(self.props), "gfx_target_version": self.gfx_target_version, "vendor_id": 0x1002,
            "device_id": self.device_id, "location_id": node << 8, "domain": 0, "drm_render_minor": render_minor,
            "hive_id": 0, "num_sdma_engines": 2, "num_sdma_xgmi_engines": 0, "num_sdma_queues_per_engine": 6,
            "num_cp_queues": 8, "local_mem_size": self.vram_bytes, "unique_id": 0x5A17_0000 + gpu_id, "num_xcc": 1}

_RDNA = (("simd_count", 192), ("mem_banks_count", 1), ("caches_count", 206), ("io_links_count", 1), ("cpu_core_id_base", 0),
         ("simd_id_base", 2147487744), ("max_waves_per_simd", 16), ("lds_size_in_kb", 64), ("gds_size_in_kb", 0), ("num_gws", 64),
         ("wave_front_size", 32), ("array_count", 12), ("simd_arrays_per_engine", 2), ("cu_per_simd_array", 8), ("simd_per_cu", 2),
         ("max_slots_scratch_cu", 32), ("max_engine_clk_fcompute", 2482), ("max_engine_clk_ccompute", 3000), ("fw_version", 2180),
         ("capability", 671588992), ("debug_prop", 1495), ("sdma_fw_version", 21))
_CDNA = (("simd_count", 304), ("mem_banks_count", 1), ("caches_count", 400), ("io_links_count", 1), ("cpu_core_id_base", 0),
         ("simd_id_base", 2147487744), ("max_waves_per_simd", 8), ("lds_size_in_kb", 160), ("gds_size_in_kb", 0), ("num_gws", 64),
         ("wave_front_size", 64), ("array_count", 16), ("simd_arrays_per_engine", 4), ("cu_per_simd_array", 19), ("simd_per_cu", 4),
         ("max_slots_scratch_cu", 32), ("max_engine_clk_fcompute", 2400), ("max_engine_clk_ccompute", 3000), ("fw_version", 120),
         ("capability", 746326592), ("debug_prop", 1511), ("sdma_fw_version", 20))

_CDNA3 = tuple((k, 64 if k == "lds_size_in_kb" else v) for k, v in _CDNA)   # MI300X: 64 KiB of LDS per CU (MI350X: 160)

# MP0/MP1 (PSP/SMU): Navi 31 13.0.0, Navi 48 14.0.3, MI300X 13.0.6, MI350X 13.0.12 (linux-firmware added its gc 9.5.0 and
# psp 13.0.12 blobs in one release; tinygrad's AM driver treats MP 13.0.12 as CDNA, like MI300's 13.0.6, and loads no SMU
# firmware for it). GC: MI300X 9.4.3 in its discovery table, 9.4.2 as KFD's gfx_target_version (tinygrad maps one to the other).
# SDMA: MI300X 4.4.2, MI350X 4.4.4. tinygrad's AM driver, which runs real MI350X boards, builds SDMA registers only for 4.4.2
# (MI300) and 4.4.4 (amdev.py _build_regs) and pins sdma_4_4_4.bin next to gc_9_5_0/psp_13_0_12; with 4.4.5 its SDMA init
# fails (KeyError regSDMA_CNTL).
PROFILES: dict[str, GPUProfile] = {p.arch: p for p in [
  GPUProfile("gfx1100", "Radeon RX 7900 XTX (Navi 31)", 110000, 0x744C, (11,0,0), (6,0,0), (4,3,0), (13,0,0), (13,0,0), _RDNA, 32, 24 << 30,
             mmhub=(3,0,0), hdp=(6,0,0), osssys=(6,0,0)),
  GPUProfile("gfx1201", "Radeon RX 9070 XT (Navi 48)", 120001, 0x7550, (12,0,1), (7,0,1), (6,3,1), (14,0,3), (14,0,3), _RDNA, 32, 16 << 30,
             mmhub=(4,1,0), hdp=(7,0,0), osssys=(7,0,0)),
  GPUProfile("gfx950", "Instinct MI350X", 90500, 0x75A0, (9,5,0), (4,4,4), (7,9,0), (13,0,12), (13,0,12), _CDNA, 64, 288 << 30,
             mmhub=(1,8,0), hdp=(4,4,2), osssys=(4,4,2)),
  GPUProfile("gfx942", "Instinct MI300X", 90402, 0x74A1, (9,4,3), (4,4,2), (7,9,0), (13,0,6), (13,0,6), _CDNA3, 64, 192 << 30,
             mmhub=(1,8,0), hdp=(4,4,2), osssys=(4,4,2)),
]}

# the chip of DEV=MOCKPCI+AMD / MOCKUSB+AMD without an arch: the one whose firmware (tinygrad's pinned blobs) is obtainable offline
PCI_DEFAULT_ARCH = "gfx950"

def profile_for(arch:str="") -> GPUProfile:
  """The profile for `arch` (empty: gfx1100).

  Raises:
    UnknownArchError: no profile for `arch`.
  """
  if (p:=PROFILES.get(arch or "gfx1100")) is None: raise UnknownArchError(arch, list(PROFILES))
  return p

def mock_arch(interface:str, arch:str) -> str:
  """The arch a MOCK interface emulates for DEV's arch field: that arch, else PCI_DEFAULT_ARCH on MOCKPCI and MOCKUSB (tinygrad's
  AM driver), else gfx1100."""
  return arch or (PCI_DEFAULT_ARCH if interface.upper() in ("MOCKPCI", "MOCKUSB") else profile_for("").arch)
