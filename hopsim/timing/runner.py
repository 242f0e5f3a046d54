"""Public entry of the timed machine: `simulate(kernel, launch, ...) -> SimResult`.

    simulate(kernel, launch, gpu=load_gpu(), values=True, trace=False)

1. occupancy: CTAs per SM from the CTA's threads, shared memory (static + dynamic + 1 KB
   reserved) and registers (occupancy.py);
2. one SimPy environment for the whole GPU: a `MemorySystem` (L2 + HBM) shared by all SMs, an
   `SM` (schedulers, smem port, tensor cores, TMA unit) per SM that runs CTAs, and the
   `CtaScheduler` that places CTAs on SM slots in waves (gpu.py);
3. each CTA: a functional `CTAExecutor` (values or timing-only) driven by `CtaRun` (sm.py);
4. the result: cycles, per-role issue/wait cycles, unit busy fractions, bytes, FLOPs (result.py),
   and a Chrome trace when `trace=True` (trace.py).

`values=False` runs the executor in timing-only mode (no data copies, no MMA math); its cycles
equal the full mode's (tests/timing/test_runner.py checks this on the test kernels).
"""

from __future__ import annotations

from hopsim.config import load_gpu
from hopsim.result import SimResult
from hopsim.timing.gpu import CtaScheduler, waves
from hopsim.timing.memory import MemorySystem
from hopsim.timing.occupancy import occupancy
from hopsim.timing.pipes import Jitter
from hopsim.timing.sm import SM, CtaRun, _Consts, ideal_wavefronts
from hopsim.trace import Trace
from hopsim.timing import memo as memo_mod
from hopsim.timing import smclass
from isa.errors import HopsimError, InputError

import simpy

REG_WORDS = {"pred": 0, "b64": 2, "u64": 2, "s64": 2, "f64": 2}


def regs_per_thread_of(kernel) -> int:
    """32-bit registers one thread needs, from the kernel's `.reg` declarations (64-bit = 2,
    predicates live in predicate registers), at least 16 (ptxas' usual floor; an estimate:
    ptxas allocates after its own register allocation)."""
    n = 0
    for d in getattr(kernel, "regs", ()):
        words = REG_WORDS.get(getattr(d, "type", "b32"), 1)
        n += words * (getattr(d, "count", None) or 1)
    return max(16, min(255, n))


def _bank_model():
    """The functional bank model (wavefronts of one warp access) when it exists."""
    try:
        from hopsim.functional import banks  # noqa: F401  (the banks helper's module)
    except ImportError:
        return ideal_wavefronts
    from hopsim.timing.smem_cost import wavefronts_of
    return wavefronts_of


