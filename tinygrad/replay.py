"""`mockgpu replay`: capture the kernel launches of a tinygrad program on the mock AMD GPUs and replay them on the emulator.

    mockgpu replay capture --out DIR -- COMMAND ARGS...   run COMMAND with the mock driver recording every launch into DIR
    mockgpu replay run DIR                                replay each launch, compare every buffer; exit 0 only if all match
    mockgpu replay diff DIR_A DIR_B                       which kernels changed code, dispatch, inputs or results
    mockgpu replay show DIR                               the manifest and one line per launch

Exit codes: 0 success / everything matches, 1 a mismatch or a difference (capture: no launch recorded, else the command's
own code), 2 usage errors and captures that cannot be read. The format is docs/replay.md."""
from __future__ import annotations
import argparse, os, pathlib, shlex, subprocess, sys, time
from mockgpu.argtypes import nonnegative_float, nonnegative_int

__all__ = ["main", "parser"]

PROGRESS_S = 5.0   # seconds between progress lines of a long capture or replay
DISPATCH = ("grid", "block", "rsrc1", "rsrc2", "rsrc3", "wave64", "lds_bytes", "scratch_bytes_per_lane")   # what `diff` compares

def _say(msg:str): print(f"mockgpu replay: {msg}", file=sys.stderr, flush=True)

def _launches(out:pathlib.Path) -> int:
  from mockgpu.emu.capture import LOG
  try: return (out / LOG).read_bytes().count(b'"type":"launch"')
  except OSError: return 0

def capture(out:pathlib.Path, command:list[str]) -> int:
  from mockgpu.emu.capture import BLOBS, LOG, write_manifest
  from mockgpu.mock.recorder import ENV
  if out.exists() and (not out.is_dir() or any(out.iterdir())):
    _say(f"--out {out} exists and is not an empty directory; give a new directory (a capture is never appended to)")
    return 2
  (out / BLOBS).mkdir(parents=True, exist_ok=True)
  (out / LOG).touch()
  t0, rc = time.perf_counter(), None
  try:
    proc = subprocess.Popen(command, env=os.environ | {ENV: str(out.resolve())})
  except OSError as e:
    _say(f"cannot run {command[0]!r}: {e.strerror or e}")
    return 2
  try:
    while rc is None:
      try: rc = proc.wait(timeout=PROGRESS_S)
      except subprocess.TimeoutExpired: _say(f"{_launches(out)} launches captured so far ({time.perf_counter() - t0:.0f} s)")
  finally:
    m = write_manifest(out, command, rc, time.perf_counter() - t0)
  print(f"captured {m['launches']} launches ({', '.join(m['archs']) or 'no arch'}; tinygrad {m['tinygrad']}, mockgpu {m['mockgpu']}) into {out}: "
        f"{m['blobs']} blobs, {m['blob_bytes'] / 1e6:.2f} MB; `{shlex.join(command)}` exited {rc} after {m['seconds']:.1f} s")
  if m["launches"] == 0:
    _say("no kernel launch was recorded: run the command on a mock AMD GPU (DEV=MOCKKFD+AMD...); capture on a real GPU is not implemented "
         "(docs/replay.md)")
    return rc or 1
  return rc

def _tolerance(a):
  from mockgpu.emu.replay import Tolerance
  return Tolerance(a.dtype, a.rtol, a.atol, a.ulp)

def run(a) -> int:
  from mockgpu.emu.capture import Capture
  from mockgpu.emu.replay import replay
  cap = Capture(a.dir)
  cap.check()
  if not cap.launches:
    _say(f"{a.dir} holds no launches: nothing to replay (was the command run on a mock AMD GPU?)")
    return 1
  todo = cap.launches if a.launch is None else [l for l in cap.launches if l.index in a.launch]
  if a.launch is not None and len(todo) != len(set(a.launch)):
    _say(f"--launch {sorted(set(a.launch) - {l.index for l in todo})}: the capture has launches 0..{len(cap.launches) - 1}")
    return 2
  m, tol = cap.manifest, _tolerance(a)
  print(f"{a.dir}: {len(cap.launches)} launches ({', '.join(m['archs'])}; tinygrad {m['tinygrad']}, mockgpu {m['mockgpu']}); replaying "
        f"{len(todo)} on the {a.backend} backend, comparing {tol.describe()}")
  t0 = last = time.perf_counter()
  bad = relocated = done = 0
  for done, l in enumerate(todo, 1):
    r = replay(cap, l, backend=a.backend, tol=tol, relocate=a.relocate)
    relocated += r.relocated
    if a.verbose: print(f"{l.label}: {'ok' if r.ok else 'MISMATCH'}{' (relocated)' if r.relocated else ''}, {r.instructions} wave-instructions, "
                        f"{r.seconds * 1e3:.1f} ms")
    if not r.ok:
      bad += 1
      for d in r.differences: print(f"MISMATCH {l.label}: {d.describe()}")
      if r.error is not None: print(f"MISMATCH {l.label}: {r.error}")
      if a.exitfirst: break
    if (now:=time.perf_counter()) - last >= PROGRESS_S and done < len(todo):
      last = now
      _say(f"{done}/{len(todo)} launches replayed, {bad} mismatching ({now - t0:.0f} s)")
  print(f"{done - bad} of {done} launches match {tol.describe()}{f', {bad} MISMATCH' if bad else ''} ({time.perf_counter() - t0:.1f} s"
        f"{f', {relocated} relocated' if relocated else ''})")
  return 1 if bad else 0

