"""emu_pre.h replaces pcode_math.h's bit-at-a-time pc_rd_bits/pc_wr_bits with word-at-a-time versions (csrc/emu_core.h);
compile both into one small program and compare them on random fields, including fields crossing dwords and the 1024-bit end."""
import os, pathlib, shutil, subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROG = r'''
#include <stdio.h>
#include "emu_pre.h"
#include "pcode_rt.h"
typedef struct Wave Wave;
#include "emu_core.h"
int main(void) {
  uint64_t x = 88172645463325252ull; int bad = 0;
  for (int it = 0; it < 200000; it++) {
    uint32_t d[32], e[32];
    for (int i = 0; i < 32; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; d[i] = e[i] = (uint32_t)x; }
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    uint64_t lo = x % 1100; int n = 1 + (int)((x >> 20) % 128);
    pc_u128 v = ((pc_u128)x << 64) | (x * 0x9e3779b97f4a7c15ull);
    if (pc_rd_bits(d, lo, n) != pc_rd_bits_bitwise(d, lo, n)) bad++;
    pc_wr_bits(d, lo, n, v); pc_wr_bits_bitwise(e, lo, n, v);
    if (memcmp(d, e, sizeof d)) bad++;
  }
  printf("%d\n", bad); return bad != 0;
}
'''

def test_word_bit_helpers_match_pcode(tmp_path):
  cc = shutil.which(os.environ.get("MOCKGPU_CC", "cc"))
  assert cc is not None, "no C compiler (a required dependency): install cc or set MOCKGPU_CC"
  src = tmp_path / "bits.c"; src.write_text(PROG)
  exe = tmp_path / "bits"
  r = subprocess.run([cc, "-O1", "-std=gnu11", "-w", "-DEMU_INST_FIELDS=int32_t op;", "-I", str(ROOT / "emu" / "csrc"), "-I", str(ROOT / "pcode"),
                      "-o", str(exe), str(src), "-lm"], capture_output=True, text=True)
  assert r.returncode == 0, r.stderr[:2000]
  out = subprocess.run([str(exe)], capture_output=True, text=True)
  assert out.returncode == 0 and out.stdout.strip() == "0"