def simulate(kernel, launch, gpu=None, *, values: bool = True, trace: bool = False, gmem=None,
             checks: bool = True, flop_count: float | None = None, regs_per_thread: int | None = None,
             jitter_seed: int | None = None, jitter_cycles: int = 0, executor_factory=None,
             bank_model=None, memory: str = "shared", memo: bool = False,
             max_cycles: int | None = None) -> SimResult:
    """Time `kernel` launched as `launch` on `gpu` (default H100 SXM). See module docstring.

    gmem: the `GlobalMemory` holding the kernel's buffers and tensor maps (shared by all CTAs).
    flop_count: FLOPs the caller counts for TFLOP/s (default: the tensor FLOPs executed).
    jitter_seed/jitter_cycles: seeded random extra latency (0..jitter_cycles) on L2/HBM, TMA,
    wgmma and smem, for race flushing; off by default (deterministic).
    executor_factory(cta_linear) -> executor: replaces `CTAExecutor` (tests use scripted ones).
    bank_model(effect, consts) -> (wavefronts, ideal): replaces the functional bank model.
    memory: "shared" (default: one FIFO L2 link and one HBM link for the chip, L2 residency looked
    up when a request reaches memory) or "partitioned" (each SM owns 1/num_sms of both links; L2
    residency of a CTA's TMA tiles decided when it is dispatched; see memory.SmLink, memo.py).
    memo: replay CTAs whose inputs to timing equal an already simulated CTA's (memo.py; with 2+
    CTAs per SM: SMs of equal history share one simulation, smclass.py); needs values=False,
    memory="partitioned" and no jitter, else it is refused.
    max_cycles: stop with a `SimulationLimit` error naming the running warps if the launch is not
    done by then (a livelock, e.g. a test_wait spin on a phase that never completes).
    """
    gpu = gpu or load_gpu()
    if memory not in ("shared", "partitioned"):
        raise InputError("memory", memory, '"shared" or "partitioned"')
    if memo and (values or memory != "partitioned" or jitter_cycles):
        raise InputError("memo", memo, 'memo=True needs values=False, memory="partitioned" and no jitter')
    if executor_factory is None:
        from hopsim.functional.executor import CTAExecutor
        from hopsim.functional.gmem import GlobalMemory

        gmem = gmem if gmem is not None else GlobalMemory()

        def executor_factory(cta):
            return CTAExecutor(kernel, launch, gmem, cta, values=values, checks=checks)

        def plan_factory(cta):  # timing-only: the zero-time sample runs never touch data
            return CTAExecutor(kernel, launch, gmem, cta, values=False, checks=False)
    else:
        plan_factory = executor_factory

    smem = int(getattr(kernel, "static_smem_bytes", 0) or 0) + int(getattr(launch, "dynamic_smem", 0) or 0)
    occ = occupancy(gpu, threads_per_cta=launch.num_threads, smem_bytes_per_cta=smem,
                    regs_per_thread=regs_per_thread or regs_per_thread_of(kernel))
    num_sms = int(gpu.spec.num_sms.value)
    num_ctas = launch.num_ctas

    env = simpy.Environment()
    jitter = Jitter(jitter_seed, jitter_cycles)
    memory_mode = memory
    memory = MemorySystem(gpu, trace=trace, jitter=jitter)
    consts = _Consts(gpu)
    wavefronts = bank_model or _bank_model()
    sms: dict[int, SM] = {}
    agg = _Aggregate(trace)
    live: set[CtaRun] = set()
    tr = Trace(gpu.clock_mhz) if trace else None

    partitioned = memory_mode == "partitioned"
    plan = memo_mod.TilePlan.build(launch, plan_factory) if partitioned else None
    dispatch = (memo_mod.DispatchResidency(plan, memory.residency, num_ctas, num_sms * occ.ctas_per_sm)
                if plan is not None else None)
    memo_table: dict = {}
    in_flight: dict = {}  # key -> (start cycle, event at its end) of CTAs simulated in detail now
    stats = {"memo_hits": 0, "detailed_ctas": 0}

    def run_cta(sm_id, slot, cta):
        sm = sms.get(sm_id)
        if sm is None:
            link = (memo_mod.PartitionedLink(gpu, memory.residency, min(num_sms, num_ctas), sm_id, trace=trace,
                                             jitter=jitter) if partitioned else memory)
            sm = sms[sm_id] = SM(gpu, sm_id, link, trace=trace, jitter=jitter)
        hits = key = None
        if plan is not None:
            hits = dispatch.classify(cta)
            key = hits.key
        start = env.now
        use_memo = memo and plan is not None  # (one CTA per SM here; more: smclass.py below)
        if use_memo:
            key = (key, memo_mod.sm_state(sm, start))
        if use_memo and key not in memo_table and key in in_flight:
            # an identical CTA is being simulated in detail since t0: it ends at t0 + d; this one
            # at start + d. Wait for it, then for the difference of start times.
            t0, done = in_flight[key]
            yield done
            if start > t0:
                yield env.timeout(start - t0)
            dur, delta, warp_stats, residue = memo_table[key]
            memo_mod.add_counters(sm, delta)
            memo_mod.apply_residue(sm, start, residue)
            stats["memo_hits"] += 1
            agg.add_stats(warp_stats)
            if tr is not None:
                tr.slice(sm_id, 100 + slot * 64, f"CTA {cta} (memoised)", start, env.now)
            sm.ctas_run += 1
            return
        if use_memo and key in memo_table:
            dur, delta, warp_stats, residue = memo_table[key]
            memo_mod.add_counters(sm, delta)
            memo_mod.apply_residue(sm, start, residue)
            stats["memo_hits"] += 1
            yield env.timeout(dur)
            agg.add_stats(warp_stats)
            if tr is not None:
                tr.slice(sm_id, 100 + slot * 64, f"CTA {cta} (memoised)", start, env.now)
            sm.ctas_run += 1
            return
        before = memo_mod.sm_counters(sm) if use_memo else None
        if use_memo:
            in_flight[key] = (start, env.event())
        ex = executor_factory(cta)
        run = CtaRun(env, sm, ex, consts, trace=trace, wavefronts=wavefronts, hits=hits)
        live.add(run)
        if tr is not None:
            tr.counter(sm_id, "resident CTAs", env.now, cta=cta)
        yield from run.run()
        live.discard(run)
        stats["detailed_ctas"] += 1
        if plan is not None and run.tiles != [[(h, co) for h, co, _ in row] for row in dispatch.tiles(cta)]:
            raise HopsimError(f"CTA {cta}: its TMA tiles differ from the affine tile plan (memo.py); "
                              "simulate with memory='shared'")
        if use_memo:
            memo_table[key] = (env.now - start, memo_mod.counter_delta(memo_mod.sm_counters(sm), before), run.stats,
                               memo_mod.sm_residue(sm, start))
            in_flight.pop(key)[1].succeed()
        sm.ctas_run += 1
        agg.add(run, sm_id, slot, tr)

    launch_cycles = float(gpu.timing.cta_launch_cycles.value)
    sm_memo = memo and plan is not None and occ.ctas_per_sm > 1
    if sm_memo:
        sched = None
        try:
            coord = _sm_classes(gpu, memory, dispatch, executor_factory, consts, wavefronts, trace, jitter,
                                num_sms, occ.ctas_per_sm, num_ctas, launch_cycles, max_cycles, stats)
        except smclass.NotMemoisable as e:
            res = simulate(kernel, launch, gpu, values=values, trace=trace, gmem=gmem, checks=checks,
                           flop_count=flop_count, regs_per_thread=regs_per_thread, executor_factory=executor_factory,
                           bank_model=bank_model, memory=memory_mode, memo=False, max_cycles=max_cycles)
            res.extra.update(memo=True, sm_memo=f"off: {e}")
            return res
        except Exception as e:
            orig = e.__cause__
            if orig is not None and type(orig) is type(e):
                raise orig.with_traceback(orig.__traceback__) from None
            raise
        cycles = int(coord.end)
        for cls in coord.classes:
            w = len(cls.members)
            for m in cls.members:
                sms[m] = cls.sm
            for slot, st, inflight in cls.runs:
                agg.add_stats(st, cls.label, slot, tr, weight=w)
                if tr is not None and inflight:
                    agg.add_inflight(inflight, cls.label, tr)
        sched = _DONE
    else:
        sched = CtaScheduler(env, num_sms=num_sms, ctas_per_sm=occ.ctas_per_sm, num_ctas=num_ctas,
                             launch_cycles=launch_cycles, run_cta=run_cta)
    try:
        if sched is _DONE:
            pass
        elif max_cycles is not None:
            env.run(until=env.any_of([sched.done, env.timeout(max_cycles)]))
            if not sched.done.triggered:
                raise SimulationLimit(max_cycles, live)
        else:
            env.run(until=sched.done)
    except Exception as e:
        orig = e.__cause__
        if orig is not None and type(orig) is type(e):
            # SimPy re-raises a process's exception as a new instance of its class built from
            # its args: give the caller the original (with its warp/barrier/phase fields)
            raise orig.with_traceback(orig.__traceback__) from None
        if isinstance(e, SimulationLimit):
            raise
        if not (isinstance(e, RuntimeError) and "No scheduled events left" in str(e) and live):
            raise
        run = min(live, key=lambda r: r.ex.cta_linear)
        raise run.ex.deadlock_error() from None
    if sched is not _DONE:
        cycles = int(env.now)

    links = [sm.memory for sm in sms.values()] if partitioned else [memory]
    busy = _busy(sms, links, cycles)
    smem_port = _smem_port(gpu, sms, cycles)
    busy["smem"] = smem_port["busy"]
    flops = sum(sm.tensor.flops for sm in sms.values())
    if tr is not None:
        traced = {sm.sm_id: sm for sm in sms.values()}  # SM classes: one SM per class
        _trace_units(tr, traced, memory, num_sms)
        for sm_id, sm in traced.items():
            if sm.memory is not memory:
                tr.add_pipe(sm_id, 14, sm.memory.l2_pipe)
                tr.add_pipe(sm_id, 15, sm.memory.hbm_pipe)
    return SimResult(
        kernel=getattr(kernel, "name", "kernel"), cycles=cycles, clock_mhz=gpu.clock_mhz,
        ctas=num_ctas, ctas_per_sm=occ.ctas_per_sm, limiting=occ.limiting,
        waves=waves(num_ctas, num_sms, occ.ctas_per_sm), sms_used=len(sms), roles=agg.roles(),
        busy=busy, bytes_l2=int(round(sum(m.bytes_from_l2 for m in links))), bytes_hbm=int(round(sum(m.bytes_from_hbm for m in links))),
        bytes_stored=sum(m.bytes_to_l2 for m in links),
        smem_wavefronts=sum(sm.smem.wavefronts for sm in sms.values()),
        smem_ideal_wavefronts=sum(sm.smem.ideal_wavefronts for sm in sms.values()),
        smem_port=smem_port,
        flops=int(flop_count if flop_count is not None else flops),
        mode="values" if values else "timing-only",
        extra={"occupancy_limits": occ.limits, "tensor_flops": flops,
               "l2_hits": memory.residency.hits, "l2_misses": memory.residency.misses,
               "tma_boxes": sum(sm.tma.boxes for sm in sms.values()), "memory": memory_mode,
               "memo": bool(memo), "tile_plan": plan is not None, **stats},
        trace=tr, machine=gmem,
    )


