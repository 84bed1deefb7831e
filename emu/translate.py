"""The kernel translator: hot kernels compiled whole into C, the interpreter as fallback and reference (docs/emu.md, "Translator").

A kernel (code known by its bytes, wherever it is loaded) that has spent `TIER` times its estimated compile time interpreted
(a ski-rental rule: at most twice the interpreter's cost for a kernel that stops right then, the translated speed for one that
runs on) is translated in a background thread, or at once when the library cache holds its translation from an earlier run:
every instruction its dispatches decoded becomes one step of `xk_run` (csrc/emu_xlat.h XSTEP) with its decoded fields as a C constant and its generated handler inlined, so the compiler folds operand selection and vectorises
the lane loops; runs of straight steps form blocks counted once (`_blocks`, `kernel_source`); jumps re-enter a switch on
the pc (branches as gotos), barriers, S_ENDPGM and waits return to the scheduler, and a pc the kernel does not hold is run by
the interpreter. Handlers without generated C (matrix, image, ... ops) are called through the interpreter's decode cache. Counting, the watchdog, the timeout and fault records are the interpreter's.
Libraries are cached by the hash of the emulator library, this module and the instructions' bytes in the library cache
(`mockgpu.cbuild.shared_library`, stem `xk-<arch>-<hash>`).

The tier counts the interpreted seconds of earlier processes too: at exit each process adds its own for the kernels it did not
translate to `<cache>/xk-<arch>.hot.json` (by translation key), so a kernel hot across short runs (a test suite, a script run
again and again) is translated once their sum reaches the tier, and from then on loaded from the library cache.

A dispatch that runs on interpreted asks at its time checks (every 2^20 wave-instructions) whether its kernel's translation
is ready, counting its seconds so far towards the tier, and adopts it mid-dispatch (`Translator.running`): a single long
dispatch (a large GEMM) gets the translated speed for the rest of its run.

$MOCKGPU_EMU_XLAT: "auto" (default: tiered as above, compiled in the background), "off" (interpreter only), "sync" (every
kernel is translated after its first dispatch, or at the first time check of one still running, compiled before the call
returns: tests)."""
from __future__ import annotations
import atexit, ctypes, json, os, pathlib, re, subprocess, sys, threading, time
from dataclasses import dataclass, field
from mockgpu import cbuild
from mockgpu.emu.arch import ArchSpec

__all__ = ["TIER", "mode", "Kernel", "Parts", "parts", "write_parts", "Translator", "translator", "kernel_source"]

TIER = float(os.environ.get("MOCKGPU_EMU_XLAT_TIER", "1"))   # a kernel is translated once its interpreted seconds reach TIER x its estimated compile seconds
COMPILE_S_PER_INST = 0.05   # the first estimate of gcc's seconds per instruction (tinygrad's matmul kernel, 137: 6.7 s); each build refines it
TRACE_CAP = 1 << 16    # most instructions of one kernel the translator takes
INLINE_PROSE = ("h_nop", "h_endpgm", "h_barrier", "h_sleep")   # hand-written handlers (csrc/emu_prose.h) inlined like generated ones
KEEP = 200             # translated kernels kept in the library cache per arch
CANDIDATES, ADDRS = 16, 4096   # kernels remembered per 64-byte code prefix and code addresses remembered (the most recent): lookups stay cheap
HOT_KEEP = 4096         # kernels whose interpreted seconds the hot file keeps per arch (the most recently updated)
BLOCK_MAX = 96          # most steps per block: longer blocks hold longer fused runs (with _xcflags' inlining limit; matmul one-off: 12, 24, 64, 96, 200 -> 183, 196, 207, 221, 220 M/s)

def _xcflags() -> tuple[str, ...]:
  """A translated kernel's compiler flags: the emulator library's; for gcc the cheap vectoriser cost model, whose -O2 default
  leaves the direct steps' loops over a runtime count of lanes (XFAST) scalar, no size limit on inlining into a large
  function, whose default (2700 insns) left a long block calling its handlers' helpers, and no loops turned into library calls
  (a fused chunk's V_MOV became a memmove call). Matmul, one-off, 96-step blocks: 36 -> 194 -> 225 M/s."""
  from mockgpu.emu.build import CFLAGS
  return (*CFLAGS, *(() if "clang" in cbuild.compiler()[1] else
                     ("-fvect-cost-model=cheap", "--param=large-function-insns=100000", "-fno-tree-loop-distribute-patterns")))

