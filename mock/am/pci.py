"""The PCI bus of mock AMD GPUs that tinygrad's PCIIface opens through `MockFileIOInterface`: /sys/bus/pci/devices with
`MOCKGPU_GPUS` devices (default 6, as the KFD mock: a tinybox's six GPUs), each with vendor/device/class/enable/config/
resource files and BAR files resource0/2/5, /proc/self/pagemap (fake frame numbers, `mmu.PageMap`, one for the process) and
/proc/sys/vm/compact_unevictable_allowed. No real PCI device or pagemap is ever opened.

A device's `PCIGPU` (BAR memfds, register file, device thread) is built when tinygrad opens one of its files beyond the ones
it reads to scan the bus (vendor, device, class), so a process pays only for the GPUs it uses. The GPUs of the bus share the
fake frames and the host address space (`mmu.HostVA`), and each sees the others' BAR0 (their VRAM) as system memory at its
bus address: that is how tinygrad's AM driver maps a peer's buffer for peer-to-peer copies (`PCIIfaceBase.p2p_paddrs`: the
peer's paddr + its BAR0 bus address, as SYSTEM PTEs), and the page walker mirrors the peer's VRAM memfd there."""
from __future__ import annotations
import atexit, contextlib, errno, os, threading
from mockgpu.mock.am.device import BAR2_BYTES, PCIGPU
from mockgpu.mock.am.mmu import HostVA, PageMap
from mockgpu.mock.am.regs import BAR5_BYTES
from mockgpu.mock.errors import MockDeviceError
from mockgpu.mock.profiles import GPUProfile

__all__ = ["PCI_ROOT", "PAGEMAP", "COMPACT", "MAX_GPUS", "PCIBus", "handles", "system", "bus", "bar_bus", "drop_lock_at_exit"]

PCI_ROOT, PAGEMAP, COMPACT = "/sys/bus/pci/devices", "/proc/self/pagemap", "/proc/sys/vm/compact_unevictable_allowed"
# bus addresses of the BARs of device 0 and the step per device: all below 2^44 (the GPU's physical address space on gfx11) and
# above the fake frames; BAR0 slots of 512 GiB, aligned to their size and larger than any profile's VRAM (gfx950: 288 GiB)
BAR_BUS, BAR_STEP = {0: 0x0800_0000_0000, 2: 0x07F0_0000_0000, 5: 0x07E0_0000_0000}, {0: 1 << 39, 2: 1 << 32, 5: 1 << 32}
MAX_GPUS, FIRST_BUS = 16, 0x03   # 16 BAR0 slots fit below 2^44; device i is on PCI bus FIRST_BUS + i
RESOURCE_FLAGS = 0x14220C   # memory, 64-bit, prefetchable
ID_FILES = ("vendor", "device", "class")   # what tinygrad reads while scanning the bus: served without building the GPU

def bus(index:int=0) -> str:
  """The PCI address of device `index`: the PCI domain is this process's id (16 bits), so concurrent processes never share
  tinygrad's per-device lock file ($TMPDIR/am_<bus>.lock)."""
  return f"{os.getpid() & 0xFFFF:04x}:{FIRST_BUS + index:02x}:00.0"

def drop_lock_at_exit(pcibus:str):
  """Removes tinygrad's lock file for the AM device at `pcibus` ($TMPDIR/am_<pcibus>.lock) when this process exits. The mock
  addresses are per process, so each file would otherwise stay behind: one per test process that opened a mock device."""
  from tinygrad.helpers import temp
  path, pid = temp(f"am_{pcibus.lower()}.lock"), os.getpid()
  def drop():
    if os.getpid() == pid:   # not in a forked child: the parent still holds the lock
      with contextlib.suppress(FileNotFoundError): os.unlink(path)
  atexit.register(drop)

def bar_bus(index:int, bar:int) -> int:
  """The bus address of BAR `bar` (0, 2 or 5) of device `index`."""
  return BAR_BUS[bar] + index * BAR_STEP[bar]

def handles(path:str) -> bool:
  """True if `path` is one of the files this module serves (under MOCKPCI every PCI path is: the host's devices stay unseen)."""
  return path.startswith(PCI_ROOT) or path in (PAGEMAP, COMPACT)

