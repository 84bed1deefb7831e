"""Ray tracing (RDNA3): DS_BVH_STACK_RTN_B32 and IMAGE_BVH[64]_INTERSECT_RAY. Expected values come from the model written
down in docs/emu.md "Ray tracing", re-derived here in numpy (never from the emulator), on both backends."""
import re
import numpy as np
import pytest
from tinygrad.runtime.autogen.amd.rdna3.ins import *
from mockgpu.emu.errors import GPUFault
from isa_harness import run

INV = 0xffffffff
BACKENDS = ["c", "python"]

# ---- DS_BVH_STACK_RTN_B32 ----
def stack_ref(lds: list, addr: int, last: int, data1: list, size: int) -> tuple[int, int]:
  """The documented stack: a ring of `size` dwords at LDS dword ADDR[31:18], position ADDR[17:0]; pushes DATA1[0..2], returns
  DATA1[3] or pops. Returns (returned node, new ADDR); `lds` (dwords) is updated."""
  base, pos = addr >> 18, addr & 0x3ffff
  valid = lambda d: d != INV and not (last != INV and d == last)
  for d in data1[:3]:
    if valid(d): lds[base + pos % size] = d; pos += 1
    elif d == last: break
  if valid(data1[3]): return data1[3], base << 18 | pos % size
  pos -= 1
  ret, lds[base + pos % size] = lds[base + pos % size], INV
  return ret, base << 18 | pos % size

def _node(k, lane): return INV if k is None else 0x1000 * k + lane   # a node pointer distinct per call slot and lane

# (last_node_ptr, DATA1[0..3]) per call, as slot numbers (None = INVALID_NODE); lanes add their id
CALLS = [(None, (1, 2, 3, 4)),            # push 1 2 3, return 4
         (None, (5, None, 6, None)),      # push 5, the first invalid entry equals last_node_ptr (both invalid): stop; pop -> 5
         (3, (7, 3, 8, None)),            # push 7, entry == last_node_ptr: stop; pop -> 7
         (None, (9, 10, 11, 12)),         # push 3 more (ring of 8: positions 3, 4, 5)
         (None, (13, 14, 15, 16)),        # positions 6, 7, 0: overwrites the oldest entry (1)
         (None, (None, 17, 17, None)),    # nothing pushed (the first entry is invalid and equals last_node_ptr), pop -> 15
         (14, (None, None, None, 14)),    # DATA1[3] == last_node_ptr is not valid: pop -> 14
         (None, (None,) * 4)]             # pop -> 13

@pytest.mark.parametrize("backend", BACKENDS)
def test_ds_bvh_stack_push_pop_wrap(backend):
  size, n = 8, len(CALLS)
  body = [v_lshlrev_b32_e32(v[1], 21, v[0]), v_lshlrev_b32_e32(v[2], 5, v[0]),        # ADDR = (lane * 8) << 18, byte address lane * 32
          v_mov_b32_e32(v[20], INV), v_mov_b32_e32(v[21], INV), v_mov_b32_e32(v[22], INV), v_mov_b32_e32(v[23], INV),
          ds_store_b128(addr=v[2], data0=v[20:23]), ds_store_b128(addr=v[2], data0=v[20:23], offset0=16)]
  for k, (last, d1) in enumerate(CALLS):
    body += [v_add_nc_u32_e32(v[3], _node(last, 0), v[0]) if last is not None else v_mov_b32_e32(v[3], INV)]
    body += [v_add_nc_u32_e32(v[4 + i], _node(s, 0), v[0]) if s is not None else v_mov_b32_e32(v[4 + i], INV) for i, s in enumerate(d1)]
    body += [ds_bvh_stack_rtn_b32(vdst=v[30 + k], addr=v[1], data0=v[3], data1=v[4:7]), s_waitcnt(simm16=0), v_mov_b32_e32(v[50 + k], v[1])]
  body += [ds_load_b128(vdst=v[70:73], addr=v[2]), ds_load_b128(vdst=v[74:77], addr=v[2], offset0=16), s_waitcnt(simm16=0)]
  vg = run(body, lds_bytes=32 * size * 4, sgprs=(), backend=backend).state.vgprs
  for lane in range(32):
    lds, addr = [INV] * (32 * size), lane * size << 18
    for k, (last, d1) in enumerate(CALLS):
      ret, addr = stack_ref(lds, addr, _node(last, lane), [_node(s, lane) for s in d1], size)
      assert (vg[30 + k][lane], vg[50 + k][lane]) == (ret, addr), (lane, k)
    assert [vg[70 + i][lane] for i in range(8)] == lds[lane * size:(lane + 1) * size], lane
  # the ISA-level story, written out for lane 5: returns 4, 5, 7, 12, 16, 15, 14, 13; the ring ends at position 6 of 8
  assert [vg[30 + k][5] for k in range(n)] == [_node(s, 5) for s in (4, 5, 7, 12, 16, 15, 14, 13)]
  assert vg[50 + n - 1][5] == (40 << 18 | 6)
  assert [vg[70 + i][5] for i in range(8)] == [INV if s is None else _node(s, 5) for s in (None, 2, 3, 9, 10, 11, None, None)]

