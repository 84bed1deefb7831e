"""The emulator's library cache stays bounded: build.prune keeps the most recently used libraries of one arch."""
import os
from mockgpu.emu import build

def test_prune_keeps_most_recent_per_arch(tmp_path, monkeypatch):
  monkeypatch.setenv("MOCKGPU_CACHE", str(tmp_path))
  def lib(arch, key, age):
    for suf in (".so", ".json", ".0.c", ".1.c", ".lock"): (tmp_path / f"emu-{arch}-{key}{suf}").write_text("x")
    os.utime(tmp_path / f"emu-{arch}-{key}.so", (1e9 - age, 1e9 - age))
  for i in range(5): lib("gfx1100", f"k{i}", age=i)
  lib("gfx950", "other", age=100)
  gone = build.prune("gfx1100", keep=2)
  left = sorted(p.name for p in tmp_path.iterdir())
  assert left == sorted(f"emu-{a}-{k}{s}" for a, k in (("gfx1100", "k0"), ("gfx1100", "k1"), ("gfx950", "other"))
                        for s in (".so", ".json", ".0.c", ".1.c", ".lock"))
  assert len(gone) == 3 * 5
