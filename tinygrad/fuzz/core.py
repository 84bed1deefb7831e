"""The fuzz framework shared by every kind (symbolic, idiv, oob, render).

A fuzzer is a `Fuzzer` subclass with a `name` and five methods:
  generate(rng) -> case            a JSON-serialisable case, drawn only from `rng` (so case i of seed s is always the same)
  check(case) -> Failure | None    run the system under test on the case and judge it against an oracle; raise
                                   `Inconclusive` when the oracle cannot decide (the case counts as `unknown`)
  shrink(case) -> Iterator[case]   smaller candidates, most aggressive first (the minimiser keeps the first that still fails
                                   with the same `Failure.cls`, then asks again); `shrink_int` proposes integers canonically
  repro(case) -> str               a standalone Python script reproducing the failure with only tinygrad installed
  options() -> dict                (optional) the constructor keywords, so `--replay` rebuilds the same fuzzer

The framework runs campaigns (`run_campaign`): a time and/or case budget, a seed, `jobs` worker processes and a shard
`i/n` of the case space (shard i owns case indices i, i+n, i+2n, ...; inside a shard, job j of J owns every J-th of
those). Each failure is classified (`CampaignConfig.known`, e.g. `known.classify`): known findings are counted per id,
new ones are deduplicated by `signature`, minimised (`minimise`, its own time budget) and written to one directory each
(`save_failure`); `replay` reruns their repro scripts. Case i of seed s is generated from `case_rng(s, i)`, so campaigns
split over jobs or machines reproduce exactly.
"""
from __future__ import annotations
import dataclasses, json, multiprocessing, os, queue, random, re, shutil, subprocess, sys, time, traceback
from pathlib import Path
from typing import Any, Callable, Iterator
from mockgpu.tinygrad.fuzz.errors import BadFailureDir, FuzzerCrashed, Inconclusive

__all__ = ["Case", "MINIMISE_TIME", "Failure", "UNKNOWN", "Fuzzer", "CampaignConfig", "Report", "FailureRecord", "KnownHit", "ReplayResult", "case_rng",
           "safe_check", "signature", "shrink_int", "minimise", "run_campaign", "save_failure", "replay", "failure_dirs"]

Case = Any  # any JSON-serialisable value
# default seconds of minimisation per new failure: a kernel-running fuzzer (oob on the mock GPU) takes ~1.4 s a check, ~20 checks
MINIMISE_TIME = 60.0
UNKNOWN = "unknown"  # the failure class `safe_check` gives an undecided case (`Inconclusive`); reserved, never a finding

