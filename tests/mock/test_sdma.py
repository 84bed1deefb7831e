"""SDMA engine: every packet tinygrad 0.14.0 emits (COPY_LINEAR, FENCE, TRAP, POLL_REGMEM, TIMESTAMP, NOP padding), the
byte read pointer, and what happens on bad packets and unmapped memory."""
import ctypes, re, time
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from tinygrad.runtime.autogen import kfd
from tinygrad.runtime.autogen.am import sdma_6_0_0 as sd

SDMA = kfd.KFD_IOC_QUEUE_TYPE_SDMA
def copy(n, src, dst): return (sd.SDMA_OP_COPY | sd.SDMA_PKT_COPY_LINEAR_HEADER_SUB_OP(sd.SDMA_SUBOP_COPY_LINEAR), n - 1, 0,
                              src & 0xFFFFFFFF, src >> 32, dst & 0xFFFFFFFF, dst >> 32)
def fence(addr, v): return (sd.SDMA_OP_FENCE | sd.SDMA_PKT_FENCE_HEADER_MTYPE(3), addr & 0xFFFFFFFF, addr >> 32, v)
def poll_geq(addr, v): return (sd.SDMA_OP_POLL_REGMEM | sd.SDMA_PKT_POLL_REGMEM_HEADER_FUNC(5) | sd.SDMA_PKT_POLL_REGMEM_HEADER_MEM_POLL(1),
                               addr & 0xFFFFFFFF, addr >> 32, v, 0xFFFFFFFF, 0xFFF0004)

def test_copy_fence_and_read_pointer(drv):
  q = drv.queue(0, SDMA)
  buf, _ = drv.userptr(0x3000)
  ctypes.memmove(buf, bytes(range(256)) * 16, 0x1000)
  q.write(*copy(0x1000, buf, buf + 0x1000), *fence(buf + 0x2000, 7))
  drv.run()
  assert ctypes.string_at(buf + 0x1000, 0x1000) == bytes(range(256)) * 16 and drv.u32(buf + 0x2000) == 7
  assert drv.u64(q.q.rptr_addr) == q.put == 11 * 4

def test_a_packet_published_in_part_waits_for_the_rest(drv):
  q, (buf, _) = drv.queue(0, SDMA), drv.userptr(0x1000)
  q.write(*fence(buf, 7), ring=False)
  q.doorbell.value = q.put - 4   # all but the last dword
  drv.run()
  assert drv.u32(buf) == 0 and q.q.blocked_on == "the rest of a 4-dword FENCE packet at ring byte 0x0: the write pointer 0xc ends inside it"
  q.doorbell.value = q.put
  drv.run()
  assert drv.u32(buf) == 7 and q.q.blocked_on == "" and drv.u64(q.q.rptr_addr) == 16

def test_an_unpublished_dword_read_ahead_is_read_again_once_published(drv):
  """A WRITE packet's length is in its fourth dword: with only the header published the engine waits for it instead of
  sizing the packet from the stale ring dword there (which stopped the queue: "WRITE packet of 1048580 dwords does not
  fit"), and once the producer publishes, it executes what was written (the ring fetch keeps no dword past the write
  pointer)."""
  q, (buf, _) = drv.queue(0, SDMA), drv.userptr(0x1000)
  q.dw[3] = 0xFFFFF   # stale ring content where the count goes: a 1 M-dword WRITE, more than the ring holds
  q.write(sd.SDMA_OP_WRITE, ring=False)
  q.doorbell.value = q.put
  drv.run()
  assert q.q.error is None and drv.u32(buf) == 0 and "ends before its length field" in q.q.blocked_on
  q.write(buf & 0xFFFFFFFF, buf >> 32, 0, 0xC0FFEE)   # count field 0: one dword
  drv.run()
  assert q.q.error is None and drv.u32(buf) == 0xC0FFEE and drv.u64(q.q.rptr_addr) == 5 * 4

def test_poll_blocks_until_the_cpu_writes_and_others_keep_running(drv):
  q, other = drv.queue(0, SDMA), drv.queue(1, SDMA)
  sig, _ = drv.userptr(0x1000, (0, 1))
  q.write(*poll_geq(sig, 2), *fence(sig + 8, 1))
  other.write(*fence(sig + 16, 5))
  drv.run()
  assert drv.u32(sig + 8) == 0 and drv.u32(sig + 16) == 5 and q.q.blocked_on == f"POLL_REGMEM at ring byte 0x0: memory dword at {sig:#x} & 0xffffffff >= 0x2 (now 0x0)"
  ctypes.c_uint32.from_address(sig).value = 2
  drv.run()
  assert drv.u32(sig + 8) == 1 and q.q.blocked_on == ""

