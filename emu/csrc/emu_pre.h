/* emu_pre.h: included first. The register-file and memory hooks of contract 1, defined before pcode_rt.h so its
 * defaults stay out; the functions are in emu_core.h, MEM goes to global memory, LDS or scratch by the executing
 * instruction's family. */
#define PC_MEM_RD(s, a, n) emu_mem_rd((s), (a), (n))
#define PC_MEM_WR(s, a, n, v) emu_mem_wr((s), (a), (n), (v))
#define PC_VGPR_RD(s, lane, reg) vgpr_rd((s), (lane), (reg))
#define PC_VGPR_WR(s, lane, reg, v) vgpr_wr((s), (lane), (reg), (v))
#define PC_SGPR_RD(s, reg) sgpr_rd((s), (reg))
#define PC_SGPR_WR(s, reg, v) sgpr_wr((s), (reg), (v))
/* RDNA4 and CDNA memory pseudocode computes its address with these built-ins; the handler has already put the effective address
 * (base + offsets, as the hardware forms it) in ADDR, so they return it */
#define PC_EXT_CalcGlobalAddr(s, ...) ((s)->ADDR)
#define PC_EXT_CalcScratchAddr(s, ...) ((s)->ADDR)
#define PC_EXT_CalcFlatAddr(s, ...) ((s)->ADDR)
#define PC_EXT_CalcDsAddr(s, ...) ((s)->ADDR)
#define PC_EXT_CalcScalarGlobalAddr(s, ...) ((s)->ADDR)
#define PC_EXT_CalcImageAddr(s, ...) ((s)->ADDR)
/* V_PERMLANE64_B32 in wave32: "treated as scalar NOP" */
#define PC_EXT_s_nop(s, ...) 0
