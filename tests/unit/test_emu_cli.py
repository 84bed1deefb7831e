"""`mockgpu emu run` on raw bytes and on an ELF, and error exit codes (no benchmarks: those are printed, never timed here)."""
from tinygrad.runtime.autogen.amd.rdna3.ins import s_mov_b32, v_mov_b32_e32, s_endpgm, s, v
from mockgpu.emu.cli import main
from mockgpu.emu.fixtures import FIXTURE_DIR

def test_run_raw_prints_registers(tmp_path, capsys):
  f = tmp_path / "k.bin"
  f.write_bytes(b"".join(i.to_bytes() for i in (s_mov_b32(s[7], 0x1234), v_mov_b32_e32(v[1], 42), s_endpgm())))
  assert main(["run", str(f), "--vgprs", "2"]) == 0
  out = capsys.readouterr().out
  assert "s7=0x1234" in out and "v1   0000002a" in out and "3 wave-instructions" in out

def test_run_elf_fixture(capsys):
  elf = FIXTURE_DIR / "matmul256_f32_gfx1100_k0.elf"
  assert main(["run", str(elf), "--grid", "4,8", "--block", "8,16", "--buffer", "262144", "--buffer", "262144", "--buffer", "262144",
               "--vgprs", "0"]) == 0
  assert "751360 wave-instructions, 32 workgroups, 128 waves" in capsys.readouterr().out

def test_errors_exit_1(tmp_path, capsys):
  f = tmp_path / "bad.bin"; f.write_bytes(b"\xff" * 8)
  assert main(["run", str(f)]) == 1
  assert "InvalidInstruction" in capsys.readouterr().err

def test_fixtures_go_to_out_never_into_the_package(tmp_path, capsys):
  import json
  before = {p.name: p.stat().st_mtime_ns for p in FIXTURE_DIR.iterdir()}
  assert main(["fixtures", "--out", str(tmp_path / "k")]) == 0
  names = [f"{w}_gfx1100_k0.{x}" for w in ("elementwise1m_f32", "matmul256_f32") for x in ("elf", "json")]
  assert sorted(p.name for p in (tmp_path / "k").iterdir()) == names
  elf = (tmp_path / "k" / "matmul256_f32_gfx1100_k0.elf").read_bytes()
  assert elf[:4] == b"\x7fELF" and int.from_bytes(elf[18:20], "little") == 224   # e_machine EM_AMDGPU
  meta = json.loads((tmp_path / "k" / "matmul256_f32_gfx1100_k0.json").read_text())
  assert meta["arch"] == "gfx1100" and [b["bytes"] for b in meta["buffers"]] == [256 * 256 * 4] * 3
  assert capsys.readouterr().out == "".join(f"{tmp_path / 'k' / n}\n" for n in ("matmul256_f32_gfx1100_k0.elf", "elementwise1m_f32_gfx1100_k0.elf"))
  assert {p.name: p.stat().st_mtime_ns for p in FIXTURE_DIR.iterdir()} == before
