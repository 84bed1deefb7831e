"""`mockgpu fuzz`: run a campaign of one fuzzer kind, or replay saved failures.

  mockgpu fuzz KIND [--time S] [--cases N] [--seed N] [--jobs N] [--shard i/n] [--out DIR] [--opt key=value ...] [--ignore CLASS]
                    [--strict] [--minimise-time S]
  mockgpu fuzz --replay DIR [--replay-timeout S]
  mockgpu fuzz --list
"""
from __future__ import annotations
import argparse, json, sys
from pathlib import Path
from mockgpu.argtypes import positive_int, positive_float, nonnegative_float
from mockgpu.tinygrad.fuzz.core import MINIMISE_TIME, CampaignConfig, run_campaign, replay
from mockgpu.tinygrad.fuzz.errors import FuzzError
from mockgpu.tinygrad.fuzz.registry import KINDS, load, available
from mockgpu.tinygrad.fuzz import known

__all__ = ["main", "parser"]

def _shard(s:str) -> tuple[int, int]:
  try: i, n = (int(x) for x in s.split("/"))
  except ValueError: raise argparse.ArgumentTypeError(f"--shard {s!r}: expected i/n, e.g. 0/4") from None
  if not 0 <= i < n: raise argparse.ArgumentTypeError(f"--shard {s!r}: need 0 <= i < n")
  return i, n

def _opt(s:str) -> tuple[str, object]:
  if "=" not in s: raise argparse.ArgumentTypeError(f"--opt {s!r}: expected key=value (value parsed as JSON, else a string)")
  k, v = s.split("=", 1)
  try: return k, json.loads(v)
  except ValueError: return k, v

def parser() -> argparse.ArgumentParser:
  """Returns: the argument parser of `mockgpu fuzz`."""
  p = argparse.ArgumentParser(prog="mockgpu fuzz", description="fuzz tinygrad: " + ", ".join(KINDS),
                              epilog="kinds:\n" + "\n".join(f"  {k:9s} {h}" for k, (_, h) in KINDS.items()),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("kind", nargs="?", help="fuzzer kind")
  p.add_argument("--time", type=positive_float, default=None, help="seconds of fuzzing, minimisation not counted (default 60 unless --cases is given)")
  p.add_argument("--cases", type=positive_int, default=None, help="number of cases of this shard (deterministic campaigns)")
  p.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
  p.add_argument("--jobs", type=positive_int, default=1, help="worker processes (default 1)")
  p.add_argument("--shard", type=_shard, default=(0, 1), help="run shard i of n of the case space, e.g. 2/8")
  p.add_argument("--out", type=Path, default=Path("fuzz-failures"), help="failure directory (default fuzz-failures/)")
  p.add_argument("--max-failures", type=positive_int, default=5, help="stop after this many distinct new failures (default 5)")
  p.add_argument("--minimise-time", type=nonnegative_float, default=MINIMISE_TIME,
                 help=f"seconds of minimisation per new failure, not counted in --time (default {MINIMISE_TIME:g})")
  p.add_argument("--strict", action="store_true", help="exit 1 on known findings too (docs/findings.md, `known.KNOWN`)")
  p.add_argument("--opt", type=_opt, action="append", default=[], help="fuzzer option key=value (see docs/fuzz.md)")
  p.add_argument("--ignore", action="append", default=[], help="skip failures whose class starts with this")
  p.add_argument("--quiet", action="store_true", help="no progress bar (it is shown only when stderr is a terminal)")
  p.add_argument("--replay", type=Path, default=None, help="run the repro.py of the saved failures under DIR instead of fuzzing")
  p.add_argument("--replay-timeout", type=positive_float, default=600.0, help="seconds per repro.py on --replay (default 600)")
  p.add_argument("--list", action="store_true", help="list kinds and whether they are available")
  return p

def main(argv:list[str]|None=None) -> int:
  """Entry point of `mockgpu fuzz`.

  Args:
    argv: arguments after `fuzz`.
  Returns:
    0 when no new failure was found (known findings only count with --strict; on replay: none reproduced), 1 when some were,
    2 on a usage or setup error.
  """
  args = parser().parse_args(sys.argv[1:] if argv is None else argv)
  try:
    if args.list:
      for k, why in available().items(): print(f"{k:9s} {'available' if why is None else 'unavailable: ' + why}")
      return 0
    if args.replay is not None:
      res = replay(args.replay, timeout=args.replay_timeout)
      for r in res:
        tail = [ln for ln in r.output.splitlines() if ln.strip()][-1:] or [""]
        print(f"{r.state:22s} {r.kind} [{r.expected_cls}] {r.path} (repro.py exit {r.returncode})\n  {tail[0][:200]}")
      print(f"replay: {len(res)} failures, {sum(r.reproduced for r in res)} still failing")
      return int(any(r.reproduced for r in res))
    if args.kind is None:
      parser().print_usage(sys.stderr)
      print("mockgpu fuzz: give a KIND, --replay DIR or --list", file=sys.stderr)
      return 2
    fuzzer = load(args.kind, dict(args.opt))
    cfg = CampaignConfig(seed=args.seed, time=args.time if args.time is not None or args.cases is not None else 60.0, cases=args.cases,
                         jobs=args.jobs, shard=args.shard, out=args.out, max_failures=args.max_failures, minimise_time=args.minimise_time,
                         progress=False if args.quiet else None, ignore=tuple(args.ignore), known=known.classify)
    rep = run_campaign(fuzzer, cfg)
  except (FuzzError, ValueError, TypeError) as e:
    print(f"mockgpu fuzz: {e}", file=sys.stderr)
    return 2
  print(rep.summary({k.id: k.title for k in known.KNOWN}))
  return rep.exit_code(args.strict)
