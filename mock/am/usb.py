"""The USB3-to-PCIe bridge of tinygrad's USB GPU path (DEV=MOCKUSB+AMD): an ASMedia ASM24xx controller running tinygrad's
custom firmware, modelled at the level of the requests tinygrad's `USB3` / `CustomASM24Controller` send (runtime/support/
usb.py, system.py `USBPCIDevice`, ops_amd.py `USBIface`), in front of the same `PCIGPU` as DEV=MOCKPCI+AMD: one register
file, device thread, page walker, engines and emulator for both paths. The protocol has no public specification; what the
model does is what tinygrad 0.14.0 relies on (docs/mock.md, "MOCKUSB"):

* Control OUT 0xE5 writes one XDATA byte (wValue address, wIndex byte); control IN 0xE4 reads XDATA. XDATA modelled: the link
  state at 0xB450 (0x78 = LTSSM up, after power-on), and three 4 KiB windows onto memory the GPU reaches as system memory
  (`WINDOWS`): sys_buf at 0xA000 (GPU bus address 0x820000), cq_buf at 0xB800 (0x822000), the first 4 KiB of the 512 KiB
  SRAM at 0xF000 (SRAM is bus address 0x200000). Anything else is an error.
* Control OUT 0xF3 powers the PCIe link (wValue 1 on, 0 off); the controller starts with it off.
* Control OUT 0xF0 sends a TLP: wValue = fmt_type | byte_enable << 8, wIndex = mode, data = <III (address low, high, value).
  Mode 0: one config read/write (type 0/1: 0x04/0x05/0x44/0x45) or memory read/write of one dword (0x00/0x20, 0x40/0x60);
  reads and config writes leave a completion that control IN 0xF0 (8 bytes: data, status << 5 in byte 4, transport status
  in byte 7) returns. Mode 1: a stream write of `value` dwords, whose data is the next bulk OUT (EP 0x02); mode 2: a stream
  read of `value` dwords, returned by the next bulk IN (EP 0x81).
* Control OUT 0xF2 drives the SRAM engine: wValue = 512-byte sectors (| 0x8000: read), wIndex = 16 KiB slot | number of
  16 KiB units << 8. A write takes the next bulk OUT into SRAM. A read is *armed*: it presets the completion dword cq_buf+12
  to `CQ_ARMED`, and the next bulk IN (after any stream read) returns the SRAM once the GPU has written that dword (tinygrad
  has its SDMA write 0 there after the copy into SRAM), waiting at most the transfer's timeout.

PCIe: buses 0-3 are bridges (type 1 headers: bus numbers, memory and prefetchable windows, command); bus 4 is the GPU, whose
config space is the `PCIGPU`'s, with BAR0 (VRAM, 64-bit prefetchable, resizable 256 MiB..32 GiB), BAR2 (doorbells, 64-bit
prefetchable), BAR4 (I/O) and BAR5 (registers, 32-bit): BAR registers keep only the address bits their size leaves, so
sizing by writing all ones works. A memory request reaches the GPU if every bridge forwards it (command memory bit, address
in a window) and it falls in a BAR; BAR0 covers VRAM from 0 (tinygrad places prefetchable BARs from 32 GiB, so no larger
BAR can be aligned; a gfx950's 288 GiB of VRAM is then a small BAR, and tinygrad reads the discovery table through
MM_INDEX/MM_DATA, which this model serves). Config requests to a missing function and memory reads that reach no BAR
complete with Unsupported Request, as on the bus; everything tinygrad's protocol does not allow raises `USBError`."""
from __future__ import annotations
import ctypes, mmap, os, struct, threading, time
from tinygrad.runtime.autogen import libc, pci
from mockgpu.mock.am.device import PCIGPU
from mockgpu.mock.errors import MockDeviceError, USBError
from mockgpu.mock.profiles import GPUProfile

__all__ = ["ASM24", "ConfigSpace", "WINDOWS", "LTSSM", "LINK_UP", "CQ_ARMED", "GPU_BUS", "build", "system"]

