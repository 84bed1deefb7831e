"""`mockgpu emu fidelity`: can I trust instruction X? Per instruction of each arch, where its semantics come from (AMD's
pseudocode as published, corrected by an entry of pcode.corrections.FIXES, hand-written from the ISA's prose, or
unsupported) and how the test suite checks it (differential, known-answer, hardware fact). The semantics side is derived
from the same tables the C generator uses (gen_c.generate); the test side is read from fidelity_coverage.json, which
`mockgpu emu fidelity --update-coverage` writes from a checkout (the tests are not shipped). See docs/fidelity.md."""
from __future__ import annotations
import dataclasses, functools, hashlib, json, pathlib, re, subprocess, sys
from dataclasses import dataclass, field
from mockgpu.pcode.nodes import Call, For, If, While, Lambda

__all__ = ["STATUSES", "KINDS", "COVERAGE", "DEFAULT_TESTS", "SCHEMA", "always_unsupported", "Impl", "Row", "mnemonic", "implementations",
           "arch_of", "tests_hash", "write_coverage", "load_coverage", "warnings", "rows", "totals", "verdict", "totals_table", "explain", "report",
           "update_coverage"]

STATUSES = ("published", "corrected", "prose", "unsupported")
KINDS = ("differential", "known-answer", "hw_fact")
COVERAGE = pathlib.Path(__file__).with_name("fidelity_coverage.json")
ROOT = pathlib.Path(__file__).resolve().parents[1]      # the checkout (the repository root is the `mockgpu` package)
DEFAULT_TESTS = ("tests/isa", "tests/pcode")
SCHEMA = 1
@functools.cache
def always_unsupported() -> dict[str, str]:
  """Handler -> why it stops every dispatch reaching it with "unsupported": the error-only handlers of gen_c.PROSE_STOP, and
  the export handler (csrc/emu_gfx.h h_export, pygfx.export: the same text with the instruction's fields)."""
  from mockgpu.emu.facts import MSG
  from mockgpu.emu.gen_c import PROSE_STOP
  return {**{h: MSG[m] for h, (st, m) in PROSE_STOP.items() if st == "UNSUPPORTED"}, "h_export": MSG["EXPORT"]}

@dataclass(frozen=True)
class Impl:
  """How one encoding of an instruction (format `fmt`, opcode name `op`, e.g. VOP3 V_ADD_F32_E64) executes: `status` one of
  STATUSES, `entry` the pseudocode entry it runs ('<EnumClass>_<MEMBER>', None if hand-written or unsupported), `detail` one
  line (the FIXES key, the hand-written module, why it is unsupported), `fixes` the (reason, source of the fact) of each
  corrections.Fix applied to the entry, in order."""
  fmt: str
  op: str
  status: str
  entry: str | None = None
  detail: str = ""
  fixes: tuple[tuple[str, str], ...] = ()

@dataclass(frozen=True)
class Row:
  """One instruction (mnemonic without _E32/_E64) of one arch: its encodings and the passing tests of each kind that ran it."""
  arch: str
  mnemonic: str
  impls: tuple[Impl, ...]
  tests: dict = field(default_factory=dict)   # kind -> tuple of test ids
  @property
  def status(self) -> str:
    """The least trusted status over the encodings (unsupported < prose < corrected < published)."""
    return max((i.status for i in self.impls), key=STATUSES.index)

def mnemonic(name: str) -> str:
  """'VOP2 V_ADD_F32_E32' (an op_counts key), 'VOP2Op_V_ADD_F32_E32' (a pseudocode entry) or 'v_add_f32_e64' -> 'V_ADD_F32';
  'EXP OP0' (an encoding without opcodes) -> 'EXP'."""
  fmt, _, op = name.upper().rpartition(" ")
  if fmt and re.fullmatch(r"OP\d+", op): return fmt
  return re.sub(r"_E(32|64)$", "", op.split("OP_", 1)[1] if re.match(r"[A-Z0-9]+OP_", op) else op)

