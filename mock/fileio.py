"""`MockFileIOInterface`: what tinygrad's hcq.py uses instead of its FileIOInterface when DEV names a MOCK interface.

Paths of the KFD model (`/dev/kfd`, the topology, `/sys/class/drm/renderD<minor>/...`, `/dev/dri/renderD<minor>`) are
served by `mockgpu.mock.kfd.system()`, the NVIDIA device files (`/dev/nvidiactl`, `/dev/nvidia-uvm`, `/dev/nvidia0`) by
`mockgpu.mock.nv.rm.driver()`; every other path behaves exactly like the real class (real OS calls), so probing
other devices fails cleanly. Imported while tinygrad's hcq.py is half initialised: only `FileIOInterface` may be
imported from it, and the KFD model is built lazily on the first open of one of its paths."""
from __future__ import annotations
import errno, os, sys
from tinygrad.runtime.support.hcq import FileIOInterface
from mockgpu.mock.sysfs import Device, Dir
from mockgpu.tinygrad.errors import NotSupportedYet
from mockgpu.usage import timed

__all__ = ["MockFileIOInterface"]

_MODEL_PREFIXES = ("/dev/kfd", "/dev/dri/renderD", "/sys/devices/virtual/kfd", "/sys/class/drm/renderD")
_NV_PATHS = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0")
_PCI_PREFIXES = ("/sys/bus/pci", "/dev/vfio")

def _nv():
  from mockgpu.mock.nv.rm import driver
  return driver()

def _model():
  from mockgpu.mock.kfd import system
  return system()

class MockFileIOInterface(FileIOInterface):
  """FileIOInterface over the mock KFD. Same signatures as tinygrad's class (hcq.py)."""
  def __init__(self, path:str="", flags:int=os.O_RDONLY, fd:int|None=None):
    self.path, self.node, self.nv = path, None, None
    if path.startswith(_PCI_PREFIXES):   # tinygrad's AM driver (PCIIface): never probe the host's real PCI devices under a mock
      raise NotSupportedYet("MOCKPCI+AMD", f"the mock has no PCI bus ({path}); use DEV=MOCKKFD+AMD for an emulated AMD GPU")
    if fd is None and path in _NV_PATHS:
      self.nv = _nv().open(path)
      self.node, self.fd = self.nv, self.nv.fd
      return
    if fd is None and path.startswith(_MODEL_PREFIXES) and (node:=_model().lookup(path)) is not None:
      self.node = node
      if isinstance(node, Device): self.fd = _model().open_device(node)
      else: self.fd = -1
      return
    super().__init__(path, flags, fd)

  def __del__(self):
    if self.node is None: super().__del__()
    elif self.nv is not None and (rm:=sys.modules.get("mockgpu.mock.nv.rm")) is not None: rm.driver().close(self.nv)
    elif isinstance(self.node, Device) and hasattr(self, "fd") and (kfd_mod:=sys.modules.get("mockgpu.mock.kfd")) is not None:
      kfd_mod.system().close_device(self.fd)

  def _not(self, what:str, code:int=errno.EINVAL) -> OSError: return OSError(code, f"{what} on {self.path} is not supported by the mock", self.path)

  def ioctl(self, request, arg):
    if self.node is None: return super().ioctl(request, arg)
    if not isinstance(self.node, Device) and self.nv is None: raise self._not("ioctl", errno.ENOTTY)
    with timed("driver_s"): return _nv().ioctl(self.nv, request, arg) if self.nv is not None else _model().ioctl(self.node, request, arg)

  def mmap(self, start, sz, prot, flags, offset):
    if self.node is None: return super().mmap(start, sz, prot, flags, offset)
    if not isinstance(self.node, Device) and self.nv is None: raise self._not("mmap", errno.ENODEV)
    with timed("driver_s"):
      return _nv().mmap(self.nv, start, sz, prot, flags, offset) if self.nv is not None else _model().mmap(self.node, start, sz, prot, flags, offset)

  def read(self, size=None, binary=False, offset=None):
    if self.node is None: return super().read(size, binary, offset)
    if self.nv is not None: raise self._not("read")
    if isinstance(self.node, Dir): raise IsADirectoryError(errno.EISDIR, "Is a directory", self.path)
    if isinstance(self.node, Device): raise self._not("read")
    text = self.node[offset or 0:]
    text = text if size is None else text[:size]
    return text.encode() if binary else text

  def write(self, content, binary=False, offset=None):
    if self.node is None: return super().write(content, binary, offset)
    if self.nv is not None: raise self._not("write")
    raise PermissionError(errno.EACCES, "Permission denied (mock sysfs is read-only)", self.path)

  def listdir(self):
    if self.node is None: return super().listdir()
    if not isinstance(self.node, Dir): raise NotADirectoryError(errno.ENOTDIR, "Not a directory", self.path)
    return list(self.node.entries)

  def seek(self, offset):
    if self.node is None: super().seek(offset)