def _hex(field:str, v) -> str: return f"{v:#x}" if field.startswith("rsrc") else str(v)

def diff(a) -> int:
  from mockgpu.emu.capture import Capture
  from mockgpu.emu.replay import Tolerance, compare
  A, B = Capture(a.a), Capture(a.b)
  la, lb = A.launches, B.launches
  print(f"A: {a.a} ({len(la)} launches, tinygrad {A.manifest['tinygrad']})\nB: {a.b} ({len(lb)} launches, tinygrad {B.manifest['tinygrad']})")
  names = [{l.kernel for l in ls} for ls in (la, lb)]
  head = [f"kernel {k}: only in {w}" for w, ks in (("A", names[0] - names[1]), ("B", names[1] - names[0])) for k in sorted(ks)]
  if len(la) != len(lb): head.append(f"launch count changed: {len(la)} -> {len(lb)}")
  code: dict[tuple[str, str, str], list[int]] = {}   # (kernel, code A, code B) -> launches
  lines, tol = [], Tolerance(a.dtype)
  for x, y in zip(la, lb):   # launches in order, until the sequences of kernels diverge
    if x.kernel != y.kernel:
      lines.append(f"launch {x.index}: kernel {x.kernel} -> {y.kernel}; the launch sequences diverge here, later launches are not compared")
      break
    if x.code.before != y.code.before: code.setdefault((x.kernel, x.code.before, y.code.before), []).append(x.index)
    dx, dy = x.dispatch, y.dispatch
    if ch:=[f"{f} {_hex(f, getattr(dx, f))} -> {_hex(f, getattr(dy, f))}" for f in DISPATCH if getattr(dx, f) != getattr(dy, f)]:
      lines.append(f"{x.label}: dispatch changed: {', '.join(ch)}")
    if (x.fault is None) != (y.fault is None): lines.append(f"{x.label}: fault {x.fault} -> {y.fault}")
    bx, by = ({r.label: r for r in l.regions if r.role == "buffer"} for l in (x, y))
    if bx.keys() != by.keys(): lines.append(f"{x.label}: buffers changed: {' '.join(bx)} -> {' '.join(by)}")
    for when, what in (("before", "input"), ("after", "result")):
      for k in [k for k in bx if k in by]:
        if (hx:=getattr(bx[k], when)) == (hy:=getattr(by[k], when)) or hx is None or hy is None: continue
        if bx[k].size != by[k].size: lines.append(f"{x.label}: {what} buffer {k} changed size: {bx[k].size} -> {by[k].size} bytes")
        elif (d:=compare(bx[k], A.blob(hx), B.blob(hy), tol)) is not None: lines.append(f"{x.label}: {what} changed: {d.describe('A', 'B')}")
  head += [f"kernel {k}: code changed {ha[:12]} -> {hb[:12]} (launch{'es' if len(ix) > 1 else ''} {_ranges(ix)})" for (k, ha, hb), ix in code.items()]
  for line in head + lines: print(line)
  n = len(head) + len(lines)
  print(f"{n} difference{'s' if n != 1 else ''}" if n else "no differences")
  return 1 if n else 0

def _ranges(ix:list[int]) -> str:
  """Launch indices as a short list: 0-3, 7, 9-12 (at most 8 runs shown)."""
  runs: list[list[int]] = []
  for i in ix:
    if runs and i == runs[-1][1] + 1: runs[-1][1] = i
    else: runs.append([i, i])
  s = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:8])
  return s + (f", ... ({len(ix)} in all)" if len(runs) > 8 else "")