@pytest.mark.parametrize("backend", BACKENDS)
def test_ds_bvh_stack_size_from_offset1_and_lds_fault(backend):
  # OFFSET1[5:4] = 3: a ring of 64 entries; 21 calls push 3 each (positions 0..62, no wrap) and return DATA1[3]; a pop returns the last push
  body = [v_mov_b32_e32(v[1], 4 << 18), v_mov_b32_e32(v[3], INV), v_mov_b32_e32(v[7], 1000)]
  for k in range(21): body += [v_mov_b32_e32(v[4], 3 * k), v_mov_b32_e32(v[5], 3 * k + 1), v_mov_b32_e32(v[6], 3 * k + 2),
                               ds_bvh_stack_rtn_b32(vdst=v[10], addr=v[1], data0=v[3], data1=v[4:7], offset1=0x30)]
  body += [v_mov_b32_e32(v[4], INV), v_mov_b32_e32(v[7], INV), ds_bvh_stack_rtn_b32(vdst=v[11], addr=v[1], data0=v[3], data1=v[4:7], offset1=0x30),
           v_mov_b32_e32(v[12], 16 + 4 * 62), ds_load_b32(vdst=v[13], addr=v[12]), s_waitcnt(simm16=0)]
  vg = run(body, lds_bytes=4 * 68, sgprs=(), block=(1, 1, 1), backend=backend).state.vgprs
  assert (vg[10][0], vg[11][0], vg[1][0], vg[13][0]) == (1000, 62, 4 << 18 | 62, INV)   # 0..62 pushed at 0..62; 62 popped, invalidated
  with pytest.raises(GPUFault) as ei:   # a ring outside the workgroup's LDS: the first push faults like any DS write
    run([v_mov_b32_e32(v[1], 16 << 18), v_mov_b32_e32(v[3], INV), v_mov_b32_e32(v[4], 1),
         ds_bvh_stack_rtn_b32(vdst=v[10], addr=v[1], data0=v[3], data1=v[4:7])], lds_bytes=64, sgprs=(), block=(1, 1, 1), backend=backend)
  r = ei.value.report
  assert (r.space, r.address, r.limit) == ("lds", 64, 64) and "DS_BVH_STACK_RTN_B32" in r.disasm

# ---- IMAGE_BVH_INTERSECT_RAY / IMAGE_BVH64_INTERSECT_RAY ----
from mockgpu.emu.errors import InvalidInstruction
from isa_harness import Bufs, f32, f16

M32, BOX16, BOX32, TRI = 0xffffffff, 4, 5, 0
MISS = [0x7f800000, 0x3f800000, 0, 0]           # triangle miss: (+inf, 1.0, 0, 0)

def tsharp(base: int, size: int, sort: int = 1, tri_return: int = 1, typ: int = 8, grow: int = 0) -> list[int]:
  """BVH T# of docs/emu.md: base >> 8 [39:0], box growing [62:55], box sort [63], size [105:64], triangle return [120], TYPE [127:124]"""
  d = base >> 8 | grow << 55 | sort << 63 | size << 64 | tri_return << 120 | typ << 124
  return [(d >> (32 * i)) & M32 for i in range(4)]