def mode() -> str:
  m = os.environ.get("MOCKGPU_EMU_XLAT", "auto") or "auto"
  if m not in ("auto", "off", "sync"):
    from mockgpu.emu.errors import UnsupportedDispatch
    raise UnsupportedDispatch(f"MOCKGPU_EMU_XLAT={m!r}: choose auto (default), off or sync")
  return m

_SOURCE = pathlib.Path(__file__).read_text()   # part of every translation's cache key (kernel_source)

@dataclass
class Kernel:
  """What the translator knows of the code at one address: the instructions its dispatches decoded (pcs, with the code bytes
  they were read from; their decoded Insts), the interpreter's time on them, and the translated function
  once compiled."""
  code: bytes = b""                 # the code bytes from offset 0 to the end of the last known instruction
  pcs: tuple[int, ...] = ()
  acc_off: int = 0                  # the AccVGPR offset its dispatches decoded with (CDNA: from RSRC3)
  decoded: list = field(default_factory=list)   # Translator._decode of pcs, whenever they grow (its key is made of it)
  seconds: float = 0.0              # wall seconds of its interpreted dispatches in this process
  key: str = ""                     # its translation's cache key (cbuild.key of Translator._parts)
  prior: float = 0.0                # interpreted seconds earlier processes left for that key (Translator.hot)
  state: str = "cold"               # cold -> compiling -> ready | failed
  fn: int = 0                       # address of xk_run
  pcs_arr: object = None
  lib: object = None
  error: str = ""
  lock: threading.Lock = field(default_factory=threading.Lock)

@dataclass(frozen=True)
class Parts:
  """What a translated kernel's C is made of, from the generator of the emulator library it runs in (gen_c.generate)."""
  head: str                 # defines, decoded-field struct, includes (as the library's handler units start)
  fields: tuple[str, ...]   # the decoded fields of Inst after its fixed members (EMU_INST_FIELDS)
  pcpre: str                # pcode's C before its first entry (hook defaults)
  pcfns: dict               # pc_* name -> its C
  cnames: tuple[str, ...]   # hid -> handler C function
  handler_src: dict         # generated handler -> its C
  xlat_src: dict            # handler -> its translator variant's C (gen_c._xvalu, X of _vopd_half)
  names: tuple[str, ...]    # hid -> "FORMAT OPNAME"
  flows: tuple[int, ...]    # hid -> gen_c.FLOW: PLAIN steps run in blocks
  fuse: tuple[str, ...]     # the lane-local variants of xlat_src (gen_c.Generated.fuse): a block fuses runs of them
  groups: dict              # plain global load handler -> (its load-group C, address field, dwords) (gen_c.Generated.groups)

def write_parts(arch_name: str, lib_stem: str):
  """Generate the Parts of the emulator library `lib_stem` (pcode's emitter and gen_c: seconds to a minute of Python) into
  `<cache>/<stem>.xlat.json`. parts() runs it in a child interpreter, so the GIL stays free for the process being emulated."""
  from mockgpu.emu.arch import get_arch
  from mockgpu.emu.build import _emit
  from mockgpu.emu.gen_c import generate
  arch = get_arch(arch_name)
  pc = _emit(arch)
  gen = generate(arch, pc, set(re.findall(r"\bvoid\s+(pc_\w+)\s*\(\s*PcState\s*\*", pc)), chunks=1)
  head = gen.sources[1][:gen.sources[1].index(pc)]
  p = Parts(head, tuple(re.search(r"#define EMU_INST_FIELDS int32_t ([^;]*);", head)[1].replace(" ", "").split(",")),
            pc[:pc.index("static inline void pc_")],
            {m[1]: m[0] for m in re.finditer(r"^static inline void (pc_\w+)\(PcState \*s\) \{\n.*?^\}\n", pc, re.S | re.M)},
            gen.cnames, gen.handler_src, gen.xlat_src, gen.handlers, gen.flows, gen.fuse, gen.groups)
  f = cbuild.cache_dir() / f"{lib_stem}.xlat.json"
  tmp = f.with_suffix(f".{os.getpid()}.tmp"); tmp.write_text(json.dumps(p.__dict__)); tmp.replace(f)

