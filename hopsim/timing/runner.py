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
equal the full mode's (tests/timing/test_ir_kernels.py checks this on the test kernels).
"""

from __future__ import annotations

import functools
import gc

from hopsim.config import load_gpu
from hopsim.functional.executor import CTAExecutor
from hopsim.functional.gmem import GlobalMemory
from hopsim.result import SimResult
from hopsim.timing.gpu import CtaScheduler, waves
from hopsim.timing.linear_plan import LinearTilePlan
from hopsim.timing.memory import L2Overflow, MemorySystem, SharedPort, WarmResidency
from hopsim.timing.occupancy import occupancy
from hopsim.timing.pipes import Jitter
from hopsim.timing.sm import CtaRun
from hopsim.timing.sm_units import SM, _Consts
from hopsim.timing.smem_cost import wavefronts_of
from hopsim.trace import Trace
from hopsim.timing import cta_classes
from hopsim.timing import dispatch_record
from hopsim.timing import launch as launch_mod
from hopsim.timing import memo as memo_mod
from hopsim.timing import smclass
from isa.errors import HopsimError, InputError

import simpy

REG_WORDS = {"pred": 0, "b64": 2, "u64": 2, "s64": 2, "f64": 2}
DIVERGED = "a CTA executed a divergent branch (its lanes' paths may differ between CTAs of one memo class)"
"""Why the memo is refused for a kernel whose CTAs diverge (functional/simt.py): simulated CTA by CTA."""


def regs_per_thread_of(kernel) -> int:
    """32-bit registers one thread needs, from the kernel's `.reg` declarations (64-bit = 2,
    predicates live in predicate registers), at least 16 (ptxas' usual floor; an estimate:
    ptxas allocates after its own register allocation)."""
    n = 0
    for d in getattr(kernel, "regs", ()):
        words = REG_WORDS.get(getattr(d, "type", "b32"), 1)
        n += words * (getattr(d, "count", None) or 1)
    return max(16, min(255, n))


def rare_full_collections(fn):
    """Run `fn` with Python's full (generation-2) collections made rarer (smclass.FULL_GC_EVERY
    generation-1 collections apart instead of 10): a launch's tile plan, dispatch arrays, memo
    table and executors are many long-lived objects that each full collection traverses again;
    young objects are still collected as usual. The thresholds are restored after. (Also the
    timeline picture's drawing, hopsim/cli/simulate_cmd.py: its ~10^5 boxes would start a full
    collection over the traced run it draws, ~0.15 s.)"""
    @functools.wraps(fn)
    def wrapped(*args, **kw):
        old = gc.get_threshold()
        gc.set_threshold(old[0], old[1], max(old[2], smclass.FULL_GC_EVERY))
        try:
            return fn(*args, **kw)
        finally:
            gc.set_threshold(*old)
    return wrapped


@rare_full_collections
def simulate(kernel, launch, gpu=None, *, values: bool = True, trace: bool = False, gmem=None,
             checks: bool = True, flop_count: float | None = None, regs_per_thread: int | None = None,
             jitter_seed: int | None = None, jitter_cycles: int = 0, executor_factory=None,
             bank_model=None, memory: str = "shared", memo: bool = False,
             max_cycles: int | None = None, max_cta_cycles: int | None = None,
             plan_cache: dict | None = None, loop: str = "rotated",
             trace_sms: frozenset | None = None) -> SimResult:
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
    max_cta_cycles: the same for each CTA simulated in detail (a bound that does not grow with
    the number of waves). A deadlock (nothing left to run) is reported as one under either cap.
    plan_cache: a dict the caller keeps across simulations of one kernel and launch at several
    clocks (the clock solve): the tile plan and the dispatch arrays (memo.py) do not depend on the
    clock and are built once; reused only when kernel, launch and tensor maps are equal.
    loop: the benchmark loop the launch is one of (timing/launch.py LOOPS): "rotated" (default: a
    cold L2), "single" (the CTAs alone) or "same" (same buffers: the tiles it reads L2-resident at
    its start when they fit, memory.WarmResidency; else timed as rotated, `L2Overflow`).
    trace_sms: with `trace`, the SMs whose units and warps are recorded (e.g. {0}: what the
    timeline picture draws; an SM class is recorded when its label SM is one of them, and a class
    split off it is a copy without the trace, fork.py), without the chip's L2/HBM
    tracks; None (default): every SM and the chip. The timing is the same either way.
    """
    gpu = gpu or load_gpu()
    _check_modes(memory, memo, values, jitter_cycles, loop)
    gmem, make_executor, make_sample = _executors(kernel, launch, gmem, values, checks, executor_factory)
    saved = gmem.snapshot() if loop == "same" and values and executor_factory is None else None  # (L2Overflow)
    grid = _Grid(gpu, launch, _occupancy_of(gpu, kernel, launch, regs_per_thread), make_executor,
                 trace=trace, jitter=Jitter(jitter_seed, jitter_cycles), wavefronts=bank_model or wavefronts_of,
                 memory=memory, memo=memo, max_cycles=max_cycles, max_cta_cycles=max_cta_cycles,
                 trace_sms=trace_sms, warm=loop == "same")
    grid.plan(make_sample, plan_cache if executor_factory is None else None, (kernel, launch, gmem),
              classify=executor_factory is None)
    try:
        if grid.memo and grid.classes.refused:  # control flow that may differ by CTA, not classified
            raise smclass.NotMemoisable(grid.classes.refused)
        if grid.sm_memo:
            grid.run_sm_classes()
        else:
            grid.run_scheduler()
        grid.finish_dispatch()
    except smclass.NotMemoisable as e:  # an ld.global couples the SMs, a CTA diverged: CTA by CTA instead
        res = simulate(kernel, launch, gpu, values=values, trace=trace, gmem=gmem, checks=checks,
                       flop_count=flop_count, regs_per_thread=regs_per_thread, executor_factory=executor_factory,
                       bank_model=bank_model, memory=memory, memo=False, max_cycles=max_cycles,
                       max_cta_cycles=max_cta_cycles, loop=loop, trace_sms=trace_sms)
        res.extra.update(memo=True, sm_memo=f"off: {e}")
        return res
    except L2Overflow as e:  # a same-buffer loop whose reads do not fit in L2: timed as rotated
        if saved is not None:  # the stores of the abandoned run undone
            gmem.restore(saved)
        res = simulate(kernel, launch, gpu, values=values, trace=trace, gmem=gmem, checks=checks,
                       flop_count=flop_count, regs_per_thread=regs_per_thread, executor_factory=executor_factory,
                       bank_model=bank_model, memory=memory, memo=memo, max_cycles=max_cycles,
                       max_cta_cycles=max_cta_cycles, plan_cache=plan_cache, loop="rotated", trace_sms=trace_sms)
        res.extra.update(launch_mod.warm_fields(False, e.args[0], e.args[1]))
        return res
    return grid.result(kernel, values, flop_count, gmem, loop)


