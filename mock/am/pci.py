"""The PCI files of the mock GPU that tinygrad's PCIIface opens through `MockFileIOInterface`: /sys/bus/pci/devices (one
device), its vendor/device/class/enable/config/resource files and BAR files resource0/2/5, /proc/self/pagemap (fake frame
numbers, `mmu.PageMap`) and /proc/sys/vm/compact_unevictable_allowed. No real PCI device or pagemap is ever opened."""
from __future__ import annotations
import errno, os, threading
from mockgpu.mock.am.device import PCIGPU

__all__ = ["PCI_ROOT", "PAGEMAP", "COMPACT", "PCIFiles", "handles", "system", "bus"]

PCI_ROOT, PAGEMAP, COMPACT = "/sys/bus/pci/devices", "/proc/self/pagemap", "/proc/sys/vm/compact_unevictable_allowed"
BAR_BUS = {0: 0x0800_0000_0000, 2: 0x07F0_0000_0000, 5: 0x07E0_0000_0000}   # bus addresses of the BARs (below 2^44, above fake frames)
RESOURCE_FLAGS = 0x14220C   # memory, 64-bit, prefetchable

def bus() -> str:
  """The device's PCI address: the PCI domain is this process's id (16 bits), so concurrent processes never share tinygrad's
  per-device lock file ($TMPDIR/am_<bus>.lock)."""
  return f"{os.getpid() & 0xFFFF:04x}:03:00.0"

def handles(path:str) -> bool:
  """True if `path` is one of the files this module serves (under MOCKPCI every PCI path is: the host's devices stay unseen)."""
  return path.startswith(PCI_ROOT) or path in (PAGEMAP, COMPACT)

class PCIFiles:
  """The file tree of one `PCIGPU`. `open(path, flags)` returns a file node or raises like open(2)."""
  def __init__(self, gpu:PCIGPU): self.gpu = gpu

  def text(self, path:str) -> str|None:
    """Contents of a text file, None if `path` is no text file of the tree."""
    d, g = f"{PCI_ROOT}/{bus()}", self.gpu
    if path == COMPACT: return "0\n"
    if path == f"{d}/resource":
      return "".join(f"0x{BAR_BUS[i]:016x} 0x{BAR_BUS[i] + g.sizes[i] - 1:016x} 0x{RESOURCE_FLAGS:016x}\n" if i in g.sizes else f"0x{0:016x} 0x{0:016x} 0x{0:016x}\n"
                     for i in range(13))
    return {f"{d}/vendor": "0x1002\n", f"{d}/device": f"0x{g.profile.device_id:04x}\n", f"{d}/class": "0x030000\n", f"{d}/enable": "1\n"}.get(path)

  def kind(self, path:str) -> str:
    """"dir", "text", "config", "bar<N>", "pagemap" or "enable"; FileNotFoundError for anything else under the served roots."""
    d = f"{PCI_ROOT}/{bus()}"
    path = os.path.normpath(path)
    if path in (PCI_ROOT, d): return "dir"
    if path == PAGEMAP: return "pagemap"
    if path == f"{d}/config": return "config"
    if path.startswith(f"{d}/resource") and (n:=path[len(d) + 9:]).isdigit() and int(n) in self.gpu.sizes: return f"bar{n}"
    if self.text(path) is not None: return "text"
    raise FileNotFoundError(errno.ENOENT, "No such file or directory (mock PCI bus)", path)

  def listdir(self, path:str) -> list[str]:
    return [bus()] if os.path.normpath(path) == PCI_ROOT else ["vendor", "device", "class", "enable", "config", "resource",
                                                                *(f"resource{b}" for b in self.gpu.sizes)]

_system: PCIFiles|None = None
_lock = threading.Lock()

def system() -> PCIFiles:
  """The process's mock PCI GPU (created on first use, for DEV's AMD arch; gfx950 if DEV names none).

  Raises:
    UnknownArchError: DEV names an arch without a profile.
  """
  global _system
  with _lock:
    if _system is None:
      from tinygrad.helpers import DEV
      from mockgpu.mock.profiles import mock_arch, profile_for
      _system = PCIFiles(PCIGPU(profile_for(mock_arch("MOCKPCI", DEV.target("AMD").arch))))
    return _system