_PARTS: dict[str, Parts] = {}
def parts(arch: ArchSpec, lib_stem: str) -> Parts:
  """Parts for the emulator library `lib_stem`, generated once (write_parts) and kept next to it in the library cache."""
  if (p := _PARTS.get(lib_stem)) is not None: return p
  f = cbuild.cache_dir() / f"{lib_stem}.xlat.json"
  for attempt in range(2):
    try: p = Parts(**json.loads(f.read_text())); break
    except (OSError, ValueError, TypeError):
      if attempt: raise
      r = subprocess.run([sys.executable, "-c", f"from mockgpu.emu.translate import write_parts; write_parts({arch.name!r}, {lib_stem!r})"],
                         capture_output=True, text=True)
      if r.returncode != 0: raise RuntimeError(f"generating the translator's parts for {lib_stem} failed: {r.stderr[-2000:]}")
  _PARTS[lib_stem] = p
  return p

def _vopd_halves(p: Parts, hid: int, vals: tuple[int, ...]) -> tuple[str, str]:
  """The generated half handlers (VH_*) of a VOPD instruction: X from its hid (HBASE + opx), Y from opy."""
  opx, opy = vals[11 + p.fields.index("opx")], vals[11 + p.fields.index("opy")]
  return tuple("VH_" + p.names[hid - opx + o].split()[1] for o in (opx, opy))

def _blocks(p: Parts, insts: list, straight: list[bool]) -> dict[int, int]:
  """{first instruction: length} of the blocks: maximal runs of straight steps (gen_c.FLOW PLAIN, compiled here) at consecutive
  pcs, split at every SIMM16 branch target so a jump enters a block at its start."""
  from mockgpu.emu.gen_c import FLOW
  f16 = 11 + p.fields.index("simm16")
  targets = {pc + 4 + (((v[f16] & 0xffff) ^ 0x8000) - 0x8000) * 4
             for pc, _, v in insts if 0 <= v[1] < len(p.flows) and p.flows[v[1]] == FLOW["REL"]}
  out, start = {}, None
  for k, (pc, _, _) in enumerate(insts):
    if start is not None and (not straight[k] or pc in targets or insts[k - 1][1] != pc or out[start] == BLOCK_MAX): start = None
    if straight[k] and start is None: start = k; out[k] = 0
    if start is not None: out[start] += 1
  return out

