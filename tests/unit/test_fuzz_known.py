"""The known-findings registry (`mockgpu.tinygrad.fuzz.known`): one entry per fuzz finding of docs/findings.md and back, and
each signature matching its finding's failures (the documented minimised cases, and the real fuzzers' failures where they are
cheap to produce) but not failures of another nature."""
import re
from pathlib import Path
import pytest
from mockgpu.tinygrad.fuzz import known, registry
from mockgpu.tinygrad.fuzz.core import Failure, safe_check

FINDINGS_MD = Path(__file__).resolve().parents[2] / "docs" / "findings.md"

def _doc_ids() -> tuple[set[str], set[str]]:
  text = FINDINGS_MD.read_text()
  ids = set(re.findall(r"^## (\d+)\. ", text, re.M)) | set(re.findall(r"^\| (F\d+) \|", text, re.M)) | set(re.findall(r"^(F\d+) \(", text, re.M))
  m = re.search(r"^Not registered: (.*)$", text, re.M)
  assert m is not None, "docs/findings.md must say which findings have no registry entry (line 'Not registered: ...')"
  return ids, set(re.findall(r"\b(\d+|F\d+) \(", m[1]))

def test_every_documented_finding_has_an_entry_and_back():
  ids, unregistered = _doc_ids()
  assert unregistered == {"3"}  # the RDNA4 GEMM example: found by running it, no fuzzer meets it
  assert sorted(k.id for k in known.KNOWN) == sorted(ids - unregistered) and len({k.id for k in known.KNOWN}) == len(known.KNOWN)
  for k in known.KNOWN: assert set(k.kinds) <= set(registry.KINDS) and k.versions == ("0.14.0",) and k.title

def _render(nodes, inputs=(), n=1, outs=None, axis="LOOP"):
  return {"n": n, "axis": axis, "inputs": [{"dtype": d, "bits": b} for d, b in inputs], "nodes": nodes, "outs": outs or [len(nodes) - 1]}

def _mm(exe, dt="int32", msg="= 1, reference 2"): return Failure(f"mismatch:{exe}", f"{exe} out0[0] ({dt}) {msg}")

