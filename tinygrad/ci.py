"""`mockgpu ci`: run tinygrad's mock-GPU CI jobs (`ci_jobs.JOBS`) on a tinygrad test tree against mockgpu, and report per test.

Every step runs in a fresh process (`sys.executable`) with cwd and PYTHONPATH set to the test tree, as tinygrad's CI does.
pytest steps report through `--junitxml` (parsed per test); this module is also loaded into them as a pytest plugin
(`-p mockgpu.tinygrad.ci`) that logs each test as it finishes, so a step that crashes or times out before pytest writes its
junit file still reports the tests it ran and names the one that was running. A script step is one test: its exit code.
See docs/ci.md.
"""
from __future__ import annotations
import argparse, concurrent.futures, datetime, fnmatch, glob, importlib.metadata, importlib.util, json, os, re, shutil, signal, subprocess, sys
import tempfile, threading, time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from mockgpu.mock.profiles import mock_arch
from mockgpu.tinygrad.checks import find_libllvm
from mockgpu.tinygrad.ci_jobs import JOBS, SUITES, Job, Step, from_json
from mockgpu.tinygrad.errors import IntegrationError
from mockgpu import usage
from mockgpu.argtypes import positive_int

__all__ = ["main", "CIError", "Row", "matrix", "same_dev", "select", "child_env", "run_step", "parse_junit", "regressions", "find_llvm",
           "cpu_compiler"]

SCHEMA_VERSION = 1
EVENTS_ENV = "MOCKGPU_CI_EVENTS"   # where the in-pytest plugin appends one JSON line per test result
BAD = ("failed", "error")
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}

class CIError(IntegrationError):
  """`mockgpu ci` cannot run as asked (no test tree, no libLLVM for gfx950, a malformed job table). The message says what to fix."""

@dataclass(frozen=True)
class Row:
  """One (job, DEV) variant of the matrix, named like `testamd[MOCKKFD+AMD::gfx1201]`."""
  job: Job
  dev: str
  @property
  def name(self) -> str: return f"{self.job.name}[{self.dev}]"
  @property
  def env(self) -> dict[str, str]: return self.job.env | self.job.devs[self.dev] | {"DEV": self.dev}

def matrix(jobs:tuple[Job, ...]=JOBS) -> list[Row]:
  """All (job, DEV) rows of a job table, in table order."""
  return [Row(j, d) for j in jobs for d in j.devs]

def dev_arch(dev:str) -> str:
  """The arch a DEV string names, else the one its AMD mock emulates (`profiles.mock_arch`: MOCKPCI+AMD is gfx950), else ""."""
  f = (dev.split(":") + ["", ""])[:3]
  return mock_arch(f[0].split("+")[0], f[2]) if f[0].upper().endswith("+AMD") else f[2]

def same_dev(a:str, b:str) -> bool:
  """True if two DEV strings name the same device once tinygrad's defaults are filled in (`MOCKKFD+AMD` is `MOCKKFD+AMD::gfx1100`)."""
  def canon(d:str) -> list[str]:
    f = (d.split(":") + ["", ""])[:max(3, d.count(":") + 1)]
    if f[0].upper().endswith("+AMD"): f[2] = mock_arch(f[0].split("+")[0], f[2])
    return f
  return canon(a) == canon(b)

def select(rows:list[Row], jobs:list[str]|None=None, devs:list[str]|None=None) -> list[Row]:
  """Rows whose job name matches one of `jobs` and whose DEV matches one of `devs` (None or [] keeps all).

  Jobs match as fnmatch globs; a DEV matches as a glob (`*gfx950`) or as the same device (`same_dev`).
  """
  def hit(s:str, pats:list[str]|None, eq=lambda a, b: False) -> bool: return not pats or any(fnmatch.fnmatchcase(s, p) or eq(s, p) for p in pats)
  return [r for r in rows if hit(r.job.name, jobs) and hit(r.dev, devs, same_dev)]