def _arch(name: str):
  from mockgpu.emu.arch import ARCHS
  a = ARCHS.get(name) or next((a for a in ARCHS.values() if a.family == name), None)
  if a is None: raise ValueError(f"unknown arch {name!r}: use {', '.join(ARCHS)} or a family ({', '.join(dict.fromkeys(a.family for a in ARCHS.values()))})")
  return a

@functools.cache
def _provided() -> frozenset[str]:
  """The machine built-ins (PC_EXT_ hooks) the emulator defines; a pseudocode call of any other raises "unsupported"."""
  return frozenset(n for p in (pathlib.Path(__file__).parent / "csrc").glob("*.[ch]") for n in re.findall(r"#define PC_EXT_(\w+)", p.read_text()))

def _calls(x) -> set[str]:
  if isinstance(x, list | tuple): return set().union(*map(_calls, x))
  if not dataclasses.is_dataclass(x): return set()
  return ({x.name} if isinstance(x, Call) else set()) | set().union(*(_calls(getattr(x, f.name)) for f in dataclasses.fields(x)))

def _always(body) -> set[str]:
  """Functions a pseudocode body calls on every path (outside if/while/lambda)."""
  return set().union(*(_always(s.body) | _calls([s.lo, s.hi]) if isinstance(s, For) else set() if isinstance(s, If | While | Lambda) else _calls(s)
                       for s in body))

