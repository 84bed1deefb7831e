"""PM4 command processor: every packet tinygrad 0.14.0 emits, ring wrap-around, IBs (HCQGraph), blocking waits, dispatch
reconstruction from SH registers (with a recording stand-in for the emulator), and stopping on bad packets."""
import ctypes, time
import pytest
from tinygrad.runtime.autogen.am import pm4_nv as pm4
from mockgpu.emu.api import Stats, default_threads
from mockgpu.emu.errors import FaultReport, GPUFault
from mockgpu.mock.device import host_spins

SH = pm4.PACKET3_SET_SH_REG_START
def lohi(a): return a & 0xFFFFFFFF, a >> 32
def release(addr, value, data_sel=1, int_sel=0, ctxid=0):
  return (pm4.PACKET3_RELEASE_MEM, 0x514, data_sel << 29 | int_sel << 24, *lohi(addr), *lohi(value), ctxid)
def wait_geq(addr, v): return (pm4.PACKET3_WAIT_REG_MEM, 0x15, *lohi(addr), v, 0xFFFFFFFF, 4)

def test_release_mem_data_sizes_and_timestamps(drv):
  q, (buf, _) = drv.queue(0), drv.userptr(0x1000)
  ctypes.c_uint64.from_address(buf).value = 0xFFFFFFFF_FFFFFFFF
  q.pm4(*release(buf, 0x1_0000_0005, data_sel=1)).pm4(*release(buf + 8, 0x1_0000_0005, data_sel=2))
  q.pm4(*release(buf + 16, 0, data_sel=3))
  t0 = time.perf_counter_ns() // 10
  drv.run()
  t1 = time.perf_counter_ns() // 10
  assert drv.u64(buf) == 0xFFFFFFFF_00000005 and drv.u64(buf + 8) == 0x1_0000_0005   # data_sel 1 writes 32 bits only
  assert t0 <= drv.u64(buf + 16) <= t1 and drv.u64(q.q.rptr_addr) == q.put   # the 100 MHz clock

def test_release_mem_interrupt_wakes_wait_events(drv):
  sig, mem, hw = drv.events()
  q, (buf, _) = drv.queue(0), drv.userptr(0x1000)
  q.pm4(*release(buf, sig.event_id, data_sel=1, int_sel=2, ctxid=sig.event_id))
  drv.run()
  assert drv.wait([sig, mem, hw])[0].wait_result == 0

def test_wait_reg_mem_blocks_until_a_cpu_write_and_other_gpus_run(drv):
  q0, q1, (sig, _) = drv.queue(0), drv.queue(1), drv.userptr(0x1000, (0, 1))
  q0.pm4(*wait_geq(sig, 3)).pm4(*release(sig + 8, 1))
  q1.pm4(*release(sig + 16, 9))
  drv.run()
  assert drv.u32(sig + 8) == 0 and drv.u32(sig + 16) == 9 and "WAIT_REG_MEM" in q0.q.blocked_on
  ctypes.c_uint32.from_address(sig).value = 2
  drv.run()
  assert drv.u32(sig + 8) == 0
  ctypes.c_uint32.from_address(sig).value = 4
  drv.run()
  assert drv.u32(sig + 8) == 1

def test_a_long_wait_is_reported_once_naming_the_packet_and_value(drv, monkeypatch, capsys):
  """A wait nothing satisfies is no fault (tinygrad's wait times out and raises an empty RuntimeError): the mock names it."""
  monkeypatch.setattr("mockgpu.mock.device.wait_report_s", lambda: 0.3)
  q, (sig, _) = drv.queue(0), drv.userptr(0x1000)
  q.pm4(pm4.PACKET3_NOP, 0).pm4(*wait_geq(sig, 5)).pm4(*release(sig + 8, 1))
  drv.run()
  assert capsys.readouterr().err == ""   # waiting, but not yet for long
  time.sleep(0.35)
  drv.run(), drv.run()
  line = "PM4 queue 0 of GPU(node=1 gpu_id=0xa001 arch=gfx1100) has been waiting"
  want = f"on WAIT_REG_MEM at ring dword 0x2: memory dword at {sig:#x} & 0xffffffff >= 0x5 (now 0x0); nothing has written"
  assert (err:=capsys.readouterr().err).count(line) == 1 and want in err and "RuntimeError with an empty message" in err
  ctypes.c_uint32.from_address(sig).value = 3   # the awaited memory changed: a new wait, reported again once it is long
  drv.run()
  time.sleep(0.35)
  drv.run()
  assert "(now 0x3)" in (err:=capsys.readouterr().err) and err.count(line) == 1
  ctypes.c_uint32.from_address(sig).value = 5
  drv.run()
  assert drv.u32(sig + 8) == 1 and q.q.blocked_on == "" and capsys.readouterr().err == ""