def child_env(caller:dict[str, str], row:Row, step:Step, tests:Path, jobs:tuple[Job, ...]=JOBS, extra:dict[str, str]|None=None) -> dict[str, str]:
  """The environment of one step.

  Args:
    caller: the caller's environment. Its DEV and every variable some job or step of `jobs` sets are dropped, so they never
      leak into a job that does not set them; everything else (LLVM_PATH, PATH, ...) is kept.
    row, step: the job variant and step; their env goes on top (job, then DEV variant, then step; a step may override DEV).
    tests: the test tree; it is put first on PYTHONPATH.
    extra: row-level additions (e.g. LLVM_PATH found for gfx950), applied below the job's own env.
  Returns:
    the full environment for the step's process.
  """
  owned = {"DEV"} | {k for j in jobs for k in [*j.env, *(k for e in j.devs.values() for k in e), *(k for s in j.steps for k in s.env)]}
  env = {k: v for k, v in caller.items() if k not in owned and k not in (EVENTS_ENV, usage.ENV)} | (extra or {}) | row.env | step.env
  env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tests), caller.get("PYTHONPATH", "")]))
  return env | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}   # leave the test tree untouched

# *** per-test results ***

def _one_line(s:str|None, n:int=200) -> str:
  lines = [l.strip() for l in (s or "").splitlines() if l.strip()]
  return (lines[0] if lines else "")[:n]

def _nodeid(cls:str, name:str, file:str|None) -> str:
  if file and file.endswith(".py"):
    if name == (mod := file[:-3].replace("/", ".")): return file   # a collection error of the whole module
    rest = cls[len(mod) + 1:] if cls.startswith(mod + ".") else "" if cls == mod else cls
    return "::".join(filter(None, [file, rest.replace(".", "::"), name]))
  return f"{cls}::{name}" if cls else name

def _merge(out:dict[str, dict], nodeid:str, res:dict) -> None:
  if nodeid not in out or _RANK[res["outcome"]] > _RANK[out[nodeid]["outcome"]]: out[nodeid] = {**out.get(nodeid, {}), **res}

def parse_junit(path:str|Path) -> dict[str, dict]:
  """Per-test outcomes of a pytest junit XML file (best with `-o junit_family=xunit1`, whose `file` attribute gives exact nodeids).

  Args:
    path: the junit file pytest wrote.
  Returns:
    nodeid -> {"outcome": passed|failed|error|skipped, "reason": one line (skip reason, failure message), "time": seconds}.
    A test reported twice (a teardown error after a pass) keeps its worst outcome; xfail counts as skipped ("xfail: ...").
  Raises:
    ET.ParseError, OSError: the file is missing or not XML (pytest died before writing it).
  """
  out: dict[str, dict] = {}
  for tc in ET.parse(path).getroot().iter("testcase"):
    res = {"outcome": "passed", "reason": "", "time": float(tc.get("time") or 0)}
    for ch in tc:
      if ch.tag not in ("failure", "error", "skipped"): continue
      o, why = {"failure": "failed"}.get(ch.tag, ch.tag), _one_line(ch.get("message")) or _one_line(ch.text)
      if why == "collection failure": why += ": " + _one_line("\n".join([l[1:] for l in (ch.text or "").splitlines() if l.startswith("E ")][-1:]))
      if ch.tag == "skipped" and ch.get("type") == "pytest.xfail": why = f"xfail: {why}"
      if _RANK[o] > _RANK[res["outcome"]]: res |= {"outcome": o, "reason": why}
    _merge(out, _nodeid(tc.get("classname", ""), tc.get("name", ""), tc.get("file")), res)
  return out

def _events(path:Path) -> tuple[dict[str, dict], list[str]]:
  """What the in-pytest plugin logged: the results, and the tests started but never finished (running when the step died)."""
  out, started = {}, {}
  for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
    try: ev = json.loads(line)
    except json.JSONDecodeError: continue   # a line cut short by the kill
    if "start" in ev: started[ev["start"]] = True
    else:
      started.pop(ev["nodeid"], None)
      _merge(out, ev["nodeid"], {k: ev[k] for k in ("outcome", "reason", "time")})
  return out, [n for n in started if n not in out]

# *** pytest plugin (loaded into pytest steps with -p mockgpu.tinygrad.ci; writes only when EVENTS_ENV is set, in the controller) ***

def _event(ev:dict) -> None:
  if (p := os.environ.get(EVENTS_ENV)) and not os.environ.get("PYTEST_XDIST_WORKER"):
    with open(p, "a") as f: f.write(json.dumps(ev) + "\n")