@functools.cache
def implementations(arch: str) -> dict[str, tuple[Impl, ...]]:
  """{mnemonic: Impl per encoding} for every valid opcode of `arch` (a GPU name or family), decided as gen_c.generate
  decides which handler an opcode gets (tests/unit/test_fidelity.py checks that the unsupported ones are its `missing`), and
  the arch's `unmodelled_ops` as unsupported."""
  from mockgpu.emu import buffer, bvh, matrix
  from mockgpu.emu.gen_c import PROSE_C, UNMODELLED, semantics_entry, _vopd_target, _SALU, _VALU, _VMEM
  from mockgpu.emu.gen_gfx import GFX_PROSE, EXPORT_FORMATS, IMAGE_FORMATS, image_kind
  from mockgpu.emu.isa import formats
  from mockgpu.pcode.cemit import _emit_all
  from mockgpu.pcode.compile import program
  from mockgpu.pcode.prose import prose
  from mockgpu.pcode.tables import entries
  from mockgpu.emu.arch import unmodelled_ops
  fam, um = _arch(arch).family, unmodelled_ops(_arch(arch))   # um: what this arch stops at though its library runs it
  (fns, hooks, _), ents, mat, pr = _emit_all(fam), entries(fam), matrix.ops(fam), prose(fam)
  def pcode(I, e, how=""):
    if e not in fns: return I("unsupported", None, "no compiled pseudocode" if e in ents else "no pseudocode in the wheel")
    if (miss := sorted(hooks[e] - _provided())):
      calls = f"{', '.join(n + '()' for n in miss)}, {'a machine built-in' if len(miss) == 1 else 'machine built-ins'} the emulator does not provide"
      if set(miss) & _always(program(fam, e).body): return I("unsupported", e, f"its pseudocode calls {calls}")
      how = "; ".join(filter(None, (how, f"raises \"unsupported\" on the path that calls {calls}")))
    if not ents[e].fixed: return I("published", e, how)
    fx = ents[e].fixes
    return I("corrected", e, "; ".join(filter(None, (f"corrections.FIXES[{fam}, {e}]" + (f" ({len(fx)} fixes)" if len(fx) > 1 else ""), how))),
             tuple((f.reason, f.source) for f in fx))
  def hand(I, h, e=None, impl="csrc/emu_prose.h, pybackend.py"):
    if h in always_unsupported(): return I("unsupported", None, f"{h}: {always_unsupported()[h]}")
    return I("prose", None, f"{pr[e].reason}; hand-written in {pr[e].impl}" if e in pr else f"hand-written: {h} ({impl})")
  out: dict[str, list[Impl]] = {}
  for f in formats(fam):
    if f.name in EXPORT_FORMATS: out[f.name] = [hand(functools.partial(Impl, f.name, f.name), "h_export")]; continue
    for i in sorted(f.valid):
      m = f.enum(i); name = m.name; base, own = re.sub(r"_E(32|64)$", "", name), f"{type(m).__name__}_{name}"
      I, k = functools.partial(Impl, f.name, name), image_kind(name) if f.name in IMAGE_FORMATS else None
      if f.name == "VOPD":
        tgt = _vopd_target(fam, name, ents)
        im = pcode(I, tgt, f"runs {tgt}") if tgt else I("unsupported", None, f"VOPD target of {name} has no pseudocode")
      elif base in UNMODELLED: im = I("unsupported", None, UNMODELLED[base])
      elif base in um: im = I("unsupported", None, um[base])
      elif base in mat: im = I("prose", None, "matrix op: D = A*B + C from mockgpu.emu.matrix's layout tables (the pseudocode is the formula)")
      elif base.startswith(("V_WMMA_", "V_SWMMAC_", "V_MFMA_", "V_SMFMAC_")) and base not in PROSE_C:
        im = I("unsupported", None, f"matrix op {base} is not modelled (mockgpu.emu.matrix)")
      elif f.name in bvh.BVH_FORMATS and name in bvh.BVH_OPS: im = I("prose", None, "ray tracing: mockgpu.emu.bvh (docs/emu.md Ray tracing)")
      elif f.name in IMAGE_FORMATS and (k is None or (k[0] == "atomic" and own not in fns)):
        im = I("unsupported", None, "image op without a model (docs/emu.md Images)")
      elif f.name in IMAGE_FORMATS:
        im = pcode(I, own, "texel address: mockgpu.emu.image") if k[0] == "atomic" else hand(I, f"image {k[0]}", None, "mockgpu.emu.image")
      elif base in PROSE_C: im = hand(I, PROSE_C[base], own)
      elif base in GFX_PROSE: im = hand(I, GFX_PROSE[base], own, "csrc/emu_gfx.h, pygfx.py")
      elif f.name in buffer.BUFFER_FORMATS and "FORMAT" in name and "LDS" not in name:
        im = hand(I, "data-format conversion", own, "mockgpu.emu.buffer")
      elif f.name in buffer.LDS_LOADS and "_LOAD_LDS_" in name and buffer.lds_load_op(name):
        im = hand(I, "load into LDS", None, "mockgpu.emu.buffer")
      else:
        e, lds = semantics_entry(m, ents), "LDS" in name and f.name != "DS"
        if e in fns and lds and f.name in _VMEM + buffer.BUFFER_FORMATS: im = I("unsupported", None, "loads into LDS are not modelled")
        elif e in fns and f.name not in _SALU + _VALU + _VMEM + buffer.BUFFER_FORMATS + ("VINTERP", "DS", "SMEM"):
          im = I("unsupported", None, f"format {f.name} is not modelled")
        else: im = pcode(I, e, "" if e == own else f"runs {e}")
      out.setdefault(mnemonic(name), []).append(im)
  return {k: tuple(v) for k, v in out.items()}

# ---- test coverage: recorded by `--update-coverage` (fidelity_plugin.py), read by the report
def arch_of(family: str) -> str:
  """The GPU the emulator models for an ISA family ('rdna3' -> 'gfx1100')."""
  return _arch(family).name

def tests_hash(paths=DEFAULT_TESTS) -> str | None:
  """sha256 (16 hex) over the test files under `paths` of the checkout, None outside a checkout."""
  files = sorted(f for d in map(ROOT.joinpath, paths) for f in (d.rglob("*.py") if d.is_dir() else [d] if d.is_file() else []))
  if not files: return None
  h = hashlib.sha256()
  for f in files: h.update(f"{f.relative_to(ROOT) if f.is_relative_to(ROOT) else f.name}\0".encode() + f.read_bytes())
  return h.hexdigest()[:16]

def _pcode_hashes() -> dict[str, str]:
  from mockgpu.pcode.tables import ARCHS, source_hash
  return {f: source_hash(f)[:16] for f in ARCHS}