LTSSM, LINK_UP = 0xB450, 0x78    # XDATA address of the link state, its value with the link up
WINDOWS = {"sram": (0xF000, 0x200000, 0x80000), "sys_buf": (0xA000, 0x820000, 0x1000), "cq_buf": (0xB800, 0x822000, 0x1000)}
XDATA_VIEW = 0x1000              # bytes of each window visible in XDATA (the 16-bit XDATA space shows 4 KiB of the SRAM)
CQ_DONE, CQ_ARMED = 12, 0xFFFFFFFF   # cq_buf offset of the completion dword an armed SRAM read waits on; its value when armed
SECTOR, SLOT = 512, 0x4000
GPU_BUS = 4
BAR0_SIZES = range(28, 36)       # resizable BAR0: 256 MiB .. 32 GiB (log2 bytes)
REBAR = 0x100                    # the GPU's resizable-BAR extended capability
COMPLETER_UR = 0b001
CFG_RD, CFG_WR, MEM_RD, MEM_WR = (0x04, 0x05), (0x44, 0x45), (0x00, 0x20), (0x40, 0x60)

class ConfigSpace:
  """The 4 KiB config space `data` of one PCI function: plain storage, except the BAR registers `bars[i] = (size, type bits)`:
  they keep only the address bits their size leaves and their read-only type bits (sizing by writing all ones works)."""
  def __init__(self, data:bytearray, bars:dict[int, tuple[int, int]]|None=None):
    self.data, self.bars, self.version = data, dict(bars or {}), 0   # version: bumped by every write
    for i in self.bars: self._mask(i)
  def u(self, off:int, n:int=4) -> int: return int.from_bytes(self.data[off:off + n], "little")
  def write(self, off:int, data:bytes):
    self.data[off:off + len(data)] = data
    self.version += 1
    for i, (_, typ) in self.bars.items():
      if off < 0x10 + 4 * i + (8 if typ & 4 else 4) and 0x10 + 4 * i < off + len(data): self._mask(i)
  def resize(self, i:int, size:int):
    self.bars[i] = (size, self.bars[i][1])
    self._mask(i)
  def bar(self, i:int) -> tuple[int, int]:
    """(bus address, size) of memory BAR `i`."""
    lo, typ = 0x10 + 4 * i, self.bars[i][1]
    return (self.u(lo) & ~0xF) | (self.u(lo + 4) << 32 if typ & 4 else 0), self.bars[i][0]
  def _mask(self, i:int):
    (size, typ), lo = self.bars[i], 0x10 + 4 * i
    if typ & pci.PCI_BASE_ADDRESS_SPACE_IO:
      self.data[lo:lo + 4] = (self.u(lo) & ~(size - 1) & 0xFFFFFFFC | typ).to_bytes(4, "little")
      return
    wide = typ & pci.PCI_BASE_ADDRESS_MEM_TYPE_64
    addr = (self.u(lo) | (self.u(lo + 4) << 32 if wide else 0)) & ~(size - 1) & ~0xF & ((1 << (64 if wide else 32)) - 1)
    self.data[lo:lo + 4] = ((addr & 0xFFFFFFFF) | typ).to_bytes(4, "little")
    if wide: self.data[lo + 4:lo + 8] = (addr >> 32).to_bytes(4, "little")

def _bridge() -> ConfigSpace:
  c = ConfigSpace(bytearray(4096))
  c.write(0, struct.pack("<HH", 0x1B21, 0x2464))   # ASMedia; tinygrad never reads the bridges' ids
  c.write(pci.PCI_HEADER_TYPE, b"\x01")
  c.write(pci.PCI_PREF_MEMORY_BASE, struct.pack("<HH", pci.PCI_PREF_RANGE_TYPE_64, pci.PCI_PREF_RANGE_TYPE_64))
  return c

def _windows(c:ConfigSpace) -> tuple[tuple[int, int], tuple[int, int]]:
  """A bridge's (memory, prefetchable memory) forwarding windows as inclusive (base, limit)."""
  mem = ((c.u(pci.PCI_MEMORY_BASE, 2) & 0xFFF0) << 16, (c.u(pci.PCI_MEMORY_LIMIT, 2) & 0xFFF0) << 16 | 0xFFFFF)
  pref = ((c.u(pci.PCI_PREF_MEMORY_BASE, 2) & 0xFFF0) << 16 | c.u(pci.PCI_PREF_BASE_UPPER32) << 32,
          (c.u(pci.PCI_PREF_MEMORY_LIMIT, 2) & 0xFFF0) << 16 | 0xFFFFF | c.u(pci.PCI_PREF_LIMIT_UPPER32) << 32)
  return mem, pref