def pytest_runtest_logstart(nodeid, location): _event({"start": nodeid})

def _crash(report) -> str:
  return _one_line(getattr(getattr(report.longrepr, "reprcrash", None), "message", None)) or \
         _one_line("\n".join((report.longreprtext or "").strip().splitlines()[-1:]))

def pytest_runtest_logreport(report):
  if report.passed and report.when != "call": return   # setup/teardown that pass say nothing
  if report.failed: o, why = ("failed" if report.when == "call" else "error"), _crash(report)
  elif report.skipped:
    o, xf = "skipped", getattr(report, "wasxfail", None)
    why = f"xfail: {xf}" if xf is not None else _one_line(report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr))
  else: o, why = "passed", ""
  _event({"nodeid": report.nodeid, "outcome": o, "reason": why.removeprefix("Skipped: "), "time": round(report.duration, 3)})

def pytest_collectreport(report):
  if report.failed: _event({"nodeid": report.nodeid, "outcome": "error", "reason": "collection error: " + _crash(report), "time": 0})

# *** running ***

def _kill(p:subprocess.Popen) -> None:
  try: os.killpg(p.pid, signal.SIGKILL)
  except (ProcessLookupError, PermissionError): pass

_live: set[subprocess.Popen] = set()   # running steps' processes (main kills their groups when interrupted while steps run in threads)
_live_lock = threading.Lock()

def _tail(log:Path) -> str:
  """Why a step died, from its output: the first exception (the line that ends a Python traceback) and the last line; for a
  crash, faulthandler's frames of the thread that crashed too (innermost first), so a crash seen only in CI can be placed."""
  lines = [l.rstrip() for l in log.read_text(errors="replace").splitlines() if l.strip()] if log.exists() else []
  last, first, in_tb = (lines[-1].strip()[:200] if lines else "(no output)"), "", False
  for l in lines:
    if (at := l.find("Fatal Python error")) >= 0 or (in_tb and not l[0].isspace()):   # faulthandler's line may follow pytest's dots
      first = l[max(at, 0):].strip()[:200]
      break
    in_tb |= l.startswith("Traceback (most recent call last):")
  cur = next((i for i, l in enumerate(lines) if l.startswith("Current thread")), None)
  frames = [] if cur is None else [l.strip().removeprefix("File ") for l in lines[cur + 1:cur + 9] if l.lstrip().startswith("File ")]
  return (f"{first} | output ends: {last}" if first and first != last else last) + (f" | crashed in: {' < '.join(frames)}" if frames else "")

def _with_k(args:tuple[str, ...], k:str|None) -> list[str]:
  a = list(args)
  if not k: return a
  if "-k" in a[:-1]: a[a.index("-k") + 1] = f"({a[a.index('-k') + 1]}) and ({k})"
  else: a += ["-k", k]
  return a

