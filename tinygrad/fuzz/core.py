"""The fuzz framework shared by every kind (symbolic, idiv, oob, render).

A fuzzer is a `Fuzzer` subclass with a `name` and five methods:
  generate(rng) -> case            a JSON-serialisable case, drawn only from `rng` (so case i of seed s is always the same)
  check(case) -> Failure | None    run the system under test on the case and judge it against an oracle
  shrink(case) -> Iterator[case]   smaller candidates, most aggressive first (the minimiser keeps the first that still fails
                                   with the same `Failure.cls`, then asks again)
  repro(case) -> str               a standalone Python script reproducing the failure with only tinygrad installed
  options() -> dict                (optional) the constructor keywords, so `--replay` rebuilds the same fuzzer

The framework runs campaigns (`run_campaign`): a time and/or case budget, a seed, `jobs` worker processes and a shard
`i/n` of the case space (shard i owns case indices i, i+n, i+2n, ...; inside a shard, job j of J owns every J-th of
those), minimises each failure (`minimise`), writes one directory per failure (`save_failure`) and can rerun them
(`replay`). Case i of seed s is generated from `case_rng(s, i)`, so campaigns split over jobs or machines reproduce exactly.
"""
from __future__ import annotations
import dataclasses, json, multiprocessing, os, queue, random, sys, time, traceback
from pathlib import Path
from typing import Any, Callable, Iterator
from mockgpu.tinygrad.fuzz.errors import BadFailureDir, FuzzerCrashed

__all__ = ["Case", "Failure", "Fuzzer", "CampaignConfig", "Report", "FailureRecord", "ReplayResult", "case_rng", "safe_check",
           "minimise", "run_campaign", "save_failure", "replay", "failure_dirs"]

Case = Any  # any JSON-serialisable value

@dataclasses.dataclass(frozen=True)
class Failure:
  """What `Fuzzer.check` returns for a failing case.

  Args:
    cls: the failure class (e.g. `mismatch`, `bounds`, `exception:AssertionError`); minimisation keeps a smaller case only if
      it fails with the same class, so the class must not contain case-specific values.
    message: a human-readable explanation naming the values involved (inputs, expected, got).
  """
  cls: str
  message: str

class Fuzzer:
  """Base class of all fuzzers; subclasses override `generate`, `check`, `repro` and usually `shrink`."""
  name: str = "base"
  def generate(self, rng:random.Random) -> Case:
    """Draw one case. Args: rng: the only source of randomness. Returns: a JSON-serialisable case."""
    raise NotImplementedError
  def check(self, case:Case) -> Failure|None:
    """Run and judge one case. Returns: None if it passes, else a `Failure`. Exceptions escaping it become `exception:<Type>`."""
    raise NotImplementedError
  def shrink(self, case:Case) -> Iterator[Case]:
    """Yield smaller variants of `case`, most aggressive first. The default yields nothing (no minimisation)."""
    return iter(())
  def repro(self, case:Case) -> str:
    """Returns: the source of a standalone script (tinygrad only) that exits non-zero while the failure reproduces."""
    raise NotImplementedError
  def describe(self, case:Case) -> str:
    """Returns: a one-line summary of the case for reports."""
    s = json.dumps(case, separators=(",", ":"))
    return s if len(s) <= 120 else s[:117] + "..."
  def options(self) -> dict:
    """Returns: JSON-serialisable constructor keywords; `replay` rebuilds the fuzzer with them."""
    return {}
  def stats(self) -> dict[str, int]:
    """Returns: counters the fuzzer keeps (e.g. which oracle judged how many cases); summed over jobs in the report."""
    return {}

def case_rng(seed:int, index:int) -> random.Random:
  """Returns: the deterministic generator of case `index` of campaign `seed` (independent of jobs, shards and machines)."""
  return random.Random(f"mockgpu-fuzz:{seed}:{index}")

def safe_check(fuzzer:Fuzzer, case:Case) -> Failure|None:
  """Run `fuzzer.check(case)`, turning an escaping exception into `Failure('exception:<Type>', <last traceback lines>)`."""
  try: return fuzzer.check(case)
  except Exception as e:  # the system under test may raise anything: that is a finding, not a framework error
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return Failure(f"exception:{type(e).__name__}", "".join(tb[-3:]).strip())