def _check_modes(memory: str, memo: bool, values: bool, jitter_cycles: int, loop: str = "rotated") -> None:
    if loop not in launch_mod.LOOPS:
        raise InputError("loop", loop, " or ".join(f'"{x}"' for x in launch_mod.LOOPS))
    if memory not in ("shared", "partitioned"):
        raise InputError("memory", memory, '"shared" or "partitioned"')
    if memo and (values or memory != "partitioned" or jitter_cycles):
        raise InputError("memo", memo, 'memo=True needs values=False, memory="partitioned" and no jitter')


def _executors(kernel, launch, gmem, values: bool, checks: bool, executor_factory):
    """(gmem, executor of a CTA, executor of the zero-time sample runs of the tile plan)."""
    if executor_factory is not None:
        return gmem, executor_factory, executor_factory
    gmem = gmem if gmem is not None else GlobalMemory()

    def make_executor(cta):
        return CTAExecutor(kernel, launch, gmem, cta, values=values, checks=checks)

    def make_sample(cta):  # timing-only: the zero-time sample runs never touch data
        return CTAExecutor(kernel, launch, gmem, cta, values=False, checks=False)
    return gmem, make_executor, make_sample


def _occupancy_of(gpu, kernel, launch, regs_per_thread):
    smem = int(getattr(kernel, "static_smem_bytes", 0) or 0) + int(getattr(launch, "dynamic_smem", 0) or 0)
    return occupancy(gpu, threads_per_cta=launch.num_threads, smem_bytes_per_cta=smem,
                     regs_per_thread=regs_per_thread or regs_per_thread_of(kernel))