def ray_words(ptr, ext, o, d, inv, bvh64=False, a16=False) -> list[int]:
  """The address VGPRs: node pointer (1 or 2 dwords), extent, origin xyz, direction xyz, inverse direction xyz (A16: the last
  six as f16 pairs {dx, dy}, {dz, ix}, {iy, iz})."""
  w = [ptr & M32] + ([ptr >> 32] if bvh64 else []) + [f32(ext), *map(f32, o)]
  if a16: h = [f16(x) for x in (*d, *inv)]; w += [h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16]
  else: w += [*map(f32, d), *map(f32, inv)]
  return w + [0] * (12 - len(w))

class Scene:
  """A 256-byte aligned node area registered as "bvh", a ray buffer (12 dwords per lane, s[0:1]) and the results (s[2:3])."""
  def __init__(self, nbytes=4096):
    self.raw = np.zeros(nbytes + 256, np.uint8)
    self.base = (self.raw.ctypes.data + 255) & ~255
    self.mem = self.raw[self.base - self.raw.ctypes.data:][:nbytes]
    self.rays, self.out = np.zeros(32 * 12, np.uint32), np.zeros(32 * 4, np.uint32)
    self.bufs = Bufs(self.rays, self.out); self.bufs.mem.add(self.base, nbytes, "bvh")
  def ptr(self, off, typ): return (off // 64) << 3 | typ
  def box(self, off, children, lo, hi, fp16=False):
    """box node at `off`: 4 child pointers, then per child min xyz, max xyz (f32: 24 bytes, f16: 12 bytes per child)"""
    self.mem[off:off + 16] = np.array(children, np.uint32).view(np.uint8)
    c = np.concatenate([np.asarray(lo, np.float32), np.asarray(hi, np.float32)], axis=1)   # (4, 6)
    b = c.astype(np.float16).view(np.uint8) if fp16 else c.view(np.uint8)
    self.mem[off + 16:off + 16 + b.size] = b.reshape(-1)
  def tri(self, off, verts):
    self.mem[off:off + 36] = np.asarray(verts, np.float32).view(np.uint8).reshape(-1)
  def run(self, rays, T, backend, bvh64=False, a16=False):
    for i, r in enumerate(rays): self.rays[12 * i:12 * i + 12] = ray_words(*r, bvh64=bvh64, a16=a16)
    n = 12 if bvh64 else 11   # the DSL checks the non-A16 register count; A16 reads the first n - 3
    op = image_bvh64_intersect_ray if bvh64 else image_bvh_intersect_ray
    run([*(s_mov_b32(s[4 + i], T[i]) for i in range(4)), v_mul_u32_u24_e32(v[1], 48, v[0]),
         *(global_load_b128(vdst=v[10 + 4 * k:13 + 4 * k], addr=v[1], saddr=s[0:1], offset=16 * k) for k in range(3)), s_waitcnt(simm16=0),
         op(v[30:33], v[10:10 + n - 1], s[4:7], dmask=0xf, r128=1, a16=int(a16)), s_waitcnt(simm16=0),
         v_lshlrev_b32_e32(v[2], 4, v[0]), global_store_b128(addr=v[2], data=v[30:33], saddr=s[2:3])],
        self.bufs, block=(len(rays), 1, 1), backend=backend)
    return self.out.reshape(32, 4)[:len(rays)].tolist()

def small_scene():
  """A triangle at byte 192 and a box node at 256 with four children (shared by the BVH64/A16 and RDNA4 tests)."""
  sc = Scene()
  V = [[0, 0, 2], [2, 0, 2], [0, 2, 2]]
  sc.tri(192, V)
  kids = [1, 2, 3, 4]
  lo = [[-1, -1, 3], [-1, -1, 1], [5, 5, 5], [-1, -1, 2]]; hi = [[1, 2, 4], [1, 1, 1.5], [6, 6, 6], [1, 1, 2.5]]
  sc.box(256, kids, lo, hi)
  return sc, V, kids, lo, hi

# the reference model (docs/emu.md "Ray tracing") in numpy float32: one rounding per operation
def ref_box(children, lo, hi, o, inv, ext, sort=1):
  lo, hi, o, inv = (np.asarray(x, np.float32) for x in (lo, hi, o, inv))
  with np.errstate(all="ignore"):
    t0, t1 = (lo - o) * inv, (hi - o) * inv
    tmin, tmax = np.fmax.reduce(np.fmin(t0, t1), axis=1), np.fmin.reduce(np.fmax(t0, t1), axis=1)
    hit = (np.asarray(children) != INV) & (tmax >= np.fmax(np.float32(0), tmin)) & (tmin < np.float32(ext))
  if not sort: return [c if h else INV for c, h in zip(children, hit)]
  order = np.argsort(np.where(hit, tmin, np.inf), kind="stable")
  return [children[i] if hit[i] else INV for i in order]

def ref_tri(verts, o, d):
  vt, o, d = np.asarray(verts, np.float32), np.asarray(o, np.float32), np.asarray(d, np.float32)
  with np.errstate(all="ignore"):
    a = np.abs(d)
    kz = int(np.argmax(a))                         # first of equal maxima, as the >= chain of the model
    kx, ky = (kz + 1) % 3, (kz + 2) % 3
    if d[kz] < 0: kx, ky = ky, kx
    sz = np.float32(1) / d[kz]
    r = vt - o                                     # rows: vertices relative to the origin
    X, Y, Z = r[:, kx] - (d[kx] * sz) * r[:, kz], r[:, ky] - (d[ky] * sz) * r[:, kz], sz * r[:, kz]
    e = np.array([X[2] * Y[1] - Y[2] * X[1], X[0] * Y[2] - Y[0] * X[2], X[1] * Y[0] - Y[1] * X[0]], np.float32)
    if (e < 0).any() and (e > 0).any(): return MISS
    det, t = e[0] + (e[1] + e[2]), (e[0] * Z[0] + e[1] * Z[1]) + e[2] * Z[2]
  if (det > 0 and t < 0) or (det < 0 and t > 0): return MISS
  return [int(x) for x in np.array([t, det, e[1], e[2]], np.float32).view(np.uint32)]

def _inv(d): return [np.float32(1) / np.float32(x) if x else np.float32(np.inf) for x in d]

@pytest.mark.parametrize("backend", BACKENDS)
def test_box32_hits_sorted_by_entry_distance(backend):
  sc = Scene()
  kids = [0x100 + 8 * i for i in range(4)]
  # four unit boxes on the +x axis at x = 6, 2, 10, 4 (entry distances 6, 2, 10, 4 from the origin along +x)
  lo = [[6, -.5, -.5], [2, -.5, -.5], [10, -.5, -.5], [4, -.5, -.5]]; hi = [[x[0] + 1, .5, .5] for x in lo]
  sc.box(128, kids, lo, hi)
  p, d = sc.ptr(128, BOX32), [1, 0, 0]
  rays = [(p, 100, [0, 0, 0], d, _inv(d)),             # all hit: sorted 2, 4, 6, 10
          (p, 5, [0, 0, 0], d, _inv(d)),               # extent 5: boxes entered at 2 and 4 only
          (p, 100, [0, 2, 0], d, _inv(d)),             # passes above every box
          (p, 100, [4.5, 0, 0], d, _inv(d)),           # starts inside box 4 (tmin < 0 <= tmax): hit first, box 2 behind
          (p, 100, [20, 0, 0], [-1, 0, 0], _inv([-1, 0, 0]))]   # backwards: 10, 6, 4, 2
  got = sc.run(rays, tsharp(sc.base, 63), backend)
  assert got[0] == [kids[1], kids[3], kids[0], kids[2]]
  assert got[1] == [kids[1], kids[3], INV, INV] and got[2] == [INV] * 4
  assert got[3] == [kids[3], kids[0], kids[2], INV] and got[4] == [kids[2], kids[0], kids[3], kids[1]]
  assert got == [ref_box(kids, lo, hi, r[2], r[4], r[1]) for r in rays]
  # box sorting off: children stay in node order, misses are INVALID_NODE in place; an INVALID_NODE child never hits
  kids2 = [kids[0], INV, kids[2], kids[3]]
  sc.box(128, kids2, lo, hi)
  got = sc.run(rays[:2], tsharp(sc.base, 63, sort=0), backend)
  assert got == [[kids[0], INV, kids[2], kids[3]], [INV, INV, INV, kids[3]]]

@pytest.mark.parametrize("backend", BACKENDS)
def test_box16_and_random_boxes_match_the_model(backend):
  rng = np.random.default_rng(7)
  sc = Scene()
  kids = [0x40 | BOX32, 0x88 | TRI, 0x1000 | BOX16, 0x2228 | TRI]
  lo = rng.uniform(-4, 2, (4, 3)).astype(np.float16).astype(np.float32); hi = (lo + rng.uniform(0.1, 3, (4, 3))).astype(np.float16).astype(np.float32)
  sc.box(0, kids, lo, hi, fp16=True)
  sc.box(256, kids, lo + np.float32(0.1), hi, fp16=False)
  rays = []
  for i in range(32):
    o = rng.uniform(-6, 6, 3).astype(np.float32)
    d = ((lo[i % 4] + hi[i % 4]) / 2 - o + rng.normal(scale=1.5, size=3)).astype(np.float32)   # aimed near a box
    if i % 8 == 0: d[i // 8 % 3] = 0                   # axis-parallel rays: inverse direction +-inf
    rays.append((sc.ptr(0 if i % 2 else 256, BOX16 if i % 2 else BOX32), float(rng.uniform(0.5, 20)), o, d, _inv(d)))
  got = sc.run(rays, tsharp(sc.base, 63), backend)
  want = [ref_box(kids, lo if i % 2 else lo + np.float32(0.1), hi, r[2], r[4], r[1]) for i, r in enumerate(rays)]
  assert got == want
  assert sum(g != [INV] * 4 for g in got) >= 8 and sum(g == [INV] * 4 for g in got) >= 4     # both outcomes are exercised

@pytest.mark.parametrize("backend", BACKENDS)
def test_triangle_hit_miss_edges(backend):
  sc = Scene()
  V = [[0, 0, 2], [1, 0, 2], [0, 1, 2]]
  sc.tri(64, V)
  p, dz = sc.ptr(64, TRI), [0, 0, 1]
  rays = [(p, 10, [.25, .25, -1], dz, _inv(dz)),        # hit at t = 3, barycentrics i = j = 1/4
          (p, 10, [.75, .75, -1], dz, _inv(dz)),        # outside the hypotenuse: miss
          (p, 10, [.5, 0, 0], dz, _inv(dz)),            # on the edge v0-v1: hit (watertight), j = 0
          (p, 10, [0, 0, 5], dz, _inv(dz)),             # the vertex v0 lies behind the origin: miss
          (p, 10, [.25, .25, 5], [0, 0, -1], _inv([0, 0, -1])),   # from the other side: hit, t_denom changes sign
          (p, 1, [.25, .5, -1], dz, _inv(dz))]          # extent 1 < t = 3: still reported (the shader compares t)
  got = sc.run(rays, tsharp(sc.base, 63), backend)
  assert got == [ref_tri(V, r[2], r[3]) for r in rays]
  F = lambda u: float(np.uint32(u).view(np.float32))
  for k, (t, i, j) in {0: (3, .25, .25), 2: (2, .5, 0), 4: (3, .25, .25), 5: (3, .25, .5)}.items():   # i: weight of v1, j: of v2
    assert (F(got[k][0]) / F(got[k][1]), F(got[k][2]) / F(got[k][1]), F(got[k][3]) / F(got[k][1])) == (t, i, j), k
  assert got[1] == MISS and got[3] == MISS and F(got[0][1]) < 0 < F(got[4][1])   # the side the ray comes from: t_denom sign

@pytest.mark.parametrize("backend", BACKENDS)
def test_random_triangles_match_the_model(backend):
  rng = np.random.default_rng(11)
  sc = Scene()
  rays, tris = [], []
  for i in range(32):
    V = rng.uniform(-3, 3, (3, 3)).astype(np.float32); sc.tri(64 * i, V); tris.append(V)
    o = rng.uniform(-5, 5, 3).astype(np.float32)
    d = (V.mean(axis=0) - o + rng.normal(scale=1.5, size=3)).astype(np.float32)   # aimed near the triangle: hits and misses
    if i % 6 == 0: d = -d
    rays.append((sc.ptr(64 * i, TRI), 50, o, d, _inv(d)))
  got = sc.run(rays, tsharp(sc.base, 63), backend)
  assert got == [ref_tri(V, r[2], r[3]) for V, r in zip(tris, rays)]
  assert 6 <= sum(g != MISS for g in got) <= 26

@pytest.mark.parametrize("backend", BACKENDS)
def test_bvh64_and_a16(backend):
  sc, V, kids, lo, hi = small_scene()
  # BVH64 with T# base 0: the node address is the 64-bit pointer >> 3 times 64, i.e. the absolute address
  tri64, box64 = (sc.base + 192) >> 3 | TRI, (sc.base + 256) >> 3 | BOX32
  d, o = [.125, .25, 1], [.1, .2, -1]
  rays = [(tri64, 10, o, d, _inv(d)), (box64, 10, o, d, _inv(d))]
  got = sc.run(rays, tsharp(0, (1 << 42) - 1), backend, bvh64=True)
  assert got == [ref_tri(V, o, d), ref_box(kids, lo, hi, o, _inv(d), 10)] and got[1] == [2, 4, 1, INV] and got[0] != MISS
  # A16: direction and inverse direction as f16 (the model widens them exactly); here inv = 1/d is not representable in f16
  d16 = np.array([.3, .2, 1.1], np.float16); i16 = (1 / d16.astype(np.float32)).astype(np.float16)
  rays = [(sc.ptr(192, TRI), 10, o, d16, i16), (sc.ptr(256, BOX32), 10, o, d16, i16)]
  for bvh64 in (False, True):
    got = sc.run([(r[0] if not bvh64 else (sc.base >> 3) + r[0],) + r[1:] for r in rays], tsharp(sc.base if not bvh64 else 0, 63 if not bvh64 else (1 << 42) - 1),
                 backend, bvh64=bvh64, a16=True)
    assert got == [ref_tri(V, o, d16.astype(np.float32)), ref_box(kids, lo, hi, o, i16.astype(np.float32), 10)], bvh64

@pytest.mark.parametrize("backend", BACKENDS)
def test_bvh_range_faults_and_errors(backend):
  sc = Scene(512)
  sc.box(0, [1, 2, 3, 4], [[0, 0, 0]] * 4, [[1, 1, 1]] * 4)
  d = [1, 1, 1]
  # node index > SIZE: out of range, no fetch, four INVALID_NODE (also for a pointer far outside any allocation)
  assert sc.run([(sc.ptr(0, BOX32), 10, [-1] * 3, d, _inv(d)), ((1 << 28) | BOX32, 10, [-1] * 3, d, _inv(d))], tsharp(sc.base, 4), backend) \
    == [[1, 2, 3, 4], [INV] * 4]
  # in range but the 128-byte box node crosses the end of the mapped area: a global read fault naming the node
  with pytest.raises(GPUFault) as ei: sc.run([(sc.ptr(0, BOX32), 10, [-1] * 3, d, _inv(d)), (sc.ptr(448, BOX32), 10, [0] * 3, d, _inv(d))],
                                             tsharp(sc.base, 63), backend)
  r = ei.value.report
  assert (r.kind, r.space, r.address, r.size, r.lane, r.nearest[0]) == ("read", "global", sc.base + 448, 128, 1, "bvh")
  assert "IMAGE_BVH_INTERSECT_RAY" in r.disasm
  for T, ptr, what in [(tsharp(sc.base, 63, typ=9), sc.ptr(0, BOX32), "TYPE=9"), (tsharp(sc.base, 63), sc.ptr(0, 6), "type 6 (INSTANCE)"),
                       (tsharp(sc.base, 63, grow=3), sc.ptr(0, BOX32), "BOX_GROWING_AMOUNT=3"),
                       (tsharp(sc.base, 63, tri_return=0), sc.ptr(0, TRI), "TRIANGLE_RETURN_MODE=0"),
                       ([*tsharp(sc.base, 63)[:1], tsharp(sc.base, 63)[1] | 1 << 20, *tsharp(sc.base, 63)[2:]], sc.ptr(0, TRI), "sets bit 52")]:
    with pytest.raises(InvalidInstruction, match=re.escape(what)): sc.run([(ptr, 10, [0] * 3, d, _inv(d))], T, backend)

# ---- RDNA4 (gfx1201): VIMAGE IMAGE_BVH[64]_INTERSECT_RAY, address groups in vaddr0..vaddr4 ----
from tinygrad.runtime.autogen.amd.rdna4 import ins as R4
from mockgpu.emu.api import run_code

def run_r4(sc: Scene, rays, T, backend, bvh64=False, a16=False):
  """As Scene.run with the gfx1201 encoding: the groups (node pointer, extent, origin, direction, inverse direction; A16:
  the three packed direction dwords in vaddr3) are moved to scattered VGPRs v80, v70, v60, v50, v40 first."""
  for i, r in enumerate(rays): sc.rays[12 * i:12 * i + 12] = ray_words(*r, bvh64=bvh64, a16=a16)
  npd = 2 if bvh64 else 1
  src, cnt = [10, 10 + npd, 11 + npd, 14 + npd, 17 + npd], [npd, 1, 3, 3, 3]
  movs = [R4.v_mov_b32_e32(R4.v[d + i], R4.v[s0 + i]) for s0, d, n in zip(src, (80, 70, 60, 50, 40), cnt) for i in range(n)]
  op = R4.image_bvh64_intersect_ray if bvh64 else R4.image_bvh_intersect_ray
  prog = [*(R4.s_mov_b32(R4.s[4 + i], T[i]) for i in range(4)), R4.v_mul_u32_u24_e32(R4.v[1], 48, R4.v[0]),
          *(R4.global_load_b128(vdst=R4.v[10 + 4 * k:13 + 4 * k], vaddr=R4.v[1:2], saddr=R4.s[0:1], ioffset=16 * k) for k in range(3)),
          R4.s_wait_loadcnt(simm16=0), *movs,
          op(vdata=R4.v[30:33], rsrc=4, vaddr0=80, vaddr1=70, vaddr2=60, vaddr3=50, vaddr4=40, dmask=15, r128=1, a16=int(a16)),
          R4.s_wait_bvhcnt(simm16=0), R4.v_lshlrev_b32_e32(R4.v[2], 4, R4.v[0]),
          R4.global_store_b128(vaddr=R4.v[2:3], vsrc=R4.v[30:33], saddr=R4.s[2:3], ioffset=0), R4.s_endpgm()]
  run_code(b"".join(i.to_bytes() for i in prog), sc.bufs.mem, arch="gfx1201", block=(len(rays), 1, 1), user_sgprs=sc.bufs.sgprs(),
           rsrc2=4 << 1, backend=backend)
  return sc.out.reshape(32, 4)[:len(rays)].tolist()

@pytest.mark.parametrize("backend", BACKENDS)
def test_rdna4_vimage_bvh(backend):
  sc, V, kids, lo, hi = small_scene()
  d, o = [.125, .25, 1], [.1, .2, -1]
  rays = [(sc.ptr(192, TRI), 10, o, d, _inv(d)), (sc.ptr(256, BOX32), 10, o, d, _inv(d)), (sc.ptr(256, BOX32), 2.5, o, d, _inv(d))]
  want = [ref_tri(V, o, d), ref_box(kids, lo, hi, o, _inv(d), 10), ref_box(kids, lo, hi, o, _inv(d), 2.5)]
  assert run_r4(sc, rays, tsharp(sc.base, 63), backend) == want and want[1] == [2, 4, 1, INV] and want[2] == [2, INV, INV, INV]
  abs64 = [((sc.base >> 3) + r[0],) + r[1:] for r in rays]
  assert run_r4(sc, abs64, tsharp(0, (1 << 42) - 1), backend, bvh64=True) == want
  d16 = np.array([.3, .2, 1.1], np.float16); i16 = (1 / d16.astype(np.float32)).astype(np.float16)
  rays = [(sc.ptr(192, TRI), 10, o, d16, i16), (sc.ptr(256, BOX32), 10, o, d16, i16)]
  assert run_r4(sc, rays, tsharp(sc.base, 63), backend, a16=True) == [ref_tri(V, o, d16.astype(np.float32)), ref_box(kids, lo, hi, o, i16.astype(np.float32), 10)]