def test_a_packet_published_in_part_waits_and_a_long_such_wait_is_reported(drv, monkeypatch, capsys):
  """A write pointer inside a packet: the queue waits for the rest (tinygrad never publishes less), and says so if it lasts."""
  monkeypatch.setattr("mockgpu.mock.device.wait_report_s", lambda: 0.2)
  q, (sig, _) = drv.queue(0), drv.userptr(0x1000)
  q.pm4(*release(sig, 7), ring=False)
  q.doorbell.value = q.put - 2   # publishes all but the last two dwords
  drv.run()
  assert drv.u32(sig) == 0 and q.q.blocked_on == "the rest of a 8-dword packet at ring dword 0x0: the write pointer 0x6 ends inside it"
  time.sleep(0.25)
  drv.run()
  assert "has been waiting" in (err:=capsys.readouterr().err) and "the write pointer 0x6 ends inside it" in err
  q.doorbell.value = q.put
  drv.run()
  assert drv.u32(sig) == 7 and q.q.blocked_on == ""

def test_hdp_flush_register_wait_passes(drv):
  q, (buf, _) = drv.queue(0), drv.userptr(0x1000)
  q.pm4(pm4.PACKET3_WAIT_REG_MEM, 0x45, 0xE26, 0xE27, 0xFFFFFFFF, 0xFFFFFFFF, 4).pm4(*release(buf, 1))
  drv.run()
  assert drv.u32(buf) == 1

def test_packets_straddle_the_ring_end(drv):
  q, (buf, _) = drv.queue(0, ring_size=0x100), drv.userptr(0x1000)
  q.pm4(pm4.PACKET3_NOP, 0)
  for i in range(1, 20):   # 8 dwords each: a 64-dword ring wraps, and packets straddle its end (8 does not divide 64-2)
    q.pm4(*release(buf, i))
    drv.run()
    assert drv.u32(buf) == i
  assert q.put > 128 and q.q.error is None

def test_ring_overrun_is_reported(drv, capsys):
  q = drv.queue(0, ring_size=0x100)
  for i in range(10): q.pm4(*release(0, i), ring=False)
  q.write()
  drv.run()
  assert q.q.error is not None and "ring overrun" in capsys.readouterr().err

def test_indirect_buffer_runs_and_blocks_inside(drv):
  q, (ib, _), (sig, _) = drv.queue(0), drv.userptr(0x1000), drv.userptr(0x1000)
  body = [pm4.PACKET3(pm4.PACKET3_WAIT_REG_MEM, 5), *wait_geq(sig, 1)[1:], pm4.PACKET3(pm4.PACKET3_RELEASE_MEM, 6), *release(sig + 8, 42)[1:]]
  for i, v in enumerate(body): ctypes.c_uint32.from_address(ib + 4 * i).value = v
  q.pm4(pm4.PACKET3_INDIRECT_BUFFER, *lohi(ib), len(body) | pm4.INDIRECT_BUFFER_VALID).pm4(*release(sig + 16, 7))
  drv.run()
  assert drv.u32(sig + 8) == 0 and drv.u32(sig + 16) == 0 and "IB" in q.q.blocked_on
  ctypes.c_uint32.from_address(sig).value = 1
  drv.run()
  assert (drv.u32(sig + 8), drv.u32(sig + 16)) == (42, 7)
  q.pm4(pm4.PACKET3_INDIRECT_BUFFER, *lohi(ib), len(body) | pm4.INDIRECT_BUFFER_VALID).pm4(*release(sig + 16, 8))
  drv.run()
  assert drv.u32(sig + 16) == 8   # the graph can be resubmitted

def count_reads(monkeypatch, gpu, what):
  """The list that grows by the size of every checked read of `gpu` named `what` (e.g. "ring")."""
  sizes, read = [], type(gpu).read
  def counted(self, addr, size, engine, w):
    if w == what: sizes.append(size)
    return read(self, addr, size, engine, w)
  monkeypatch.setattr(type(gpu), "read", counted)
  return sizes