def _plan_key(kernel, launch, gmem, slots: int) -> tuple:
    """What the tile plan and the dispatch arrays depend on (compared by value)."""
    tmaps = getattr(gmem, "_tmaps", None)
    return (kernel, tuple(launch.grid), tuple(launch.block), tuple(sorted(launch.params.items())),
            launch.dynamic_smem, dict(tmaps) if tmaps is not None else None, slots)


def _original_error(e: Exception):
    """SimPy re-raises a process's exception as a new instance of its class built from its args:
    the original (with its warp/barrier/phase fields), or None."""
    orig = e.__cause__
    return orig if orig is not None and type(orig) is type(e) else None


class _Grid:
    """One launch on the GPU: the SMs, the memory system, the CTA placement and the statistics.

    Steps: `plan()` (tile plan and dispatch-time L2 residency, partitioned mode), then either
    `run_scheduler()` (CtaScheduler; each CTA by `_run_cta`: memo replay or detailed run) or
    `run_sm_classes()` (SM-level memo, smclass.py), then `result()`.
    """

    def __init__(self, gpu, launch, occ, make_executor, *, trace, jitter, wavefronts, memory, memo, max_cycles,
                 max_cta_cycles=None, trace_sms=None, warm=False):
        self.gpu, self.launch, self.occ = gpu, launch, occ
        self.make_executor = make_executor
        self.trace, self.jitter, self.wavefronts = trace, jitter, wavefronts
        self.trace_sms = None if not trace or trace_sms is None else frozenset(trace_sms)
        self.memory_mode, self.memo, self.max_cycles = memory, memo, max_cycles
        self.max_cta_cycles = max_cta_cycles
        self.partitioned = memory == "partitioned"
        self.num_sms = int(gpu.spec.num_sms.value)
        self.num_ctas = launch.num_ctas
        self.env = simpy.Environment()
        self.memory = MemorySystem(gpu, trace=trace and self.trace_sms is None, jitter=jitter)
        self.memory.now = lambda: self.env.now
        self.memory.link_sms = min(self.num_sms, self.num_ctas)  # the SMs sharing it (as the partitioned links)
        if warm:  # a launch of a loop over the same buffers: its reads are resident at its start
            self.memory.residency = WarmResidency(self.memory.residency.capacity, self.memory.residency.reread)
        self.consts = _Consts(gpu)
        self.sms: dict[int, SM] = {}
        self.agg = _Aggregate(trace)
        self.live: set[CtaRun] = set()
        self.tr = Trace(gpu.clock_mhz) if trace else None
        self.launch_cycles = float(gpu.timing.cta_launch_cycles.value)
        self.tile_plan = self.dispatch = None
        self.classes = cta_classes.CtaClasses()  # every CTA in class 0 (no kernel: scripted executors)
        self.memo_table: dict = {}
        self.in_flight: dict = {}  # key -> (start cycle, event at its end) of CTAs simulated in detail now
        self.stats = {"memo_hits": 0, "detailed_ctas": 0}
        self.cycles = 0  # the last CTA exit
        self.write_end = 0  # the cycle the last asynchronous global write (TMA store) lands

    def traced(self, sm_id: int) -> bool:
        """Whether SM `sm_id`'s units and warps are recorded in the trace."""
        return self.trace and (self.trace_sms is None or sm_id in self.trace_sms)

    # ------------------------------------------------------------------ steps
    def plan(self, make_sample, cache: dict | None = None, what: tuple = (), classify: bool = False) -> None:
        """Partitioned mode: predict every CTA's TMA tiles and decide L2 residency at dispatch
        (from `cache` when it holds the plan of an equal kernel, launch and tensor maps).
        `classify`: sort the CTAs into control-flow classes (cta_classes.py; needs real executors)."""
        if not self.partitioned:
            return
        slots = self.num_sms * self.occ.ctas_per_sm
        key = _plan_key(*what, slots) if cache is not None else None
        if key is not None and cache.get("key") == key:
            self.tile_plan, self.classes = cache["plan"], cache["classes"]
            self.dispatch = cache["dispatch"].fresh(self.memory.residency) if cache["dispatch"] else None
            self._record_dispatch(cache)
            return
        if classify:  # control-flow classes: part of the memo key; the plan is checked on each class
            self.classes = cta_classes.classify(what[0], self.launch, make_sample(0))
        more = self.classes.first[1:cta_classes.MAX_CHECKED]
        self.tile_plan = memo_mod.TilePlan.build(self.launch, make_sample, also=more)
        if self.tile_plan is None and what:  # boxes walked in a linear order (persistent CTAs)
            self.tile_plan = LinearTilePlan.build_linear(self.launch, make_sample, what[2], also=more)
        if self.classes.count > cta_classes.MAX_CHECKED and not self.classes.refused:
            self.classes.refused = (f"{self.classes.count} control-flow classes of CTAs (more than "
                                    f"{cta_classes.MAX_CHECKED} checked against the tile plan)")
        if self.tile_plan is not None:
            streaming = memo_mod.StreamingResidency.applies(self.tile_plan, self.num_ctas)
            kind = memo_mod.StreamingResidency if streaming else memo_mod.DispatchResidency
            self.dispatch = kind(self.tile_plan, self.memory.residency, self.num_ctas, slots)
        if key is not None:
            cache.update(key=key, plan=self.tile_plan, dispatch=self.dispatch, record=None, record_warm=None,
                         classes=self.classes)
            self._record_dispatch(cache)

    def _record_dispatch(self, cache: dict) -> None:
        """Dispatch-time L2 decisions: recorded at the first simulation of a cached plan, replayed
        at the others when that record is complete (dispatch_record.py)."""
        if not isinstance(self.dispatch, memo_mod.DispatchResidency):
            return
        res = self.memory.residency
        slot = "record_warm" if res.warm else "record"  # a same-buffer loop's decisions differ
        rec = cache.get(slot)
        if rec is None or not rec.replays(res):
            rec = cache[slot] = dispatch_record.ClassifyRecord(self.num_ctas, res.capacity, res.warm, res.reread)
        self.dispatch = dispatch_record.RecordedDispatch(self.dispatch, rec)

    def finish_dispatch(self) -> None:
        """The run has ended: close (or check) the dispatch record."""
        if isinstance(self.dispatch, dispatch_record.RecordedDispatch):
            self.dispatch.finish()

    @property
    def sm_memo(self) -> bool:
        return self.memo and self.tile_plan is not None and self.occ.ctas_per_sm > 1

    def run_scheduler(self) -> None:
        """Place CTAs on SM slots in waves (CtaScheduler) and run until the last CTA exits."""
        env, max_cycles = self.env, self.max_cycles
        sched = CtaScheduler(env, num_sms=self.num_sms, ctas_per_sm=self.occ.ctas_per_sm, num_ctas=self.num_ctas,
                             launch_cycles=self.launch_cycles, run_cta=self._run_cta)
        try:
            if max_cycles is not None or self.max_cta_cycles is not None:
                _run_capped(env, sched.done, max_cycles, self.live, self.max_cta_cycles)
            else:
                env.run(until=sched.done)
        except Exception as e:
            orig = _original_error(e)
            if orig is not None:
                raise orig.with_traceback(orig.__traceback__) from None
            if isinstance(e, SimulationLimit):
                raise
            if not (isinstance(e, RuntimeError) and "No scheduled events left" in str(e) and self.live):
                raise
            run = min(self.live, key=lambda r: r.ex.cta_linear)
            raise run.ex.deadlock_error() from None
        self.cycles = int(env.now)
        self.write_end = self._land_writes()

    def _land_writes(self) -> int:
        """After the last CTA exit: land the asynchronous global writes still pending (TMA stores
        waited on with `.read` only, or not at all) and return the cycle the last one lands: a
        kernel is complete when its writes are performed."""
        env = self.env
        end = max((sm.write_end for sm in self.sms.values()), default=0.0)
        while env.peek() <= end:
            env.step()
        return int(-(-end // 1))

    def run_sm_classes(self) -> None:
        """SM-level memo (2+ CTAs per SM): one detailed simulation per SM history (smclass.py)."""
        try:
            coord = _sm_classes(self.gpu, self.memory, self.dispatch, self.make_executor, self.consts,
                                self.wavefronts, self.traced, self.jitter, self.num_sms, self.occ.ctas_per_sm,
                                self.num_ctas, self.launch_cycles, self.max_cycles, self.stats, self.classes)
        except smclass.NotMemoisable:
            raise
        except Exception as e:
            orig = _original_error(e)
            if orig is not None:
                raise orig.with_traceback(orig.__traceback__) from None
            raise
        self.cycles = int(coord.end)
        self.write_end = int(-(-max(cls.sm.write_end for cls in coord.classes) // 1))
        tr = self.tr
        for cls in coord.classes:
            w = len(cls.members)
            for m in cls.members:
                self.sms[m] = cls.sm
            ctr = tr if self.traced(cls.label) else None
            for slot, st, inflight in cls.runs:
                self.agg.add_stats(st, cls.label, slot, ctr, weight=w)
                if ctr is not None and inflight:
                    self.agg.add_inflight(inflight, cls.label, tr)

    # ------------------------------------------------------------------ one CTA (CtaScheduler)
    def _sm(self, sm_id: int) -> SM:
        sm = self.sms.get(sm_id)
        if sm is None:
            traced = self.traced(sm_id)
            link = (memo_mod.PartitionedLink(self.gpu, self.memory.residency, min(self.num_sms, self.num_ctas), sm_id,
                                             trace=traced, jitter=self.jitter)
                    if self.partitioned else SharedPort(self.memory))
            sm = self.sms[sm_id] = SM(self.gpu, sm_id, link, trace=traced, jitter=self.jitter)
        return sm

    def _run_cta(self, sm_id, slot, cta):
        """CTA `cta` on slot `slot` of SM `sm_id`: a memo replay when an identical CTA (same L2
        hit vector, same SM state) was or is being simulated, else a detailed run."""
        sm = self._sm(sm_id)
        hits = key = None
        if self.dispatch is not None:
            hits = self.dispatch.classify(cta)
            key = hits.key
        start = self.env.now
        use_memo = self.memo and self.dispatch is not None  # (one CTA per SM here; more: run_sm_classes)
        if use_memo:
            key = (self.classes(cta), key, memo_mod.sm_state(sm, start))
            if key not in self.memo_table and key in self.in_flight:
                # an identical CTA is being simulated in detail since t0: it ends at t0 + d; this
                # one at start + d. Wait for it, then for the difference of start times.
                t0, done = self.in_flight[key]
                yield done
                if start > t0:
                    yield self.env.timeout(start - t0)
                _dur, warp_stats = self._replay(sm, start, key)
                self._replayed(sm, slot, cta, start, warp_stats)
                return
            if key in self.memo_table:
                dur, warp_stats = self._replay(sm, start, key)
                yield self.env.timeout(dur)
                self._replayed(sm, slot, cta, start, warp_stats)
                return
        yield from self._detailed(sm, slot, cta, start, hits, key if use_memo else None)

    def _replay(self, sm, start, key) -> tuple:
        """Apply a memoised CTA's counters and pipe residue on `sm`: (its duration, its warp stats)."""
        dur, delta, warp_stats, residue, writes = self.memo_table[key]
        if writes is not None and start + writes > sm.write_end:
            sm.write_end = start + writes
        memo_mod.add_counters(sm, delta)
        memo_mod.apply_residue(sm, start, residue)
        self.stats["memo_hits"] += 1
        return dur, warp_stats

    def _replayed(self, sm, slot, cta, start, warp_stats) -> None:
        """A replayed CTA has ended: fold its statistics in."""
        self.agg.add_stats(warp_stats)
        if self.tr is not None and self.traced(sm.sm_id):
            self.tr.slice(sm.sm_id, 100 + slot * 64, f"CTA {cta} (memoised)", start, self.env.now)
        sm.ctas_run += 1

    def _detailed(self, sm, slot, cta, start, hits, memo_key):
        """Simulate CTA `cta` instruction by instruction (and memoise it under `memo_key`)."""
        env = self.env
        before = memo_mod.sm_counters(sm) if memo_key is not None else None
        if memo_key is not None:
            self.in_flight[memo_key] = (start, env.event())
        traced = self.traced(sm.sm_id)
        run = CtaRun(env, sm, self.make_executor(cta), self.consts, trace=traced, wavefronts=self.wavefronts,
                     hits=hits)
        run.started = env.now
        self.live.add(run)
        if traced:
            self.tr.counter(sm.sm_id, "resident CTAs", env.now, cta=cta)
        yield from run.run()
        self.live.discard(run)
        if memo_key is not None and getattr(run.ex, "divergences", 0):
            raise smclass.NotMemoisable(DIVERGED)
        self.stats["detailed_ctas"] += 1
        if self.dispatch is not None and self.tile_plan.keyed(run.tiles) != [
                [(h, co) for h, co, _ in row] for row in self.dispatch.tiles(cta)]:
            raise HopsimError(f"CTA {cta}: its TMA tiles differ from the affine tile plan (memo.py); "
                              "simulate with memory='shared'")
        if memo_key is not None:
            self.memo_table[memo_key] = (env.now - start, memo_mod.counter_delta(memo_mod.sm_counters(sm), before),
                                         run.stats, memo_mod.sm_residue(sm, start),
                                         run.write_end - start if run.write_end else None)
            self.in_flight.pop(memo_key)[1].succeed()
        sm.ctas_run += 1
        self.agg.add(run, sm.sm_id, slot, self.tr if traced else None)

    # ------------------------------------------------------------------ result
    def result(self, kernel, values: bool, flop_count, gmem, loop: str = "rotated") -> SimResult:
        sms, memory, tr, occ = self.sms, self.memory, self.tr, self.occ
        links = [sm.memory for sm in sms.values()] if self.partitioned else [memory]
        exited = self.cycles
        cycles, added = launch_mod.loop_cycles(exited, links, self.gpu, loop, self.num_ctas, self.write_end)
        self.cycles = cycles
        busy = _busy(sms, links, cycles)
        smem_port = _smem_port(self.gpu, sms, cycles)
        busy["smem"] = smem_port["busy"]
        flops = sum(sm.tensor.flops for sm in sms.values())
        if tr is not None:
            traced = {sm.sm_id: sm for sm in sms.values() if self.traced(sm.sm_id)}  # SM classes: one SM per class
            _trace_units(tr, traced, memory if self.trace_sms is None else None, self.num_sms)
            for sm_id, sm in traced.items():
                if not isinstance(sm.memory, SharedPort):
                    tr.add_pipe(sm_id, 14, sm.memory.l2_pipe)
                    tr.add_pipe(sm_id, 15, sm.memory.hbm_pipe)
        return SimResult(
            kernel=getattr(kernel, "name", "kernel"), cycles=cycles, clock_mhz=self.gpu.clock_mhz,
            ctas=self.num_ctas, ctas_per_sm=occ.ctas_per_sm, limiting=occ.limiting,
            waves=waves(self.num_ctas, self.num_sms, occ.ctas_per_sm), sms_used=len(sms), roles=self.agg.roles(),
            busy=busy, bytes_l2=int(round(sum(m.bytes_from_l2 for m in links))),
            bytes_hbm=int(round(sum(m.bytes_from_hbm for m in links))),
            bytes_stored=sum(m.bytes_to_l2 for m in links),
            smem_wavefronts=sum(sm.smem.wavefronts for sm in sms.values()),
            smem_ideal_wavefronts=sum(sm.smem.ideal_wavefronts for sm in sms.values()),
            smem_port=smem_port,
            flops=int(flop_count if flop_count is not None else flops),
            mode="values" if values else "timing-only",
            extra={"occupancy_limits": occ.limits, "tensor_flops": flops,
                   "l2_hits": memory.residency.hits, "l2_misses": memory.residency.misses,
                   "tma_boxes": sum(sm.tma.boxes for sm in sms.values()),
                   "tma_load_requests": sum(sm.tma.requests_loaded for sm in sms.values()),
                   "memory": self.memory_mode,
                   "gmem_requests": sum(sm.gmem_requests for sm in sms.values()),
                   "gmem_sectors": sum(sm.gmem_sectors for sm in sms.values()),
                   "bytes_hbm_written": int(round(sum(m.bytes_to_hbm for m in links))),
                   "bytes_l2_distinct": int(round(sum(m.bytes_l2_distinct for m in links))),
                   **added, "loop": loop,
                   **(launch_mod.warm_fields(True, memory.residency.warm_bytes, memory.residency.capacity)
                      if loop == "same" else {}),
                   "memo": bool(self.memo), "tile_plan": self.tile_plan is not None, **self.stats},
            trace=tr, machine=gmem,
        )


def _sm_classes(gpu, memory, dispatch, executor_factory, consts, wavefronts, traced, jitter, num_sms,
                ctas_per_sm, num_ctas, launch_cycles, max_cycles, stats, cta_class=None):
    """Run the grid as SM classes (smclass.py); return the Coordinator (.classes, .end).
    `traced(label)`: whether the class of that label SM is recorded in the trace (a recorded class
    split off another re-runs its history: a copy's slices would name the parent's SM; a class
    split off a recorded one is a copy without its trace, fork.py `untrace`).
    `cta_class(cta)`: the CTA's control-flow class (cta_classes.py), part of its kind."""
    n_links = min(num_sms, num_ctas)
    kinds: dict = {}  # hit vector -> class id
    hits_of: list = []

    def classify(cta):
        hits = dispatch.classify(cta)
        key = hits.key if cta_class is None else (cta_class(cta), hits.key)
        kid = kinds.get(key)
        if kid is None:
            kid = kinds[key] = len(hits_of)
            hits_of.append(hits)
        return kid

    def make_sm(label):
        link = memo_mod.PartitionedLink(gpu, memory.residency, n_links, label, trace=traced(label), jitter=jitter)
        return SM(gpu, label, link, trace=traced(label), jitter=jitter)

    def make_run(env, sm, cta, kid):
        return CtaRun(env, sm, executor_factory(cta), consts, trace=traced(sm.sm_id), wavefronts=wavefronts,
                      hits=hits_of[kid])

    def after_run(run, cta, replay):
        stats["detailed_ctas"] += 1
        stats["replayed_ctas"] += bool(replay)
        if run.sm.memory.lookups:
            raise smclass.NotMemoisable("an ld.global looks up the L2 residency at request time")
        if getattr(run.ex, "divergences", 0):
            raise smclass.NotMemoisable(DIVERGED)
        tiles = dispatch.tiles(cta)
        if dispatch.plan.keyed(run.tiles) != [[(h, co) for h, co, _ in row] for row in tiles]:
            raise HopsimError(f"CTA {cta}: its TMA tiles differ from the affine tile plan (memo.py); "
                              "simulate with memory='shared'")

    def inherited(n):  # the CTAs a split class's re-run would have replayed (fork.py copies them)
        stats["detailed_ctas"] += n
        stats["replayed_ctas"] += n

    def limit_hit(live):
        raise SimulationLimit(max_cycles, live)

    stats["replayed_ctas"] = 0
    stats["sm_memo"] = "on"
    coord = smclass.Coordinator(num_sms=num_sms, ctas_per_sm=ctas_per_sm, num_ctas=num_ctas,
                                launch_cycles=launch_cycles, make_sm=make_sm, make_run=make_run,
                                after_run=after_run, classify=classify, max_cycles=max_cycles,
                                limit_hit=limit_hit, inherited=inherited, traced=traced)
    coord.end = coord.run()
    stats["sm_classes"] = len(coord.classes)
    stats["class_splits"] = coord.splits
    stats["hit_classes"] = len(hits_of)
    stats["memo_hits"] = num_ctas - (stats["detailed_ctas"] - stats["replayed_ctas"])
    return coord


def _run_capped(env, done, max_cycles: int | None, live, cta_cycles: int | None) -> None:
    """Run until `done`. An event past `max_cycles`, or a CTA running longer than `cta_cycles`, is
    a `SimulationLimit` (livelock); no event left while warps wait is a deadlock, reported as
    without a cap (the RuntimeError env.run raises)."""
    inf = float("inf")
    limit = inf if max_cycles is None else max_cycles
    check_at = inf if cta_cycles is None else cta_cycles
    while not done.triggered:
        t = env.peek()
        if t == inf:
            raise RuntimeError("No scheduled events left but the launch is not done")
        if t > limit:
            raise SimulationLimit(max_cycles, live)
        if t > check_at:
            stuck = [r for r in live if t - r.started > cta_cycles]
            if stuck:
                raise SimulationLimit(cta_cycles, stuck, per_cta=True)
            check_at = min((r.started for r in live), default=t) + cta_cycles
        env.step()


class SimulationLimit(HopsimError):
    """The launch ran past `max_cycles` (livelock or a too small limit); names the live warps."""

    def __init__(self, max_cycles: int, live, per_cta: bool = False):
        where = []
        for run in sorted(live, key=lambda r: r.ex.cta_linear)[:4]:
            for w in range(run.ex.num_warps):
                if not run.ex.warp_done(w):
                    where.append(f"CTA {run.ex.cta_linear} warp {w} at #{run.ex.pc(w)}")
        self.max_cycles, self.per_cta, self.running = max_cycles, per_cta, where[:16]
        what = "a CTA ran past max_cta_cycles" if per_cta else "simulation passed max_cycles"
        super().__init__(f"{what}={max_cycles} with warps still running: " + "; ".join(where[:16]))


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
    """Shared-memory port traffic. When `smem_port_bytes_per_cycle` > 0 the clients contend in the
    timing (units.py SmemPort.share: wgmma SS operand reads, TMA fills/store reads and LSU
    wavefronts share the port; microbench__smemport); else each runs at its own rate.

    Summed over the SMs: `lsu_cycles` (the LSU wavefronts' port time, as timed), `wgmma_operand_bytes`
    (SS operands the tensor cores read: A unless in registers, and B, per instruction),
    `tma_fill_bytes` (TMA loads written), `tma_store_read_bytes` (TMA stores read),
    `contention_cycles` (cycles the clients' services were lengthened by contention). The async
    bytes are counted at the bank array's width, `bytes_per_cycle` = smem_banks x smem_bank_bytes =
    128 B/clk per SM ([CPG-SWZ]): `port_cycles` = lsu_cycles + async bytes / bytes_per_cycle;
    `busy` = port_cycles / (SMs that ran CTAs x cycles): the mean demand per SM at that width."""
    bpc = float(gpu.spec.smem_banks.value) * float(gpu.spec.smem_bank_bytes.value)
    vals = sms.values()
    out = {"lsu_cycles": float(sum(sm.smem.pipe.busy for sm in vals)),
           "wgmma_operand_bytes": int(sum(sm.tensor.operand_bytes for sm in vals)),
           "tma_fill_bytes": int(sum(sm.tma.bytes_loaded for sm in vals)),
           "tma_store_read_bytes": int(sum(sm.tma.bytes_stored for sm in vals)),
           "contention_cycles": float(sum(sm.smem.slowed for sm in vals)),
           "bytes_per_cycle": bpc}
    async_bytes = out["wgmma_operand_bytes"] + out["tma_fill_bytes"] + out["tma_store_read_bytes"]
    out["port_cycles"] = out["lsu_cycles"] + async_bytes / bpc
    out["busy"] = out["port_cycles"] / max(1, len(sms)) / cycles if cycles else 0.0
    return out


def _trace_units(tr: Trace, sms: dict, memory: MemorySystem | None, num_sms: int) -> None:
    """The units' tracks of the SMs `sms` and (`memory` given) the chip's L2/HBM tracks."""
    for sm_id, sm in sorted(sms.items()):
        tr.name_process(sm_id, f"SM {sm_id}")
        for i, p in enumerate(sm.sched.pipes):
            tr.add_pipe(sm_id, i, p)
        tr.add_pipe(sm_id, 10, sm.tma.issue_pipe)
        tr.add_pipe(sm_id, 11, sm.tma.fill_pipe)
        tr.add_pipe(sm_id, 12, sm.tensor.pipe)
        tr.add_pipe(sm_id, 13, sm.smem.pipe)
    if memory is None:
        return
    tr.name_process(num_sms, "L2/HBM")
    tr.add_pipe(num_sms, 0, memory.l2_pipe)
    tr.add_pipe(num_sms, 1, memory.hbm_pipe)