def kernel_source(p: Parts, insts: list[tuple[int, int, tuple[int, ...]]]) -> str:
  """The C of a translated kernel: `insts` are (pc, next pc, Inst values in declaration order: fmt, hid, size, dpp_kind,
  has_lit, valid, lit, raw[4], then the decoded fields). Each handler is inlined with its constant Inst into a function of a
  few instructions (one function holding every handler would take gcc minutes): straight steps (generated handlers that only
  fall through, gen_c.FLOW PLAIN, and no-ops) run in blocks (`_blocks`), one function per block with its steps inlined,
  entered when the whole block fits the watchdog budget and the next time check (counted once), else the interpreter's
  handlers run them one XSTEP at a time, as they do for an entry into the middle of a block (op counts, run(op_counts=True), are
  kept per step and per block as the interpreter keeps them: `xcount`); every other step is a function
  of its own, or the interpreter's handler. A block's VALU and VOPD steps inline only their translator variants' fast paths,
  which run while XFAST holds (csrc/emu_xlat.h: the active lanes are lanes 0..n-1, the first fast float mode; checked at the block's start and
  after each step that may change EXEC or MODE; no modifiers); every other case runs the interpreter's compiled handler
  (XHANDLER), which keeps the C a kernel compiles small (tinygrad's 256 matmul kernel: 6.7 s of gcc; 25 s with the handlers
  inlined too, 8.6 s with the variants' other cases: any EXEC, the other fast mode). Consecutive lane-local ones (Parts.fuse)
  form fused runs: on a full wave, every step of the run on XCHUNK lanes at a time (docs/emu.md "Fused runs"); consecutive plain
  global loads off one address form load groups, whose lanes' addresses are checked once (gen_c._load_group, "Load groups")."""
  from mockgpu.emu.gen_c import FLOW
  used, xused, steps, consts, fns, straight, nop, direct, exec_w, fuse, cns, gused = [], [], [], [], [], [], set(), {}, {}, {}, [], []
  fld = lambda j, name: insts[j][2][11 + p.fields.index(name)]
  for k, (pc, nxt, vals) in enumerate(insts):
    hid = vals[1]
    cn = p.cnames[hid] if 0 <= hid < len(p.cnames) else "0"
    cns.append(cn)
    consts.append(f"static const Inst X{k} = {{0, {', '.join(map(str, vals[:7]))}, {{{', '.join(map(str, vals[7:11]))}}}, {', '.join(map(str, vals[11:]))}}};")
    vh = _vopd_halves(p, hid, vals) if cn == "h_vopd" else ()
    plain = 0 <= hid < len(p.flows) and p.flows[hid] == FLOW["PLAIN"]
    if vh and all(h in p.xlat_src for h in vh):   # csrc/emu_sched.c h_vopd, as D: both halves' translator variants under XFAST
      # into buffers, then the rows written; a half that cannot fault writes its row from its loop: Y always (it runs last), X
      # when Y cannot fault either and reads no row X writes
      xused += [h for h in dict.fromkeys(vh) if h not in xused]   # both halves may be the same op (V_DUAL_FMAC_F32 twice)
      direct[k] = f"D{k}(w, {{v}}, {{n}})"   # V (+ a fused chunk's first lane), lane base and count
      if all(h in p.fuse for h in vh): fuse[k] = "1"
      fx, fy = (vals[11 + p.fields.index(n)] for n in ("vdstx", "vdsty"))
      xok, yok = (f"XP_{vh[0]} && XP_{vh[1]}", f"XP_{vh[1]}") if fx != fy else ("0", "0")
      if fx in (vals[11 + p.fields.index("srcy0")], vals[11 + p.fields.index("vsrcy1")]): xok = "0"
      fns.append(f"static inline __attribute__((always_inline)) int D{k}(Wave *w, uint32_t *V, int lb, int nl) {{ const Inst *in = &X{k}; uint32_t ox[MAXLANES], oy[MAXLANES];"
                 f" uint32_t *dx = V + (in->vdstx - 256) * MAXLANES, *dy = V + (in->vdsty - 256) * MAXLANES; const int px = {xok}, py = {yok};"
                 f" if (!(X{vh[0]}(w, V, in, 0, px ? dx : ox, lb, nl) && X{vh[1]}(w, V, in, 1, py ? dy : oy, lb, nl))) return 0;"
                 " if (!px) memcpy(dx, ox, 4 * nl); if (!py) memcpy(dy, oy, 4 * nl); return 1; }")
      straight.append(plain)
    elif cn == "h_nop": fns.append(""); straight.append(True); nop.add(k)   # S_WAITCNT, ...: counting only
    elif cn == "h_vopd": fns.append(""); straight.append(plain)   # a half without a variant: the interpreter's handler (XHANDLER)
    elif cn in p.xlat_src:   # in a block its fast path under XFAST, else the interpreter's handler
      if cn not in xused: xused.append(cn)
      direct[k] = f"XV_{cn}(w, {{v}}, &X{k}, {{n}})"
      if cn in p.fuse: fuse[k] = f"XG_{cn}(&X{k})"
      exec_w[k] = f"XE_{cn}"   # gen_c._xvalu: 1 if the variant may write EXEC
      fns.append("")
      straight.append(plain)
    elif cn in p.handler_src or cn in INLINE_PROSE:
      if cn in p.handler_src and cn not in used: used.append(cn)
      st = plain and cn in p.handler_src
      fns.append(f"static {'inline __attribute__((always_inline))' if st else '__attribute__((noinline))'} void S{k}(Wave *w) "
                 f"{{ {cn}(w, &X{k}); }}")   # operands fixed by the constant Inst
      straight.append(st)
    else: fns.append(""); straight.append(False)
  blocks, blk_fns = _blocks(p, insts, straight), []
  for k, (pc, nxt, vals) in enumerate(insts):
    icall = f"{{ const Inst *ic = &c->icache[{pc >> 2}]; ic->fn(w, ic); }}"   # the interpreter's handler (decoded before the dispatch)
    call = "(void)0" if k in nop else icall if straight[k] or not fns[k] or k in direct else f"S{k}(w)"
    if k in blocks:   # a block's fast path: counted once, each step inlined with its status check
      n, body, pend, gpend = blocks[k], [], [], []
      def fused():   # a run of lane-local steps (nops between them aside): on a full wave, the lanes XCHUNK at a time through every
        # step (a chunk's rows stay in the host's registers from one step to the next), else (or a run of one) step by step
        if len(pend) > 1: body.append(f"  if (d == EMU_FAST_LANES && {' && '.join(fuse[j] for j, _ in pend)}) for (int c0 = 0; c0 < EMU_FAST_LANES; "
                                      "c0 += XCHUNK) { " + " ".join(f"(void){direct[j].format(v='V + c0', n='c0, XCHUNK')};" for j, _ in pend) + " } else {")
        body.extend(x for _, x in pend)
        if len(pend) > 1: body.append("  }")
        pend.clear()
      def grouped():   # a run of plain global loads off one address VGPR pair and SGPR base (gen_c._load_group): the lanes'
        # addresses scanned and checked once for the run (GC_); each load then copies (G_), else each runs as it is
        if len(gpend) > 1:
          h, (j0, _), (jl, _) = cns[gpend[0][0]], gpend[0], gpend[-1]
          if h not in gused: gused.append(h)
          body.append(f"  {{ const int64_t go[] = {{{', '.join(f'GO_{h}(&X{j})' for j, _ in gpend)}}}; int64_t omin = go[0], omax = go[0]; uint64_t gb;"
                      f" for (int i = 1; i < {len(gpend)}; i++) {{ omin = go[i] < omin ? go[i] : omin; omax = go[i] > omax ? go[i] : omax; }}\n"
                      f"  if (GC_{h}(w, &X{j0}, omin, omax, &gb)) {{ w->pc0 = {insts[jl][0]}u; w->pc = {insts[jl][1]}u; "
                      + " ".join(f"G_{h}(w, &X{j}, gb);" for j, _ in gpend) + " } else {")
        body.extend(x for _, x in gpend)
        if len(gpend) > 1: body.append("  } }")
        gpend.clear()
      def joins(j):   # load j continues the pending run: same handler, address and base, its address rows not loaded into before
        if not gpend: return True
        i0, A, nd = gpend[0][0], p.groups[cns[j]][1], p.groups[cns[j]][2]
        return (cns[j] == cns[i0] and fld(j, A) == fld(i0, A) and fld(j, "saddr") == fld(i0, "saddr") and
                not any(fld(i, "vdst") <= a < fld(i, "vdst") + nd for i, _ in gpend for a in (fld(j, A), fld(j, A) + 1)))
      for j in range(k, k + n):
        pj, nj, _ = insts[j]
        if j in nop: continue
        run = (f"w->pc0 = {pj}u; w->pc = {nj}u; {'XHANDLER(w)' if j in direct or not fns[j] else f'S{j}(w)'};\n  if (UNLIKELY(c->status)) {{ c->icount -= {k + n - 1 - j}u; "
               f"xcount(c, H{k}, {j - k + 1}); record_inst(c, w, {pj}u, X{j}.raw, X{j}.size, X{j}.fmt, X{j}.opx ? X{j}.opx : X{j}.op); return 1; }}")
        again = " d = XFAST(w);" if any(i in direct for i in range(j + 1, k + n)) else ""   # EXEC or MODE may have changed
        line = (f"  if (UNLIKELY(!(d && {direct[j].format(v='V', n='0, d')}))) {{ {run}{again} }}" + (f" if ({exec_w[j]}){again}" if j in exec_w and again else "")
                if j in direct else f"  {run}" + again)
        if j in fuse: grouped(); pend.append((j, line)); continue
        fused()
        if j not in direct and cns[j] in p.groups:
          if not joins(j): grouped()
          gpend.append((j, line)); continue
        grouped(); body.append(line)
      fused(); grouped()
      if any(j in direct for j in range(k, k + n)): body.insert(0, "  int d = XFAST(w); uint32_t *const V = w->v;")
      blk_fns.append(f"static const uint32_t H{k}[] = {{{', '.join(str(insts[j][2][1]) for j in range(k, k + n))}}};\n"   # its handlers, for op counts
                     f"static __attribute__((noinline)) int B{k}(Ctx *c, Wave *w) {{\n" + "\n".join(body) +
                     f"\n  xcount(c, H{k}, {n}); w->pc0 = {insts[k + n - 1][0]}u; w->pc = {insts[k + n - 1][1]}u; return 0;\n}}")
      end = k + n
      after = (f"goto {'B' if end in blocks else 'L'}{end};" if end < len(insts) and insts[end][0] == insts[end - 1][1] else "continue;")
      steps.append(f"  B{k}: if (LIKELY(c->icount + {n}u <= c->budget && c->icount + {n}u < c->next_time_check)) {{ c->icount += {n}u; "
                   f"if (B{k}(c, w)) return 1; {after} }}")
    steps.append(f"  L{k}: XSTEP({pc}u, {nxt}u, X{k}, {call})" + ("" if k + 1 < len(insts) and insts[k + 1][0] == nxt else " continue;"))
  hsrc = [re.sub(r"^void (\w+)\((Wave)", r"static inline __attribute__((always_inline)) void \1(\2", p.handler_src[h], flags=re.M) for h in used]
  hsrc += [p.xlat_src[h] for h in xused] + [p.groups[h][0] for h in gused]
  need = sorted({f for h in hsrc for f in re.findall(r"\b(pc_\w+)\(&s\)", h)})
  pcfns, head, pcpre = p.pcfns, p.head, p.pcpre
  cases = " ".join(f"case {pc}u: goto {'B' if k in blocks else 'L'}{k};" for k, (pc, _, _) in enumerate(insts))
  decl = [f"static inline void {f}(PcState *s) __attribute__((always_inline));" for f in need if f in pcfns]   # as gen_c.always_inline
  return "\n".join([head, pcpre, *decl, *(pcfns[f] for f in need if f in pcfns), '#include "emu_xlat.h"', *hsrc, *consts, *fns, *blk_fns,
                    "int xk_run(Ctx *c, Wave *w) {", "  for (;;) {", f"  switch (w->pc) {{ {cases} default: return 0; }}", *steps, "  }", "}", ""])