# (id, kind, failure, case): the documented minimised cases with the failure class their fuzzer gives them
MATCH = [
  ("1", "symbolic", Failure("exception:simplify:ZeroDivisionError", "simplifying (0//(v0|8)): integer modulo by zero"),
   {"dtype": "weakint", "vars": [[0, 5]], "expr": ["div", ["c", 0], ["or", ["v", 0], ["c", 8]]]}),
  ("1", "symbolic", Failure("exception:valid:ZeroDivisionError", "simplifying (0//v0) under valid (0<v0): integer modulo by zero"),
   {"dtype": "weakint", "vars": [[-1, -1]], "expr": ["div", ["c", 0], ["v", 0]], "gate": ["lt", ["c", 0], ["v", 0]]}),
  ("4", "symbolic", Failure("cast-bounds", "at : node CAST (char)(128) has vmin=128 vmax=127 but takes -128"),
   {"dtype": "weakint", "vars": [], "expr": ["cast", "int8", ["c", 128, "uint64"]]}),
  ("4", "symbolic", Failure("cast-mismatch", "at v0=-2147483648: expected False, simplified graph gives True"),
   {"dtype": "int32", "vars": [[-2147483648, -2147483648]], "expr": ["cast", "bool", ["cast", "int16", ["v", 0]]]}),
  ("5", "symbolic", Failure("valid-mismatch", "sym: at v0=-1, v1=1 (valid holds) expected 1, got -1"),
   {"dtype": "weakint", "vars": [[-1, -1], [1, 1]], "expr": ["and", ["v", 0], ["and", ["v", 1], ["v", 0]]], "gate": ["c", True]}),
  ("6", "symbolic", Failure("cast-mismatch", "at : expected 0, simplified graph gives 1"),
   {"dtype": "uint32", "vars": [], "expr": ["mod", ["cast", "uint32", ["c", 4294967296, "int64"]], ["c", 3]]}),
  ("6", "symbolic", Failure("unwrapped-const", "at : expected 4294967295, simplified graph gives 18446744073709551615"),
   {"dtype": "uint32", "vars": [], "expr": ["cast", "uint64", ["neg", ["c", 1]]]}),
  ("6", "symbolic", Failure("dtype-changed", "at : expected 4294967295, simplified graph gives -1"), {"dtype": "uint32", "vars": [], "expr": ["neg", ["c", 1]]}),
  ("6", "symbolic", Failure("wrap-mismatch", "at : expected 1, simplified graph gives 0"),
   {"dtype": "uint64", "vars": [], "expr": ["cmod", ["sub", ["c", 0], ["c", 3]], ["c", 3]]}),
  ("6", "symbolic", Failure("wrap-mismatch", "at : expected True, simplified graph gives False"),  # typed constants in a weakint case
   {"dtype": "weakint", "vars": [], "expr": ["lt", ["c", 0, "uint64"], ["neg", ["c", 1, "uint64"]]]}),
  ("6", "symbolic", Failure("wrap-mismatch", "at : expected 0, simplified graph gives 256"),
   {"dtype": "weakint", "vars": [], "expr": ["cast", "int16", ["shl", ["c", 16, "uint8"], ["c", 4, "uint8"]]]}),
  ("7", "symbolic", Failure("wrap-bounds", "at v0=65532: expected 0, simplified graph gives 32768"),
   {"dtype": "uint16", "vars": [[65532, 65532]], "expr": ["div", ["add", ["c", 4], ["v", 0]], ["c", 2]]}),
  ("7", "symbolic", Failure("wrap-mismatch", "at v0=255: expected True, simplified graph gives False"),
   {"dtype": "uint8", "vars": [[255, 255]], "expr": ["lt", ["add", ["c", 1], ["v", 0]], ["c", 1]]}),
  ("7", "symbolic", Failure("wrap-mismatch", "at v0=1: expected True, simplified graph gives False"),
   {"dtype": "uint16", "vars": [[1, 1]], "expr": ["lt", ["c", 0], ["neg", ["v", 0]]]}),
  ("2", "idiv", Failure("exception:lower:AssertionError", "lowering {...}: Sign should have been taken out of divisor"),
   {"mode": "uop", "ren": "CLANG", "dtype": "int8", "box": [[0, 0]], "expr": ["cdiv", ["x", 0], -1]}),
  ("2", "idiv", Failure("exception:kernel:AssertionError", "kernel {...}: Sign should have been taken out of divisor"),
   {"mode": "kernel", "dev": "CLANG", "dtype": "int32", "expr": ["floordiv", ["x", 0], -7], "src": ["uint8"], "values": [[0, 5, 255]]}),
  ("F1", "render", Failure("param-slot-collision:CLANG", "executor=CLANG: variable PARAMs [('core_id', 3)] ..."),
   _render([["in", "float32", 0], ["in", "bool", 1], ["const", "bool", 0], ["AND", "bool", 1, 2], ["in", "float32", 2],
            ["WHERE", "float32", 3, 0, 4]],
           [("float32", [1065353216, 0]), ("bool", [1, 0]), ("float32", [1065353216, 1065353216])], n=2, axis="GLOBAL")),
  ("F2", "render", _mm("CLANG", "float32", "= 4225.0, reference -127.0"),
   _render([["in", "int8", 0], ["MUL", "int8", 0, 0], ["CAST", "float32", 1]], [("int8", [191])])),
  ("F2", "render", _mm("CLANG-A64", "float32", "= 36481.0, reference 129.0"),
   _render([["in", "uint8", 0], ["MUL", "uint8", 0, 0], ["CAST", "float32", 1]], [("uint8", [191])])),
  ("F3", "render", _mm("X86", "int64"), _render([["idx", "int64", 0], ["const", "int64", 32], ["SHR", "int64", 0, 1]], n=2)),
  ("F3", "render", _mm("LLVM", "uint64"), _render([["idx", "int32", 0], ["CAST", "uint64", 0], ["const", "uint64", 40], ["SHL", "uint64", 1, 2]], n=2)),
  ("F4", "render", _mm("X86", "int8"), _render([["in", "int8", 0], ["const", "int8", 0], ["MAX", "int8", 0, 1], ["const", "int8", 0],
           ["in", "bool", 1], ["WHERE", "int8", 4, 3, 0], ["const", "int8", 0]], [("int8", [1, 1, 1, 0, 1]), ("bool", [1, 1, 0, 0, 0])], n=5,
           outs=[6, 5, 2], axis="GLOBAL")),
  ("F5", "render", _mm("LLVM", "float32", "= inf, reference nan"),
   _render([["in", "float32", 0], ["SQRT", "float32", 0]], [("float32", [0xff800000])])),
  ("F5", "render", _mm("LLVM-A64", "float32", "= inf, reference nan"),
   _render([["in", "float32", 0], ["SQRT", "float32", 0]], [("float32", [0xff800000])])),
  ("F6", "render", _mm("CLANG", "float64"), _render([["in", "float64", 0], ["SIN", "float64", 0]], [("float64", [0x4159bb5063339a81])])),
  ("F7", "render", Failure("cast-nonfinite:PYTHON", "PYTHON cannot cast a non-finite float to an integer: cannot convert float infinity to integer"),
   _render([["in", "float32", 0], ["CAST", "int32", 0]], [("float32", [0x7f800000])])),
  ("F8", "render", _mm("CLANG", "int32", "= -528554114, reference 8316798"),
   _render([["in", "int32", 0], ["const", "int32", 2**31], ["ADD", "int32", 0, 1], ["const", "int32", 8], ["CDIV", "int32", 2, 3]],
           [("int32", [(-2080949259) % 2**32])])),
  ("F9", "render", Failure("crash:CLANG", "CLANG raised CompileError: integer literal is too large to be represented in any integer type"),
   _render([["const", "int64", 334222353081977251], ["const", "int64", 63], ["SHL", "int64", 0, 1]])),
  ("F10", "render", _mm("X86", "float64"), _render([["in", "uint64", 0], ["CAST", "float64", 0]], [("uint64", [1744661987842563201])])),
  ("F11", "render", Failure("crash:PYTHON", "PYTHON raised AssertionError: memory coalescing should be on INDEX, not Ops.PARAM"),
   _render([["idx", "int32", 3], ["const", "int32", 0], ["in", "int32", 0], ["CMPEQ", "bool", 0, 1], ["WHERE", "int32", 3, 2, 1]],
           [("int32", [1, 2780858735])], n=2, axis="GLOBAL")),
  ("F12", "oob", Failure("static-miss:vectorized", "truth=OOB static=False PYTHON=fault"), {"dims": [1, 8], "size": 7}),
  ("F13", "render", _mm("X86", "int64", "= 0, reference -7"), _render([["const", "int64", 0], ["const", "float32", 0], ["in", "float32", 0],
           ["CMPLT", "bool", 1, 2], ["const", "int64", 2**64 - 7], ["WHERE", "int64", 3, 0, 4]], [("float32", [2143289344])])),
  ("F14", "render", _mm("PYTHON", "uint64", "= 3616702054610628952, reference 4020873246559843146"),
   _render([["const", "uint64", 6448505825889174900], ["const", "uint64", 8488319838112995918], ["MUL", "uint64", 0, 1],
            ["const", "uint64", 4020873246559843146], ["MAX", "uint64", 2, 3]])),
  ("F15", "render", _mm("CLANG", "float32", "= -inf(-inf), reference nan +- 0"),
   _render([["in", "float32", 0], ["LOG2", "float32", 0]], [("float32", [2148025892])])),
  ("F16", "render", _mm("PYTHON", "uint16", "= 0, reference 6553"),
   _render([["const", "int64", 2**64 - 1], ["CAST", "uint16", 0], ["const", "uint16", 10], ["CDIV", "uint16", 1, 2]])),
  ("F17", "render", _mm("AMD", "uint8", "= 255, reference 1"),
   _render([["in", "float32", 0], ["CAST", "uint8", 0]], [("float32", [3236689294, 1065353216])], n=2)),
  ("F18", "render", _mm("AMD", "uint32", "= 15, reference 4294967293"),
   _render([["const", "uint32", 4294967293], ["in", "uint32", 0], ["const", "uint32", 15], ["AND", "uint32", 1, 2], ["CDIV", "uint32", 0, 3]],
           [("uint32", [1])])),
  ("F19", "render", Failure("mismatch:AMD", "AMD out0[0] (float64) = nan(nan), reference inf(inf) +- 0"),
   _render([["in", "float64", 0], ["RECIPROCAL", "float64", 0]], [("float64", [0])])),
  ("F20", "render", _mm("PYTHON", "int8", "= -4, reference -3"),
   _render([["in", "uint32", 0], ["CAST", "int8", 0], ["const", "int8", 16], ["CDIV", "int8", 1, 2]], [("uint32", [1375118029, 205])], n=2)),
  ("F21", "render", _mm("PYTHON", "fp8e4m3", "= 0.0(0x0.0p+0), reference nan(nan) +- 0"),
   _render([["const", "fp8e4m3", 0], ["in", "fp8e4m3", 0], ["MUL", "fp8e4m3", 0, 1]], [("fp8e4m3", [0x7f])])),
  ("F22", "render", _mm("PYTHON", "fp8e4m3", "= nan(nan), reference 1.0(0x1.0000000000000p+0) +- 0"),
   {**_render([["in", "fp8e4m3", 0]], [("fp8e4m3", [56] * 16)]), "outs": [0], "red": {"k": 16, "op": "MAX"}}),
  ("F23", "idiv", Failure("kernel-fault", "kernel on X86: X86 kernel int16 x0//3 (x0=arange(1024)): the kernel was killed by SIGSEGV"),
   {"mode": "kernel", "dev": "X86", "dtype": "int16", "expr": ["floordiv", ["x", 0], 3], "n": 1024}),
  ("F24", "oob", Failure("dynamic-crash:PYTHON", "lds[0] of float16[1]: PYTHON raised RuntimeError: UOp verification failed at 12 on "
                        "Ops.AFTER dtypes.float 2 [(Ops.CAST, dtypes.float, dtypes.float), (Ops.BARRIER, dtypes.void, None)]"), {"dtype": "float16"}),
]

