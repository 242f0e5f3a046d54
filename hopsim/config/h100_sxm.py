"""The H100 SXM5 80 GB (GH100, sm_90a) as the simulator sees it.

Two groups, kept apart:
- `H100Spec`   facts of the chip (datasheet, programming guide, PTX ISA). Never calibrated.
- `H100Timing` timing parameters of the model. Each starts as literature or ``assumed`` and is
  replaced by a ``measured:`` value when `hopsim validate calibrate` turns the microbenchmark records
  (validation/records/h100/microbench__*.json) into `h100_sxm_calibrated.json` beside this file.

Sources cited in brackets (e.g. the Luo et al. paper) are listed in docs/references.md.
"""

from __future__ import annotations

from hopsim.config.base import P, Param, ParamGroup


class H100Spec(ParamGroup):
    """Chip facts of the H100 SXM5 80 GB."""

    num_sms: Param = P(132, "SMs", "streaming multiprocessors enabled", "spec: [LOCKWOOD], [NV-INDEPTH]; validation H100 reports 132 [KINDS]")
    num_subpartitions: Param = P(4, "SMSPs/SM", "sub-partitions per SM, each with one warp scheduler and one tensor core", "spec: [NV-INDEPTH]")
    clock_mhz: Param = P(1980, "MHz", "maximum SM clock (cudaDevAttrClockRate); cycles convert to time at this clock", "spec: [BENCH-REPORT]")
    smem_per_sm_bytes: Param = P(233472, "bytes", "largest shared-memory carve-out per SM (228 KB)", "spec: [HTG] 1.4.1.1")
    smem_per_cta_bytes: Param = P(232448, "bytes", "largest shared memory one CTA may use (227 KB; 1 KB per CTA reserved)", "spec: [CPG-CC90]")
    smem_reserved_per_cta_bytes: Param = P(1024, "bytes", "shared memory the system reserves per resident CTA", "spec: [CPG-CC90]")
    smem_banks: Param = P(32, "banks", "shared-memory banks", "spec: [CPG-SWZ]")
    smem_bank_bytes: Param = P(4, "bytes", "width of one bank per cycle", "spec: [CPG-SWZ]")
    regs_per_sm: Param = P(65536, "32-bit registers", "register file per SM", "spec: [HTG] 1.4.1.1")
    reg_alloc_unit: Param = P(256, "registers", "register allocation granule per warp (8 per thread)", "spec: CUDA occupancy calculator, cc 9.0")
    max_regs_per_thread: Param = P(255, "registers", "registers one thread may use", "spec: [HTG]")
    max_threads_per_sm: Param = P(2048, "threads", "resident threads per SM", "spec: [HTG]")
    max_warps_per_sm: Param = P(64, "warps", "resident warps per SM", "spec: [HTG]")
    max_ctas_per_sm: Param = P(32, "CTAs", "resident CTAs per SM", "spec: [HTG]")
    max_threads_per_cta: Param = P(1024, "threads", "threads per CTA", "spec: CUDA programming guide, cc 9.0")
    l2_bytes: Param = P(52428800, "bytes", "L2 cache (50 MB enabled of 60 MB)", "spec: [LOCKWOOD]")
    hbm_bytes: Param = P(85899345920, "bytes", "HBM3 capacity (80 GiB)", "spec: [LOCKWOOD]")
    hbm_peak_bytes_per_s: Param = P(3.35e12, "bytes/s", "HBM3 datasheet bandwidth", "spec: [LOCKWOOD]")
    tensor_fma_f16_per_cycle_per_sm: Param = P(2048, "FMA/cycle/SM", "dense f16/bf16 tensor-core rate (4096 FLOP/clk/SM)", "spec: [FORUM-244727]; 989.4e12 / (132 * 4096 * 1.83e9) = 1.00")
    mufu_results_per_clock_per_sm: Param = P(16, "results/cycle/SM", "special-function (MUFU) results per clock per SM: 32-bit rcp, rsqrt, lg2 (__log2f), ex2 (exp2f), sin, cos; a warp instruction holds its sub-partition's pipe 32 / (16 / 4) = 8 cycles", "spec: [CPG-ARITH] compute capability 9.0 column")
    shfl_results_per_clock_per_sm: Param = P(32, "results/cycle/SM", "warp shuffle results per clock per SM; a shfl.sync holds its sub-partition's pipe 32 / (32 / 4) = 4 cycles", "spec: [CPG-ARITH] compute capability 9.0 column")
    tensor_clock_mhz: Param = P(1830, "MHz", "clock behind NVIDIA's 989.4 TFLOP/s dense f16 figure", "spec: [LOCKWOOD]")


