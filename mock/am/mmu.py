"""The GPU page-table walker of the mock PCI GPU and what keeps "GPU VA == host address" true for the emulator and engines.

tinygrad's AM driver builds 4-level page tables in VRAM (root at GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR) and flushes the TLB
after every `map_range`. On each MM-hub flush the device thread walks the tables (`walk`) before it acknowledges, so a
mapping exists in host memory when `map_range` returns:
* PHYS leaves (VRAM): the VRAM memfd is mapped at the GPU VA (a *mirror*, MAP_FIXED inside tinygrad's PROT_NONE reservation),
  unless tinygrad owns the page (sysmem it mapped there itself).
* SYSTEM leaves inside a *window* (bus addresses that are memory other than host pages, each backed by a memfd: the USB
  controller's SRAM in front of the GPU, or a peer GPU's BAR0, i.e. its VRAM, as tinygrad maps it for peer-to-peer copies):
  that memfd is mirrored at the GPU VA, like VRAM.
* Other SYSTEM leaves: tinygrad maps sysmem at host VA == GPU VA and learns its "physical" address from the mock's
  /proc/self/pagemap (`PageMap`: fake frame numbers, remembered per host page); a leaf is valid only if its frame belongs to
  the page at the leaf's VA.
Host addresses are one space per process, and tinygrad's AM driver hands out GPU VAs from one allocator for all devices
(`AMMemoryManager.va_allocator`), so several GPUs share one `HostVA`: the mirrors and tinygrad's own ranges are tracked
there, not per GPU (a VA freed on one GPU and reused on another then never keeps a stale mirror), and a peer mapping of a
buffer lands on the same mirror as its owner's.
The leaves become the GPU's `MemoryMap` (what engines and kernels may touch; anything else is an MMU fault). Table pages are
decoded with numpy and cached by content, so a walk re-decodes only pages that changed. Table addresses are bounds-checked:
a PDE pointing outside VRAM (or at system memory) is counted in `bad` and treated as invalid, never dereferenced."""
from __future__ import annotations
from typing import Callable, Iterable
import bisect, ctypes, mmap, struct, sys, threading
import numpy as np
from tinygrad.runtime.autogen import libc
from tinygrad.runtime.autogen.am import am
from mockgpu.mock.device import MAP_FIXED
from mockgpu.mock.gpu import GPU

__all__ = ["PageMap", "Intervals", "HostVA", "MMU"]

PAGE, ADDR_MASK = 0x1000, 0x0000FFFFFFFFF000
PTB, LEVEL_SHIFTS = 3, (39, 30, 21, 12)   # levels PDB2 (root), PDB1, PDB0, PTB as tinygrad's AMMemoryManager builds them

class PageMap:
  """Fake physical frame numbers for host pages, served as /proc/self/pagemap. Frames start at FIRST_PFN (below 2^32, so
  every address fits the 44-bit GPU physical space) and are handed out once per host page."""
  FIRST_PFN = 0x100000
  def __init__(self): self.page2pfn, self.pfn2page = {}, {}
  def read(self, pos:int, size:int) -> bytes:
    """`size` bytes of pagemap at byte offset `pos` (8 bytes per page; bit 63 = present)."""
    if pos % 8 or size % 8: raise OSError(22, f"pagemap read at {pos:#x} size {size}: offset and size must be multiples of 8")
    out = []
    for page in range(pos // 8, (pos + size) // 8):
      if (pfn:=self.page2pfn.get(page)) is None:
        pfn = self.page2pfn[page] = self.FIRST_PFN + len(self.page2pfn)
        self.pfn2page[pfn] = page
      out.append(pfn | 1 << 63)
    return struct.pack(f"<{len(out)}Q", *out)
  def host(self, paddr:int) -> int|None:
    """The host address of system "physical" address `paddr`, None if no frame has it."""
    return None if (page:=self.pfn2page.get(paddr >> 12)) is None else page << 12 | paddr & 0xFFF

class Intervals:
  """A set of disjoint half-open address intervals with a value each (split on removal)."""
  def __init__(self): self.starts, self.items = [], []   # items: (start, end, value)
  def overlapping(self, s:int, e:int) -> list[tuple[int, int, object]]:
    i = max(0, bisect.bisect_right(self.starts, s) - 1)
    out = []
    while i < len(self.items) and self.items[i][0] < e:
      if self.items[i][1] > s: out.append(self.items[i])
      i += 1
    return out
  def remove(self, s:int, e:int, keep=None):
    """Remove `[s, e)`; the parts of cut intervals outside it stay, with `keep(start, old_start, value)` as their value."""
    for a, b, v in self.overlapping(s, e):
      i = self.starts.index(a)
      del self.starts[i], self.items[i]
      for ns, ne in ((a, min(b, s)), (max(a, e), b)):
        if ns < ne: self._insert(ns, ne, v if keep is None else keep(ns, a, v))
  def add(self, s:int, e:int, v=None):
    self.remove(s, e)
    self._insert(s, e, v)
  def _insert(self, s, e, v):
    i = bisect.bisect_left(self.starts, s)
    self.starts.insert(i, s)
    self.items.insert(i, (s, e, v))
  def __len__(self): return len(self.items)

def _mmap_fixed(addr:int, size:int, fd:int, offset:int):
  if libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED | MAP_FIXED, fd, offset) != addr:
    raise OSError(ctypes.get_errno(), f"mirroring {offset:#x}+{size:#x} of memfd {fd} at GPU VA {addr:#x} failed")