def run_step(row:Row, step:Step, tests:Path, env:dict[str, str], logdir:Path, idx:int, timeout:float, k:str|None=None, n:int=0) -> dict:
  """Run one step to completion (or kill its process group after `timeout` seconds) and collect its per-test results.

  Args:
    row, step: what to run; env: its full environment (`child_env`); tests: the test tree (cwd).
    logdir: where the step's output (stdout+stderr) and its junit/event files go; idx: the step's number (file names).
    timeout: seconds before the whole process group is killed (reported as a failed test with reason "timeout").
    k: an extra pytest -k expression (and-ed with the step's own); n: pytest-xdist workers (0: serial). Both pytest steps only.
  Returns:
    the step's JSON record: step, kind, command, env, exit_code, wall_s, mock, timeout, skipped, k, log, tests.
  """
  rec = {"step": step.label, "kind": step.kind, "env": {k: env[k] for k in [*row.env, *step.env, "LLVM_PATH"] if k in env},
         "k": k if step.kind == "pytest" else None, "skipped": ""}
  if step.needs and not (tests / step.needs).exists():
    return rec | {"command": [], "exit_code": None, "wall_s": 0.0, "mock": None, "timeout": False, "log": None, "tests": {},
                  "skipped": f"needs {step.needs} (in a tinygrad checkout); the test tree {tests} has none"}
  stem = re.sub(r"[^\w.+-]+", "_", f"{row.name}-{idx}")
  log, junit, events, used = logdir / f"{stem}.log", logdir / f"{stem}.xml", logdir / f"{stem}.events", logdir / f"{stem}.usage"
  env = env | {usage.ENV: str(used)}   # each process that uses a mock appends its device/driver seconds (mockgpu.usage)
  if step.kind == "pytest":
    cmd = [sys.executable, "-m", "pytest", *_with_k(step.args, k), *(["-n", str(n)] if n else [])]
    run = cmd + ["-p", "mockgpu.tinygrad.ci", "-p", "no:cacheprovider", f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    env = env | {EVENTS_ENV: str(events)}
  else: cmd = run = [sys.executable, *step.args]
  t0, timed_out = time.monotonic(), False
  with open(log, "wb") as f:
    p = subprocess.Popen(run, cwd=tests, env=env, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    with _live_lock: _live.add(p)
    try: rc = p.wait(timeout)
    except subprocess.TimeoutExpired:
      timed_out = True
      _kill(p)   # the whole group: pytest-xdist workers and anything else the step started
      rc = p.wait()
    except BaseException: _kill(p); p.wait(); raise
    finally:
      with _live_lock: _live.discard(p)
  wall = round(time.monotonic() - t0, 2)
  died = f"timeout after {timeout:g} s (process group killed)" if timed_out else \
         f"killed by {signal.Signals(-rc).name}" if rc < 0 and -rc in signal.valid_signals() else f"exit code {rc}"
  if step.kind == "script": tests_ = {step.label: {"outcome": "passed" if rc == 0 and not timed_out else "failed", "time": wall,
                                                   "reason": "" if rc == 0 and not timed_out else f"{died}: {_tail(log)}"}}
  else:
    try: tests_, junit_ok = parse_junit(junit), True
    except (ET.ParseError, OSError): tests_, junit_ok = {}, False
    got, running = _events(events)
    if not junit_ok: tests_ = got
    if timed_out or not junit_ok or (rc not in (0, 5) and not any(t["outcome"] in BAD for t in tests_.values())):
      why = died + (f" while running {', '.join(running)}" if running else "") + ("" if junit_ok else " before pytest wrote its junit report")
      tests_[step.label] = {"outcome": "failed", "reason": f"{why}: {_tail(log)}", "time": wall}
  return rec | {"command": cmd, "exit_code": rc, "wall_s": wall, "mock": usage.read(used), "timeout": timed_out, "log": str(log), "tests": tests_}

def cpu_compiler(environ:dict[str, str]) -> dict[str, str]:
  """tinygrad's CPU backend, which many tests use as the reference device, runs `$CC` or `clang`. Debian installs clang as
  `clang-NN`: when neither CC nor `clang` exists, returns {"CC": the newest clang-NN on PATH} ({} if none or not needed)."""
  if environ.get("CC") or shutil.which("clang", path=environ.get("PATH")): return {}
  found = {m.group(1): p for d in environ.get("PATH", "").split(os.pathsep) for p in glob.glob(os.path.join(d, "clang-[0-9]*"))
           if (m:=re.fullmatch(r"clang-(\d+)", os.path.basename(p))) and os.access(p, os.X_OK)}
  return {"CC": found[max(found, key=int)]} if found else {}

def find_llvm(min_major:int=20, dirs:list[str]|None=None) -> str:
  """`checks.find_libllvm` for LLVM_PATH of gfx950 rows (tinygrad's gfx950 backend needs LLVM >= 20).

  Raises:
    CIError: none found, naming the fix.
  """
  if (p := find_libllvm(min_major, dirs)) is None:
    raise CIError(f"gfx950 needs libLLVM >= {min_major} and none is installed where tinygrad looks: install libllvm20 or newer, "
                  "or set LLVM_PATH to such a libLLVM.so")
  return p

# *** reporting ***

def regressions(baseline:dict, current:dict) -> list[tuple[str, str, str]]:
  """Tests that passed in `baseline` and fail, error or are missing in `current` (both `--json` outputs).

  A test counts as missing only if its step ran now (not filtered out, not skipped) with the same `-k` selection.
  Returns:
    (row name, nodeid, what now) triples.
  """
  base = {(r["job"], r["dev"], s["step"]): s for r in baseline.get("rows", []) for s in r["steps"]}
  out = []
  for r in current["rows"]:
    for s in r["steps"]:
      if s["skipped"] or (b := base.get((r["job"], r["dev"], s["step"]))) is None: continue
      for nid, t in b["tests"].items():
        if t["outcome"] != "passed": continue
        if (now := s["tests"].get(nid)) is None:
          if s.get("k") == b.get("k"): out.append((r["name"], nid, "missing now (its step ran)"))
        elif now["outcome"] in BAD: out.append((r["name"], nid, f"{now['outcome']}: {now['reason']}"))
  return out

def _counts(tests:dict[str, dict]) -> tuple[int, int, int]:
  os_ = [t["outcome"] for t in tests.values()]
  return os_.count("passed"), sum(o in BAD for o in os_), os_.count("skipped")

def _mock_s(steps:list[dict]) -> float|None:
  """Seconds mockgpu itself spent in these steps (device + driver, summed over their processes; None if no process reported)."""
  got = [sum(s["mock"].values()) for s in steps if s.get("mock")]
  return round(sum(got), 2) if got else None

def _table(result:dict, show:int) -> str:
  rows = [(r["job"], r["dev"], *_counts({f"{i}:{n}": t for i, s in enumerate(r["steps"]) for n, t in s["tests"].items()}), r["wall_s"],
           _mock_s(r["steps"])) for r in result["rows"]]
  ms = [x[6] for x in rows if x[6] is not None]
  tot = ("total", "", *(sum(x[i] for x in rows) for i in (2, 3, 4)), round(sum(x[5] for x in rows), 2), round(sum(ms), 2) if ms else None)
  w0, w1 = max(len(x[0]) for x in rows + [tot]), max([len(x[1]) for x in rows] + [3])
  fmt = lambda x: f"{x[0]:{w0}s}  {x[1]:{w1}s}  {x[2]:>7}  {x[3]:>7}  {x[4]:>7}  {x[5]:>9.1f}  {'-' if x[6] is None else f'{x[6]:.1f}':>9s}"
  lines = [f"{'job':{w0}s}  {'DEV':{w1}s}  {'passed':>7}  {'failed':>7}  {'skipped':>7}  {'wall s':>9s}  {'mock s':>9s}", *map(fmt, rows), fmt(tot)]
  notes = [f"  {r['name']}: {s['step']}: skipped: {s['skipped']}" for r in result["rows"] for s in r["steps"] if s["skipped"]]
  fails = [f"  {r['name']} {n}: {t['outcome']}: {t['reason']}" for r in result["rows"] for s in r["steps"] for n, t in s["tests"].items()
           if t["outcome"] in BAD]
  if notes: lines += ["", "steps not run:", *notes]
  if fails: lines += ["", f"failing tests ({len(fails)}{f', first {show}' if len(fails) > show else ''}):", *fails[:show]]
  return "\n".join(lines)

def _list(rows:list[Row], step_filter:str|None, tests:Path|None) -> str:
  out = []
  for r in rows:
    out.append(f"{r.name}  env: {' '.join(f'{k}={v}' for k, v in r.env.items())}")
    for s in r.job.steps:
      if step_filter and step_filter not in s.label: continue
      missing = tests is not None and not (tests / s.needs).exists()
      note = f"  [needs {s.needs}{': missing, will be skipped' if missing else ''}]" if s.needs else ""
      out.append(f"  {s.label}{note}")
  return "\n".join(out)

def _version(dist:str) -> str:
  try: return importlib.metadata.version(dist)
  except importlib.metadata.PackageNotFoundError: return "not installed"

def main(argv:list[str]|None=None) -> int:
  """`mockgpu ci`: run the selected rows, print the table, write `--json`, compare with `--baseline`.

  Returns:
    0 if all good; 1 if a test failed (or, with --baseline, regressed); 2 on a usage error (no test tree, nothing selected).
  """
  ap = argparse.ArgumentParser(prog="mockgpu ci", description=__doc__.splitlines()[0].strip("`").split(": ", 1)[1])
  ap.add_argument("--tests", type=Path, default=os.environ.get("MOCKGPU_TINYGRAD_TESTS"), metavar="PATH",
                  help="tinygrad test tree (a folder with test/, extra/, conftest.py, pytest.ini, or a tinygrad checkout); "
                       "default $MOCKGPU_TINYGRAD_TESTS")
  ap.add_argument("--job", action="append", metavar="NAME", help="run only jobs matching NAME (glob, e.g. 'testamd*'); repeatable")
  ap.add_argument("--dev", action="append", metavar="DEV", help="run only variants whose DEV matches (glob, e.g. '*gfx950'); repeatable")
  ap.add_argument("--step", metavar="TEXT", help="run only steps whose command contains TEXT (e.g. test_tiny)")
  ap.add_argument("-k", metavar="EXPR", help="pytest -k expression for pytest steps (and-ed with a step's own -k); scripts are unaffected")
  ap.add_argument("-n", type=int, default=0, metavar="N", help="pytest-xdist workers for pytest steps (default 0: serial, see docs/ci.md)")
  ap.add_argument("-j", "--jobs", type=positive_int, default=1, metavar="J",
                  help="rows run at once, each its steps in order (default 1). With many short rows, -j 2 on 2 cores beats -n 2: a "
                       "pytest-xdist worker repeats tinygrad's start-up per process (docs/ci.md)")
  ap.add_argument("--timeout", type=float, default=3600, metavar="S", help="seconds per step before its process group is killed (default 3600)")
  ap.add_argument("--json", type=Path, metavar="FILE", help="write the machine-readable result here (schema in docs/ci.md)")
  ap.add_argument("--baseline", type=Path, metavar="FILE", help="a previous --json result: exit 1 only on regressions against it")
  ap.add_argument("--suite", choices=sorted(SUITES), default="tinygrad",
                  help="built-in job table: 'tinygrad' (tinygrad's mock-GPU CI jobs, default) or 'fast' (test_tiny on every mock DEV, "
                       "test_hcq and test_jit: a few minutes) or 'bench' (test_ops and test_jit, the steps the "
                       "in-repo mock's wall time is known for; run with -n 2)")
  ap.add_argument("--table", type=Path, metavar="FILE", help="a JSON job table replacing the built-in one (format in docs/ci.md)")
  ap.add_argument("--logs", type=Path, metavar="DIR", help="keep each step's output here (default: a temporary folder, removed)")
  ap.add_argument("--show", type=int, default=30, metavar="N", help="print at most N failing tests (default 30)")
  ap.add_argument("--list", action="store_true", help="print the selected rows and their steps, run nothing")
  a = ap.parse_args(argv)
  try:
    jobs = from_json(json.loads(a.table.read_text())) if a.table else SUITES[a.suite]
    rows = select(matrix(jobs), a.job, a.dev)
    if not rows: raise CIError(f"no job variant matches --job {a.job} --dev {a.dev}; see `mockgpu ci --list`")
    tests = a.tests.resolve() if a.tests else None
    if tests is not None and not (tests / "test").is_dir():
      raise CIError(f"--tests {a.tests}: no test/ folder there; point it at tinygrad's test tree or a tinygrad checkout")
    if a.list: listing = _list(rows, a.step, tests)
    else:
      if tests is None: raise CIError("no test tree: pass --tests PATH (tinygrad's test tree or checkout) or set MOCKGPU_TINYGRAD_TESTS")
      if a.n and importlib.util.find_spec("xdist") is None: raise CIError("-n needs pytest-xdist: pip install pytest-xdist")
      baseline = json.loads(a.baseline.read_text()) if a.baseline else None
      if baseline is not None and not (isinstance(baseline, dict) and isinstance(baseline.get("rows"), list)):
        raise CIError(f"--baseline {a.baseline}: not a `mockgpu ci --json` result (no rows list)")
      todo = [(r, i, s) for r in rows for i, s in enumerate(r.job.steps) if not a.step or a.step in s.label]
      if not todo: raise CIError(f"no step of the selected jobs contains {a.step!r}; see `mockgpu ci --list`")
      gfx950 = {r.name for r, _, _ in todo if dev_arch(r.dev) == "gfx950" and "LLVM_PATH" not in os.environ}   # tinygrad needs LLVM >= 20
      llvm = {name: {"LLVM_PATH": path} for path in ([find_llvm()] if gfx950 else []) for name in gfx950}
      cc = cpu_compiler(dict(os.environ))
      extra = {r.name: cc | llvm.get(r.name, {}) for r in rows}
      if not cc and not os.environ.get("CC") and not shutil.which("clang"):
        print("mockgpu ci: warning: no clang (tinygrad's CPU backend, used by many tests): install clang-19 or set CC", file=sys.stderr)
      if importlib.util.find_spec("torch") is None and any(s.kind == "pytest" for _, _, s in todo):
        print("mockgpu ci: warning: torch is not installed; test files that import it (test_ops, test_dtype, ...) fail to collect, "
              "as they would in tinygrad's CI without it: pip install torch", file=sys.stderr)
  except (CIError, ValueError, OSError) as e:
    print(f"mockgpu ci: {e}", file=sys.stderr)
    return 2
  if a.list:
    print(listing)
    return 0
  result = {"version": SCHEMA_VERSION, "tinygrad": _version("tinygrad"), "mockgpu": _version("mockgpu"),
            "start": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "tests": str(tests), "rows": []}
  by_row: dict[str, dict] = {}
  with tempfile.TemporaryDirectory(prefix="mockgpu-ci-") as tmp:
    logdir = a.logs or Path(tmp)
    logdir.mkdir(parents=True, exist_ok=True)
    groups: dict[str, list[tuple[Row, int, Step]]] = {}
    for r, i, s in todo: groups.setdefault(r.name, []).append((r, i, s))
    for name, ((r, _, _), *_) in groups.items():   # the table's order, whatever order the rows finish in
      result["rows"].append(by_row.setdefault(name, {"job": r.job.name, "dev": r.dev, "name": name, "wall_s": 0.0, "steps": []}))
    said, said_lock, stopping = iter(range(1, len(todo) + 1)), threading.Lock(), threading.Event()
    def run_row(steps:list[tuple[Row, int, Step]]):
      for r, i, s in steps:
        if stopping.is_set(): return
        with said_lock: print(f"ci [{next(said)}/{len(todo)}] {r.name} step {i + 1}/{len(r.job.steps)}: {s.label}", file=sys.stderr, flush=True)
        rec = run_step(r, s, tests, child_env(dict(os.environ), r, s, tests, jobs, extra.get(r.name)), logdir, i + 1, a.timeout, a.k, a.n)
        if a.logs is None: rec["log"] = None
        row = by_row[r.name]
        row["steps"].append(rec)
        row["wall_s"] = round(row["wall_s"] + rec["wall_s"], 2)
        p, f, sk = _counts(rec["tests"])
        done = f"skipped: {rec['skipped']}" if rec["skipped"] else f"{p} passed, {f} failed, {sk} skipped in {rec['wall_s']} s"
        with said_lock: print(f"ci   -> {r.name if a.jobs > 1 else ''}{': ' if a.jobs > 1 else ''}{done}{' (TIMEOUT)' if rec['timeout'] else ''}",
                              file=sys.stderr, flush=True)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
      futs = [pool.submit(run_row, g) for g in groups.values()]
      try:
        for fut in futs: fut.result()
      except BaseException:   # Ctrl-C (or a bug): no further step starts, the running steps' process groups are killed
        stopping.set()
        for fut in futs: fut.cancel()
        with _live_lock:
          for p in _live: _kill(p)
        raise
  print(_table(result, a.show))
  if a.logs: print(f"\nstep logs: {a.logs}")
  p, f, sk = _counts({f"{r['name']}:{i}:{n}": t for r in result["rows"] for i, s in enumerate(r["steps"]) for n, t in s["tests"].items()})
  print(f"ci: {p} passed, {f} failed, {sk} skipped")
  if a.json: a.json.write_text(json.dumps(result, indent=1) + "\n")
  if baseline is not None:
    reg = regressions(baseline, result)
    print(f"\n{len(reg)} regression(s) against {a.baseline}" + (":" if reg else ""))
    for name, nid, what in reg[:a.show]: print(f"  {name} {nid}: {what}")
    return 1 if reg else 0
  return 1 if any(t["outcome"] in BAD for r in result["rows"] for s in r["steps"] for t in s["tests"].values()) else 0

if __name__ == "__main__": sys.exit(main())