def test_timestamp_is_a_100mhz_clock_and_trap_fires_the_event(drv):
  sig_ev, mem, hw = drv.events()
  q = drv.queue(0, SDMA)
  buf, _ = drv.userptr(0x1000)
  ts = (sd.SDMA_OP_TIMESTAMP | sd.SDMA_PKT_TIMESTAMP_GET_HEADER_SUB_OP(sd.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL))
  t0 = time.perf_counter_ns()
  q.write(ts, buf & 0xFFFFFFFF, buf >> 32)
  drv.run()
  time.sleep(0.05)
  q.write(ts, (buf + 8) & 0xFFFFFFFF, buf >> 32, sd.SDMA_OP_TRAP, sig_ev.event_id)
  drv.run()
  t1 = time.perf_counter_ns()
  assert 5e6 <= drv.u64(buf + 8) - drv.u64(buf) <= (t1 - t0) / 10   # >= 50 ms at 100 MHz, and not faster than the host clock
  assert drv.wait([sig_ev])[0].wait_result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE

def test_nop_padding_to_the_ring_end(drv):
  q = drv.queue(0, SDMA, ring_size=0x100)
  buf, _ = drv.userptr(0x1000)
  q.write(*([0] * 60), *fence(buf, 1))   # 60 NOP dwords, then a fence that straddles nothing: starts at byte 0xF0
  drv.run()
  q.write(0, 0, *fence(buf, 2))           # wraps: NOPs to the end, then the fence at offset 0
  drv.run()
  assert drv.u32(buf) == 2 and drv.u64(q.q.rptr_addr) == q.put

def test_unknown_opcode_stops_the_queue_with_a_hw_exception(drv, capsys):
  sig, mem, hw = drv.events()
  q = drv.queue(0, SDMA)
  buf, _ = drv.userptr(0x1000)
  q.write(0x3F, *fence(buf, 1))
  drv.run()
  assert drv.u32(buf) == 0 and q.q.error is not None
  _, arr = drv.wait([sig, mem, hw])
  assert arr[2].hw_exception_data.gpu_id == drv.gpu_ids[0] and arr[1].memory_exception_data.gpu_id == 0
  assert "unknown SDMA opcode 63" in capsys.readouterr().err

def test_oversized_write_packet_is_reported(drv, capsys):
  q = drv.queue(0, SDMA, ring_size=0x100)
  q.write(sd.SDMA_OP_WRITE, 0, 0, 0xFFFFF)
  drv.run()
  assert q.q.error is not None and "does not fit" in capsys.readouterr().err

def test_copy_from_unmapped_memory_is_an_mmu_fault(drv, capsys):
  sig, mem, hw = drv.events()
  q = drv.queue(0, SDMA)
  buf, _ = drv.userptr(0x1000)
  private = drv.host(0x1000)   # host memory never mapped to the GPU
  q.write(*copy(0x10, private, buf))
  drv.run()
  _, arr = drv.wait([sig, mem, hw])
  assert arr[1].memory_exception_data.gpu_id == drv.gpu_ids[0] and arr[1].memory_exception_data.va == private
  assert f"addr=0x{private:X}" in capsys.readouterr().err
  q.write(*fence(buf, 1))
  drv.run()
  assert drv.u32(buf) == 0   # a stopped queue stays stopped