class Translator:
  """The translated kernels of one arch's emulator library (cbackend.load)."""
  def __init__(self, arch: ArchSpec, dll: ctypes.CDLL, lib_stem: str):
    self.arch, self.dll, self.stem, self.lock = arch, dll, lib_stem, threading.Lock()
    self.kernels: dict[bytes, list[Kernel]] = {}   # first 64 code bytes -> the kernels last met with them
    self.at: dict[int, Kernel] = {}                # code address -> the kernel last seen there (the ADDRS most recent)
    self.rate = COMPILE_S_PER_INST   # gcc seconds per instruction: measured by each build in this process
    dll.emu_decode_inst.argtypes = [ctypes.POINTER(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    self.isize = dll.emu_inst_size()
    self.hot_path, self._hot = cbuild.cache_dir() / f"xk-{arch.name}.hot.json", None
    atexit.register(self.save_hot)

  def hot(self) -> dict[str, float]:
    """Interpreted seconds per translation key that earlier processes spent on kernels they did not translate (read once; a
    missing or unreadable file is none): the tier counts them, so a kernel hot across short runs is translated, and from then
    on loaded from the library cache. Advisory: a lost update (processes ending together) only delays a translation."""
    if self._hot is None:
      try: d = json.loads(self.hot_path.read_text())
      except (OSError, ValueError): d = {}
      self._hot = {k: float(v) for k, v in d.items() if isinstance(v, (int, float))} if isinstance(d, dict) else {}
    return self._hot

  def save_hot(self):
    """At exit: add this process's interpreted seconds of the kernels it did not translate to the hot file, drop the ones it
    translated (the library cache has them), keep the HOT_KEEP most recently updated."""
    with self.lock: ks = [k for c in self.kernels.values() for k in c if k.key]
    upd, done = {k.key: k.prior + k.seconds for k in ks if k.state != "ready" and k.seconds > 0}, {k.key for k in ks if k.state == "ready"}
    if not upd and not done & set(self.hot()): return
    try:
      self._hot = None
      cur = {k: v for k, v in self.hot().items() if k not in upd and k not in done} | upd
      cbuild.atomic_write(self.hot_path, json.dumps(dict(list(cur.items())[-HOT_KEEP:])))
    except OSError: pass   # a read-only or vanished cache: the next process starts counting anew

  def _find(self, code_addr: int, code_end: int, new: bool = False) -> Kernel | None:
    """Kernels are known by their code, wherever it is loaded: the one last seen at `code_addr` if its code is still there,
    else the first 64 bytes pick the candidates (the CANDIDATES last met) and the whole code decides. `new`: a Kernel for
    unknown code (observe) instead of None."""
    def there(k: Kernel) -> bool: return code_addr + len(k.code) <= code_end and ctypes.string_at(code_addr, len(k.code)) == k.code
    if (k := self.at.get(code_addr)) is not None and there(k): return k
    cands = self.kernels.setdefault(ctypes.string_at(code_addr, min(64, code_end - code_addr)), [])
    if (k := next((c for c in cands if there(c)), None)) is None:
      if not new: return None
      cands.append(k := Kernel(code=ctypes.string_at(code_addr, min(64, code_end - code_addr))))
      del cands[:-CANDIDATES]
    self.at[code_addr] = k
    if len(self.at) > ADDRS: del self.at[next(iter(self.at))]
    return k

  def lookup(self, code_addr: int, code_end: int) -> Kernel | None:
    """The translated kernel whose code is at `code_addr` (None: not translated, or not compiled yet)."""
    with self.lock: k = self._find(code_addr, code_end)
    return k if k is not None and k.state == "ready" else None

  def observe(self, code_addr: int, code_end: int, pcs: list[int], seconds: float, acc_off: int, sync: bool, keep: bool = True):
    """After an interpreted dispatch of `seconds`: count it and the pcs it decoded; translate once the kernel is hot, at
    once when the library cache holds its translation already. keep=False: a dispatch still running (`running`), whose
    seconds count towards the tier now but are added when it ends."""
    with self.lock:
      k = self._find(code_addr, code_end, new=True)
      if k.state != "cold": return
      new = sorted(set(k.pcs) | set(pcs))
      if new and new[-1] + 16 > len(k.code):
        k.code = ctypes.string_at(code_addr, min(new[-1] + 16, code_end - code_addr))
      grew, k.pcs = tuple(new) != k.pcs or acc_off != k.acc_off, tuple(new)
      if keep: k.seconds += seconds
      if grew:   # keyed by the decoded instructions' bytes (the decode is a function of them)
        k.acc_off, k.decoded = acc_off, self._decode(k, acc_off)
        k.key = cbuild.key(self._parts(k), _xcflags())
        k.prior = self.hot().get(k.key, 0.0)
      if not k.pcs: return
      cached = grew and cbuild.verify(f"xk-{self.arch.name}-{k.key}")[0] is not None
      spent = k.prior + k.seconds + (0.0 if keep else seconds)
      if not (sync or cached or spent >= TIER * self.rate * len(k.pcs)): return
      k.state = "compiling"
    if sync or cached: self._compile(k)
    else: threading.Thread(target=self._compile, args=(k,), daemon=True, name="mockgpu-xlat").start()

  def running(self, code_addr: int, code_end: int, pcs: list[int], seconds: float, acc_off: int, sync: bool) -> int:
    """A dispatch of the kernel still interpreted after `seconds`, having decoded `pcs` (csrc/emu_xlat.h xlat_poll): counted
    as `observe` counts a finished one; the address of the kernel's translation once it is ready and holds only those pcs
    (the ones the dispatch's decode caches have), else 0."""
    self.observe(code_addr, code_end, pcs, seconds, acc_off, sync, keep=False)
    with self.lock: k = self._find(code_addr, code_end)
    return k.fn if k is not None and k.state == "ready" and set(k.pcs) <= set(pcs) else 0

  def _decode(self, k: Kernel, acc_off: int) -> list[tuple[int, bytes]]:
    """(pc, its decoded Inst after the handler pointer: fmt, hid, size, ..., the decoded fields) for each pc of `k` that decodes
    (emu_decode_inst zeroes the Inst first, so the bytes are the same in every process)."""
    buf, out = ctypes.create_string_buffer(self.isize), []
    for pc in k.pcs:
      words = (ctypes.c_uint32 * 4).from_buffer_copy(k.code[pc:pc + 16].ljust(16, b"\0"))
      if self.dll.emu_decode_inst(words, min(4, (len(k.code) - pc) // 4), acc_off, buf) > 0: out.append((pc, buf.raw[8:]))
    return out

  def _parts(self, k: Kernel) -> list[str]:
    """What a translation's library is keyed by: the emulator library (its generator and headers, so its decoder), this
    module's source (kernel_source), the AccVGPR offset and each decoded instruction's bytes (k.decoded: its size, not the 16
    bytes its decode reads, the ones after the last instruction being another buffer's, which may change from one load of
    the same code to the next, and missed the cache)."""
    return [self.stem, _SOURCE, f"acc_off={k.acc_off}", *(f"{pc}:{k.code[pc:pc + int.from_bytes(b[8:12], 'little')].hex()}" for pc, b in k.decoded)]

  def source(self, k: Kernel) -> str:
    """The C of `k`'s translation (kernel_source of its decoded instructions, k.decoded)."""
    p = parts(self.arch, self.stem)   # the first time per library: a child interpreter runs the generator (seconds)
    # Inst: 6 int32, lit, raw[4], then the decoded fields (csrc/emu_core.h); signed but lit and raw
    return kernel_source(p, [(pc, pc + v[2], v) for pc, b in k.decoded
                             for v in [tuple(int.from_bytes(b[o:o + 4], "little", signed=o < 24 or o >= 44) for o in range(0, 44 + 4 * len(p.fields), 4))]])

  def _compile(self, k: Kernel):
    try:
      from mockgpu.emu.build import CSRC, PCODE_DIR
      if not k.decoded: raise ValueError("none of its instructions decodes")
      t0 = []
      def generate():
        src = self.source(k)
        t0.append(time.perf_counter())
        return [src], {"arch": self.arch.name, "instructions": len(k.decoded)}
      path, _, built = cbuild.shared_library(f"xk-{self.arch.name}-", self._parts(k), _xcflags(), generate, KEEP, include=(CSRC, PCODE_DIR),
                                             what=f"a translated {self.arch.name} kernel")
      if built: self.rate = (time.perf_counter() - t0[0]) / len(k.decoded)   # gcc's time: the next kernels' estimate
      lib = ctypes.CDLL(str(path))
      k.lib, k.fn = lib, ctypes.cast(lib.xk_run, ctypes.c_void_p).value
      k.pcs = tuple(pc for pc, _ in k.decoded)
      k.pcs_arr = (ctypes.c_uint32 * len(k.pcs))(*k.pcs)
      # known by its instructions' bytes from now on: the 16 bytes read after the last pc may be another buffer's, which
      # differs from one load of the same code to the next (a kernel's arguments), and found no match
      k.code = k.code[:max(pc + int.from_bytes(b[8:12], "little") for pc, b in k.decoded)]
      k.state = "ready"
    except Exception as e:   # the interpreter keeps running the kernel; the reason is kept for `mockgpu emu bench` and tests
      k.state, k.error = "failed", f"{type(e).__name__}: {e}"

_TRANSLATORS: dict[str, Translator] = {}
def translator(arch: ArchSpec, dll: ctypes.CDLL, lib_stem: str) -> Translator:
  t = _TRANSLATORS.get(lib_stem)
  if t is None: t = _TRANSLATORS[lib_stem] = Translator(arch, dll, lib_stem)
  return t