_DONE = object()  # the SM classes ran the grid (no CtaScheduler)


def _sm_classes(gpu, memory, dispatch, executor_factory, consts, wavefronts, trace, jitter, num_sms,
                ctas_per_sm, num_ctas, launch_cycles, max_cycles, stats):
    """Run the grid as SM classes (smclass.py); return the Coordinator (.classes, .end)."""
    n_links = min(num_sms, num_ctas)
    kinds: dict = {}  # hit vector -> class id
    hits_of: list = []

    def classify(cta):
        hits = dispatch.classify(cta)
        key = hits.key
        kid = kinds.get(key)
        if kid is None:
            kid = kinds[key] = len(hits_of)
            hits_of.append(hits)
        return kid

    def make_sm(label):
        link = memo_mod.PartitionedLink(gpu, memory.residency, n_links, label, trace=trace, jitter=jitter)
        return SM(gpu, label, link, trace=trace, jitter=jitter)

    def make_run(env, sm, cta, kid):
        return CtaRun(env, sm, executor_factory(cta), consts, trace=trace, wavefronts=wavefronts, hits=hits_of[kid])

    def after_run(run, cta, replay):
        stats["detailed_ctas"] += 1
        stats["replayed_ctas"] += bool(replay)
        if run.sm.memory.lookups:
            raise smclass.NotMemoisable("an ld.global looks up the L2 residency at request time")
        tiles = dispatch.tiles(cta)
        if run.tiles != [[(h, co) for h, co, _ in row] for row in tiles]:
            raise HopsimError(f"CTA {cta}: its TMA tiles differ from the affine tile plan (memo.py); "
                              "simulate with memory='shared'")

    def limit_hit(live):
        raise SimulationLimit(max_cycles, live)

    stats["replayed_ctas"] = 0
    stats["sm_memo"] = "on"
    coord = smclass.Coordinator(num_sms=num_sms, ctas_per_sm=ctas_per_sm, num_ctas=num_ctas,
                                launch_cycles=launch_cycles, make_sm=make_sm, make_run=make_run,
                                after_run=after_run, classify=classify, max_cycles=max_cycles,
                                limit_hit=limit_hit)
    coord.end = coord.run()
    stats["sm_classes"] = len(coord.classes)
    stats["class_splits"] = coord.splits
    stats["hit_classes"] = len(hits_of)
    stats["memo_hits"] = num_ctas - (stats["detailed_ctas"] - stats["replayed_ctas"])
    return coord