def test_ioctls_run_concurrently_with_the_device_thread(make_driver):
  d = make_driver()
  d.kfd.autorun = True
  q, (src, _), (dst, _), (sig, _) = d.queue(0, SDMA, ring_size=0x10000), d.userptr(0x8000), d.userptr(0x8000), d.userptr(0x1000)
  ctypes.memmove(src, bytes(range(256)) * 128, 0x8000)
  for i in range(128):
    q.write(*copy(0x100, src + i * 0x100, dst + i * 0x100), *fence(sig, i + 1))
    a, h = d.userptr(0x2000)   # MAP while the thread executes
    ids = (ctypes.c_uint32 * 1)(d.gpu_ids[0])
    d.io(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=h, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
    d.io(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=h)
  deadline = time.time() + 20
  while d.u32(sig) != 128 and time.time() < deadline: time.sleep(0.001)
  assert d.u32(sig) == 128 and ctypes.string_at(dst, 0x8000) == bytes(range(256)) * 128 and q.q.error is None

def _c_copies() -> int:
  from mockgpu.mock.uaccess import dma_library
  return ctypes.c_uint64.in_dll(dma_library(), "mock_sdma_copies").value

@pytest.mark.parametrize("fast", [True, False])
def test_the_c_fast_path_runs_a_ring_as_the_python_handlers_do(drv, fast):
  """mock/sdma.c runs NOP, COPY_LINEAR, FENCE, WRITE, a satisfied POLL_REGMEM and TIMESTAMP itself (the queue's step calls it
  first); with it switched off the Python handlers run them: the same memory, read pointer and counts, the timestamp from the
  same 100 MHz clock. With it on, C stopped at no packet (`declined`) and counted the copy."""
  from mockgpu.mock.gpu import gpu_clock
  from mockgpu.mock.sdma import copy_totals
  q, (buf, _) = drv.queue(0, SDMA), drv.userptr(0x3000)
  assert (q.q.fast is not None) and q.q.rptr == 0
  if not fast: q.q.fast = None
  ctypes.memmove(buf, bytes(range(256)) * 16, 0x1000)
  ctypes.c_uint32.from_address(buf + 0x2100).value = 9
  t0, c0, n0 = gpu_clock(), _c_copies(), copy_totals().copies
  q.write(sd.SDMA_OP_NOP | 2 << 16, 0xAAAA, 0xBBBB, *copy(0x1000, buf, buf + 0x1000), *poll_geq(buf + 0x2100, 9),
          sd.SDMA_OP_WRITE, (buf + 0x2000) & 0xFFFFFFFF, (buf + 0x2000) >> 32, 2, 0x11, 0x22, 0x33,
          sd.SDMA_OP_TIMESTAMP | sd.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL << 8, (buf + 0x2010) & 0xFFFFFFFF, (buf + 0x2010) >> 32, *fence(buf + 0x2020, 7))
  drv.run()
  t1 = gpu_clock()
  assert q.q.error is None and ctypes.string_at(buf + 0x1000, 0x1000) == bytes(range(256)) * 16
  assert [drv.u32(buf + 0x2000 + 4 * i) for i in range(3)] == [0x11, 0x22, 0x33] and t0 <= drv.u64(buf + 0x2010) <= t1 and drv.u32(buf + 0x2020) == 7
  assert drv.u64(q.q.rptr_addr) == q.put == 4 * (3 + 7 + 6 + 7 + 3 + 4) and q.q.rptr == q.put
  assert copy_totals().copies - n0 == 1 and (_c_copies() - c0, q.q.declined) == ((1, -1) if fast else (0, -1))

def test_the_c_fast_path_records_a_trap_and_leaves_a_waiting_poll_to_python(drv):
  """C runs a TRAP by recording its context, whose KFD event Python raises (the next round, or WAIT_EVENTS); a poll that must
  wait needs the blocked-queue report: C stops there, the packets before are done, and the Python handler runs it."""
  sig_ev, _, _ = drv.events()
  q, (buf, _) = drv.queue(0, SDMA), drv.userptr(0x1000)
  q.write(*fence(buf, 1), sd.SDMA_OP_TRAP, sig_ev.event_id, *poll_geq(buf + 8, 1), *fence(buf + 4, 2))
  drv.run()
  assert (q.q.fast.traps, q.q.fast.trap_ctx[0]) == (1, sig_ev.event_id)
  assert drv.u32(buf) == 1 and drv.wait([sig_ev])[0].wait_result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE
  assert drv.u32(buf + 4) == 0 and q.q.blocked_on.startswith("POLL_REGMEM at ring byte 0x18") and q.q.declined == 0x18
  ctypes.c_uint32.from_address(buf + 8).value = 1
  drv.run()
  assert drv.u32(buf + 4) == 2 and q.q.blocked_on == "" and q.q.rptr == q.put

def test_the_c_fast_path_sees_a_range_unmapped_since_its_snapshot(drv):
  """C checks addresses against its copy of the GPU's mapped ranges, renewed when the map's version changed (and it stops if
  the version moves while it runs): a copy into memory the GPU no longer maps is the Python handler's MMU fault, not a write
  through a stale snapshot."""
  q, (src, _), (dst, h) = drv.queue(0, SDMA), drv.userptr(0x1000), drv.userptr(0x1000)
  q.write(*copy(0x100, src, dst))
  drv.run()
  assert q.q.error is None and q.q.fast.version == drv.kfd.gpus[drv.gpu_ids[0]].memory.version
  ids = (ctypes.c_uint32 * 1)(drv.gpu_ids[0])
  drv.io(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=h, device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
  ctypes.memset(src, 0x5A, 0x100)
  q.write(*copy(0x100, src, dst))
  drv.run()
  assert str(q.q.error) == f"SDMA: COPY_LINEAR destination addr={dst:#X} size=256 is not mapped to this GPU (MMU fault)".replace("0X", "0x")
  assert ctypes.string_at(dst, 0x100) == bytes(0x100)

def test_more_traps_than_c_records_raise_every_event_in_order(drv):
  """C records at most 16 TRAPs that Python has not taken; the 17th is left to the Python handler, which first raises the
  recorded ones: 20 TRAPs in one submission fire 20 interrupts with their contexts in ring order."""
  q = drv.queue(0, SDMA, ring_size=0x2000)
  seen, orig = [], drv.kfd.interrupt
  drv.kfd.interrupt = lambda gpu, ctx: (seen.append(ctx), orig(gpu, ctx))
  q.write(*[v for i in range(20) for v in (sd.SDMA_OP_TRAP, 100 + i)])
  drv.run()
  assert seen == list(range(100, 120)) and q.q.rptr == q.put and q.q.fast.traps == 19   # the 17th ran in Python

def _ring(base:int, ops) -> list[int]:
  """The dwords of `ops` (kind, args) against a buffer at `base` (byte offsets; None: an address no GPU maps)."""
  def at(off): return 0x1000 if off is None else base + off
  out = []
  for kind, a in ops:
    if kind == "nop": out += [sd.SDMA_OP_NOP | a << 16, *([0] * a)]
    elif kind == "copy": out += copy(a[0], at(a[1]), at(a[2]))
    elif kind == "fence": out += fence(at(a[0]), a[1])
    elif kind == "write": out += [sd.SDMA_OP_WRITE, at(a[0]) & 0xFFFFFFFF, at(a[0]) >> 32, len(a[1]) - 1, *a[1]]
    elif kind == "poll": out += [sd.SDMA_OP_POLL_REGMEM | sd.SDMA_PKT_POLL_REGMEM_HEADER_FUNC(a[0]) | sd.SDMA_PKT_POLL_REGMEM_HEADER_MEM_POLL(1),
                                 at(a[1]) & 0xFFFFFFFF, at(a[1]) >> 32, a[2], 0xFFFFFFFF, 0]
    else: out += [a]   # a raw header: an unknown opcode or sub-op
  return out

def _rare(common, rare):   # `rare` one time in 16: most rings then run on past their first packets
  return st.integers(0, 15).flatmap(lambda k: rare if k == 0 else common)
def _off(hi:int): return _rare(st.integers(0, hi).map(lambda o: o & ~3), st.none())
_ops = st.lists(_rare(st.one_of(
  st.tuples(st.just("nop"), st.integers(0, 3)),
  st.tuples(st.just("copy"), st.tuples(st.integers(1, 0x800), _off(0x17FC), _off(0x17FC))),
  st.tuples(st.just("fence"), st.tuples(_off(0x1FFC), st.integers(0, 2**32 - 1))),
  st.tuples(st.just("write"), st.tuples(_off(0x1FF0), st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4))),
  st.tuples(st.just("poll"), st.tuples(_rare(st.just(0), st.integers(1, 6)), _off(0x1FFC), st.integers(0, 2**32 - 1)))),
  st.tuples(st.just("raw"), st.sampled_from([0x3F, sd.SDMA_OP_COPY | 7 << 8]))), min_size=1, max_size=12)

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_ops, seed=st.integers(0, 2**32 - 1))
def test_random_rings_run_alike_with_and_without_the_c_fast_path(make_driver, ops, seed):
  """Differential: random rings of the packets C runs (copies that overlap, run past the buffer or hit unmapped memory, fences,
  writes, polls that hold or must wait, unknown opcodes and sub-ops) leave the same buffer, read pointer, blocked state and error
  (addresses as offsets) with C first and with the Python handlers alone."""
  import random
  init = random.Random(seed).randbytes(0x2000)
  def go(fast:bool):
    d = make_driver()
    q, (buf, _) = d.queue(0, SDMA, ring_size=0x4000), d.userptr(0x2000)
    if not fast: q.q.fast = None
    ctypes.memmove(buf, init, 0x2000)
    q.write(*_ring(buf, ops))
    d.run()
    def rel(text:str) -> str:   # addresses inside the buffer as offsets (the two drivers' buffers lie elsewhere)
      return re.sub(r"0x[0-9a-fA-F]+", lambda m: f"BUF+{int(m[0], 16) - buf:#x}" if buf <= int(m[0], 16) < buf + 0x2000 else m[0], text)
    return ctypes.string_at(buf, 0x2000), q.q.rptr, rel(q.q.blocked_on), None if q.q.error is None else rel(str(q.q.error))
  assert go(True) == go(False)
