"""`mockgpu bench`: full-stack benchmarks of tinygrad on the mock AMD GPU, measured in one run against DEV=CPU.

For each workload: the warm time (median of `--reps` runs after one warm-up run that compiles the kernels) of the whole
tinygrad stack on the mock AMD GPU and on tinygrad's CPU backend, the runs alternating, and the median of the per-pair
ratios (a shared machine's speed drifts within a minute), with the median mock run split into its
kernels (the emulator's calls, `mockgpu.emu.api.DISPATCH_HOOKS`), its SDMA copies (`mockgpu.mock.sdma.copy_totals`), the
rest of the device thread's rounds (packets, signals, and waits for the GIL inside them: `mockgpu.usage` device seconds), the
driver calls tinygrad made (`mockgpu.usage` driver seconds) and the rest (tinygrad's Python, and the device thread's wake-up
and wait for the GIL before a round); then, per kernel of one more warm run, the
emulator's wave-instructions and wave-instructions/s, translated or interpreted (`mockgpu.emu.api.DISPATCH_HOOKS`), and the
emulator's own benchmark (`mockgpu emu bench`: the loop kernel and tinygrad's matmul kernel on the bare emulator, interpreted
and translated). Then the median submit-to-signal round
trip of an empty kernel on the mock GPU (one PM4 submission: wait, dispatch, signal; then the CPU's wait returns), and the
two sides of the device thread's polling: the CPU the process burns while tinygrad leaves the GPU idle, and the round trip
of the first kernel after 100 ms of idleness (what a slower poll would cost).

`--boot`: instead, the time tinygrad takes to open each mock AMD device in a fresh interpreter (`Device["AMD"]`: the mock
KFD's driver calls, or the boot of tinygrad's own AM driver on the mock PCI GPU and through the mock USB bridge: firmware
load, PSP, SMU, rings), median of `--reps` processes.
"""
from __future__ import annotations
import argparse, os, resource, statistics, subprocess, sys, time
from mockgpu.argtypes import positive_int

__all__ = ["main"]

EMPTY_KERNEL = """target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @empty() #0 { ret void }
attributes #0 = { "amdgpu-flat-work-group-size"="1,1" }"""

def _workloads(np):
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((256, 256), np.float32), rng.standard_normal((256, 256), np.float32)
  x, y = rng.standard_normal(1 << 20, np.float32), rng.standard_normal(1 << 20, np.float32)
  return [("matmul 256x256 f32", lambda T, d: (T(a, device=d) @ T(b, device=d)).realize(), a @ b),
          ("elementwise 1M f32 (x*y+1)", lambda T, d: (T(x, device=d) * T(y, device=d) + 1).realize(), x * y + 1),
          ("sum 1M f32", lambda T, d: T(x, device=d).sum().realize(), x.astype(np.float64).sum())]