def minimise(fuzzer:Fuzzer, case:Case, failure:Failure, max_checks:int=3000, time_limit:float=60.0) -> tuple[Case, Failure, int]:
  """Greedy delta debugging: repeatedly replace the case by the first `shrink` candidate that fails with the same class.

  Args:
    fuzzer: supplies `shrink` and `check`.
    case, failure: a failing case and its failure.
    max_checks, time_limit: budget (candidate checks, seconds); the best case found so far is returned when it runs out.
  Returns:
    (minimised case, its failure, number of candidates checked).
  """
  seen, checks, deadline = {json.dumps(case, sort_keys=True)}, 0, time.monotonic() + time_limit
  improved = True
  while improved and checks < max_checks and time.monotonic() < deadline:
    improved = False
    for cand in fuzzer.shrink(case):
      if (key:=json.dumps(cand, sort_keys=True)) in seen: continue
      seen.add(key)
      checks += 1
      if (f:=safe_check(fuzzer, cand)) is not None and f.cls == failure.cls:
        case, failure, improved = cand, f, True
        break
      if checks >= max_checks or time.monotonic() >= deadline: break
  return case, failure, checks

@dataclasses.dataclass
class CampaignConfig:
  """Parameters of a campaign.

  Args:
    seed: campaign seed. time: wall-clock budget in seconds for generating and checking (None: unlimited).
    cases: maximum number of cases of this shard (None: unlimited; at least one of time/cases must be set).
    jobs: worker processes. shard: (i, n), this campaign runs shard i of n. out: failure directory (None: do not write).
    max_failures: stop after this many failures (over all jobs). shrink_time: seconds of minimisation per failure.
    progress: a stream for the live progress line (None: quiet).
    ignore: failure-class prefixes to skip (known findings, e.g. `exception:simplify:ZeroDivisionError`); they are counted
      in `Report.ignored`, not minimised or saved.
  """
  seed: int = 0
  time: float|None = 60.0
  cases: int|None = None
  jobs: int = 1
  shard: tuple[int, int] = (0, 1)
  out: Path|None = Path("fuzz-failures")
  max_failures: int = 5
  shrink_time: float = 60.0
  progress: Any = None
  ignore: tuple[str, ...] = ()

@dataclasses.dataclass
class FailureRecord:
  """One failure of a campaign: where it came from, the original and minimised case, and where it was saved."""
  kind: str
  seed: int
  index: int
  case: Case
  failure: Failure
  minimised: Case
  minimised_failure: Failure
  shrink_checks: int
  path: str|None = None

@dataclasses.dataclass
class Report:
  """The outcome of a campaign. `rate` is cases per second of fuzzing (minimisation excluded)."""
  kind: str
  seed: int
  shard: tuple[int, int]
  jobs: int
  cases: int
  seconds: float
  failures: list[FailureRecord]
  ignored: int = 0
  stats: dict[str, int] = dataclasses.field(default_factory=dict)
  @property
  def rate(self) -> float: return self.cases / self.seconds if self.seconds > 0 else 0.0
  def summary(self) -> str:
    """Returns: the final multi-line report printed by the CLI."""
    lines = [f"fuzz {self.kind}: seed={self.seed} shard={self.shard[0]}/{self.shard[1]} jobs={self.jobs} cases={self.cases} "
             f"time={self.seconds:.1f}s rate={self.rate:.1f} cases/s failures={len(self.failures)}" +
             (f" ignored={self.ignored}" if self.ignored else "")]
    if self.stats: lines.append("  stats: " + " ".join(f"{k}={v}" for k, v in sorted(self.stats.items())))
    for r in self.failures:
      lines.append(f"  FAIL [{r.minimised_failure.cls}] index={r.index} {r.minimised_failure.message.splitlines()[0][:160]}")
      if r.path: lines.append(f"       saved in {r.path} (repro: python {os.path.join(r.path, 'repro.py')})")
    return "\n".join(lines)

def _fuzzer_version() -> dict:
  import tinygrad, mockgpu
  return {"tinygrad": getattr(tinygrad, "__version__", "?"), "mockgpu": getattr(mockgpu, "__version__", "?"), "python": sys.version.split()[0]}