class PCIBus:
  """`n` mock PCI GPUs of `profile` and their file tree. `open(path)` returns (file kind, the device's PCIGPU or None) or raises
  like open(2); `gpu(i)` builds device `i` on first use. `autorun=False` (unit tests): GPUs without a device thread.

  Raises:
    MockDeviceError: `n` is not 1..MAX_GPUS, or the profile's VRAM does not fit a BAR0 slot.
  """
  def __init__(self, profile:GPUProfile, n:int, autorun:bool=True):
    if not 1 <= n <= MAX_GPUS: raise MockDeviceError(f"MOCKGPU_GPUS={n}: the mock PCI bus holds 1..{MAX_GPUS} GPUs (their BAR0s must fit below 2^44)")
    if profile.vram_bytes > BAR_STEP[0]: raise MockDeviceError(f"{profile.arch}: {profile.vram_bytes:#x} bytes of VRAM exceed a BAR0 slot ({BAR_STEP[0]:#x})")
    self.profile, self.n, self.autorun = profile, n, autorun
    self.pagemap, self.host, self.gpus, self.lock = PageMap(), HostVA(), {}, threading.Lock()
    self.sizes = {0: profile.vram_bytes, 2: BAR2_BYTES, 5: BAR5_BYTES}

  def gpu(self, i:int) -> PCIGPU:
    """Device `i`'s PCIGPU, built on first use."""
    with self.lock:
      if (g:=self.gpus.get(i)) is None:
        g = self.gpus[i] = PCIGPU(self.profile, self.autorun, lambda: self.peers(i), pagemap=self.pagemap, host=self.host, index=i)
        if self.autorun: drop_lock_at_exit(bus(i))
      return g

  def peers(self, i:int) -> tuple[tuple[int, int, int], ...]:
    """(bus address, size, VRAM memfd) of the BAR0 of every built GPU but `i`: memory GPU `i` reaches as system memory."""
    return tuple((bar_bus(j, 0), g.vram_size, g.fds[0]) for j, g in list(self.gpus.items()) if j != i)

  def _split(self, path:str) -> tuple[int|None, str]:
    """(device index, file name within its directory) of `path`; (None, "") for the bus directory and the /proc files."""
    rest = os.path.normpath(path)[len(PCI_ROOT) + 1:] if path.startswith(PCI_ROOT + "/") else ""
    name, _, file = rest.partition("/")
    if not name: return None, ""
    if (i:=next((i for i in range(self.n) if bus(i) == name), None)) is None:
      raise FileNotFoundError(errno.ENOENT, f"No such file or directory (the mock PCI bus has {', '.join(bus(i) for i in range(self.n))})", path)
    return i, file

  def text(self, path:str) -> str|None:
    """Contents of a text file, None if `path` is no text file of the tree."""
    if path == COMPACT: return "0\n"
    i, file = self._split(path)
    if i is None: return None
    if file == "resource":
      return "".join(f"0x{(b:=bar_bus(i, r)):016x} 0x{b + self.sizes[r] - 1:016x} 0x{RESOURCE_FLAGS:016x}\n" if r in self.sizes else f"0x{0:016x} 0x{0:016x} 0x{0:016x}\n"
                     for r in range(13))
    return {"vendor": "0x1002\n", "device": f"0x{self.profile.device_id:04x}\n", "class": "0x030000\n", "enable": "1\n"}.get(file)

  def kind(self, path:str) -> tuple[str, int|None]:
    """("dir" | "id" | "text" | "config" | "bar<N>" | "pagemap", the index of the device the file belongs to); FileNotFoundError
    for anything else under the served roots. "id": the files tinygrad reads to scan the bus."""
    path = os.path.normpath(path)
    if path == PAGEMAP: return "pagemap", None
    i, file = self._split(path)
    if path == PCI_ROOT or (i is not None and not file): return "dir", i
    if i is not None and file in ID_FILES: return "id", i
    if file == "config": return "config", i
    if file.startswith("resource") and file[8:].isdigit() and int(file[8:]) in self.sizes: return f"bar{file[8:]}", i
    if self.text(path) is not None: return "text", i
    raise FileNotFoundError(errno.ENOENT, "No such file or directory (mock PCI bus)", path)

  def open(self, path:str) -> tuple[str, PCIGPU|None]:
    """`kind(path)` and the device's GPU (built now) for files beyond the bus directory and the ID files."""
    kind, i = self.kind(path)
    return kind, None if i is None or kind in ("dir", "id") else self.gpu(i)

  def listdir(self, path:str) -> list[str]:
    return [bus(i) for i in range(self.n)] if os.path.normpath(path) == PCI_ROOT else [*ID_FILES, "enable", "config", "resource",
                                                                                     *(f"resource{b}" for b in self.sizes)]

_system: PCIBus|None = None
_lock = threading.Lock()

def system() -> PCIBus:
  """The process's mock PCI bus (created on first use, for DEV's AMD arch, gfx950 if DEV names none, with `MOCKGPU_GPUS` GPUs,
  default 6).

  Raises:
    UnknownArchError: DEV names an arch without a profile.
    MockDeviceError: MOCKGPU_GPUS is not an integer in 1..MAX_GPUS.
  """
  global _system
  with _lock:
    if _system is None:
      from tinygrad.helpers import DEV
      from mockgpu.mock.kfd import DEFAULT_GPUS
      from mockgpu.mock.profiles import mock_arch, profile_for
      try: n = int(os.environ.get("MOCKGPU_GPUS", DEFAULT_GPUS))
      except ValueError: raise MockDeviceError(f"MOCKGPU_GPUS={os.environ['MOCKGPU_GPUS']!r} is not an integer (the number of mock GPUs, e.g. 2)") from None
      _system = PCIBus(profile_for(mock_arch("MOCKPCI", DEV.target("AMD").arch)), n)
    return _system
