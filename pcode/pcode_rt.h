/* pcode_rt.h: runtime for C generated from AMD ISA pseudocode by mockgpu.pcode.cemit. See docs/pcode.md.
 *
 * ABI (contract 1 of docs/architecture.md):
 *   - one function per opcode: static inline void pc_<EnumClass>_<MEMBER>(PcState *s)
 *   - values inside a function are uint64_t (<= 64 bits), pc_u128 (<= 128) or PcWideT (<= 1024), see pcode_math.h
 *   - PcState holds the pseudocode variables under their own names, as raw bits. Wide registers (S0..D1, DATA*, VDATA,
 *     SDATA, RETURN_DATA) are PcReg unions of up to 1024 bits (little-endian dwords); everything else is uint64_t.
 *     Floats are IEEE bit patterns; booleans are 0/1. Writes to a register only touch the bits the pseudocode names.
 *   - memory and register files go through macros the includer may define before including this header:
 *       PC_MEM_RD(s, addr, nbytes)            -> uint64_t   (nbytes 1, 2, 4, 8; little-endian)
 *       PC_MEM_WR(s, addr, nbytes, val)
 *       PC_VGPR_RD(s, lane, reg)              -> uint32_t
 *       PC_VGPR_WR(s, lane, reg, val)
 *       PC_SGPR_RD(s, reg)                    -> uint32_t
 *       PC_SGPR_WR(s, reg, val)
 *       PC_EXT_<Name>(s, args...)            built-ins only the machine knows (CalcBufferAddr, ConvertFromFormat, s_nop, ...);
 *                                              the generated file defaults each one it uses to pc_ext_missing().
 *     The defaults below serve standalone tests: a 64 KiB byte array for MEM, 64x256 VGPRs, 128 SGPRs, all in PcState-free
 *     static storage, with out-of-range accesses recorded in s->fault instead of touching memory.
 *   - a failed access or a missing hook sets s->fault (non-zero) and s->fault_msg; the entry keeps running with zeros, the
 *     caller checks s->fault after the call.
 */
#ifndef PCODE_RT_H
#define PCODE_RT_H
#include <stdint.h>
#include <string.h>
#include <math.h>

typedef union { uint64_t q[16]; uint32_t d[32]; } PcReg;       /* 1024 bits */

typedef struct PcState {
  PcReg S0, S1, S2, D0, D1, DATA, DATA0, DATA1, DATA2, VDATA, SDATA, RETURN_DATA;
  uint64_t SCC;
  uint64_t VCC;
  uint64_t EXEC;
  uint64_t EXEC_LO;
  uint64_t VCCZ;
  uint64_t EXECZ;
  uint64_t M0;
  uint64_t PC;
  uint64_t laneId;
  uint64_t WAVE64;
  uint64_t SIMM16;
  uint64_t SIMM32;
  uint64_t ADDR;
  uint64_t ADDR0;
  uint64_t ADDR1;
  uint64_t ADDR_BASE;
  uint64_t OFFSET;
  uint64_t OFFSET0;
  uint64_t OFFSET1;
  uint64_t IOFFSET;
  uint64_t INST_OFFSET;
  uint64_t SRC0;
  uint64_t SRC1;
  uint64_t SRC2;
  uint64_t DST;
  uint64_t VDST;
  uint64_t SBASE;
  uint64_t SOFFSET;
  uint64_t VADDR;
  uint64_t SRSRC;
  uint64_t SADDR;
  uint64_t SGPR_ADDR;
  uint64_t vgpr_a;
  uint64_t sgpr_o;
  uint64_t v_addr;
  uint64_t v_addr_off;
  uint64_t s_saddr;
  uint64_t s_saddr_off;
  uint64_t flat_scratch;
  uint64_t offset;
  uint64_t sgpr_base;
  uint64_t mem_addr;
  uint64_t OPSEL;
  uint64_t OPSEL_HI;
  uint64_t NEG;
  uint64_t SDWA_SRC0_SEL;
  uint64_t NUM_VGPRS;
  uint64_t MODE;             /* the MODE register (FP_ROUND, FP_DENORM, DX10_CLAMP, IEEE): rounding and denormals of every float op */
  uint64_t WAVE_MODE_CSP;
  uint64_t WAVE_MODE_GPR_IDX_EN;
  uint64_t TRAPSTS_INVALID;
  uint64_t WAVE_STATUS_PRIV;
  uint64_t WAVE_STATUS_COND_DBG_SYS;
  uint64_t WAVE_STATUS_COND_DBG_USER;
  uint64_t MODE_SCALAR_PREFETCH_EN;
  uint64_t INST_OMOD;
  uint64_t INST_ABS;
  uint64_t INST_NEG;
  uint64_t TADDR_X;
  uint64_t TADDR_Y;
  uint64_t TADDR_Z;
  uint64_t TADDR_W;
  int fault;                 /* 0 = ok; set by the default memory macros and missing PC_EXT_ hooks */
  const char *fault_msg;
  void *user;                /* free for the includer's macros (e.g. the wave / lane context) */
} PcState;