class SimulationLimit(HopsimError):
    """The launch ran past `max_cycles` (livelock or a too small limit); names the live warps."""

    def __init__(self, max_cycles: int, live):
        where = []
        for run in sorted(live, key=lambda r: r.ex.cta_linear)[:4]:
            for w in range(run.ex.num_warps):
                if not run.ex.warp_done(w):
                    where.append(f"CTA {run.ex.cta_linear} warp {w} at #{run.ex.pc(w)}")
        super().__init__(f"simulation passed max_cycles={max_cycles} with warps still running: "
                         + "; ".join(where[:16]))


class _Aggregate:
    """Per-role sums of warp statistics, folded in as CTAs finish (memory stays flat)."""

    def __init__(self, trace: bool):
        self._roles: dict[str, dict] = {}
        self.trace = trace

    def add(self, run: CtaRun, sm_id: int, slot: int, tr: Trace | None) -> None:
        self.add_stats(run.stats, sm_id, slot, tr)
        if tr is not None and run.inflight:
            tracks = {"TMA in flight": 16, "wgmma in flight": 17}
            for a, b, name, track in run.inflight:
                tr.name_thread(sm_id, tracks[track], track)
                tr.slice(sm_id, tracks[track], name, a, b)

    def add_inflight(self, inflight, sm_id: int, tr: Trace) -> None:
        tracks = {"TMA in flight": 16, "wgmma in flight": 17}
        for a, b, name, track in inflight:
            tr.name_thread(sm_id, tracks[track], track)
            tr.slice(sm_id, tracks[track], name, a, b)

    def add_stats(self, warp_stats, sm_id: int = 0, slot: int = 0, tr: Trace | None = None,
                  weight: int = 1) -> None:
        """Fold one CTA's warp statistics in, `weight` times (an SM class stands for its members)."""
        for st in warp_stats:
            r = self._roles.setdefault(st.role, {"warps": 0, "issue": 0.0, "wait": {}, "instructions": 0,
                                                 "lifetime": 0.0})
            r["warps"] += weight
            r["issue"] += st.issue * weight
            r["instructions"] += st.instructions * weight
            r["lifetime"] += (st.end - st.start) * weight
            for k, v in st.wait.items():
                r["wait"][k] = r["wait"].get(k, 0.0) + v * weight
            if tr is not None and st.slices:
                tid = 100 + slot * 64 + st.warp
                tr.name_thread(sm_id, tid, f"CTA{st.cta}.warp{st.warp} ({st.role})")
                for a, b, name in st.slices:
                    if b > a:
                        tr.slice(sm_id, tid, name, a, b)

    def roles(self) -> dict:
        out = {}
        for role, r in sorted(self._roles.items()):
            out[role] = {"warps": r["warps"], "instructions": r["instructions"], "issue": int(round(r["issue"])),
                         "lifetime": int(round(r["lifetime"])),
                         "wait": {k: int(round(v)) for k, v in sorted(r["wait"].items())}}
        return out