def save_failure(fuzzer:Fuzzer, rec:FailureRecord, out:Path) -> str:
  """Write a failure directory `out/<kind>-s<seed>-i<index>/` holding failure.json (seed, index, classes, messages, versions,
  fuzzer options), case.json (original), minimised.json and repro.py (built from the minimised case).

  Returns: the directory path.
  """
  d = Path(out) / f"{rec.kind}-s{rec.seed}-i{rec.index}"
  d.mkdir(parents=True, exist_ok=True)
  meta = {"kind": rec.kind, "seed": rec.seed, "index": rec.index, "class": rec.failure.cls, "message": rec.failure.message,
          "minimised_class": rec.minimised_failure.cls, "minimised_message": rec.minimised_failure.message,
          "shrink_checks": rec.shrink_checks, "options": fuzzer.options(), "versions": _fuzzer_version()}
  (d / "failure.json").write_text(json.dumps(meta, indent=1) + "\n")
  (d / "case.json").write_text(json.dumps(rec.case, indent=1) + "\n")
  (d / "minimised.json").write_text(json.dumps(rec.minimised, indent=1) + "\n")
  try: src = fuzzer.repro(rec.minimised)
  except Exception as e: src = f"raise SystemExit('no repro: {type(e).__name__}: {e}')\n"  # a missing repro must not lose the failure
  (d / "repro.py").write_text(src)
  return str(d)

def _worker(fuzzer:Fuzzer, cfg:CampaignConfig, job:int, report:Callable[[tuple], None], stop:Callable[[], bool]) -> None:
  # shard case k has global index shard_i + shard_n*k; job j runs k = j, j+jobs, ...
  si, sn = cfg.shard
  deadline = None if cfg.time is None else time.monotonic() + cfg.time
  k, done, ignored, t_fuzz, last = job, 0, 0, 0.0, time.monotonic()
  while (cfg.cases is None or k < cfg.cases) and (deadline is None or time.monotonic() < deadline) and not stop():
    index, t0 = si + sn*k, time.monotonic()
    try: case = fuzzer.generate(case_rng(cfg.seed, index))
    except Exception as e: raise FuzzerCrashed(fuzzer.name, index, f"generate raised {type(e).__name__}: {e}") from e
    f = safe_check(fuzzer, case)
    t_fuzz += time.monotonic() - t0
    done, k = done + 1, k + cfg.jobs
    if f is not None and f.cls.startswith(cfg.ignore): f, ignored = None, ignored + 1
    if f is not None:
      mcase, mf, n = minimise(fuzzer, case, f, time_limit=cfg.shrink_time)
      rec = FailureRecord(fuzzer.name, cfg.seed, index, case, f, mcase, mf, n)
      if cfg.out is not None: rec.path = save_failure(fuzzer, rec, cfg.out)
      report(("failure", job, rec))
    if time.monotonic() - last > 0.2: report(("progress", job, done, t_fuzz, ignored)); last = time.monotonic()
  report(("done", job, done, t_fuzz, ignored, fuzzer.stats()))

def _proc_main(fuzzer, cfg, job, q, stop_ev):
  try: _worker(fuzzer, cfg, job, q.put, stop_ev.is_set)
  except BaseException as e:
    q.put(("error", job, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))

class _Progress:
  def __init__(self, kind:str, stream): self.kind, self.stream, self.t0, self.last = kind, stream, time.monotonic(), 0.0
  def show(self, cases:int, busy:float, nfail:int, force=False):
    if self.stream is None or (not force and time.monotonic() - self.last < 0.5): return
    self.last = time.monotonic()
    rate = cases / busy if busy > 0 else 0.0
    self.stream.write(f"\r{self.kind}: {time.monotonic()-self.t0:6.1f}s  cases {cases}  {rate:.1f}/s  failures {nfail}   ")
    self.stream.flush()
  def end(self):
    if self.stream is not None: self.stream.write("\n"); self.stream.flush()