def write_coverage(out, tests: dict[str, dict], failed: list[str], skipped: int, paths=DEFAULT_TESTS):
  """Write the coverage file. `tests`: {test id: {"kind", "hw_fact": [mnemonics], "source", "ran": {(arch, mnemonic)}}}."""
  import datetime, importlib.metadata, mockgpu
  try: commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
  except (OSError, subprocess.SubprocessError): commit = ""
  ids = sorted(tests)
  ran: dict[str, dict[str, list[int]]] = {}
  for i, t in enumerate(ids):
    for a, m in tests[t]["ran"]: ran.setdefault(a, {}).setdefault(m, []).append(i)
  hw = lambda t: {"hw_fact": sorted(t["hw_fact"]), "source": t["source"]} if t["hw_fact"] else {}
  doc = {"schema": SCHEMA, "command": "mockgpu emu fidelity --update-coverage",
         "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "mockgpu": mockgpu.__version__,
         "tinygrad": importlib.metadata.version("tinygrad"), "commit": commit or None, "paths": list(paths), "tests_hash": tests_hash(paths),
         "pcode": _pcode_hashes(), "outcome": {"passed": len(ids), "failed": sorted(failed), "skipped": skipped},
         "tests": [{"id": t, "kind": tests[t]["kind"], **hw(tests[t])} for t in ids],
         "ran": {a: {m: sorted(set(v)) for m, v in sorted(ms.items())} for a, ms in sorted(ran.items())}}
  d = lambda x: json.dumps(x, separators=(",", ":"))
  head = [f" {d(k)}: {d(v)}," for k, v in doc.items() if k not in ("tests", "ran")]   # one line per test and per (arch, mnemonic): reviewable diffs
  body = [' "tests": [', ",\n".join(f"  {d(t)}" for t in doc["tests"]), " ],", ' "ran": {',
          ",\n".join(f"  {d(a)}: {{\n" + ",\n".join(f"   {d(m)}: {d(v)}" for m, v in ms.items()) + "\n  }" for a, ms in doc["ran"].items()), " }"]
  pathlib.Path(out).write_text("\n".join(["{", *head, *body, "}"]) + "\n")

def load_coverage(path=COVERAGE) -> dict | None:
  """The coverage file's contents, None if it is missing. Raises ValueError for a file of another schema."""
  try: doc = json.loads(pathlib.Path(path).read_text())
  except FileNotFoundError: return None
  if doc.get("schema") != SCHEMA:
    raise ValueError(f"{path}: schema {doc.get('schema')!r}, this mockgpu reads {SCHEMA}; regenerate it: mockgpu emu fidelity --update-coverage")
  return doc

def warnings(cov: dict | None) -> list[str]:
  """Why the coverage file may not describe this installation (missing, other versions, changed pseudocode or tests, failures)."""
  import importlib.metadata, mockgpu
  regen = "regenerate it in a checkout with `mockgpu emu fidelity --update-coverage`"
  if cov is None: return [f"no test coverage data ({COVERAGE.name} is missing): the test columns are empty; {regen}"]
  now = {"mockgpu": mockgpu.__version__, "tinygrad": importlib.metadata.version("tinygrad")}
  w = [f"recorded with {k} {cov[k]}, this is {k} {v}; {regen}" for k, v in now.items() if cov[k] != v]
  w += [f"the {f} pseudocode or its corrections changed since the coverage was recorded; {regen}" for f, h in _pcode_hashes().items()
        if cov["pcode"].get(f) != h]
  if (h := tests_hash(cov["paths"])) is not None and h != cov["tests_hash"]:
    w.append(f"the tests under {', '.join(cov['paths'])} changed since the coverage was recorded; {regen}")
  if (f := cov["outcome"]["failed"]):
    w.append(f"{len(f)} test(s) failed when it was recorded and are not counted: {', '.join(f[:5])}{' ...' if len(f) > 5 else ''}")
  return w