@pytest.mark.parametrize("fid,kind,failure,case", MATCH, ids=[f"{m[0]}-{i}" for i, m in enumerate(MATCH)])
def test_signature_matches_its_finding(fid, kind, failure, case):
  assert known.classify(kind, failure, case, "0.14.0") == fid
  assert known.classify(kind, failure, case, "0.15.0") is None  # an entry applies only to the versions it lists

# failures of another nature, each next to a finding's: they must stay new
NEW = [
  ("symbolic", Failure("exception:simplify:ZeroDivisionError", "simplifying (0//v0): integer division by zero"),
   {"dtype": "weakint", "vars": [[1, 5]], "expr": ["div", ["c", 0], ["v", 0]]}),
  ("symbolic", Failure("mismatch", "at v0=1: expected 0, simplified graph gives 1"),
   {"dtype": "weakint", "vars": [[0, 5]], "expr": ["div", ["c", 0], ["or", ["v", 0], ["c", 8]]]}),
  # a rewrite wrong only under wrap-around that no known finding explains (the injected rule of test_symbolic_wrap.py): new
  ("symbolic", Failure("wrap-mismatch", "at v0=254: expected 128, simplified graph gives 0"),
   {"dtype": "uint8", "vars": [[254, 254]], "expr": ["div", ["add", ["c", 1], ["add", ["v", 0], ["c", 1]]], ["c", 2]]}),
  ("symbolic", Failure("valid-mismatch", "uop_given_valid: at v0=0 (valid holds) expected 0, got -1"),
   {"dtype": "weakint", "vars": [[-1, 0]], "expr": ["v", 0], "gate": ["lt", ["v", 0], ["c", 1]]}),
  ("symbolic", Failure("exception:valid:ZeroDivisionError", "simplifying (v1//v0) under valid (0<v0): integer modulo by zero"),
   {"dtype": "weakint", "vars": [[-1, -1], [0, 3]], "expr": ["div", ["v", 1], ["v", 0]], "gate": ["lt", ["c", 0], ["v", 0]]}),
  ("idiv", Failure("exception:lower:AssertionError", "lowering {...}: some other assertion"), {"mode": "uop", "d": -1}),
  ("idiv", Failure("mismatch", "int8 x in [1, 1] cdiv -1: at x=1 expected -1, lowered graph gives 1"), {"mode": "uop", "d": -1}),
  ("render", _mm("CLANG", "int32"), _render([["in", "int32", 0], ["const", "int32", 3], ["ADD", "int32", 0, 1]], [("int32", [5])])),
  ("render", _mm("LLVM", "float32"), _render([["in", "float32", 0], ["EXP2", "float32", 0]], [("float32", [0])])),
  # a test-injected renderer named after CLANG is not the C renderer of F2 (uint8: no signed overflow, so not F8 either)
  ("render", _mm("CLANG-XORFLIP", "float32"), _render([["in", "uint8", 0], ["MUL", "uint8", 0, 0], ["CAST", "float32", 1]], [("uint8", [191])])),
  ("render", _mm("AMD", "uint32"), _render([["const", "uint32", 100], ["in", "uint32", 0], ["const", "uint32", 15], ["AND", "uint32", 1, 2],
                                            ["CDIV", "uint32", 0, 3]], [("uint32", [1])])),
  ("render", _mm("X86", "int64"), _render([["idx", "int64", 0], ["const", "int64", 31], ["SHR", "int64", 0, 1]], n=2)),  # F3 needs >= 32
  ("render", Failure("crash:CLANG", "CLANG raised CompileError: something else"),
   _render([["in", "int32", 0], ["NEG", "int32", 0]], [("int32", [1])])),
  ("render", Failure("mismatch:AMD", "AMD out0[0] (float32) = nan(nan), reference inf(inf) +- 0"),  # F19 is float64 only
   _render([["in", "float32", 0], ["RECIPROCAL", "float32", 0]], [("float32", [0])])),
  ("render", _mm("PYTHON", "fp8e5m2", "= nan(nan), reference 1.0(0x1.0000000000000p+0) +- 0"),  # F22 needs fp8e4m3 (no -inf)
   {**_render([["in", "fp8e5m2", 0]], [("fp8e5m2", [60] * 16)]), "outs": [0], "red": {"k": 16, "op": "MAX"}}),
  ("idiv", Failure("kernel-fault", "kernel on CLANG: CLANG kernel int16 x0//3 (x0=arange(1024)): the kernel was killed by SIGSEGV"),
   {"mode": "kernel", "dev": "CLANG", "dtype": "int16", "expr": ["floordiv", ["x", 0], 3], "n": 1024}),  # F23 is X86's
  ("oob", Failure("dynamic-crash:PYTHON", "PYTHON raised RuntimeError: UOp verification failed at 3 on Ops.STORE dtypes.void"), {}),
  ("oob", Failure("static-miss", "truth=OOB static=False PYTHON=fault"), {"dims": [8], "size": 7}),
  ("render", Failure("mismatch:CLANG", "no lane here"), {"not": "a render case"}),
]

@pytest.mark.parametrize("kind,failure,case", NEW, ids=[str(i) for i in range(len(NEW))])
def test_other_failures_stay_new(kind, failure, case):
  assert known.classify(kind, failure, case, "0.14.0") is None

def test_real_fuzzers_failures_are_classified():
  from mockgpu.tinygrad.fuzz.symbolic import SymbolicFuzzer
  from mockgpu.tinygrad.fuzz.idiv import IdivFuzzer
  sym = {"dtype": "weakint", "vars": [[0, 5]], "expr": ["div", ["c", 0], ["or", ["v", 0], ["c", 8]]]}
  assert known.classify("symbolic", safe_check(SymbolicFuzzer(), sym), sym) == "1"
  for d in (-1, -7):
    idiv = {"mode": "uop", "ren": "CLANG", "dtype": "int16", "box": [[0, 300]], "expr": ["cmod", ["x", 0], d]}
    assert known.classify("idiv", safe_check(IdivFuzzer(), idiv), idiv) == "2"
