"""pytest plugin behind `mockgpu emu fidelity --update-coverage` (loaded explicitly: `-p mockgpu.emu.fidelity_plugin
--fidelity-coverage=FILE`). During each test's call phase the emulator (api.OP_HOOKS: the opcodes of every dispatch that ran,
also one that raised) and the pseudocode harness (cabi.RUN_HOOKS: every entry run) report what executes; each passing test
is written to FILE with the instructions it ran per arch, its kind (marker `differential`, else known-answer) and its
`hw_fact` markers (fidelity.write_coverage); a test with a failing parametrization is left out. Works under pytest-xdist:
workers send their records in the reports' user_properties."""
import pytest
from mockgpu.emu import fidelity
from mockgpu.emu.arch import get_arch, library_arch

def pytest_addoption(parser):
  parser.addoption("--fidelity-coverage", metavar="FILE", help="record the instructions each passing test executes into FILE (docs/fidelity.md)")

def pytest_configure(config):
  if (out := config.getoption("fidelity_coverage")): config.pluginmanager.register(Recorder(config, out), "mockgpu-fidelity-recorder")

def _hw_fact(item) -> tuple[list[str], str | None]:
  ms = list(item.iter_markers("hw_fact"))
  src = "; ".join(dict.fromkeys(str(m.kwargs["source"]) for m in ms if "source" in m.kwargs))
  return sorted({fidelity.mnemonic(n) for m in ms for n in m.args}), src or None

class Recorder:
  def __init__(self, config, out):
    self.config, self.out, self.ran, self.tests, self.failed, self.skipped = config, out, set(), {}, set(), 0
  def _op(self, arch: str, counts: dict):   # keyed by the library that ran it: gfx942 and gfx950 run the same generated code
    lib = library_arch(get_arch(arch)).name
    self.ran.update((lib, fidelity.mnemonic(k)) for k in counts)
  def _entry(self, family: str, name: str): self.ran.add((fidelity.arch_of(family), fidelity.mnemonic(name)))

  def pytest_collection_modifyitems(self, config, items):
    """Leave out the `engine` tests (how kernels run: translated, on several threads): recording counts instructions, which
    runs every kernel interpreted on one thread, so they would fail without saying anything about an instruction."""
    out = [i for i in items if i.get_closest_marker("engine")]
    if out: config.hook.pytest_deselected(items=out); items[:] = [i for i in items if not i.get_closest_marker("engine")]

  @pytest.hookimpl(wrapper=True)
  def pytest_runtest_call(self, item):
    from mockgpu.emu.api import OP_HOOKS
    from mockgpu.pcode.cabi import RUN_HOOKS
    self.ran = set()
    OP_HOOKS.append(self._op); RUN_HOOKS.append(self._entry)
    try: return (yield)
    finally:
      OP_HOOKS.remove(self._op); RUN_HOOKS.remove(self._entry)
      hw, src = _hw_fact(item)
      item.user_properties.append(("mockgpu_fidelity", {"ran": sorted(self.ran), "hw_fact": hw, "source": src,
                                                        "kind": "differential" if item.get_closest_marker("differential") else "known-answer"}))

  def pytest_runtest_logreport(self, report):
    if hasattr(self.config, "workerinput"): return   # an xdist worker: the controller sees the same report
    tid = report.nodeid.split("[")[0]                  # parametrizations of a test are one test here
    if report.failed: self.failed.add(report.nodeid)
    elif report.skipped and report.when != "teardown": self.skipped += 1
    if report.when != "call" or not report.passed: return
    rec = dict(report.user_properties).get("mockgpu_fidelity")
    if rec is None: return
    t = self.tests.setdefault(tid, {"kind": rec["kind"], "hw_fact": set(), "source": rec["source"], "ran": set()})
    t["hw_fact"] |= set(rec["hw_fact"]); t["ran"] |= {tuple(x) for x in rec["ran"]}

  def pytest_sessionfinish(self, session):
    if hasattr(self.config, "workerinput"): return
    tests = {k: v for k, v in self.tests.items() if not any(f.split("[")[0] == k for f in self.failed)}
    fidelity.write_coverage(self.out, tests, sorted(self.failed), self.skipped, [str(a) for a in self.config.args] or fidelity.DEFAULT_TESTS)
    unseen = sorted((t, m) for t, v in tests.items() for m in v["hw_fact"] if not any(mm == m for _, mm in v["ran"]))
    for t, m in unseen: print(f"\nmockgpu fidelity: {t} is marked hw_fact({m!r}) but never executes {m}; it is not counted for it")
    print(f"\nmockgpu fidelity: {len(tests)} passing tests recorded into {self.out} ({len(self.failed)} failed, not counted)")