def rows(arch: str, cov: dict | None) -> list[Row]:
  """Every instruction of `arch` with the passing tests of each kind that executed it there (hw_fact: tests marked
  hw_fact naming it), sorted by mnemonic. Coverage is recorded per emulator library (`library_arch`): gfx942 shows gfx950's,
  but for the ops it stops at (`unmodelled_ops`)."""
  from mockgpu.emu.arch import library_arch, unmodelled_ops
  a = _arch(arch)
  name, um = a.name, unmodelled_ops(a)   # tests of the shared library do not run what this arch stops at
  tests, ran = (cov["tests"], {m: ix for m, ix in cov["ran"].get(library_arch(a).name, {}).items() if m not in um}) if cov else ([], {})
  def by_kind(m):
    ts = [tests[i] for i in ran.get(m, ())]
    return {k: tuple(t["id"] for t in ts if (m in t.get("hw_fact", ()) if k == "hw_fact" else t["kind"] == k)) for k in KINDS}
  return [Row(name, m, im, by_kind(m)) for m, im in sorted(implementations(name).items())]

def totals(rs: list[Row]) -> dict[str, int]:
  """{"instructions", each status, each test kind (instructions with at least one such test), "untested"} of `rs`."""
  return {"instructions": len(rs), **{s: sum(r.status == s for r in rs) for s in STATUSES},
          **{k: sum(bool(r.tests.get(k)) for r in rs) for k in KINDS}, "untested": sum(not any(r.tests.values()) for r in rs)}

def verdict(r: Row) -> str:
  """One line answering "can I trust it" for one row."""
  if r.status == "unsupported": return "not modelled: " + next(i.detail for i in r.impls if i.status == "unsupported")
  src = {"published": "runs AMD's pseudocode as published", "corrected": "runs AMD's pseudocode with a correction (corrections.FIXES)",
         "prose": "hand-written from the ISA's prose (no usable pseudocode)"}[r.status]
  t = r.tests
  how = ("checked against hardware facts" if t.get("hw_fact") else
         "checked against known answers (numpy, exact arithmetic, the ISA text)" if t.get("known-answer") else
         "only compared between the two backends on random inputs (a wrong shared model would pass)" if t.get("differential") else
         "no test executes it")
  return f"{src}; {how}"

# ---- output
_HEAD = f"{'instruction':34s} {'status':11s} {'encodings':24s} {'diff':>4s} {'known':>5s} {'hw':>3s}  detail"

def _line(r: Row) -> str:
  enc = ",".join(dict.fromkeys(i.fmt for i in r.impls))
  mixed = len({i.status for i in r.impls}) > 1
  det = "; ".join(dict.fromkeys(f"{i.fmt}: " * mixed + (i.detail or f"runs {i.entry}") for i in r.impls if i.detail or len(r.impls) == 1))
  n = [len(r.tests.get(k, ())) or "-" for k in KINDS]
  return f"{r.mnemonic:34s} {r.status:11s} {enc:24s} {n[0]:>4} {n[1]:>5} {n[2]:>3}  {det}"