class H100Timing(ParamGroup):
    """Timing parameters of the model (SM cycles unless the unit says otherwise)."""

    issue_cycles: Param = P(1, "cycles", "issue slot of one warp instruction at its sub-partition scheduler", "spec: one warp instruction per clock per scheduler [NV-INDEPTH]")
    mufu_latency_cycles: Param = P(23, "cycles", "dependent-use latency of a MUFU instruction (ex2/rcp.approx): from its start on the sub-partition's MUFU pipe to its result being readable", "literature: [ACCELSIM-H100] sfu latency 23, initiation interval 8 (a simulator's H100 config, not a measurement; no H100 microbenchmark in validation/records/h100, none in [LUO24]/[LUO25])")
    shfl_latency_cycles: Param = P(24, "cycles", "dependent-use latency of a shfl.sync: from its start on the sub-partition's shuffle pipe to its result being readable", "assumed: no H100 microbenchmark in validation/records/h100 and none in [LUO24]/[LUO25]; until a microbenchmark measures it")
    alu_latency_cycles: Param = P(4, "cycles", "dependent-issue latency of integer/float ALU instructions", "assumed: typical sm80/sm90 value, not measured here")
    smem_latency_cycles: Param = P(29, "cycles", "ld.shared latency of a conflict-free access (one wavefront)", "literature: [LUO24] Table IV, H800 PCIe p-chase")
    smem_cycles_per_wavefront: Param = P(1, "cycles", "shared-memory data-path time per wavefront (128 B/clk)", "spec: [CPG-SWZ] 32 banks x 4 B per clock")
    smem_store_bytes_per_cycle: Param = P(0, "B/cycle", "rate st.shared and stmatrix write their wavefronts through the shared-memory data path (0: as loads, 128 B per smem_cycles_per_wavefront)", "assumed: as loads until microbench__smemport measures stores alone")
    smem_port_bytes_per_cycle: Param = P(0, "bytes/cycle", "shared-memory port bandwidth that wgmma SS operand reads, TMA fills and LSU wavefronts share when they run together (0: no contention, each client at its own rate)", "assumed: off until microbench__smemport measures the pairs")
    smem_port_wgmma_weight: Param = P(1.0, "port bytes/operand byte", "port bytes one byte of a wgmma SS operand read (A from smem, B) takes of smem_port_bytes_per_cycle", "assumed: every operand byte is read through the port")
    smem_port_fill_tensor_cycles_per_kib: Param = P(0, "cycles/KiB", "tensor-pipe time a TMA fill landing while wgmmas run costs them, per KiB filled (0: fills do not slow wgmma)", "assumed: off until microbench__smemport measures wgmma beside a TMA stream")
    smem_port_rank_wgmma: Param = P(0, "rank", "arbitration rank of wgmma operand reads on the shared-memory port (a higher rank takes its full rate first; equal ranks share the rest in proportion to their demands)", "assumed: equal ranks")
    smem_port_rank_tma: Param = P(0, "rank", "arbitration rank of TMA fills on the shared-memory port (as smem_port_rank_wgmma)", "assumed: equal ranks")
    smem_port_tma_weight: Param = P(1.0, "port bytes/filled byte", "port bytes one byte a TMA fill (or TMA store read) writes takes of smem_port_bytes_per_cycle (0: fills are not on the port and neither slow nor are slowed by the other clients)", "assumed: every filled byte written through the port")
    smem_port_rank_lsu: Param = P(0, "rank", "arbitration rank of LSU wavefronts (ld/st.shared, ldmatrix, stmatrix) on the shared-memory port (as smem_port_rank_wgmma)", "assumed: equal ranks")
    gmem_l2_latency_cycles: Param = P(263, "cycles", "global load latency on an L2 hit (SM clock domain: fixed in SM cycles when the SM clock drops, microbench__clock_domain)", "literature: [LUO24] Table IV, H800 PCIe")
    hbm_extra_latency_ns: Param = P(170, "ns", "time an L2 miss adds to an L2 hit's load latency (DRAM access, memory clock domain: fixed in ns when the SM clock drops, microbench__clock_domain); in SM cycles it scales with the run's SM clock", "literature: [HPMLL] random chase 600-650 vs ~265 cycles, H800 PCIe at ~1.75 GHz")
    l2_bytes_per_s: Param = P(7.8e12, "bytes/s", "whole-chip L2 read bandwidth of distinct data to the SMs (L2 clock domain: in SM cycles it scales with the run's SM clock)", "literature: [LUO24] Table V, H800 PCIe FP32.v4, 3942 B/clk x 1.98 GHz")
    l2_delivery_bytes_per_s: Param = P(2.0e13, "bytes/s", "whole-chip L2 -> SM delivery bandwidth counting every SM's copy of tiles read by several SMs together (L2 clock domain)", "assumed: until microbench__tma_share measures it")
    l2_delivery_requests_per_s: Param = P(1.6e11, "requests/s", "whole-chip L2 -> SM delivered requests (box rows), every SM's copy counted", "assumed: until microbench__tma_share measures it")
    hbm_bytes_per_s: Param = P(3.0e12, "bytes/s", "whole-chip achievable HBM -> L2 bandwidth (memory clock domain)", "literature: 3.0e12 B/s D2D measured on the validation H100 [KINDS]")
    tma_issue_cycles: Param = P(8, "cycles", "time the issuing thread is held per cp.async.bulk.tensor (its clock64 advance per box)", "assumed: not published")
    tma_issue_elect_cycles: Param = P(8, "cycles", "time the issuing warp is held per cp.async.bulk.tensor guarded by a predicate from elect.sync (ptxas then issues it on the uniform path without the per-lane loop)", "assumed: until microbench__tma_issue measures it")
    tma_issue_uniform_cycles: Param = P(0, "cycles", "issuing thread hold per cp.async.bulk.tensor with no guard predicate (one lane on its own path: ptxas emits the copy on uniform operands, no per-lane loop; 0: as tma_issue_cycles)", "assumed: as a lane-guarded copy until microbench__tma_issue measures it")
    sass_plain_cycles: Param = P(1, "cycles/instruction", "time a warp spends per SASS instruction of a TMA issue path that is neither an R2UR nor a branch (uniform-datapath and ALU instructions, ELECT, UTMALDG itself)", "spec: one warp instruction per clock per scheduler [NV-INDEPTH], until calibrate fits microbench__tma_issue on the committed SASS")
    sass_r2ur_cycles: Param = P(1, "cycles/instruction", "time a warp spends per R2UR (a per-lane register moved into a uniform register: a copy's operands computed per lane)", "spec: one warp instruction per clock per scheduler [NV-INDEPTH], until calibrate fits microbench__tma_issue on the committed SASS")
    sass_branch_cycles: Param = P(1, "cycles/instruction", "time a warp spends per branch of a TMA issue path (BRA.U.ANY closing ptxas' loop over the active lanes, a lane-divergent or loop BRA)", "spec: one warp instruction per clock per scheduler [NV-INDEPTH], until calibrate fits microbench__tma_issue on the committed SASS")
    gemm_single_lane_tma_issue_cycles: Param = P(8, "cycles", "per-box hold of the GEMM twin's copies, variant single, issuer lane 0 (GEMM_ELECT 0): what tma_issue_cycles is for that kernel", "assumed: as tma_issue_cycles until calibrate derives it from the twin's SASS")
    gemm_single_elect_tma_issue_cycles: Param = P(8, "cycles", "per-box hold of the GEMM twin's copies, variant single, issuer elect.sync: what tma_issue_elect_cycles is for that kernel", "assumed: as tma_issue_elect_cycles until calibrate derives it from the twin's SASS")
    gemm_ws_lane_tma_issue_cycles: Param = P(8, "cycles", "per-box hold of the GEMM twin's copies, variant ws, issuer lane (thread 0 alone issues them unpredicated): what tma_issue_cycles is for that kernel", "assumed: as tma_issue_cycles until calibrate derives it from the twin's SASS")
    gemm_ws_elect_tma_issue_cycles: Param = P(8, "cycles", "per-box hold of the GEMM twin's copies, variant ws, issuer elect.sync: what tma_issue_elect_cycles is for that kernel", "assumed: as tma_issue_elect_cycles until calibrate derives it from the twin's SASS")
    tma_unit_box_cycles: Param = P(8, "cycles", "one SM's TMA unit time to accept a box (boxes from several threads of the SM queue here)", "assumed: no microbenchmark issues from several threads of one SM yet; below the 78 cycles one thread takes")
    l2_requests_per_s: Param = P(1.1e11, "requests/s", "whole-chip L2 request rate (one request per TMA box row; L2 clock domain)", "assumed: until microbench__tma_width measures narrow boxes on all SMs")
    tma_row_cycles: Param = P(1.0, "cycles", "TMA unit time per box row (one L2 request per row of the box's inner extent)", "assumed: one request per cycle")
    tma_bytes_per_cycle: Param = P(128, "bytes/cycle", "bytes per cycle one SM's TMA unit can write into shared memory", "assumed: equals the 128 B/clk shared-memory port")
    tma_extra_latency_cycles: Param = P(100, "cycles", "TMA round trip beyond an ordinary load of the same data", "literature: [HPMLL] 365 (TMA) vs 264 (ld) cycles from L2, H800 PCIe")
    wgmma_fixed_latency_cycles: Param = P(0, "cycles", "wgmma latency beyond its tensor-pipe time N/2 (m64nNk16 f16)", "literature: [LUO24] m64n256k16 latency 128.0 = N/2, H800 PCIe")
    wgmma_rs_fixed_latency_cycles: Param = P(0, "cycles", "latency of a wgmma with A in registers (RS) beyond its tensor-pipe time N/2 (wgmma_fixed_latency_cycles is the SS one: A read from shared memory first)", "assumed: as the literature's N/2 until microbench__wgmma's RS rows measure it")
    wgmma_pipe_min_cycles: Param = P(1, "cycles", "least tensor-pipe occupancy of one wgmma m64nNk16 (small N: the next wgmma of the SM enters the pipe no sooner)", "assumed: no floor until microbench__wgmma measures it")
    wgmma_ss_operand_bytes_per_cycle: Param = P(0, "B/cycle", "rate a lone SS wgmma reads its A and B operands from shared memory: its tensor-pipe occupancy is at least operand bytes / this (0: no limit)", "assumed: no limit until microbench__wgmma measures it")
    wgmma_issue_cycles: Param = P(1, "cycles", "warpgroup issue time of one wgmma.mma_async m64n128k16 (other N: scaled by N/128, at least 1 cycle)", "assumed")
    wgmma_queue_depth: Param = P(8, "wgmmas", "wgmma.mma_async an SM's tensor pipe holds, executing and waiting; a further issue waits until the oldest completes", "assumed: until microbench__wgmma_queue measures it")
    mbarrier_arrive_cycles: Param = P(8, "cycles", "mbarrier.arrive (incl. expect_tx) issue-to-effect", "assumed: not published")
    mbarrier_try_wait_cycles: Param = P(0, "cycles", "mbarrier.try_wait.parity that finds its phase already complete (the warp resumes after it)", "assumed: free until measured")
    wgmma_sync_cycles: Param = P(0, "cycles", "release of a wgmma.wait_group 0: its warps resume this long after the last group it covers completes (an empty group: at the wait's issue); a wait_group N > 0 costs its issue slot", "assumed: free until measured")
    mbarrier_wakeup_cycles: Param = P(20, "cycles", "phase completion to a try_wait-ing warp resuming", "assumed: not published")
    bar_sync_cycles: Param = P(20, "cycles", "bar.sync release after the last warp arrives", "assumed")
    cta_launch_cycles: Param = P(1000, "cycles", "relaunch gap: from a CTA's exit to the start of the next CTA in its freed slot on the same SM (first-wave CTAs start at cycle 0)", "assumed")
    cta_dispatch_cycles: Param = P(0, "cycles", "one SM accepts one CTA per this many cycles: a grid ends no earlier than (CTAs per SM - 1) intervals (throughput of short CTAs)", "assumed: until launch2 measures it")
    launch_overhead_ns: Param = P(2000, "ns", "time a launch adds back to back (CUDA graph) beyond its CTAs' work: grid launch and completion in the front end (fixed in ns, not on the SM clock)", "assumed: until launch2 measures it")
    launch_per_sm_ns: Param = P(0, "ns", "launch overhead added per SM the grid reaches beyond the first (first-wave distribution and completion over the SMs)", "assumed: until launch2 measures it")
    gst_bytes_per_cycle_per_sm: Param = P(64, "bytes/cycle", "st.global sector bytes one SM can send to L2 per cycle (one FIFO per SM; a storing warp goes on when its sectors have left)", "assumed")
    gmem_outstanding_sectors_per_sm: Param = P(1024, "32-B sectors", "ld.global sectors one SM may have in flight to L2/HBM (MSHR-like bound; a request beyond waits until the oldest in flight returns)", "assumed: provisional: to be calibrated from microbench__gmem (Little's law: sustained bytes/cycle/SM x loaded latency at low vs high occupancy); 1024 sectors = 32 KB keeps 132 SMs above the 3 TB/s HBM rate at the ~700-cycle miss latency")
    l2_dirty_fraction: Param = P(0.5, "fraction of l2_bytes", "stored bytes the L2 holds dirty before their write-back must take HBM time at once; below it, write-backs use the HBM link's idle time (a write-back cache drains lazily; beyond it stores are written back as they arrive)", "assumed: provisional: to be calibrated from microbench__gmem store streams (L2-resident vs beyond-L2 stores)")
    hbm_write_bytes_per_s: Param = P(3.0e12, "bytes/s", "whole-chip L2 -> HBM write-back bandwidth; writes share the HBM link with reads (memory clock domain)", "assumed: provisional: the read rate hbm_bytes_per_s until microbench__gmem store streams measure it")
    l2_effective_capacity_fraction: Param = P(1.0, "fraction of l2_bytes", "share of the L2's bytes that the L2 residency (LRU) holds for re-reads: a line read again hits only if the distinct bytes touched since fit in l2_bytes x this (the two 25 MB partitions and their duplication can make the usable capacity for SM-spread re-reads smaller than 50 MB)", "assumed: 1.0 (the whole L2) until micro_membw's reuse family (re-read time vs footprint 8..96 MiB) measures it")
    gmem_line_issue_cycles: Param = P(0, "cycles/line", "time one SM's load path takes per 128-B line request of ld.global before the request leaves for L2 (FIFO per SM; a warp access touching k lines sends its last line k x this after the first): the serialisation of a multi-line warp request", "assumed: 0 (all lines leave at issue) until micro_membw's chain family (lone-warp cycles per trip at 4/8/16-B vectors = 1/2/4 lines) measures it")
    sm_link_max_bytes_per_s: Param = P(0, "bytes/s", "most bytes per second ONE SM can take from L2 (its L2 -> SM port) in the partitioned memory mode, where an SM's link is the chip's bandwidth / the SMs the grid uses (0: no cap, an SM of a 1-CTA grid gets the whole chip's bandwidth)", "assumed: 0 (no cap) until micro_membw's sms family (read bandwidth on 1..132 SMs) measures it")


def h100_spec() -> H100Spec:
    return H100Spec()


def h100_timing_defaults() -> H100Timing:
    return H100Timing()