def test_published_packets_are_fetched_in_one_ring_read(drv, monkeypatch):
  """The CP fetches the published ring ahead: one read for a whole submission, not two per packet (each read releases the
  GIL to tinygrad's spinning signal wait)."""
  q, (buf, _) = drv.queue(0), drv.userptr(0x1000)
  for i in range(20): q.pm4(*release(buf + 4 * i, 100 + i), ring=False)
  q.write()
  reads = count_reads(monkeypatch, q.q.gpu, "ring")
  drv.run()
  assert [drv.u32(buf + 4 * i) for i in range(20)] == [100 + i for i in range(20)] and reads == [20 * 8 * 4]

def test_an_ib_longer_than_one_fetch_is_read_in_pieces_and_reread_when_resubmitted(drv, monkeypatch):
  """An IB of more than Queue.FETCH dwords runs to its end; the CPU rewrites it between submissions (HCQGraph does) and
  the next submission executes the new contents."""
  q, (ib, _), (sig, _) = drv.queue(0), drv.userptr(0x8000), drv.userptr(0x1000)
  nop = [pm4.PACKET3(pm4.PACKET3_NOP, 2), 0, 0, 0]   # 4 dwords
  body = nop * 1100 + [pm4.PACKET3(pm4.PACKET3_RELEASE_MEM, 6), *release(sig, 42)[1:]]
  assert len(body) > q.q.FETCH
  dws = (ctypes.c_uint32 * len(body)).from_address(ib)
  dws[:] = body
  reads = count_reads(monkeypatch, q.q.gpu, "INDIRECT_BUFFER")
  q.pm4(pm4.PACKET3_INDIRECT_BUFFER, *lohi(ib), len(body) | pm4.INDIRECT_BUFFER_VALID)
  drv.run()
  assert drv.u32(sig) == 42 and reads == [4 * q.q.FETCH, 4 * (len(body) - q.q.FETCH)]
  dws[len(body) - 3] = 43   # the RELEASE_MEM's data dword (then data_hi, ctxid)
  q.pm4(pm4.PACKET3_INDIRECT_BUFFER, *lohi(ib), len(body) | pm4.INDIRECT_BUFFER_VALID)
  drv.run()
  assert drv.u32(sig) == 43 and q.q.error is None

class Recorder:
  def __init__(self, exc=None): self.calls, self.exc = [], exc
  def __call__(self, d, memory, threads, hold_gil, threads_held):   # a mock device leaves tinygrad's spinning wait a CPU, unless
    assert threads == default_threads(host_waits=True)              # the dispatch holds the GIL while tinygrad spins (host_spins)
    assert hold_gil is host_spins and threads_held == default_threads()
    self.calls.append((d, memory))
    if self.exc: raise self.exc
    return Stats(instructions=10, workgroups=1, waves=1, seconds=0.0, backend="fake")

def dispatch_packets(q, code, kernarg, rsrc2=0x9E, w32=True):
  q.pm4(pm4.PACKET3_ACQUIRE_MEM, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0, 0, 0x3F0)
  q.pm4(pm4.PACKET3_SET_SH_REG, 0x2E0C - SH, *lohi(code >> 8)).pm4(pm4.PACKET3_SET_SH_REG, 0x2E12 - SH, 0x40AF0000, rsrc2)
  q.pm4(pm4.PACKET3_SET_SH_REG, 0x2E28 - SH, 0).pm4(pm4.PACKET3_SET_SH_REG, 0x2E18 - SH, 0x20200)
  q.pm4(pm4.PACKET3_SET_SH_REG, 0x2E40 - SH, *lohi(kernarg)).pm4(pm4.PACKET3_SET_SH_REG, 0x2E04 - SH, 0, 0, 0, 3, 4, 1, 0, 0)
  q.pm4(pm4.PACKET3_DISPATCH_DIRECT, 5, 6, 7, 0x8005 if w32 else 0x5).pm4(pm4.PACKET3_EVENT_WRITE, 0x407)

def test_dispatch_is_rebuilt_from_sh_registers(drv, monkeypatch):
  import mockgpu.emu.api as api
  monkeypatch.setattr(api, "run", rec:=Recorder())
  q, (code, _), (kernarg, _) = drv.queue(0), drv.userptr(0x1000), drv.userptr(0x1000)
  dispatch_packets(q, code, kernarg)
  drv.run()
  (d, memory), = rec.calls
  assert (d.arch, d.code_addr, d.grid, d.block, d.user_sgprs[:2]) == ("gfx1100", code, (5, 6, 7), (3, 4, 1), lohi(kernarg))
  assert (d.rsrc1, d.rsrc2) == (0x40AF0000, 0x9E)
  assert not d.wave64 and d.scratch_bytes_per_lane == 0x20 * 256 // 64 and memory is drv.kfd.gpus[drv.gpu_ids[0]].memory
  assert drv.kfd.gpus[drv.gpu_ids[0]].stats["dispatches"] == 1