def show(a) -> int:
  from mockgpu.emu.capture import Capture
  cap = Capture(a.dir)
  m = cap.manifest
  print(f"{a.dir}: format {m['format']} version {m['version']}, created {m['created']}\ncommand: {shlex.join(m['command'])} (exit {m['exit_code']}, "
        f"{m['seconds']:.1f} s)\n{m['launches']} launches on {', '.join(m['archs']) or '-'}; tinygrad {m['tinygrad']}, mockgpu {m['mockgpu']}; "
        f"{m['blobs']} blobs, {m['blob_bytes']} bytes")
  for l in cap.launches:
    d = l.dispatch
    bufs = " ".join(f"{r.label}:{r.size}" for r in l.regions if r.role == "buffer")
    print(f"{l.index:5d} {l.kernel:24s} {l.engine} {d.arch} grid={d.grid} block={d.block} code={l.code.before[:12]} {bufs}"
          f"{' FAULT ' + l.fault if l.fault else ''}")
  return 0

def parser() -> argparse.ArgumentParser:
  """Returns: the argument parser of `mockgpu replay`."""
  from mockgpu.emu.replay import DTYPES
  p = argparse.ArgumentParser(prog="mockgpu replay", description="capture tinygrad's kernel launches on the mock AMD GPUs and replay them "
                              "on the emulator (docs/replay.md)")
  sub = p.add_subparsers(dest="cmd", required=True, metavar="{capture,run,diff,show}")
  c = sub.add_parser("capture", help="run COMMAND with every kernel launch recorded into --out",
                     usage="mockgpu replay capture --out DIR -- COMMAND [ARGS...]")
  c.add_argument("--out", type=pathlib.Path, required=True, metavar="DIR", help="new (or empty) directory for the capture")
  c.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --, e.g. -- python script.py (DEV must name a mock AMD GPU)")
  def tolerance(q):
    q.add_argument("--dtype", default="float32", choices=tuple(DTYPES), help="element type for reports and tolerances (default float32)")
  r = sub.add_parser("run", help="replay every launch on the emulator and compare each buffer with the capture")
  r.add_argument("dir", metavar="DIR", help="a capture directory")
  r.add_argument("--backend", default="c", choices=("c", "python"), help="emulator backend: generated C (default) or the Python reference")
  tolerance(r)
  r.add_argument("--rtol", type=nonnegative_float, default=0.0, help="relative tolerance for --dtype floats (default 0: bit for bit)")
  r.add_argument("--atol", type=nonnegative_float, default=0.0, help="absolute tolerance for --dtype floats (default 0: bit for bit)")
  r.add_argument("--ulp", type=nonnegative_int, help="allowed distance in units in the last place of --dtype (instead of --rtol/--atol)")
  r.add_argument("--launch", type=nonnegative_int, action="append", metavar="N", help="replay only launch N (repeatable; `show` lists them)")
  r.add_argument("--relocate", action="store_true", help="place every region at a new address (patching the recorded pointers)")
  r.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first mismatching launch")
  r.add_argument("-v", "--verbose", action="store_true", help="one line per launch")
  d = sub.add_parser("diff", help="compare two captures: kernels whose code, dispatch, inputs or results changed")
  d.add_argument("a", metavar="DIR_A", help="the capture compared against (e.g. the old tinygrad)")
  d.add_argument("b", metavar="DIR_B", help="the capture compared (e.g. the new tinygrad)")
  tolerance(d)
  s = sub.add_parser("show", help="print a capture's manifest and one line per launch")
  s.add_argument("dir", metavar="DIR", help="a capture directory")
  return p

def main(argv:list[str] | None = None) -> int:
  """Entry point. Returns the exit code (see the module doc)."""
  p = parser()
  a = p.parse_args(argv)
  from mockgpu.errors import MockGPUError
  try:
    if a.cmd == "capture":
      cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
      if not cmd: p.error("capture: give the command after --, e.g. mockgpu replay capture --out DIR -- python script.py")
      return capture(a.out, cmd)
    if a.cmd == "run":
      if a.ulp is not None and (a.rtol or a.atol): p.error("run: give --ulp or --rtol/--atol, not both")
      return run(a)
    return diff(a) if a.cmd == "diff" else show(a)
  except MockGPUError as e:
    _say(f"{type(e).__name__}: {e}")
    return 2