def totals_table(per_arch: dict[str, list[Row]]) -> str:
  """The per-arch totals as a Markdown table (what docs/fidelity.md holds)."""
  from mockgpu.emu.arch import ARCHS
  cols = ("instructions", *STATUSES, *KINDS, "untested")
  L = ["| arch | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
  for a, rs in per_arch.items():
    t = totals(rs)
    L.append(f"| {a} ({ARCHS[a].family}) | " + " | ".join(str(t[c]) for c in cols) + " |")
  return "\n".join(L)

def explain(name: str, per_arch: dict[str, list[Row]]) -> str:
  """The answer to "can I trust instruction `name`" on each arch: status, correction (reason, source), tests by kind."""
  m, L = mnemonic(name), []
  for a, rs in per_arch.items():
    r = next((r for r in rs if r.mnemonic == m), None)
    if r is None: L.append(f"{a}: no such instruction"); continue
    L.append(f"{a}: {r.status}: {verdict(r)}")
    for i in r.impls:
      L.append(f"  {i.fmt} {i.op}: {i.status}" + (f", pseudocode {i.entry}" if i.entry else "") + (f"; {i.detail}" if i.detail else ""))
      for reason, source in i.fixes: L += [f"    reason: {reason}", f"    source: {source}"]
    for k in KINDS: L.append(f"  {k} tests ({len(r.tests.get(k, ()))}): " + (", ".join(r.tests[k]) if r.tests.get(k) else "none"))
  return f"{m}\n" + "\n".join(L)

def report(archs: list[str], names: list[str], status: str | None = None, untested: bool = False, only_totals: bool = False,
           json_out: str | None = None, path=COVERAGE) -> tuple[int, str]:
  """(exit code, text) of `mockgpu emu fidelity`; see emu/cli.py for the options. Writes `json_out` ("-": into the text)."""
  import difflib
  from mockgpu.emu.arch import ARCHS
  cov = load_coverage(path)
  per_arch = {a: rows(a, cov) for a in dict.fromkeys(_arch(x).name for x in (archs or ARCHS))}
  sel = {a: [r for r in rs if (not names or r.mnemonic in {mnemonic(n) for n in names}) and (status is None or r.status == status)
             and (not untested or not any(r.tests.values()))] for a, rs in per_arch.items()}
  unknown = [n for n in names if not any(r.mnemonic == mnemonic(n) for rs in per_arch.values() for r in rs)]
  if unknown:
    every = sorted({r.mnemonic for rs in per_arch.values() for r in rs})
    return 2, "\n".join(f"mockgpu emu fidelity: no instruction {n!r} on {', '.join(per_arch)}" +
                        (f"; did you mean {', '.join(c)}?" if (c := difflib.get_close_matches(mnemonic(n), every, 3)) else "") for n in unknown)
  head = [f"warning: {w}" for w in warnings(cov)]
  if cov: head.insert(0, f"test coverage recorded {cov['generated']} (mockgpu {cov['mockgpu']}, tinygrad {cov['tinygrad']}, commit {cov['commit']}) "
                         f"from {cov['outcome']['passed']} passing tests under {', '.join(cov['paths'])}")
  if json_out is not None:
    row = lambda r: {"status": r.status, "verdict": verdict(r), "tests": r.tests, "encodings": [dataclasses.asdict(i) for i in r.impls]}
    doc = {"coverage": {k: cov[k] for k in ("generated", "mockgpu", "tinygrad", "commit", "paths")} if cov else None, "warnings": warnings(cov),
           "archs": {a: {"totals": totals(per_arch[a]), "instructions": {r.mnemonic: row(r) for r in rs}} for a, rs in sel.items()}}
    text = json.dumps(doc, indent=1)
    if json_out == "-": return 0, text
    pathlib.Path(json_out).write_text(text + "\n")
  if names: return 0, "\n".join(head + [explain(n, per_arch) for n in dict.fromkeys(names)])
  body = [] if only_totals else [x for a, rs in sel.items() for x in (f"\n{a} ({ARCHS[a].family}): {len(rs)} instructions", _HEAD, *map(_line, rs))]
  return 0, "\n".join(head + body + ["", totals_table(per_arch)])

def update_coverage(paths=DEFAULT_TESTS, jobs: int = 1, out=COVERAGE) -> int:
  """Run the tests under `paths` of the checkout with fidelity_plugin recording into `out`; returns pytest's exit code."""
  if not (ROOT / "tests").is_dir():
    raise FileNotFoundError(f"{ROOT / 'tests'} does not exist: --update-coverage runs the test suite of a mockgpu checkout (tests are not installed)")
  cmd = [sys.executable, "-m", "pytest", "-q", "-p", "mockgpu.emu.fidelity_plugin", f"--fidelity-coverage={out}",
         *(["-n", str(jobs)] if jobs > 1 else ["-p", "no:xdist"]), *paths]
  print("running " + " ".join(cmd[2:]), file=sys.stderr)
  return subprocess.run(cmd, cwd=ROOT).returncode