def test_gpu_fault_becomes_an_mmu_fault_event(drv, monkeypatch, capsys):
  import mockgpu.emu.api as api
  rep = FaultReport("read", "global", 0xBAD000, 4, "gfx1100", 0x10, 0x10, b"\0" * 8, "global_load_b32 v1, v0, s[0:1]", lane=3, wave=0)
  monkeypatch.setattr(api, "run", Recorder(GPUFault(rep)))
  sig, mem, hw = drv.events()
  q, (code, _), (buf, _) = drv.queue(0), drv.userptr(0x1000), drv.userptr(0x1000)
  dispatch_packets(q, code, buf)
  q.pm4(*release(buf, 1))
  drv.run()
  _, arr = drv.wait([sig, mem, hw])
  assert arr[1].memory_exception_data.va == 0xBAD000 and arr[1].memory_exception_data.gpu_id == drv.gpu_ids[0]
  assert drv.u32(buf) == 0
  err = capsys.readouterr().err
  assert "GPUFault" in err and "lane=3" in err and "addr=0xbad000" in err

@pytest.mark.parametrize("space,limit,says", [("lds", 0x10000, "LDS access at offset 0x61a80 outside the workgroup's 0x10000 bytes"),
                                              ("scratch", 0x40, "scratch access at offset 0x61a80 outside the lane's 0x40 bytes")])
def test_lds_and_scratch_faults_are_not_mmu_faults(drv, monkeypatch, capsys, space, limit, says):
  # their address is an offset in the workgroup's LDS / the lane's scratch, not a GPU VA: the HW exception fires (tinygrad:
  # "HW fault: ..."), no MEMORY event with the offset as `va`, and the queue's report says what was accessed
  import mockgpu.emu.api as api
  rep = FaultReport("write", space, 0x61A80, 4, "gfx1100", 0x10, 0x10, b"\0" * 8, "ds_store_b32 v1, v0", lane=3, wave=0, limit=limit)
  monkeypatch.setattr(api, "run", Recorder(GPUFault(rep)))
  sig, mem, hw = drv.events()
  q, (code, _), (buf, _) = drv.queue(0), drv.userptr(0x1000), drv.userptr(0x1000)
  dispatch_packets(q, code, buf)
  drv.run()
  _, arr = drv.wait([sig, mem, hw])
  assert arr[2].hw_exception_data.gpu_id == drv.gpu_ids[0] and arr[1].memory_exception_data.gpu_id == 0
  err = capsys.readouterr().err
  assert "(tinygrad sees: HW fault)" in err and f"write fault in {space}: addr=0x61a80 size=4" in err and says in err and "MMU" not in err

@pytest.mark.parametrize("dwords,msg", [
  ([pm4.PACKET3(0x99, 0), 0], "unknown PM4 opcode 0x99"),
  ([0x80000000], "type-2 packet"),
  ([pm4.PACKET3(pm4.PACKET3_WAIT_REG_MEM, 2), 0, 0, 0], "WAIT_REG_MEM with 3 payload dwords; expected 6"),
  ([pm4.PACKET3(pm4.PACKET3_EVENT_WRITE, 0), 0x3F], "EVENT_WRITE of event DRAW_DONE"),
  ([pm4.PACKET3(pm4.PACKET3_RELEASE_MEM, 6), 0x514, 5 << 29, 0, 0, 0, 0, 0], "data_sel=5"),
  ([pm4.PACKET3(pm4.PACKET3_INDIRECT_BUFFER, 2), 0, 0, 4], "without the VALID bit"),
  ([pm4.PACKET3(pm4.PACKET3_INDIRECT_BUFFER, 2), 0, 0, pm4.INDIRECT_BUFFER_VALID], "IB_SIZE=0"),   # found by the ioctl fuzzer: was ZeroDivisionError
  ([pm4.PACKET3(pm4.PACKET3_SET_UCONFIG_REG, 1), 0xD9E9 - pm4.PACKET3_SET_UCONFIG_REG_START, 1], "SQ thread trace (SQTT), which is not modelled"),
])
def test_bad_packets_stop_the_queue_with_a_hw_exception(drv, capsys, dwords, msg):
  sig, mem, hw = drv.events()
  q, (buf, _) = drv.queue(0), drv.userptr(0x1000)
  q.write(*dwords)
  q.pm4(*release(buf, 1))
  drv.run()
  assert drv.u32(buf) == 0 and q.q.error is not None
  _, arr = drv.wait([sig, mem, hw])
  assert arr[2].hw_exception_data.gpu_id == drv.gpu_ids[0]
  assert msg in capsys.readouterr().err