def _memfd(name:str, size:int) -> tuple[int, int]:
  fd = os.memfd_create(f"mockgpu-usb-{name}", os.MFD_CLOEXEC)
  os.ftruncate(fd, size)
  if (addr:=libc.mmap(0, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)) in (None, 0xffffffffffffffff, -1):
    raise OSError(ctypes.get_errno(), f"mapping the mock USB controller's {name} ({size:#x} bytes) failed")
  return fd, addr

class ASM24:
  """The controller in front of `gpu` (a PCIGPU whose MMU mirrors `regions` where its page tables map their bus addresses).
  `control_out`/`control_in`/`bulk_out`/`bulk_in` are the four USB transfers; `stats` counts requests by kind."""
  def __init__(self, gpu:PCIGPU, regions:dict[str, tuple[int, int]]):
    self.gpu, self.regions, self.link = gpu, regions, False   # regions: name -> (memfd, host address), sizes as WINDOWS
    self.bridges = [_bridge() for _ in range(GPU_BUS)]
    self.fn = ConfigSpace(gpu.config, {0: (1 << BAR0_SIZES[0], 0xC), 2: (1 << (gpu.sizes[2] - 1).bit_length(), 0xC), 4: (0x100, 1),
                                       5: (gpu.sizes[5], 0)})
    sizes = sum(1 << (b - 20 + 4) for b in BAR0_SIZES)   # REBAR capability: supported sizes, bit n+4 = 2^n MiB
    ctrl = 1 << pci.PCI_REBAR_CTRL_NBAR_SHIFT | (BAR0_SIZES[0] - 20) << pci.PCI_REBAR_CTRL_BAR_SHIFT   # one resizable BAR (0), 256 MiB
    self.fn.write(REBAR, struct.pack("<III", pci.PCI_EXT_CAP_ID_REBAR | 1 << 16, sizes, ctrl))
    self._cfgs, self._bars = None, []             # config versions the route table (BAR, base, end) was built from
    self.cpl: bytes|None = None                   # completion of the last non-posted mode-0 TLP
    self.out: tuple[str, int, int]|None = None    # armed bulk OUT: ("stream", bus address, bytes) or ("sram", offset, bytes)
    self.stream_in: tuple[int, int]|None = None   # armed stream read: (bus address, bytes)
    self.sram_in: tuple[int, int]|None = None     # armed SRAM read: (offset, bytes)
    self.stats = {"control": 0, "bulk": 0}

  def __repr__(self): return f"ASM24(link {'up' if self.link else 'down'}, {self.gpu})"

  # *** the four transfers ***
  def control_out(self, req:int, value:int, index:int, data:bytes=b""):
    self.stats["control"] += 1
    if not (0 <= value <= 0xFFFF and 0 <= index <= 0xFFFF):
      raise USBError(f"control OUT {req:#04x}: wValue={value:#x} wIndex={index:#x} do not fit 16 bits")
    if req == 0xE5:
      if data or index > 0xFF:
        raise USBError(f"control OUT 0xE5 (XDATA write) at {value:#06x}: the byte goes in wIndex (got wIndex={index:#x}, {len(data)} data bytes)")
      if value == LTSSM: raise USBError(f"control OUT 0xE5: XDATA {LTSSM:#06x} is the read-only link state")
      ctypes.c_uint8.from_address(self._xdata(value, 1)).value = index
    elif req == 0xF3:
      if value not in (0, 1) or data: raise USBError(f"control OUT 0xF3 (PCIe power): wValue={value:#x} must be 0 (off) or 1 (on), no data")
      self.link = bool(value)
    elif req == 0xF0: self._tlp(value & 0xFF, value >> 8, index, data)
    elif req == 0xF2: self._sram_engine(value, index, data)
    else: raise USBError(f"control OUT request {req:#04x} is not part of the controller's protocol (0xE5 XDATA write, 0xF0 TLP, "
                         "0xF2 SRAM engine, 0xF3 power)")

  def control_in(self, req:int, length:int, value:int=0, index:int=0) -> bytes:
    self.stats["control"] += 1
    if req == 0xE4:
      if not 0 < length <= 0x10000 - value:
        raise USBError(f"control IN 0xE4 (XDATA read) of {length} bytes at {value:#06x}: must be 1.. bytes inside the 64 KiB XDATA")
      if value == LTSSM and length == 1: return bytes([LINK_UP if self.link else 0])
      return ctypes.string_at(self._xdata(value, length), length)
    if req == 0xF0:
      if length != 8: raise USBError(f"control IN 0xF0 (TLP completion) of {length} bytes: a completion is 8 bytes")
      if self.cpl is None: raise USBError("control IN 0xF0: no completion is pending (only config requests and mode-0 memory reads complete)")
      cpl, self.cpl = self.cpl, None
      return cpl
    raise USBError(f"control IN request {req:#04x} is not part of the controller's protocol (0xE4 XDATA read, 0xF0 TLP completion)")

  def bulk_out(self, data:bytes):
    self.stats["bulk"] += 1
    if self.out is None:
      raise USBError(f"bulk OUT of {len(data)} bytes on EP 0x02 but nothing is armed for it (0xF0 mode 1 or an 0xF2 SRAM write first)")
    (kind, addr, n), self.out = self.out, None
    if len(data) != n: raise USBError(f"bulk OUT of {len(data)} bytes for the armed {kind} write of {n} bytes at {addr:#x}; the lengths must match")
    if kind == "sram": ctypes.memmove(self.regions["sram"][1] + addr, bytes(data), n)
    else: self._mem_write(addr, bytes(data), "stream write")

  def bulk_in(self, length:int, timeout_ms:int=1000) -> bytes:
    self.stats["bulk"] += 1
    if self.stream_in is not None:
      (addr, n), self.stream_in = self.stream_in, None
      if length != n: raise USBError(f"bulk IN of {length} bytes for the armed stream read of {n} bytes at {addr:#x}; the lengths must match")
      return self._mem_read(addr, n, "stream read")
    if self.sram_in is not None:
      (off, n), self.sram_in = self.sram_in, None
      if length != n: raise USBError(f"bulk IN of {length} bytes for the armed SRAM read of {n} bytes at SRAM {off:#x}; the lengths must match")
      done, end = ctypes.c_uint32.from_address(self.regions["cq_buf"][1] + CQ_DONE), time.monotonic() + max(timeout_ms, 1) / 1000
      while done.value == CQ_ARMED:   # the GPU's write of the completion dword releases the data (the device thread runs meanwhile)
        if time.monotonic() > end:
          raise USBError(f"bulk IN: the SRAM read of {n} bytes armed by 0xF2 timed out after {timeout_ms} ms: the GPU never wrote the "
                         f"completion dword at cq_buf+{CQ_DONE} (bus address {WINDOWS['cq_buf'][1] + CQ_DONE:#x}); is its copy queue stuck? "
                         "(stderr names a stopped queue)")
        time.sleep(0.0001)
      return ctypes.string_at(self.regions["sram"][1] + off, n)
    raise USBError(f"bulk IN of {length} bytes on EP 0x81 but nothing is armed for it (0xF0 mode 2 or an 0xF2 SRAM read first)")

  # *** requests ***
  def _tlp(self, fmt:int, be:int, mode:int, data:bytes):
    if len(data) != 12:
      raise USBError(f"control OUT 0xF0 (TLP fmt_type={fmt:#04x}) with {len(data)} data bytes: the header is 12 bytes <III (address lo, hi, value)")
    lo, hi, val = struct.unpack("<III", data)
    addr = lo | hi << 32
    if not self.link: raise USBError(f"TLP fmt_type={fmt:#04x} at {addr:#x}: the PCIe link is down (power it on: control OUT 0xF3 wValue=1)")
    if mode in (1, 2):
      if fmt not in (MEM_WR if mode == 1 else MEM_RD) or be != 0xF or addr % 4 or val == 0:
        raise USBError(f"TLP stream mode {mode}: fmt_type={fmt:#04x} byte_enable={be:#x} address={addr:#x} dwords={val}: a stream "
                       f"{'write' if mode == 1 else 'read'} is fmt_type {' or '.join(hex(f) for f in (MEM_WR if mode == 1 else MEM_RD))}, "
                       "byte_enable 0xF, a dword-aligned address and >= 1 dword")
      if (mode == 1 and self.out is not None) or (mode == 2 and self.stream_in is not None):
        raise USBError(f"TLP stream mode {mode} at {addr:#x}: the previous stream {'write' if mode == 1 else 'read'} never got its bulk transfer")
      if mode == 1: self.out = ("stream", addr, val * 4)
      else: self.stream_in = (addr, val * 4)
      return
    if mode != 0: raise USBError(f"TLP fmt_type={fmt:#04x}: wIndex (mode) {mode} is not 0 (single TLP), 1 (stream write) or 2 (stream read)")
    if be == 0 or be > 0xF or (be >> (off:=(be & -be).bit_length() - 1)) & ((be >> off) + 1):
      raise USBError(f"TLP fmt_type={fmt:#04x} at {addr:#x}: byte_enable={be:#x} must be 1-4 contiguous bytes of the dword")
    n = bin(be).count("1")
    if self.cpl is not None:
      raise USBError(f"TLP fmt_type={fmt:#04x} at {addr:#x}: the previous request's completion was never read (control IN 0xF0)")
    if fmt in CFG_RD + CFG_WR:
      bus, dev, fn, reg = addr >> 24 & 0xFF, addr >> 19 & 0x1F, addr >> 16 & 7, addr & 0xFFF
      if addr >> 32 or reg % 4:
        raise USBError(f"config TLP fmt_type={fmt:#04x}: address {addr:#x} is not bus<<24|dev<<19|fn<<16|dword-aligned register")
      cfg = self._function(bus if fmt & 1 else 0, dev, fn)
      if cfg is None: return self._complete(0, COMPLETER_UR)
      if fmt in CFG_WR: self._cfg_write(cfg, reg + off, (val >> 8 * off).to_bytes(4, "little")[:n])
      return self._complete(cfg.u(reg) if fmt in CFG_RD else 0)
    if fmt in MEM_RD + MEM_WR:
      if addr % 4: raise USBError(f"memory TLP fmt_type={fmt:#04x}: address {addr:#x} is not dword-aligned (the byte enables select bytes)")
      if self._decode(addr + off, n) is None:
        if fmt in MEM_RD: return self._complete(0, COMPLETER_UR)
        raise USBError(f"memory write TLP at {addr + off:#x} ({n} bytes) reaches no BAR of the GPU: {self._routes()}")
      if fmt in MEM_WR: return self._mem_write(addr + off, (val >> 8 * off).to_bytes(4, "little")[:n], "memory write TLP")
      return self._complete(int.from_bytes(self._mem_read(addr + off, n, "memory read TLP"), "little") << 8 * off)
    raise USBError(f"TLP fmt_type={fmt:#04x} is not modelled: config 0x04/0x05/0x44/0x45, memory 0x00/0x20/0x40/0x60 (messages are not)")

  def _complete(self, data:int, status:int=0): self.cpl = struct.pack("<IBBBB", data & 0xFFFFFFFF, status << 5, 0, 0, 0)

  def _sram_engine(self, value:int, index:int, data:bytes):
    sectors, read, slot, units = value & 0x7FFF, bool(value & 0x8000), index & 0xFF, index >> 8
    off, n, size = slot * SLOT, sectors * SECTOR, WINDOWS["sram"][2]
    if data or sectors == 0 or units != -(-n // SLOT) or off + n > size:
      raise USBError(f"control OUT 0xF2 (SRAM {'read' if read else 'write'}): wValue={value:#x} wIndex={index:#x}: needs no data, >= 1 "
                     f"sector of {SECTOR} bytes, wIndex high byte = the {SLOT // 1024} KiB units covered ({-(-n // SLOT)} for {sectors} sectors), "
                     f"and slot*{SLOT // 1024} KiB + sectors*{SECTOR} <= the {size // 1024} KiB SRAM")
    if read:
      if self.sram_in is not None:
        raise USBError(f"control OUT 0xF2: an SRAM read of {self.sram_in[1]} bytes is still armed (its bulk IN never came)")
      ctypes.c_uint32.from_address(self.regions["cq_buf"][1] + CQ_DONE).value = CQ_ARMED
      self.sram_in = (off, n)
    else:
      if self.out is not None: raise USBError(f"control OUT 0xF2: the armed {self.out[0]} write of {self.out[2]} bytes never got its bulk OUT")
      self.out = ("sram", off, n)

  def _xdata(self, addr:int, n:int) -> int:
    """Host address of XDATA bytes [addr, addr+n) (all inside one window)."""
    for name, (x, _, _) in WINDOWS.items():
      if x <= addr and addr + n <= x + XDATA_VIEW: return self.regions[name][1] + addr - x
    raise USBError(f"XDATA {addr:#06x}+{n} is not modelled: the mock has the link state at {LTSSM:#06x} and 4 KiB windows "
                   + ", ".join(f"{name} at {x:#06x}" for name, (x, _, _) in WINDOWS.items()))

  # *** PCIe ***
  def _function(self, bus:int, dev:int, fn:int) -> ConfigSpace|None:
    """The function a config request for bus/dev/fn reaches (type 1 requests pass the bridges whose bus range holds `bus`)."""
    if dev or fn or bus > GPU_BUS: return None
    if any(not (c.u(pci.PCI_PRIMARY_BUS + 1, 1) <= bus <= c.u(pci.PCI_PRIMARY_BUS + 2, 1)) for c in self.bridges[:bus]): return None
    return self.bridges[bus] if bus < GPU_BUS else self.fn

  def _cfg_write(self, cfg:ConfigSpace, off:int, data:bytes):
    cfg.write(off, data)
    if cfg is self.fn and off < REBAR + 12 and REBAR + 8 < off + len(data):
      if (log:=(cfg.u(REBAR + 8) >> pci.PCI_REBAR_CTRL_BAR_SHIFT & 0x1F) + 20) not in BAR0_SIZES:
        raise USBError(f"config write: resizable BAR0 size {1 << log:#x} is not offered "
                       f"(capability: {1 << BAR0_SIZES[0]:#x}..{1 << BAR0_SIZES[-1]:#x})")
      cfg.resize(0, 1 << log)

  def _routes(self) -> str:
    mem, pref = zip(*(_windows(c) for c in self.bridges))
    bars = ", ".join(f"BAR{i} {a:#x}+{s:#x}" for i in (0, 2, 5) for a, s in [self.fn.bar(i)])
    return (f"bridge memory windows {', '.join(f'{a:#x}-{b:#x}' for a, b in mem)}, prefetchable {', '.join(f'{a:#x}-{b:#x}' for a, b in pref)}; "
            f"GPU {bars}, command={self.fn.u(pci.PCI_COMMAND, 2):#x}")

  def _decode(self, addr:int, n:int) -> tuple[int, int]|None:
    """(BAR, offset) that bus addresses [addr, addr+n) reach through the bridges, None if they reach no BAR."""
    if self._cfgs != (key:=tuple(c.version for c in (*self.bridges, self.fn))): self._cfgs, self._bars = key, self._route_table()
    for i, base, end in self._bars:
      if base <= addr and addr + n <= end: return i, addr - base
    return None

  def _route_table(self) -> list[tuple[int, int, int]]:
    """(BAR, base, end) of the GPU's BARs as far as every bridge forwards them (memory enabled, inside a window)."""
    if not all(c.u(pci.PCI_COMMAND, 2) & pci.PCI_COMMAND_MEMORY for c in (*self.bridges, self.fn)): return []
    out = []
    for i in (0, 2, 5):
      base, size = self.fn.bar(i)
      if all(any(a <= base and base + size - 1 <= b for a, b in _windows(c)) for c in self.bridges): out.append((i, base, base + size))
    return out

  def _host(self, addr:int, n:int, what:str) -> tuple[int, int, int]:
    if (d:=self._decode(addr, n)) is None: raise USBError(f"{what} at {addr:#x} ({n} bytes) reaches no BAR of the GPU: {self._routes()}")
    bar, off = d
    if off + n > self.gpu.sizes[bar]:
      raise USBError(f"{what} at {addr:#x} ({n} bytes): BAR{bar} offset {off:#x} lies beyond its {self.gpu.sizes[bar]:#x} bytes of memory")
    return bar, off, {0: self.gpu.vram, 2: self.gpu.doorbells, 5: self.gpu.mmio}[bar] + off

  def _mem_read(self, addr:int, n:int, what:str) -> bytes:
    bar, off, host = self._host(addr, n, what)
    data = ctypes.string_at(host, n)
    if self._mm(bar, off, n, what): data = data[:4 - off] + self._mm_data().to_bytes(4, "little") + data[8 - off:]
    return data

  def _mem_write(self, addr:int, data:bytes, what:str):
    bar, off, host = self._host(addr, len(data), what)
    ctypes.memmove(host, data, len(data))
    if self._mm(bar, off, len(data), what): self._mm_data(int.from_bytes(data[4 - off:8 - off], "little"))

  @staticmethod
  def _mm(bar:int, off:int, n:int, what:str) -> bool:
    """Whether BAR bytes [off, off+n) cover MM_DATA (BAR5 dword 1); raises on a partial cover."""
    if bar != 5 or off >= 8 or off + n <= 4: return False
    if off > 4 or off + n < 8: raise USBError(f"{what}: {n} bytes at BAR5 offset {off:#x} cover MM_DATA (offset 4) partly; access the whole dword")
    return True

  def _mm_data(self, value:int|None=None) -> int:
    """MM_DATA (BAR5 dword 1): the dword MM_INDEX (dword 0; bit 31 = VRAM, else a register byte offset) and MM_INDEX_HI
    (dword 6: VRAM address bits 31 and up) select, read or written."""
    m = self.gpu.regs.mem
    if m[0] & 0x80000000: loc, size = m[6] << 31 | (m[0] & 0x7FFFFFFF), self.gpu.vram_size
    else: loc, size = m[0], len(m) * 4
    if loc % 4 or loc + 4 > size:
      raise USBError(f"MM_DATA access at {'VRAM' if m[0] & 0x80000000 else 'register byte'} {loc:#x} (MM_INDEX={m[0]:#x}, "
                     f"MM_INDEX_HI={m[6]:#x}) is unaligned or beyond {size:#x}")
    cell = ctypes.c_uint32.from_address(self.gpu.vram + loc) if m[0] & 0x80000000 else None
    if value is None: return cell.value if cell is not None else m[loc // 4]
    if cell is not None: cell.value = value
    else: m[loc // 4] = value
    return value

def build(profile:GPUProfile, autorun:bool=True, va_window:tuple[int, int]|None=None) -> ASM24:
  """A controller with a new mock GPU for `profile` behind it (its DMA windows in the GPU's MMU). `autorun`, `va_window`: see
  PCIGPU."""
  regions = {name: _memfd(name, size) for name, (_, _, size) in WINDOWS.items()}
  return ASM24(PCIGPU(profile, autorun, tuple((bus, size, regions[n][0]) for n, (_, bus, size) in WINDOWS.items()), va_window), regions)

_system: ASM24|None = None
_lock = threading.Lock()

def system() -> ASM24:
  """The process's mock USB controller with its GPU (created on first use, for DEV's AMD arch; gfx950 if DEV names none).
  It reserves tinygrad's GPU VA window (PROT_NONE), where the GPU's mappings are mirrored: tinygrad does not on USB.

  Raises:
    UnknownArchError: DEV names an arch without a profile.
    MockDeviceError: the GPU VA window is already in use in this process.
  """
  global _system
  with _lock:
    if _system is None:
      from tinygrad.helpers import DEV
      from tinygrad.runtime.support.am.amdev import AMMemoryManager
      from mockgpu.mock.profiles import mock_arch, profile_for
      va, profile = AMMemoryManager.va_allocator, profile_for(mock_arch("MOCKUSB", DEV.target("AMD").arch))
      flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000 | 0x100000   # MAP_NORESERVE | MAP_FIXED_NOREPLACE
      if libc.mmap(va.base, va.size, 0, flags, -1, 0) != va.base:   # PROT_NONE
        raise MockDeviceError(f"cannot reserve the GPU VA window {va.base:#x}+{va.size:#x} for the mock USB GPU (errno {ctypes.get_errno()}): "
                              "something in this process maps there already (one mock AM GPU per process)")
      _system = build(profile, va_window=(va.base, va.base + va.size))
    return _system