def _time(fg, fc, reps:int, spent) -> tuple[tuple[float, ...], float, float, object]:
  """Runs of the mock (fg) and of the CPU (fc) alternating, `reps` of each after one warm-up of each (it compiles and caches
  the kernels), so both see the same machine: a shared one drifts by 1.5x within a minute. Returns ((wall, *what `spent`
  counts) seconds of the mock run with the median wall time, the CPU's median wall, the median of the per-pair ratios, the
  last mock result); `spent()` gives the seconds so far of what the mock's time is split into (here: kernels, copies and
  their part outside the device rounds, device rounds, driver calls: DISPATCH_HOOKS, copy_totals, mockgpu.usage)."""
  def one(fn):
    t0 = time.perf_counter()
    out = fn()
    out.numpy()
    return time.perf_counter() - t0, out
  out, _ = fg(), fc()
  runs, cpu = [], []
  for _ in range(reps):
    s0 = spent()
    t, out = one(fg)
    runs.append((t, *(b - a for a, b in zip(s0, spent()))))
    cpu.append(one(fc)[0])
  return sorted(runs)[len(runs) // 2], statistics.median(cpu), statistics.median(g[0] / c for g, c in zip(runs, cpu)), out

def round_trip(reps:int=200, idle:float=0.0) -> float:
  """Median seconds from submitting an empty kernel to the CPU seeing its completion signal, each after `idle` seconds of sleep."""
  from tinygrad import Device
  from tinygrad.device import TinyELF
  from tinygrad.helpers import DEV
  dev = Device["AMD"]
  prg = dev.runtime(TinyELF(dev.compiler.compile(EMPTY_KERNEL), "empty", DEV.target("AMD"), ()))
  prg()
  dev.synchronize()
  ts = []
  for _ in range(reps):
    if idle: time.sleep(idle)
    t0 = time.perf_counter()
    prg()
    dev.synchronize()
    ts.append(time.perf_counter() - t0)
  return statistics.median(ts)

def python_unit(reps:int=7) -> float:
  """Median seconds of a fixed pure-Python loop in this thread: run before the mock GPU opens and while it idles, the two
  show what the device thread costs tinygrad's own Python (a poll taking the GIL slows it; the idle wait in C does not)."""
  def unit():
    t0, acc = time.perf_counter(), 0
    for i in range(200_000): acc += i * i % 7
    return time.perf_counter() - t0
  return statistics.median(unit() for _ in range(reps))

def idle_cpu(seconds:float=2.0) -> float:
  """CPU seconds the process uses per second while its only thread with work sleeps (the mock's device thread polling)."""
  def cpu() -> float: return sum(getattr(resource.getrusage(resource.RUSAGE_SELF), f) for f in ("ru_utime", "ru_stime"))
  c0, t0 = cpu(), time.perf_counter()
  time.sleep(seconds)
  return (cpu() - c0) / (time.perf_counter() - t0)

BOOT_DEVS = (("MOCKKFD+AMD", {}), ("MOCKPCI+AMD", {}), ("MOCKUSB+AMD", {"GMMU": "0"}))
BOOT_PROBE = ("import time; from mockgpu.tinygrad.activate import install; install(); from tinygrad import Device; t0 = time.perf_counter(); "
              "d = Device['AMD']; print(time.perf_counter() - t0, d.arch)")

def boot(dev:str, env:dict[str, str], reps:int) -> tuple[float, str]:
  """(median seconds of `Device["AMD"]` under DEV=`dev` with `env` over `reps` fresh interpreters, the arch). Raises
  RuntimeError with the child's last line if it fails (e.g. MOCKPCI without gfx950's firmware)."""
  ts, arch = [], ""
  for _ in range(reps):
    r = subprocess.run([sys.executable, "-c", BOOT_PROBE], env={**os.environ, **env, "DEV": dev}, capture_output=True, text=True)
    if r.returncode != 0: raise RuntimeError((r.stderr.strip().splitlines() or ["no output"])[-1])
    t, arch = r.stdout.split()[-2:]
    ts.append(float(t))
  return statistics.median(ts), arch

def main(argv: list[str] | None = None) -> int:
  """Print the full-stack table (mock AMD vs CPU) and the empty-kernel round trip. Returns 1 if a result is wrong."""
  ap = argparse.ArgumentParser(prog="mockgpu bench", description=__doc__.splitlines()[0])
  ap.add_argument("--dev", default="MOCKKFD+AMD", help="tinygrad DEV string of the mock GPU (default MOCKKFD+AMD)")
  ap.add_argument("--reps", type=positive_int, default=5, help="timed repetitions per workload, at least 1 (the median is reported; default 5)")
  ap.add_argument("--xlat", choices=("sync", "auto", "off"), default="auto",
                  help="the emulator's kernel translator ($MOCKGPU_EMU_XLAT): auto (default, as in normal use: a kernel is translated in the "
                       "background once it has run interpreted as long as its compile would take, or at once when an earlier run left its "
                       "translation in the cache), sync (each kernel is translated during the warm-up run, so the timed runs are translated) or off")
  ap.add_argument("--boot", action="store_true", help="only time opening each mock AMD device (MOCKKFD, MOCKPCI, GMMU=0 MOCKUSB) in fresh interpreters")
  ap.add_argument("--arch", help="with --boot: the chip of every row, e.g. gfx942 (default: each interface's own, gfx1100 on MOCKKFD, "
                  "gfx950 on MOCKPCI and MOCKUSB)")
  args = ap.parse_args(argv)
  if args.arch and not args.boot: ap.error("--arch goes with --boot (give the arch of a full-stack run in --dev, e.g. MOCKKFD+AMD::gfx942)")
  if args.boot:
    from mockgpu.tinygrad.ci import cpu_compiler
    from mockgpu.tinygrad.checks import find_libllvm
    env = cpu_compiler(dict(os.environ))   # MOCKUSB syncs tinygrad's CPU device on every register access
    if "LLVM_PATH" not in os.environ and (llvm:=find_libllvm(20)): env["LLVM_PATH"] = str(llvm)   # MOCKPCI/MOCKUSB default to gfx950
    print(f"mockgpu bench --boot: Device['AMD'] in a fresh interpreter, median of {args.reps}\n\n{'DEV':28s} {'arch':8s} {'boot s':>8s}")
    bad = 0
    for dev, extra in BOOT_DEVS:
      dev += f"::{args.arch}" if args.arch else ""
      name = " ".join([*(f"{k}={v}" for k, v in extra.items()), dev])
      try: t, arch = boot(dev, {**env, **extra}, args.reps)
      except RuntimeError as e:
        bad += 1
        print(f"{name:28s} failed: {e}")
        continue
      print(f"{name:28s} {arch:8s} {t:8.2f}")
    return 1 if bad else 0
  if "tinygrad.runtime.support.hcq" in sys.modules: ap.error("tinygrad's HCQ runtime is already imported; run in a fresh interpreter")
  os.environ["DEV"], os.environ["MOCKGPU_EMU_XLAT"] = args.dev, args.xlat
  from mockgpu.tinygrad.ci import cpu_compiler
  os.environ.update(cpu_compiler(dict(os.environ)))   # the CPU side runs $CC or clang; Debian names it clang-NN
  from mockgpu.tinygrad.activate import install
  install()
  import numpy as np
  from tinygrad import Tensor, Device
  gpu, py_before = Device.DEFAULT, python_unit()   # no device thread yet: it starts with the first queue
  print(f"mockgpu bench: {args.dev} ({Device[gpu].arch}) vs CPU, warm medians of {args.reps} runs, emulator translator {args.xlat}\n")
  print(f"{'workload':30s} {'mock s':>9s} {'CPU s':>9s} {'ratio':>7s}  result   of the mock s: {'kernels':>8s} {'copies':>8s} {'rounds':>8s} "
        f"{'driver':>8s} {'rest':>8s}")
  from mockgpu import usage
  from mockgpu.emu import api
  from mockgpu.mock.sdma import copy_totals
  bad, per_kernel, rec, spent = 0, [], [], [0.0]   # spent: kernel seconds so far
  def on_dispatch(d, st):
    rec.append((d, st))
    spent[0] += st.seconds
  api.DISPATCH_HOOKS.append(on_dispatch)
  for name, fn, want in _workloads(np):
    (tg, tk, tcp, tci, tdev, tdrv), tc, ratio, og = _time(lambda: fn(Tensor, gpu), lambda: fn(Tensor, "CPU"), args.reps,
                                                        lambda: (*spent, *copy_totals()[2:], usage.totals["device_s"], usage.totals["driver_s"]))
    trd = max(0.0, tdev - tk - (tcp - tci))   # the device thread's rounds without their kernels and copies: packets, signals, GIL waits
    ok = bool(np.allclose(og.numpy(), want, rtol=1e-3, atol=1e-2))
    bad += not ok
    print(f"{name:30s} {tg:9.4f} {tc:9.4f} {ratio:6.1f}x  {'ok   ' if ok else 'WRONG'}                {tk:8.4f} {tcp:8.4f} {trd:8.4f} "
          f"{tdrv:8.4f} {tg - tk - tcp - trd - tdrv:8.4f}")
    for how in ("off", args.xlat):   # per kernel: one warm run interpreted, one as the table ran (sync: translated; auto: once hot or cached)
      os.environ["MOCKGPU_EMU_XLAT"] = how
      rec.clear()
      fn(Tensor, gpu).numpy()
      per_kernel += [(name, d, st) for d, st in rec]
    os.environ["MOCKGPU_EMU_XLAT"] = args.xlat
  print(f"\nemulator, per kernel of one warm run:\n{'workload':30s} {'grid':>12s} {'block':>10s} {'wave-inst':>10s} {'ms':>8s} {'M/s':>8s}  backend")
  for name, d, st in per_kernel:
    print(f"{name:30s} {'x'.join(map(str, d.grid)):>12s} {'x'.join(map(str, d.block)):>10s} {st.instructions:10d} {st.seconds * 1e3:8.2f} "
          f"{st.instructions / max(st.seconds, 1e-9) / 1e6:8.1f}  {'translated' if st.extra.get('translated') else 'interpreted'} x{st.extra.get('threads', 1)}")
  from mockgpu.emu.bench import bench_loop, bench_matmul
  for name, fn in (("loop kernel (VALU/SALU)", bench_loop), ("tinygrad matmul 256 kernel", bench_matmul)):
    for xlat, th in (("off", 1), ("sync", 1), ("sync", api.default_threads())):
      st, _, warm, cpu = fn(3, xlat=xlat, threads=th)
      print(f"{'emu bench ' + name:42s} {st.instructions:10d} wave-inst  warm {st.instructions / warm / 1e6:8.1f} M/s  "
            f"per CPU-second {st.instructions / max(cpu, 1e-9) / 1e6:8.1f} M/s  {'translated' if st.extra.get('translated') else 'interpreted'} x{st.extra['threads']}")
  print(f"\nempty-kernel submit-to-signal round trip (median): {round_trip() * 1e3:.3f} ms")
  print(f"the same, each after 100 ms idle (median of 20): {round_trip(20, idle=0.1) * 1e3:.3f} ms")
  print(f"idle device polling: {idle_cpu() * 100:.1f}% of one core")
  print(f"a pure-Python loop in tinygrad's thread while the GPU idles: {python_unit() * 1e3:.1f} ms, before the GPU opened: {py_before * 1e3:.1f} ms")
  return 1 if bad else 0

if __name__ == "__main__": sys.exit(main())