class HostVA:
  """The host address space as the mock AM GPUs of one process see it: the GPU VA ranges backed by a memfd (`mirrors`, value
  (memfd, offset of the interval start)) and the ranges tinygrad mapped itself (`owned`, never mirrored over). Shared by
  every GPU of the process; `lock` serialises tinygrad's own mappings against the device threads' mirroring."""
  def __init__(self): self.mirrors, self.owned, self.lock = Intervals(), Intervals(), threading.RLock()

  def host_mapped(self, start:int, size:int):
    """tinygrad mapped `[start, start+size)` itself (MAP_FIXED sysmem): mirrors there are gone, the range is tinygrad's."""
    with self.lock:
      self.mirrors.remove(start, start + size, keep=lambda ns, a, v: (v[0], v[1] + ns - a))
      self.owned.add(start, start + size)
  def host_unmapping(self, start:int, size:int) -> list[tuple[int, int]]:
    """tinygrad unmaps `[start, start+size)`: returns the sub-ranges to really unmap (mirrors stay: the GPU mapping may live
    on, and a hole in tinygrad's reservation could be taken by an unrelated mmap the next mirror would overwrite)."""
    with self.lock:
      self.owned.remove(start, start + size)
      out, pos = [], start
      for a, b, _ in self.mirrors.overlapping(start, start + size):
        if a > pos: out.append((pos, a - pos))
        pos = max(pos, b)
      if pos < start + size: out.append((pos, start + size - pos))
      return out

  def mirror(self, va:int, sz:int, fd:int, off:int):
    """Map memfd `fd` at `off` onto `[va, va+sz)`, except where tinygrad owns pages (a stale PTE: its pages stay)."""
    with self.lock:
      e, pos = va + sz, va
      for a, b, _ in self.owned.overlapping(va, e):
        if a > pos: self._map(pos, a - pos, fd, off + pos - va)
        pos = max(pos, b)
      if pos < e: self._map(pos, e - pos, fd, off + pos - va)
  def _map(self, va:int, sz:int, fd:int, off:int):
    if any(a <= va and va + sz <= b and v == (fd, off - (va - a)) for a, b, v in self.mirrors.overlapping(va, va + sz)): return
    _mmap_fixed(va, sz, fd, off)
    self.mirrors.add(va, va + sz, (fd, off))