def test_unmapped_wait_address_is_an_mmu_fault(drv):
  sig, mem, hw = drv.events()
  q = drv.queue(0)
  q.pm4(*wait_geq(0x1234000, 1))
  drv.run()
  assert drv.wait([sig, mem, hw])[1][1].memory_exception_data.va == 0x1234000

def test_device_thread_runs_queues_by_itself(make_driver):
  d = make_driver()
  d.kfd.autorun = True
  q, (buf, _) = d.queue(0), d.userptr(0x1000)
  q.pm4(*release(buf, 5))
  deadline = time.time() + 5
  while d.u32(buf) != 5 and time.time() < deadline: time.sleep(0.001)
  assert d.u32(buf) == 5 and d.kfd.thread is not None and d.kfd.thread.thread.is_alive()

@pytest.mark.parametrize("arch,rsrc3_reg,initiator,wave64", [("gfx1201", 0x2E28, 0x8005, False), ("gfx950", 0x2E2D, 0x5, True)])
def test_dispatch_on_other_archs(make_driver, monkeypatch, arch, rsrc3_reg, initiator, wave64):
  import mockgpu.emu.api as api
  monkeypatch.setattr(api, "run", rec:=Recorder())
  d = make_driver(arch)
  q, (code, _), (buf, _) = d.queue(0), d.userptr(0x1000), d.userptr(0x1000)
  q.pm4(pm4.PACKET3_ACQUIRE_MEM, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0, 0xA)   # the gfx9 form: 6 payload dwords
  q.pm4(pm4.PACKET3_SET_SH_REG, 0x2E0C - SH, *lohi(code >> 8)).pm4(pm4.PACKET3_SET_SH_REG, rsrc3_reg - SH, 0x10005)
  q.pm4(pm4.PACKET3_SET_SH_REG, 0x2E04 - SH, 0, 0, 0, 64, 1, 1).pm4(pm4.PACKET3_DISPATCH_DIRECT, 2, 1, 1, initiator)
  q.pm4(pm4.PACKET3_RELEASE_MEM, 0x88514 if arch == "gfx950" else 0x70F514, 1 << 29, *lohi(buf), 9, 0, 0)
  d.run()
  (disp, _), = rec.calls
  assert (disp.arch, disp.grid, disp.block, disp.rsrc3, disp.wave64) == (arch, (2, 1, 1), (64, 1, 1), 0x10005, wave64)
  assert d.u32(buf) == 9

def test_unknown_write_then_wait_register_pair_is_reported(drv, capsys):
  q = drv.queue(0)
  q.pm4(pm4.PACKET3_WAIT_REG_MEM, 0x45, 0x1234, 0x1235, 1, 1, 4)
  drv.run()
  assert q.q.error is not None and "write-then-wait on registers 0x1234/0x1235" in capsys.readouterr().err

def test_trace_prints_every_executed_packet(drv, monkeypatch, capsys):
  import mockgpu.mock.pm4 as pm4_model
  monkeypatch.setattr(pm4_model, "TRACE", True)
  q, (buf, _) = drv.queue(0), drv.userptr(0x1000)
  q.pm4(pm4.PACKET3_NOP, 0).pm4(*release(buf, 3))
  drv.run()
  err = capsys.readouterr().err
  assert "ring dword 0x0: NOP 0x0" in err and "ring dword 0x2: RELEASE_MEM 0x514" in err

def test_device_thread_ends_with_its_kfd(make_driver):
  import gc
  d = make_driver()
  d.kfd.autorun = True
  d.queue(0)
  thread = d.kfd.thread.thread
  del d
  for _ in range(100):   # the thread may hold the KFD during a round: collect until it lets go
    gc.collect()
    thread.join(timeout=0.05)
    if not thread.is_alive(): break
  assert not thread.is_alive()
