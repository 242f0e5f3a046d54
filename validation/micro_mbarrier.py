"""mbarrier microbenchmark (record microbench__mbarrier), kernels in validation/cuda/micro_mbarrier.cu;
run by `python3 -m validation.microbench --only mbarrier`: arrive, try_wait on a completed phase,
a tx phase, the ping-pong wake-up between warps and the fan-out wake-up of 4 warps.
"""

from __future__ import annotations

import json

import numpy as np

from validation.micro_runner import check_flag, cupy, med, module, spread, sync


def bench_mbarrier() -> list:
    """mbarrier arrive, try_wait on a completed phase, tx phase, ping-pong wake-up between warps."""
    cp = cupy()
    mod = module("micro_mbarrier")
    selfk, pp, fan = (mod.get_function(x) for x in ("mbar_self", "mbar_pingpong", "mbar_fanout"))
    flag = cp.zeros(1, dtype=cp.int32)
    sink = cp.zeros(4, dtype=cp.uint64)
    iters, warm = 4096, 256
    outs = []
    for r in range(9):
        o = cp.zeros(8, dtype=cp.int64)
        selfk((1,), (32,), (np.int32(iters), np.int32(warm), o, sink, flag))
        outs.append(o)
    sync("mbar_self")
    check_flag(flag, "mbar_self")
    o = np.array([cp.asnumpy(x) for x in outs], dtype=float) / iters
    names = ["arrive", "try_wait_completed_phase", "arrive_then_wait_round_trip", "expect_tx_complete_tx_wait", "empty_loop"]
    selfres = {nm: {"cycles_per_op_raw": med(o[:, i]), "cycles_per_op_minus_loop": med(o[:, i] - o[:, 4])}
               for i, nm in enumerate(names)}
    ping = {}
    for partner in (1, 2, 3, 4, 5):
        vals = []
        for r in range(7):
            oo = cp.zeros(2, dtype=cp.int64)
            pp((1,), (32 * (partner + 1),), (np.int32(partner), np.int32(2000), np.int32(100), oo, flag))
            vals.append(oo)
        sync("mbar_pingpong")
        check_flag(flag, "mbar_pingpong")
        rt = [float(cp.asnumpy(v)[0]) / 2000 for v in vals]
        ping[f"warp0<->warp{partner}"] = {"round_trip_cycles": med(rt), "one_way_cycles": med(rt) / 2,
                                          "same_smsp_if_warp_mod_4": partner % 4 == 0}
    fans = []
    for r in range(15):
        oo = cp.zeros(8, dtype=cp.int64)
        fan((1,), (160,), (np.int32(4000), oo, flag))
        fans.append(oo)
    sync("mbar_fanout")
    check_flag(flag, "mbar_fanout")
    f = np.array([cp.asnumpy(x) for x in fans], dtype=float)
    wake = f[:, 1:5] - f[:, [0]]
    fanres = {"wake_cycles_by_warp": [med(wake[:, i]) for i in range(4)], "wake_cycles_all": spread(wake.ravel())}
    print(f"    mbarrier: {json.dumps({k: round(v['cycles_per_op_minus_loop'], 1) for k, v in selfres.items()})}; "
          f"ping-pong one-way {[round(v['one_way_cycles'], 1) for v in ping.values()]}; fan-out wake "
          f"{fanres['wake_cycles_all']['median']:.0f}", flush=True)
    return [("mbarrier", {
        "measures": ["H100Timing.mbarrier_arrive_cycles", "H100Timing.mbarrier_wakeup_cycles",
                     "mbarrier.try_wait_completed_cycles", "mbarrier.tx_phase_cycles"],
        "results": {"single_thread": selfres, "pingpong": ping, "fanout_4_warps": fanres},
        "method": ("single_thread: one thread, 4096 timed repetitions (after 256) of each operation, clock64, median of "
                   "9 launches, minus the same empty loop: arrive (count 2^20-1 barrier, returned state consumed), "
                   "try_wait.parity on an already completed phase (result chained), arrive + try_wait loop on a count-1 "
                   "barrier (phase completes at the arrive), arrive.expect_tx(128) + complete_tx(128) + try_wait. "
                   "pingpong: lane 0 of warp 0 and of warp p alternate arrive / try_wait on two count-1 barriers, "
                   "2000 round trips (after 100), one way = round trip / 2 (includes the arrive). fanout: warp 0 "
                   "arrives after a 4000-cycle delay; lanes of warps 1..4 spin in try_wait; wake = clock64 when the "
                   "warp sees the phase - clock64 just before the arrive (same SM clock)."),
        "units": {"*cycles*": "SM cycles (clock64)"},
    })]