class MMU:
  """Walks the GPU page tables of `gpu` (profile family picks the leaf rules) in VRAM (`vram_fd` mapped at `vram_addr`).
  `pagemap`, `host`: the process's fake frames and host address space (shared by its mock GPUs). `windows`: (bus address,
  size, memfd) of system memory that is not host pages (mirrored from the memfd), or a function returning them (the peers of
  a PCI GPU appear as they are created). `va_window`: (start, end) of the host range reserved for GPU VAs; a leaf outside it is
  never mirrored (it would replace host memory)."""
  def __init__(self, gpu:GPU, vram_fd:int, vram_addr:int, vram_size:int, pagemap:PageMap, host:HostVA,
               windows:tuple[tuple[int, int, int], ...]|Callable[[], Iterable[tuple[int, int, int]]]=(), va_window:tuple[int, int]|None=None):
    self.gpu, self.fd, self.vram, self.vram_size, self.pagemap, self.host = gpu, vram_fd, vram_addr, vram_size, pagemap, host
    self.windows = windows if callable(windows) else lambda: windows
    self.va_window, self.family = va_window, gpu.profile.family
    self.cache: dict[int, tuple] = {}   # table paddr -> (content, level, tables, leaf runs)
    self.runs: dict[int, tuple[int, int, bool]] = {}   # GPU VA -> (size, paddr, system): the current leaf runs
    self.bad, self.walks, self.reported, self.sys_ok = 0, 0, set(), set()

  # *** walk ***
  def _table(self, paddr:int, lv:int) -> tuple[list[tuple[int, int]], list[tuple[int, int, int, bool]]]:
    """The table page at VRAM `paddr` (level `lv`), decoded and cached by content: (index, entry) of its valid table entries,
    and its leaves as runs (first index, pages-of-this-level count * cover, address, system) merged where contiguous."""
    raw = ctypes.string_at(self.vram + paddr, PAGE)
    if (c:=self.cache.get(paddr)) is not None and c[0] == raw and c[1] == lv: return c[2], c[3]
    arr = np.frombuffer(raw, dtype=np.uint64)
    idx = np.nonzero(arr & np.uint64(am.AMDGPU_PTE_VALID))[0]
    ents = arr[idx]
    if lv == PTB: leaf = np.ones(len(idx), dtype=bool)
    else:
      bit = am.AMDGPU_PDE_PTE_GFX12 if self.family >= 12 else am.AMDGPU_PDE_PTE
      leaf = (ents & np.uint64(am.AMDGPU_PTE_TF)) == 0 if self.family < 10 and lv == 2 else (ents & np.uint64(bit)) != 0
    tables = list(zip(idx[~leaf].tolist(), ents[~leaf].tolist()))
    li, le, cover = idx[leaf], ents[leaf], 1 << LEVEL_SHIFTS[lv]
    pa, sysm = le & np.uint64(ADDR_MASK), (le & np.uint64(am.AMDGPU_PTE_SYSTEM)) != 0
    # a run breaks where the index, the address or the address space does not continue the previous entry
    brk = np.ones(len(li), dtype=bool)
    if len(li) > 1: brk[1:] = (np.diff(li) != 1) | (np.diff(pa.astype(np.int64)) != cover) | (sysm[1:] != sysm[:-1])
    starts = np.nonzero(brk)[0].tolist()
    runs = [(int(li[a]), (b - a) * cover, int(pa[a]), bool(sysm[a])) for a, b in zip(starts, starts[1:] + [len(li)])]
    self.cache[paddr] = (raw, lv, tables, runs)
    return tables, runs

  def _bad(self, what:str):
    self.bad += 1
    if what not in self.reported:
      self.reported.add(what)
      print(f"mockgpu: PCI GPU page walk: {what}; the entry is treated as invalid (its range faults on the GPU)", file=sys.stderr)

  def _sys_ok(self, va:int, sz:int, pa:int) -> bool:
    if (va, sz, pa) in self.sys_ok: return True
    for off in range(0, sz, PAGE):   # every page must be the host page at its own VA (frames never change owner: checked once)
      if self.pagemap.host(pa + off) != va + off:
        self._bad(f"a system PTE at VA {va + off:#x} names {pa + off:#x}, which is no host page at that VA")
        return False
    self.sys_ok.add((va, sz, pa))
    return True

  def walk(self, root:int, start:int):
    """Re-read the page tables (root table at VRAM `root`, VA of root entry 0 = `start`) and update mirrors and the memory map."""
    self.walks += 1
    runs: list[list] = []
    def rec(pt:int, lv:int, va:int):
      if pt + PAGE > self.vram_size: return self._bad(f"a level-{lv} table at VRAM {pt:#x} lies beyond VRAM ({self.vram_size:#x} bytes)")
      cover = 1 << LEVEL_SHIFTS[lv]
      tables, leaves = self._table(pt, lv)
      children = iter(tables)
      nxt = next(children, None)
      for i, sz, pa, sysm in leaves + [(1 << 30, 0, 0, False)]:   # leaves and tables in index order (sentinel flushes the tables)
        while nxt is not None and nxt[0] < i:
          if nxt[1] & am.AMDGPU_PTE_SYSTEM: self._bad(f"a level-{lv} PDE {nxt[1]:#x} at VA {va + nxt[0] * cover:#x} points at system memory")
          else: rec(nxt[1] & ADDR_MASK, lv + 1, va + nxt[0] * cover)
          nxt = next(children, None)
        if not sz: break
        v = va + i * cover
        if runs and runs[-1][3] == sysm and runs[-1][0] + runs[-1][1] == v and runs[-1][2] + runs[-1][1] == pa: runs[-1][1] += sz
        else: runs.append([v, sz, pa, sysm])
    rec(root, 0, start)
    new, src = {}, {}   # src: GPU VA -> (memfd, offset) mirrored there
    for va, sz, pa, sysm in runs:
      if self.va_window is not None and not self.va_window[0] <= va < va + sz <= self.va_window[1]:
        self._bad(f"a PTE maps VA {va:#x}+{sz:#x} outside the GPU VA window [{self.va_window[0]:#x}, {self.va_window[1]:#x})")
      elif sysm:
        if (w:=self._window(pa, sz)) is not None: new[va], src[va] = (sz, pa, True), w
        elif self._sys_ok(va, sz, pa): new[va] = (sz, pa, True)
      elif pa + sz > self.vram_size: self._bad(f"a PTE at VA {va:#x} maps VRAM {pa:#x}+{sz:#x} beyond VRAM ({self.vram_size:#x} bytes)")
      else: new[va], src[va] = (sz, pa, False), (self.fd, pa)
    mem = self.gpu.memory
    for va, r in self.runs.items():
      if new.get(va) != r: mem.remove(va)
    for va, (sz, pa, sysm) in new.items():
      if va in src: self.host.mirror(va, sz, *src[va])
      if self.runs.get(va) != (sz, pa, sysm): mem.add(va, sz, f"{'system' if sysm else 'VRAM'} {pa:#x}", granule=PAGE)
    self.runs = new

  def _window(self, pa:int, sz:int) -> tuple[int, int]|None:
    return next(((fd, pa - base) for base, size, fd in self.windows() if base <= pa and pa + sz <= base + size), None)
