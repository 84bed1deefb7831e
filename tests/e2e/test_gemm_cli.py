"""`mockgpu gemm`: the shipped example kernels pass on their archs, and deliberately broken variants fail with the first
wrong element and the store that wrote it. Expected counts follow from the kernels' structure (instructions per wave per
K step, bytes per lane), the expected values from numpy; none come from the emulator."""
import json, textwrap
import numpy as np
import pytest
from mockgpu.__main__ import main
from mockgpu.emu.gemm import inputs, from_bits, error_bound

def gemm(tmp_path, *args) -> tuple[int, dict | None]:
  out = tmp_path / "report.json"
  rc = main(["gemm", *map(str, args), "--json", str(out)])
  return rc, json.loads(out.read_text()) if out.exists() else None

def per_tile(arch: str, M: int, N: int, K: int) -> dict:
  """What the fixtures do per problem: workgroups x waves, and per wave and K step of 16 the matrix ops, memory
  instructions and LDS bytes their docstrings describe."""
  ks = K // 16
  if arch == "gfx950":   # 4 waves per 32x32 tile; per step a wave: 1 MFMA, 2 global loads; 256 lanes x (4 + 4) B written, x (8 + 4 x 2) B read
    waves = (M // 32) * (N // 32) * 4
    return {"matrix": waves * ks, "vmem": waves * (2 * ks + 4), "smem": waves * 2, "lds_written": waves // 4 * ks * 256 * 8,
            "lds_read": waves // 4 * ks * 256 * 16}
  waves = -(-M // 16) * -(-N // 16)   # one wave32 per 16x16 tile, 8 stores at the end
  lds_w, lds_r = (32 * 32, 32 * 64) if arch == "gfx1100" else (32 * 16 + 32 * 8 * 2, 32 * 4 * 8)
  return {"matrix": waves * ks, "vmem": waves * (2 * ks + 8), "smem": waves * 2, "lds_written": waves * ks * lds_w, "lds_read": waves * ks * lds_r}

CASES = [("wmma_gfx1100", "gfx1100", [(17, 33, 32), (16, 16, 16)], ["f16/f32/f32", "bf16/f32/f32"]),
         ("wmma_gfx1201", "gfx1201", [(32, 48, 32)], ["f16/f32/f32", "f16/f32/f16"]),
         ("mfma_gfx950", "gfx950", [(64, 32, 32)], ["f16/f32/f32", "bf16/f32/f32"])]

@pytest.mark.parametrize("name,arch,shapes,dtypes", CASES, ids=[c[0] for c in CASES])
def test_fixture_passes_with_exact_counts(tmp_path, capsys, name, arch, shapes, dtypes):
  rc, rep = gemm(tmp_path, name, *[x for s in shapes for x in ("--shape", "x".join(map(str, s)))], *[x for d in dtypes for x in ("--dtype", d)])
  out = capsys.readouterr().out
  assert rc == 0 and (rep["passed"], rep["failed"], rep["arch"]) == (len(shapes) * len(dtypes), 0, arch)
  assert out.splitlines()[-1].startswith(f"{len(shapes) * len(dtypes)} passed, 0 failed")
  for r in rep["results"]:
    want = per_tile(arch, r["M"], r["N"], r["K"])
    assert (r["ok"], r["bad"], r["unwritten"], r["fault"], r["first"]) == (True, 0, 0, None, None)
    assert 0 < r["max_ratio"] <= 1 and r["max_abs"] > 0   # random data: some rounding, all within the bound
    assert {k: r["mix"][k] for k in ("matrix", "vmem", "smem")} == {k: want[k] for k in ("matrix", "vmem", "smem")}
    assert (r["lds_written"], r["lds_read"], r["oob_reads"]) == (want["lds_written"], want["lds_read"], 0)
    assert r["instructions"] == sum(r["mix"].values()) == sum(r["op_counts"].values())
    assert (f"PASS  {'/'.join(r['dtypes']):13s} M={r['M']} N={r['N']} K={r['K']}  max_abs" in out and
            f"matrix {want['matrix']} " in out and f"lds r/w {want['lds_read']}/{want['lds_written']} B" in out)

def variant_file(tmp_path, fixture: str, **bugs):
  p = tmp_path / f"broken_{fixture}.py"
  p.write_text(textwrap.dedent(f"""
    from mockgpu.fixtures.gemm.{fixture} import variant
    KERNEL = variant(**{bugs!r})
  """))
  return p

def store_pc(fixture: str, inst, dtypes: str, **bugs) -> int:
  """Byte offset of the first `inst` in the variant's code (the store of accumulator VGPR 0, which holds C[0,0])."""
  import importlib
  mod = importlib.import_module(f"mockgpu.fixtures.gemm.{fixture}")
  code = mod.build(32, 32, 32, tuple(dtypes.split("/")), **bugs).code
  pc = code.find(inst.to_bytes())
  assert pc >= 0 and pc % 4 == 0
  return pc

def test_rdna3_off_by_one_tile_names_the_first_wrong_element(tmp_path, capsys):
  from tinygrad.runtime.autogen.amd.rdna3.ins import global_store_b32, v, s
  rc, rep = gemm(tmp_path, variant_file(tmp_path, "wmma_gfx1100", bug_tile=1), "--shape", "32x32x32", "--dtype", "f16/f32/f32")
  r = rep["results"][0]
  assert rc == 1 and rep["failed"] == 1 and not r["ok"] and r["unwritten"] == 0
  f, w = r["first"], r["first"]["writer"]
  assert (f["row"], f["col"], f["stores"], f["unwritten"]) == (0, 0, 1, False)
  assert (w["workgroup"], w["wave"], w["lane"], w["addr"], w["size"]) == ([0, 0, 0], 0, 0, 0, 4)   # D layout: C[0,0] is VGPR 0 of lane 0
  assert w["pc"] == store_pc("wmma_gfx1100", global_store_b32(addr=v[10], data=v[24], saddr=s[8:9], offset=0), "f16/f32/f32", bug_tile=1)
  a, b = inputs(32, 32, 32, "f16", 0)
  A, B = from_bits(a, "f16"), from_bits(b, "f16")
  assert abs(f["got"] - A[16] @ B[:, 0]) < 1e-4 and f["want"] == pytest.approx(A[0] @ B[:, 0], abs=1e-12)   # row 0 got tile 1's row 0
  out = capsys.readouterr().out
  assert f"first wrong C[0,0] = {f['got']:.3g}, want {f['want']:.3g}" in out and f"written by workgroup (0, 0, 0) wave 0 lane 0 at pc {w['pc']:#x}" in out

def test_rdna3_wrong_lds_offset_shifts_b_by_a_column(tmp_path):
  rc, rep = gemm(tmp_path, variant_file(tmp_path, "wmma_gfx1100", bug_lds=-32), "--shape", "16x16x16", "--dtype", "f16/f32/f32")
  f = rep["results"][0]["first"]
  a, b = inputs(16, 16, 16, "f16", 0)
  A, B = from_bits(a, "f16"), from_bits(b, "f16")
  bound = error_bound(16, "f32", "f32", A[0] @ B[:, 1], np.abs(A[0]) @ np.abs(B[:, 1]))
  assert rc == 1 and (f["row"], f["col"], f["writer"]["lane"]) == (0, 0, 0) and abs(f["got"] - A[0] @ B[:, 1]) <= bound   # C[0,0] used B column 1

def test_rdna4_wrong_lds_offset(tmp_path):
  from tinygrad.runtime.autogen.amd.rdna4.ins import global_store_b16, v, s
  rc, rep = gemm(tmp_path, variant_file(tmp_path, "wmma_gfx1201", bug_lds=-2), "--shape", "32x32x32", "--dtype", "f16/f32/f16")
  r = rep["results"][0]
  w = r["first"]["writer"]
  assert rc == 1 and (r["first"]["row"], r["first"]["col"], w["workgroup"], w["wave"], w["lane"], w["size"]) == (0, 0, [0, 0, 0], 0, 0, 2)
  assert w["pc"] == store_pc("wmma_gfx1201", global_store_b16(vaddr=v[12:13], vsrc=v[24], saddr=s[8:9], ioffset=0), "f16/f32/f16", bug_lds=-2)

def test_rdna4_off_by_one_tile_store_faults_past_c(tmp_path, capsys):
  # each tile stored one tile to the right: the last workgroup's row M-1 (lane group 1, VGPR 7) lands past the end of C
  rc, rep = gemm(tmp_path, variant_file(tmp_path, "wmma_gfx1201", bug_tile=1), "--shape", "32x32x16", "--dtype", "f16/f32/f32")
  r = rep["results"][0]
  assert rc == 1 and not r["ok"] and r["fault"].startswith("GPUFault: write fault in global")
  assert "lane=16 wave=0 workgroup=(1, 1, 0)" in r["fault"] and "nearest allocation 'C'" in r["fault"] and "offset=+0x1000" in r["fault"]
  assert "kernel faulted" in capsys.readouterr().out

def test_cdna_wrong_lds_offset_and_missing_store(tmp_path, capsys):
  rc, rep = gemm(tmp_path, variant_file(tmp_path, "mfma_gfx950", bug_lds=8), "--shape", "64x32x32", "--dtype", "f16/f32/f32")
  w = rep["results"][0]["first"]["writer"]
  assert rc == 1 and (w["workgroup"], w["wave"], w["lane"]) == ([0, 0, 0], 0, 0) and "GLOBAL_STORE_DWORD" in w["disasm"]
  rc, rep = gemm(tmp_path, variant_file(tmp_path, "mfma_gfx950", bug_store=1), "--shape", "64x32x32", "--dtype", "f16/f32/f32")
  r = rep["results"][0]
  # accumulator row 3 of every lane group is never stored: rows 3, 7, 11, ... of C (64 x 32 / 4 elements)
  assert rc == 1 and (r["first"]["row"], r["first"]["col"], r["first"]["stores"], r["first"]["writer"]) == (3, 0, 0, None)
  assert r["bad"] == r["unwritten"] == 64 * 32 // 4
  assert "first wrong C[3,0] = fill pattern (NaN)" in capsys.readouterr().out

def test_code_object_described_by_json(tmp_path):
  rc, rep = gemm(tmp_path, "tinygrad_matmul256_gfx1100")   # tinygrad's LLVM-compiled f32 matmul, arguments (C, A, B)
  r = rep["results"][0]
  assert rc == 0 and (r["M"], r["N"], r["K"], r["dtypes"], r["ok"]) == (256, 256, 256, ["f32", "f32", "f32"], True)
  assert r["mix"]["matrix"] == 0 and r["lds_read"] == 0

def test_usage_errors_and_list(tmp_path, capsys):
  assert main(["gemm", "wmma_gfx1201", "--shape", "17x16x16"]) == 2 and "does not claim 17x16x16" in capsys.readouterr().err
  assert main(["gemm", "wmma_gfx1201", "--dtype", "bf16/f32/f32"]) == 2 and "does not claim bf16/f32/f32" in capsys.readouterr().err
  assert main(["gemm", "no_such_kernel"]) == 2 and "is not a shipped kernel (mfma_gfx950, tinygrad_matmul256_gfx1100" in capsys.readouterr().err
  (tmp_path / "empty.py").write_text("x = 1\n")
  assert main(["gemm", str(tmp_path / "empty.py")]) == 2 and "defines no KERNEL = GemmKernel(...)" in capsys.readouterr().err
  assert main(["gemm", "mfma_gfx950", "--list"]) == 0
  assert capsys.readouterr().out.splitlines()[-1] == "default sweep: 32x32x16 64x96x16 64x64x32 64x64x64 128x128x128 256x256x256"

@pytest.mark.slow
@pytest.mark.parametrize("name", ["wmma_gfx1100", "wmma_gfx1201", "mfma_gfx950"])
def test_fixture_default_sweep(tmp_path, name):
  rc, rep = gemm(tmp_path, name)
  assert rc == 0 and rep["failed"] == 0 and rep["passed"] == len(rep["results"]) >= 12

@pytest.mark.slow
def test_python_backend_reports_the_same(tmp_path):
  args = ("--shape", "17x16x16", "--dtype", "f16/f32/f32")
  (tmp_path / "c").mkdir(); (tmp_path / "py").mkdir()
  rc_c, c = gemm(tmp_path / "c", variant_file(tmp_path, "wmma_gfx1100", bug_lds=-32), *args)
  rc_p, p = gemm(tmp_path / "py", variant_file(tmp_path, "wmma_gfx1100", bug_lds=-32), *args, "--backend", "python")
  for r in c["results"] + p["results"]: r.pop("seconds")
  assert rc_c == rc_p == 1 and (c["backend"], p["backend"]) == ("c", "python") and c["results"] == p["results"]