@dataclasses.dataclass(frozen=True)
class Failure:
  """What `Fuzzer.check` returns for a failing case.

  Args:
    cls: the failure class (e.g. `mismatch`, `bounds`, `exception:AssertionError`); minimisation keeps a smaller case only if
      it fails with the same class, so the class must not contain case-specific values. `unknown` is reserved (`UNKNOWN`).
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
    """Run and judge one case. Returns: None if it passes, else a `Failure`. Exceptions escaping it become `exception:<Type>`,
    except `Inconclusive` (the oracle could not decide), which makes the case `unknown`."""
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
    """Returns: JSON-serialisable constructor keywords (saved in failure.json, so the fuzzer can be rebuilt as it ran)."""
    return {}
  def prepare(self) -> None:
    """One-time set-up a campaign job needs before its clock starts (start GPU worker processes, compile once per executor),
    so `--time` buys cases rather than start-up; its time is reported apart (`Report.setup_seconds`). Default: nothing."""
  def stats(self) -> dict[str, int]:
    """Returns: counters the fuzzer keeps (e.g. which oracle judged how many cases); summed over jobs in the report."""
    return {}

def case_rng(seed:int, index:int) -> random.Random:
  """Returns: the deterministic generator of case `index` of campaign `seed` (independent of jobs, shards and machines)."""
  return random.Random(f"mockgpu-fuzz:{seed}:{index}")

def safe_check(fuzzer:Fuzzer, case:Case) -> Failure|None:
  """Run `fuzzer.check(case)`, turning an escaping exception into `Failure('exception:<Type>', <last traceback lines>)` and
  `Inconclusive` into `Failure(UNKNOWN, reason)`."""
  try: return fuzzer.check(case)
  except Inconclusive as e: return Failure(UNKNOWN, str(e))
  except Exception as e:  # the system under test may raise anything: that is a finding, not a framework error
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    return Failure(f"exception:{type(e).__name__}", "".join(tb[-3:]).strip())

_NUM = re.compile(r"(?<![\w.])(?:0x[0-9a-fA-F]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)\b)")
def signature(failure:Failure) -> str:
  """Returns: the deduplication key of a failure: its class and the first line of its message with every number replaced by
  `#` (so the same bug at other values is one failure of the campaign, counted); digits inside names (`v0`, `int8`) stay."""
  return f"{failure.cls}|{_NUM.sub('#', failure.message.splitlines()[0] if failure.message else '')}"

def shrink_int(v:int, lo:int|None=None, hi:int|None=None) -> Iterator[int]:
  """Canonical candidates for shrinking an integer field, most aggressive first: the value of [lo, hi] nearest 0, then -v
  (same magnitude, positive), then bisection toward that target (v - d/2, v - d/4, ..., v -+ 1 for d = v - target). With the
  greedy minimiser this is a binary search: a bug that needs v >= 63 ends at 63 from any starting v, in O(log^2 v) checks.

  Args:
    v: the current value. lo, hi: the field's valid range (None: unbounded).
  Yields:
    distinct integers in [lo, hi] other than v.
  """
  t = max(lo, 0) if lo is not None and lo > 0 else min(hi, 0) if hi is not None and hi < 0 else 0
  seen = {v}
  def ok(x:int) -> bool: return x not in seen and (lo is None or x >= lo) and (hi is None or x <= hi) and not seen.add(x)
  if ok(t): yield t
  if v < 0 and ok(-v): yield -v
  d = abs(v - t)
  while d > 1:
    d //= 2
    if ok(x:=v - d if v > t else v + d): yield x
  if v != t and ok(x:=v - 1 if v > t else v + 1): yield x

def minimise(fuzzer:Fuzzer, case:Case, failure:Failure, time_limit:float=20.0, max_checks:int|None=None,
             accept:Callable[[Failure, Case], bool]|None=None) -> tuple[Case, Failure, int]:
  """Greedy delta debugging: repeatedly replace the case by the first `shrink` candidate that fails with the same class.

  Args:
    fuzzer: supplies `shrink` and `check`.
    case, failure: a failing case and its failure.
    time_limit, max_checks: budget (seconds, candidate checks: None is unlimited); the best case so far is returned when it runs out.
    accept: a further condition on (failure, candidate); campaigns reject candidates that are known findings, so a new bug
      does not minimise into a known one of the same class.
  Returns:
    (minimised case, its failure, number of candidates checked).
  """
  seen, checks, deadline = {json.dumps(case, sort_keys=True)}, 0, time.monotonic() + time_limit
  def spent() -> bool: return (max_checks is not None and checks >= max_checks) or time.monotonic() >= deadline
  improved = True
  while improved and not spent():
    improved = False
    for cand in fuzzer.shrink(case):
      if spent(): break
      if (key:=json.dumps(cand, sort_keys=True)) in seen: continue
      seen.add(key)
      checks += 1
      if (f:=safe_check(fuzzer, cand)) is not None and f.cls == failure.cls and (accept is None or accept(f, cand)):
        case, failure, improved = cand, f, True
        break
  return case, failure, checks

Classifier = Callable[[str, Failure, Case], "str|None"]

@dataclasses.dataclass
class CampaignConfig:
  """Parameters of a campaign.

  Args:
    seed: campaign seed. time: budget in seconds for generating and checking cases, minimisation excluded (None: unlimited).
    cases: maximum number of cases of this shard (None: unlimited; at least one of time/cases must be set).
    jobs: worker processes. shard: (i, n), this campaign runs shard i of n. out: failure directory (None: do not write).
    max_failures: stop after this many distinct new failures (over all jobs; known findings and duplicates do not count).
    minimise_time: seconds of minimisation per new failure, on top of `time`.
    progress: show a progress bar on stderr (tinygrad's tqdm): True, False, or None for "when stderr is a terminal".
    ignore: failure-class prefixes to skip; they are counted in `Report.ignored`, not minimised or saved.
    known: the classifier of known findings, (kind, failure, case) -> finding id or None (e.g. `known.classify`); a known
      failure is counted in `Report.known`, not minimised, saved or counted against `max_failures`. None: every failure is new.
  """
  seed: int = 0
  time: float|None = 60.0
  cases: int|None = None
  jobs: int = 1
  shard: tuple[int, int] = (0, 1)
  out: Path|None = Path("fuzz-failures")
  max_failures: int = 5
  minimise_time: float = MINIMISE_TIME
  progress: bool|None = False
  ignore: tuple[str, ...] = ()
  known: Classifier|None = None

@dataclasses.dataclass
class FailureRecord:
  """One new failure of a campaign: where it came from, the original and minimised case, where it was saved, and `count`, how
  many failing cases of the campaign had its `signature` (or minimised to the same one)."""
  kind: str
  seed: int
  index: int
  case: Case
  failure: Failure
  minimised: Case
  minimised_failure: Failure
  shrink_checks: int
  path: str|None = None
  count: int = 1

@dataclasses.dataclass
class KnownHit:
  """The failures of a campaign that are one known finding: its id, how many cases hit it, and the first of them."""
  id: str
  count: int
  index: int
  case: Case
  failure: Failure

@dataclasses.dataclass
class Report:
  """The outcome of a campaign. `rate` is cases per second of fuzzing (minimisation, `minimise_seconds`, excluded);
  `failures` are the new ones, `known` the known findings met (by id), `unknown` the cases no oracle could decide."""
  kind: str
  seed: int
  shard: tuple[int, int]
  jobs: int
  cases: int
  seconds: float
  failures: list[FailureRecord]
  ignored: int = 0
  stats: dict[str, int] = dataclasses.field(default_factory=dict)
  known: dict[str, KnownHit] = dataclasses.field(default_factory=dict)
  unknown: int = 0
  minimise_seconds: float = 0.0
  setup_seconds: float = 0.0
  @property
  def rate(self) -> float: return self.cases / self.seconds if self.seconds > 0 else 0.0
  def exit_code(self, strict:bool=False) -> int:
    """Returns: 1 when a new failure was found (or, if `strict`, a known one), else 0."""
    return int(bool(self.failures) or (strict and bool(self.known)))
  def summary(self, titles:dict[str, str]|None=None) -> str:
    """Args: titles: finding id -> one-line title for the known findings' lines. Returns: the final multi-line report."""
    lines = [f"fuzz {self.kind}: seed={self.seed} shard={self.shard[0]}/{self.shard[1]} jobs={self.jobs} cases={self.cases} "
             f"time={self.seconds:.1f}s (+{self.setup_seconds:.1f}s setup, +{self.minimise_seconds:.1f}s minimising) rate={self.rate:.1f} cases/s failures={len(self.failures)} "
             f"known={sum(h.count for h in self.known.values())} unknown={self.unknown}" + (f" ignored={self.ignored}" if self.ignored else "")]
    if self.stats: lines.append("  stats: " + " ".join(f"{k}={v}" for k, v in sorted(self.stats.items())))
    for h in sorted(self.known.values(), key=lambda h: h.index):
      lines.append(f"  known [{h.id}] x{h.count} first index={h.index} [{h.failure.cls}]" + (f": {titles[h.id]}" if h.id in (titles or {}) else ""))
    for r in self.failures:
      msg = r.minimised_failure.message.splitlines()[0][:160] if r.minimised_failure.message else ""
      lines.append(f"  FAIL [{r.minimised_failure.cls}] index={r.index} x{r.count} {msg}")
      if r.path: lines.append(f"       saved in {r.path} (repro: python {os.path.join(r.path, 'repro.py')})")
    return "\n".join(lines)

def _fuzzer_version() -> dict:
  import importlib.metadata, mockgpu
  try: tg = importlib.metadata.version("tinygrad")
  except importlib.metadata.PackageNotFoundError: tg = "?"
  return {"tinygrad": tg, "mockgpu": getattr(mockgpu, "__version__", "?"), "python": sys.version.split()[0]}

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

@dataclasses.dataclass
class _Counts:  # one job's tallies, sent with every progress message
  done: int = 0
  fuzz: float = 0.0
  ignored: int = 0
  unknown: int = 0
  minimise: float = 0.0
  setup: float = 0.0

def _worker(fuzzer:Fuzzer, cfg:CampaignConfig, job:int, report:Callable[[tuple], None], stop:Callable[[], bool]) -> None:
  # shard case k has global index shard_i + shard_n*k; job j runs k = j, j+jobs, ...; the deadline moves out by minimisation time
  si, sn = cfg.shard
  c, t_setup = _Counts(), time.monotonic()
  fuzzer.prepare()
  c.setup = time.monotonic() - t_setup
  deadline = None if cfg.time is None else time.monotonic() + cfg.time
  k, last, seen, known_seen = job, time.monotonic(), set(), set()
  while (cfg.cases is None or k < cfg.cases) and (deadline is None or time.monotonic() < deadline) and not stop():
    index, t0 = si + sn*k, time.monotonic()
    try: case = fuzzer.generate(case_rng(cfg.seed, index))
    except Exception as e: raise FuzzerCrashed(fuzzer.name, index, f"generate raised {type(e).__name__}: {e}") from e
    f = safe_check(fuzzer, case)
    c.fuzz += time.monotonic() - t0
    c.done, k = c.done + 1, k + cfg.jobs
    if f is not None and f.cls == UNKNOWN: f, c.unknown = None, c.unknown + 1
    if f is not None and f.cls.startswith(cfg.ignore): f, c.ignored = None, c.ignored + 1
    if f is not None and cfg.known is not None and (kid:=cfg.known(fuzzer.name, f, case)) is not None:
      report(("known", job, kid, index, *((case, f) if kid not in known_seen else (None, None))))
      known_seen.add(kid)
    elif f is not None and (sig:=signature(f)) in seen: report(("dup", job, sig))
    elif f is not None:
      t1 = time.monotonic()
      new = None if cfg.known is None else lambda f, c: cfg.known(fuzzer.name, f, c) is None
      mcase, mf, n = minimise(fuzzer, case, f, time_limit=cfg.minimise_time, accept=new)
      seen.update((sig, msig:=signature(mf)))
      rec = FailureRecord(fuzzer.name, cfg.seed, index, case, f, mcase, mf, n)
      if cfg.out is not None: rec.path = save_failure(fuzzer, rec, cfg.out)
      c.minimise += (dt:=time.monotonic() - t1)
      if deadline is not None: deadline += dt
      report(("failure", job, rec, sig, msig))
    if time.monotonic() - last > 0.2: report(("progress", job, c)); last = time.monotonic()
  report(("done", job, c, fuzzer.stats()))

def _proc_main(fuzzer, cfg, job, q, stop_ev):
  try: _worker(fuzzer, cfg, job, q.put, stop_ev.is_set)
  except BaseException as e:
    q.put(("error", job, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))

def run_campaign(fuzzer:Fuzzer, cfg:CampaignConfig) -> Report:
  """Run a campaign of `fuzzer` (in this process if `cfg.jobs == 1`, else in forked worker processes).

  Args:
    fuzzer: the fuzzer instance (with fork, workers inherit it as is: injected test-only rules work with jobs > 1 too).
    cfg: budget, seed, jobs, shard, failure directory, known-finding classifier.
  Returns:
    the `Report`; `rate` divides the cases by the per-job fuzzing time averaged over jobs (so it is the campaign's rate).
  Raises:
    ValueError: no budget, or a bad shard/jobs value. FuzzerCrashed: `generate` raised or a worker died.
  """
  from tinygrad.helpers import tqdm
  if cfg.time is None and cfg.cases is None: raise ValueError("campaign needs a budget: set time=SECONDS and/or cases=N")
  if not (0 <= cfg.shard[0] < cfg.shard[1]) or cfg.jobs < 1: raise ValueError(f"bad shard={cfg.shard} or jobs={cfg.jobs}: need 0 <= i < n, jobs >= 1")
  bar = tqdm(desc=fuzzer.name, disable=None if cfg.progress is None else not cfg.progress, unit=" cases", total=cfg.cases or 0)
  t0, counts, failures, by_sig, known, stats = time.monotonic(), {}, [], {}, {}, {}
  def total() -> _Counts:
    return _Counts(sum(c.done for c in counts.values()), sum(c.fuzz for c in counts.values()) / max(1, cfg.jobs),
                   *(sum(getattr(c, a) for c in counts.values()) for a in ("ignored", "unknown", "minimise")),
                   max((c.setup for c in counts.values()), default=0.0))
  def handle(msg):
    if msg[0] in ("progress", "done"): counts[msg[1]] = msg[2]
    if msg[0] == "done":
      for k, v in msg[3].items(): stats[k] = stats.get(k, 0) + v
    elif msg[0] == "known":
      if (h:=known.get(msg[2])) is None: known[msg[2]] = KnownHit(msg[2], 1, msg[3], msg[4], msg[5])
      else:
        h.count += 1
        if msg[4] is not None and msg[3] < h.index: h.index, h.case, h.failure = msg[3:6]  # each job's first: keep the first index
    elif msg[0] == "dup": by_sig[msg[2]].count += 1
    elif msg[0] == "failure":
      rec, sig, msig = msg[2:]
      if (same:=by_sig.get(msig)) is not None:  # another job (or another raw failure) minimised to the same signature: keep the
        drop, same.count = rec, same.count + 1    # first case index, so the report does not depend on which job was faster
        if rec.index < same.index:
          drop = dataclasses.replace(same)
          for fld in dataclasses.fields(rec): setattr(same, fld.name, getattr(rec, fld.name) if fld.name != "count" else same.count)
        if drop.path is not None and drop.path != same.path: shutil.rmtree(drop.path, ignore_errors=True)
      else: failures.append(same:=rec)
      by_sig.setdefault(sig, same), by_sig.setdefault(msig, same)
    elif msg[0] == "error": raise FuzzerCrashed(fuzzer.name, -1, f"job {msg[1]}: {msg[2]}")
    tot = total()
    bar.set_description(f"{fuzzer.name} failures={len(failures)} known={sum(h.count for h in known.values())} unknown={tot.unknown}")
    bar.update(tot.done - bar.n)
  try:
    if cfg.jobs == 1: _worker(fuzzer, cfg, 0, handle, lambda: len(failures) >= cfg.max_failures)
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
  finally: bar.update(close=True)
  tot = total()
  failures.sort(key=lambda r: r.index)
  return Report(fuzzer.name, cfg.seed, cfg.shard, cfg.jobs, tot.done, tot.fuzz if tot.fuzz > 0 else time.monotonic() - t0, failures,
                tot.ignored, stats, dict(sorted(known.items(), key=lambda kv: kv[1].index)), tot.unknown, tot.minimise, tot.setup)

@dataclasses.dataclass
class ReplayResult:
  """The run of one saved failure's repro.py: `returncode` (None: timed out), the tail of its output, and `raised`, the type of
  the exception whose traceback ended its stderr (None: it exited on its own, e.g. `sys.exit(1)` after printing a mismatch)."""
  path: str
  kind: str
  expected_cls: str
  returncode: int|None
  output: str
  raised: str|None = None
  @property
  def reproduced(self) -> bool:
    """Whether the failure still shows: repro.py exited non-zero (or hung)."""
    return self.returncode != 0
  @property
  def state(self) -> str:
    """Returns: `passes now`, `REPRODUCED`, `REPRODUCED (timed out)`, or `fails differently (...)` when the script died of an
    exception its failure class does not name (a crash elsewhere, e.g. tinygrad failing earlier on the minimised case)."""
    if self.returncode == 0: return "passes now"
    if self.returncode is None: return "REPRODUCED (timed out)"
    if self.raised is not None and self.raised != self.expected_cls.rsplit(":", 1)[-1]: return f"fails differently (repro.py raised {self.raised})"
    return "REPRODUCED"

def _raised(stderr:str) -> str|None:
  if (i:=stderr.rfind("Traceback (most recent call last):")) < 0: return None
  line = next((ln for ln in stderr[i:].splitlines()[1:] if ln and not ln[0].isspace()), "")
  return line.split(":", 1)[0].rsplit(".", 1)[-1] or None

def failure_dirs(path:str|Path) -> list[Path]:
  """Returns: `path` itself if it is a failure directory, else its failure subdirectories (sorted).
  Raises: BadFailureDir: neither."""
  p = Path(path)
  if (p / "failure.json").is_file(): return [p]
  ds = sorted(d for d in p.iterdir() if (d / "failure.json").is_file()) if p.is_dir() else []
  if not ds: raise BadFailureDir(str(p), "no failure.json here or in its subdirectories")
  return ds

def replay(path:str|Path, timeout:float=600.0) -> list[ReplayResult]:
  """Run the repro.py of every failure directory under `path` as its users would: `python repro.py` in a subprocess with this
  interpreter, in the failure's directory. A failure reproduces while its script exits non-zero.

  Args:
    path: a failure directory or a `--out` directory holding several.
    timeout: seconds per script (a script still running then counts as reproducing, returncode None).
  Returns:
    one `ReplayResult` per directory.
  Raises:
    BadFailureDir: a record without a readable failure.json or repro.py.
  """
  out = []
  for d in failure_dirs(path):
    try: meta = json.loads((d / "failure.json").read_text())
    except (OSError, ValueError) as e: raise BadFailureDir(str(d), f"{type(e).__name__}: {e}") from e
    if not (d / "repro.py").is_file(): raise BadFailureDir(str(d), "no repro.py")
    try:
      r = subprocess.run([sys.executable, "repro.py"], cwd=d, capture_output=True, text=True, timeout=timeout)
      rc, text, raised = r.returncode, r.stdout + r.stderr, _raised(r.stderr)
    except subprocess.TimeoutExpired as e:
      rc, text, raised = None, f"timed out after {timeout:.0f}s\n" + (e.stdout or b"").decode(errors="replace")[-2000:], None
    out.append(ReplayResult(str(d), meta.get("kind", "?"), meta.get("minimised_class", "?"), rc, text[-4000:], raised))
  return out