def _busy(sms: dict, links: list, cycles: int) -> dict:
    """Mean busy fraction over the SMs that ran CTAs; L2/HBM links: chip total (partitioned mode:
    the mean over the SM links, each 1/num_sms of the chip)."""
    n = max(1, len(sms))
    mean = lambda f: sum(f(sm) for sm in sms.values()) / n / cycles if cycles else 0.0  # noqa: E731
    return {
        "tma": mean(lambda sm: sm.tma.busy_cycles()),
        "tensor": mean(lambda sm: sm.tensor.pipe.busy),
        "smem": mean(lambda sm: sm.smem.pipe.busy),
        "l2": sum(m.l2_pipe.busy_fraction(cycles) for m in links) / len(links),
        "hbm": sum(m.hbm_pipe.busy_fraction(cycles) for m in links) / len(links),
    }


def _smem_port(gpu, sms: dict, cycles: int) -> dict:
    """Shared-memory port traffic, counted (not modelled: only the LSU wavefronts hold the port in
    the timing; wgmma operand reads and TMA fills/reads do not delay them, hopper-facts §3.5).

    Summed over the SMs: `lsu_cycles` (the LSU wavefronts' port time, wavefronts x
    `smem_cycles_per_wavefront`, as timed), `wgmma_operand_bytes` (SS operands the tensor cores
    read: A unless in registers, and B, per instruction), `tma_fill_bytes` (TMA loads written),
    `tma_store_read_bytes` (TMA stores read). The async bytes take the port at the bank array's
    width, `bytes_per_cycle` = smem_banks x smem_bank_bytes = 128 B/clk per SM ([CPG-SWZ]; the
    tensor cores' 80-128 B/clk SS reads at full rate need it, hopper-facts §7.5). `port_cycles` =
    lsu_cycles + async bytes / bytes_per_cycle; `busy` = port_cycles / (SMs that ran CTAs x
    cycles): the mean demand per SM, above 1.0 when the clients together want more than the port
    gives (the timing does not make them wait for each other)."""
    bpc = float(gpu.spec.smem_banks.value) * float(gpu.spec.smem_bank_bytes.value)
    vals = sms.values()
    out = {"lsu_cycles": float(sum(sm.smem.pipe.busy for sm in vals)),
           "wgmma_operand_bytes": int(sum(sm.tensor.operand_bytes for sm in vals)),
           "tma_fill_bytes": int(sum(sm.tma.bytes_loaded for sm in vals)),
           "tma_store_read_bytes": int(sum(sm.tma.bytes_stored for sm in vals)),
           "bytes_per_cycle": bpc}
    async_bytes = out["wgmma_operand_bytes"] + out["tma_fill_bytes"] + out["tma_store_read_bytes"]
    out["port_cycles"] = out["lsu_cycles"] + async_bytes / bpc
    out["busy"] = out["port_cycles"] / max(1, len(sms)) / cycles if cycles else 0.0
    return out


def _trace_units(tr: Trace, sms: dict, memory: MemorySystem, num_sms: int) -> None:
    for sm_id, sm in sorted(sms.items()):
        tr.name_process(sm_id, f"SM {sm_id}")
        for i, p in enumerate(sm.sched.pipes):
            tr.add_pipe(sm_id, i, p)
        tr.add_pipe(sm_id, 10, sm.tma.issue_pipe)
        tr.add_pipe(sm_id, 11, sm.tma.fill_pipe)
        tr.add_pipe(sm_id, 12, sm.tensor.pipe)
        tr.add_pipe(sm_id, 13, sm.smem.pipe)
    tr.name_process(num_sms, "L2/HBM")
    tr.add_pipe(num_sms, 0, memory.l2_pipe)
    tr.add_pipe(num_sms, 1, memory.hbm_pipe)