/* ---------- default memory and register files (standalone use) ---------- */
#ifndef PC_MEM_RD
#define PC_DEFAULT_MEM_BYTES 65536
static uint8_t pc_default_mem[PC_DEFAULT_MEM_BYTES];
static inline uint64_t pc_default_mem_rd(PcState *s, uint64_t addr, int n) {
  if (addr > PC_DEFAULT_MEM_BYTES - (uint64_t)n) { s->fault = 1; s->fault_msg = "MEM read out of range"; return 0; }
  uint64_t v = 0; memcpy(&v, pc_default_mem + addr, n); return v;
}
static inline void pc_default_mem_wr(PcState *s, uint64_t addr, int n, uint64_t v) {
  if (addr > PC_DEFAULT_MEM_BYTES - (uint64_t)n) { s->fault = 1; s->fault_msg = "MEM write out of range"; return; }
  memcpy(pc_default_mem + addr, &v, n);
}
#define PC_MEM_RD(s, addr, n) pc_default_mem_rd((s), (addr), (n))
#define PC_MEM_WR(s, addr, n, v) pc_default_mem_wr((s), (addr), (n), (v))
#endif
#ifndef PC_VGPR_RD
static uint32_t pc_default_vgpr[64][256];
static inline uint32_t pc_default_vgpr_rd(PcState *s, uint64_t lane, uint64_t reg) {
  if (lane >= 64 || reg >= 256) { s->fault = 1; s->fault_msg = "VGPR read out of range"; return 0; }
  return pc_default_vgpr[lane][reg];
}
static inline void pc_default_vgpr_wr(PcState *s, uint64_t lane, uint64_t reg, uint32_t v) {
  if (lane >= 64 || reg >= 256) { s->fault = 1; s->fault_msg = "VGPR write out of range"; return; }
  pc_default_vgpr[lane][reg] = v;
}
#define PC_VGPR_RD(s, lane, reg) pc_default_vgpr_rd((s), (lane), (reg))
#define PC_VGPR_WR(s, lane, reg, v) pc_default_vgpr_wr((s), (lane), (reg), (v))
#endif
#ifndef PC_SGPR_RD
static uint32_t pc_default_sgpr[128];
static inline uint32_t pc_default_sgpr_rd(PcState *s, uint64_t reg) {
  if (reg >= 128) { s->fault = 1; s->fault_msg = "SGPR read out of range"; return 0; }
  return pc_default_sgpr[reg];
}
static inline void pc_default_sgpr_wr(PcState *s, uint64_t reg, uint32_t v) {
  if (reg >= 128) { s->fault = 1; s->fault_msg = "SGPR write out of range"; return; }
  pc_default_sgpr[reg] = v;
}
#define PC_SGPR_RD(s, reg) pc_default_sgpr_rd((s), (reg))
#define PC_SGPR_WR(s, reg, v) pc_default_sgpr_wr((s), (reg), (v))
#endif
static inline uint64_t pc_ext_missing(PcState *s, const char *name) {
  if (!s->fault) { s->fault = 2; s->fault_msg = name; }
  return 0;
}

#include "pcode_math.h"
#endif