def run_campaign(fuzzer:Fuzzer, cfg:CampaignConfig) -> Report:
  """Run a campaign of `fuzzer` (in this process if `cfg.jobs == 1`, else in forked worker processes).

  Args:
    fuzzer: the fuzzer instance (with fork, workers inherit it as is: injected test-only rules work with jobs > 1 too).
    cfg: budget, seed, jobs, shard, failure directory.
  Returns:
    the `Report`; `rate` divides the cases by the per-job fuzzing time averaged over jobs (so it is the campaign's rate).
  Raises:
    ValueError: no budget, or a bad shard/jobs value. FuzzerCrashed: `generate` raised or a worker died.
  """
  if cfg.time is None and cfg.cases is None: raise ValueError("campaign needs a budget: set time=SECONDS and/or cases=N")
  if not (0 <= cfg.shard[0] < cfg.shard[1]) or cfg.jobs < 1: raise ValueError(f"bad shard={cfg.shard} or jobs={cfg.jobs}: need 0 <= i < n, jobs >= 1")
  prog, t0 = _Progress(fuzzer.name, cfg.progress), time.monotonic()
  counts: dict[int, tuple[int, float, int]] = {}
  failures: list[FailureRecord] = []
  stats: dict[str, int] = {}
  def total(): return sum(c[0] for c in counts.values()), sum(c[1] for c in counts.values()) / max(1, cfg.jobs)
  def handle(msg):
    if msg[0] in ("progress", "done"): counts[msg[1]] = msg[2:5]
    if msg[0] == "done":
      for k, v in msg[5].items(): stats[k] = stats.get(k, 0) + v
    elif msg[0] == "failure": failures.append(msg[2])
    elif msg[0] == "error": raise FuzzerCrashed(fuzzer.name, -1, f"job {msg[1]}: {msg[2]}")
    prog.show(*total(), len(failures), force=msg[0] == "failure")
  if cfg.jobs == 1:
    _worker(fuzzer, cfg, 0, handle, lambda: len(failures) >= cfg.max_failures)
  else:
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    q, stop_ev = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_proc_main, args=(fuzzer, cfg, j, q, stop_ev), daemon=True) for j in range(cfg.jobs)]
    for p in procs: p.start()
    done = 0
    try:
      while done < cfg.jobs:
        try: msg = q.get(timeout=0.5)
        except queue.Empty:
          if any(p.exitcode not in (None, 0) for p in procs) and q.empty():
            raise FuzzerCrashed(fuzzer.name, -1, "a worker process died: " + ", ".join(f"exitcode={p.exitcode}" for p in procs))
          continue
        handle(msg)
        done += msg[0] == "done"
        if len(failures) >= cfg.max_failures: stop_ev.set()
    finally:
      stop_ev.set()
      for p in procs: p.join(timeout=5)
  prog.show(*total(), len(failures), force=True)
  prog.end()
  cases, busy = total()
  failures.sort(key=lambda r: r.index)
  return Report(fuzzer.name, cfg.seed, cfg.shard, cfg.jobs, cases, busy if busy > 0 else time.monotonic() - t0, failures,
                sum(c[2] for c in counts.values()), stats)

@dataclasses.dataclass
class ReplayResult:
  """The rerun of one saved failure: `failure` is None when the minimised case now passes (fixed, or not reproducible)."""
  path: str
  kind: str
  expected_cls: str
  failure: Failure|None
  @property
  def reproduced(self) -> bool: return self.failure is not None and self.failure.cls == self.expected_cls

def failure_dirs(path:str|Path) -> list[Path]:
  """Returns: `path` itself if it is a failure directory, else its failure subdirectories (sorted).
  Raises: BadFailureDir: neither."""
  p = Path(path)
  if (p / "failure.json").is_file(): return [p]
  ds = sorted(d for d in p.iterdir() if (d / "failure.json").is_file()) if p.is_dir() else []
  if not ds: raise BadFailureDir(str(p), "no failure.json here or in its subdirectories")
  return ds

def replay(path:str|Path, load:Callable[[str, dict], Fuzzer]) -> list[ReplayResult]:
  """Rerun the minimised case of every failure directory under `path`.

  Args:
    path: a failure directory or a `--out` directory holding several.
    load: builds the fuzzer from (kind, options), e.g. `mockgpu.tinygrad.fuzz.registry.load`.
  Returns:
    one `ReplayResult` per directory.
  Raises:
    BadFailureDir: unreadable records. UnknownKind/KindUnavailable (from `load`).
  """
  out = []
  for d in failure_dirs(path):
    try: meta, case = json.loads((d / "failure.json").read_text()), json.loads((d / "minimised.json").read_text())
    except (OSError, ValueError) as e: raise BadFailureDir(str(d), f"{type(e).__name__}: {e}") from e
    fz = load(meta["kind"], meta.get("options", {}))
    out.append(ReplayResult(str(d), meta["kind"], meta["minimised_class"], safe_check(fz, case)))
  return out
