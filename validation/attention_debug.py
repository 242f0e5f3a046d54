"""Staged debug dump of the attention tile's CUDA twin (kernels/cuda/attention.cu built with
-DATTN_DEBUG): one cheap device call that says which stage of the tile first goes wrong.

    python3 -m validation.portfolio_runs --family attention --debug-dump DIR

runs, for each of the four kernels attention_d{64,128}_kv{64,128}, one small point (2 CTAs,
seq = 2 kv_block, 2 stages: the ring wraps once) with fresh f16 inputs, and compares CTA 0's dump
of KV block 0 with numpy stage by stage:

    smem_q/k/v  the landed tiles' raw bytes vs the 128B-swizzled layout of kernels/attention/plan.py
                (also tried: no swizzle)
    S           the S = Q K^T fragments (wgmma m64nN D layout: value i of thread t is row
                16 (t/32) + (t%32)/4 + 8 ((i/2)%2), column 8 (i/4) + 2 (t%4) + i%2) vs float64 Q K^T
    stats       m0 m1 (row max) and the quad-summed l0 l1 vs the thread's own S / P
    P           P = 2^(S c - m c) from the kernel's own S (isolates the softmax from the wgmma)
    P_pack      the f16x2 A registers: p[4 kk + r] = (lo P[8 kk + 2 r], hi P[8 kk + 2 r + 1])
    O1          O after the first P V vs f16 P (A fragment = accumulator layout) @ V block 0, float64
    O           the final output vs kernels/attention/reference.py's bound

For a failing stage it prints the fraction within tolerance, named alternative hypotheses (the
fraction each explains: transposed, scaled, swapped fragment registers, ...) and, for every
dumped value, where in the reference it actually occurs (nearest match): the most common
(row, column) displacements, i.e. a permutation pattern. Files: DIR/attention_debug.json,
DIR/<kernel>.npz (inputs, dump, output). The analysis is pure numpy (tests: tests/validation);
cupy is imported only by `run` (the GPU machine).
"""

from __future__ import annotations

import json
import math
import pathlib
from collections import Counter

import numpy as np

from kernels.attention import AttnParams
from kernels.attention.reference import error_bound, reference
from validation import portfolio_attention as pat

THREADS, TILE_M = 128, 64
POINTS = ((64, 64), (64, 128), (128, 64), (128, 128))   # (head_dim, kv_block)
STAGES, Q_TILES, KV_BLOCKS = 2, 2, 2
U23 = 2.0 ** -23


# ---------------------------------------------------------------- layouts (pure)
def regions(d: int, kvb: int) -> dict[str, tuple[int, int]]:
    """(word offset, words) of each dump region: attn::Dbg<D, KVB> in kernels/cuda/attention.cu."""
    sizes = (("S", THREADS * kvb // 2), ("P", THREADS * kvb // 2), ("PK", THREADS * kvb // 4),
             ("O1", THREADS * d // 2), ("ST", THREADS * 4), ("SMQ", TILE_M * d // 2),
             ("SMK", kvb * d // 2), ("SMV", kvb * d // 2))
    out, off = {}, 0
    for name, n in sizes:
        out[name] = (off, n)
        off += n
    return out


def dump_words(d: int, kvb: int) -> int:
    return sum(n for _, n in regions(d, kvb).values())


def split(dump: np.ndarray, d: int, kvb: int) -> dict[str, np.ndarray]:
    """The dump (float32 words) cut into its regions; per-thread ones as (128, n)."""
    w = np.asarray(dump, np.float32)
    out = {}
    for name, (off, n) in regions(d, kvb).items():
        x = w[off:off + n]
        out[name] = x.reshape(THREADS, -1) if name in ("S", "P", "PK", "O1", "ST") else x
    return out


def acc_coords(n_vals: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) arrays (128, n_vals) of the wgmma m64nN f32 accumulator fragment."""
    t = np.arange(THREADS)[:, None]
    i = np.arange(n_vals)[None, :]
    lane = t % 32
    row = 16 * (t // 32) + lane // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + 2 * (lane % 4) + i % 2
    return np.broadcast_to(row, (THREADS, n_vals)), np.broadcast_to(col, (THREADS, n_vals))


def to_matrix(frag: np.ndarray, cols: int, rows=None, colmap=None) -> np.ndarray:
    """A (128, cols/2) accumulator fragment as the 64 x cols matrix (coordinates acc_coords, or
    the given ones)."""
    r, c = acc_coords(frag.shape[1]) if rows is None else (rows, colmap)
    m = np.full((TILE_M, cols), np.nan)
    m[r, c] = frag
    return m


def swizzled_u16(tile: np.ndarray, swizzle: bool = True) -> np.ndarray:
    """The u16 words of a rows x d f16 tile as kernels/attention/plan.py stores it (64-column
    chunks of 128-B rows; 128B swizzle: 16-B chunk index ^= row % 8 within each 1024-B atom)."""
    rows, d = tile.shape
    bits = np.ascontiguousarray(tile, np.float16).view(np.uint16)
    r, c = np.meshgrid(np.arange(rows), np.arange(d), indexing="ij")
    off = r * 128 + (c % 64) * 2 + (c // 64) * rows * 128
    if swizzle:
        off = off ^ (((off >> 7) & 7) << 4)
    out = np.zeros(rows * d, np.uint16)
    out[off // 2] = bits
    return out


# ---------------------------------------------------------------- comparisons (pure)
def frac_ok(got: np.ndarray, want: np.ndarray, tol) -> float:
    ok = np.abs(np.asarray(got, np.float64) - want) <= tol
    return float(np.mean(ok & np.isfinite(got)))


def displacements(got: np.ndarray, ref: np.ndarray, rows: np.ndarray, cols: np.ndarray, tol: float,
                  top: int = 5) -> list[str]:
    """Where each dumped value really occurs in `ref` (nearest value, if within tol): the most common
    (d_row, d_col) displacements from where it was expected, and how many values match nowhere."""
    flat = ref.ravel()
    order = np.argsort(flat, kind="stable")
    srt = flat[order]
    g = np.asarray(got, np.float64).ravel()
    pos = np.clip(np.searchsorted(srt, g), 1, len(srt) - 1)
    pick = np.where(np.abs(srt[pos - 1] - g) <= np.abs(srt[pos] - g), pos - 1, pos)
    near = order[pick]
    found = np.abs(flat[near] - g) <= tol
    fr, fc = np.divmod(near, ref.shape[1])
    cnt = Counter((int(a), int(b)) for a, b in zip(fr[found] - rows.ravel()[found], fc[found] - cols.ravel()[found]))
    out = [f"(d_row {a:+d}, d_col {b:+d}): {n}" for (a, b), n in cnt.most_common(top)]
    out.append(f"no match within tol: {int((~found).sum())} of {g.size}")
    return out


def stage(name: str, frac: float, detail: str = "", alternatives: dict | None = None,
          pattern: list[str] | None = None) -> dict:
    return {"stage": name, "ok": frac == 1.0, "fraction_ok": frac, "detail": detail,
            "alternatives": alternatives or {}, "pattern": pattern or []}


def f16_pair(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) f16 halves of f32-stored u32 words."""
    u = np.ascontiguousarray(bits, np.float32).view(np.uint32)
    lo = (u & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)
    hi = (u >> 16).astype(np.uint16).view(np.float16).astype(np.float64)
    return lo, hi


def a_matrix(pk: np.ndarray, kvb: int, swap12: bool = False) -> np.ndarray:
    """The 64 x kvb f16 A operand of P V from the packed registers (A fragment of k-step kk =
    accumulator layout of columns 16 kk ..: register r holds values 2 r, 2 r + 1 of the step)."""
    lo, hi = f16_pair(pk)
    frag = np.empty((THREADS, kvb // 2))
    for j in range(kvb // 4):
        kk, r = divmod(j, 4)
        if swap12 and r in (1, 2):
            r = 3 - r
        frag[:, 8 * kk + 2 * r], frag[:, 8 * kk + 2 * r + 1] = lo[:, j], hi[:, j]
    return to_matrix(frag, kvb)


def analyse(q: np.ndarray, k: np.ndarray, v: np.ndarray, o: np.ndarray, dump: np.ndarray,
            ap: AttnParams, c: float) -> list[dict]:
    """Every stage of CTA 0's dump of KV block 0, in order (see the module docstring)."""
    d, kvb = ap.head_dim, ap.kv_block
    x = split(dump, d, kvb)
    q0, k0, v0 = (np.asarray(a, np.float16) for a in (q[:TILE_M], k[:kvb], v[:kvb]))
    out = []
    for nm, tile, reg in (("smem_q", q0, "SMQ"), ("smem_k", k0, "SMK"), ("smem_v", v0, "SMV")):
        got = np.ascontiguousarray(x[reg]).view(np.uint16)
        fr = float(np.mean(got == swizzled_u16(tile)))
        out.append(stage(nm, fr, "raw bytes vs the 128B-swizzled tile",
                         {"no swizzle": float(np.mean(got == swizzled_u16(tile, False)))}))
    # S = Q K^T
    r, cc = acc_coords(kvb // 2)
    q64, k64, v64 = (a.astype(np.float64) for a in (q0, k0, v0))
    s_ref = q64 @ k64.T
    s_tol = d * U23 * (np.abs(q64) @ np.abs(k64).T) + 1e-30
    s_got = x["S"].astype(np.float64)
    alts = {"scaled by c": frac_ok(s_got, s_ref[r, cc] * c, s_tol[r, cc] * abs(c) * 2)}
    if kvb == TILE_M:
        alts["transposed (K Q^T)"] = frac_ok(s_got, s_ref.T[r, cc], s_tol.T[r, cc])
    k_all = np.asarray(k, np.float64)
    s_all = q64 @ k_all.T
    fr = frac_ok(s_got, s_ref[r, cc], s_tol[r, cc])
    out.append(stage("S", fr, "S fragments vs float64 Q K^T of block 0", alts,
                     [] if fr == 1 else displacements(s_got, s_all, r, cc, float(s_tol.max()))))
    # softmax, from the kernel's own S
    s_m = to_matrix(x["S"], kvb)
    m_row = np.max(s_m.astype(np.float32), axis=1).astype(np.float64)
    cf = float(np.float32(c))
    p_ref = np.exp2(s_m * cf - m_row[:, None] * cf)
    p_got = x["P"].astype(np.float64)
    p_tol = 2.0 ** -20 * np.maximum(p_ref[r, cc], 2.0 ** -126) + 2.0 ** -22 * (np.abs(s_m * cf).max() + 1) * p_ref[r, cc]
    fr = frac_ok(p_got, p_ref[r, cc], p_tol)
    alts = {"no scale (2^(S - m))": frac_ok(p_got, np.exp2(s_m - m_row[:, None])[r, cc], p_tol),
            "exp instead of exp2 of (S - m) scale": frac_ok(
                p_got, np.exp2((s_m - m_row[:, None]) * cf / math.log2(math.e))[r, cc], p_tol),
            "raw S passed through": frac_ok(p_got, s_got, 1e-6)}
    out.append(stage("P", fr, "P = 2^(S c - m c) from the kernel's own S", alts))
    st = x["ST"].astype(np.float64)
    m_want = np.stack([m_row[r[:, 0]], m_row[r[:, 2]]], 1)
    p_m = to_matrix(x["P"], kvb).astype(np.float64)
    l_row = np.nansum(p_m, axis=1)
    l_got = np.repeat(st[:, 2:4].reshape(THREADS // 4, 4, 2).sum(axis=1), 4, axis=0)
    l_want = np.stack([l_row[r[:, 0]], l_row[r[:, 2]]], 1)
    fm = frac_ok(st[:, 0:2], m_want, 0)
    fl = frac_ok(l_got, l_want, 1e-5 * l_want)
    out.append(stage("stats", min(fm, fl), f"m: {fm:.3f} exact, quad-summed l: {fl:.3f} within 1e-5 "
                     "of the row sum of the kernel's P"))
    lo, hi = f16_pair(x["PK"])
    want_lo = np.stack([x["P"][:, 8 * (j // 4) + 2 * (j % 4)] for j in range(kvb // 4)], 1)
    want_hi = np.stack([x["P"][:, 8 * (j // 4) + 2 * (j % 4) + 1] for j in range(kvb // 4)], 1)
    want_lo, want_hi = (a.astype(np.float16).astype(np.float64) for a in (want_lo, want_hi))
    fr = float(np.mean(np.concatenate([lo == want_lo, hi == want_hi])))
    out.append(stage("P_pack", fr, "f16x2 registers vs the f16 of P at 8 kk + 2 r (lo), + 1 (hi)",
                     {"halves swapped": float(np.mean(np.concatenate([lo == want_hi, hi == want_lo])))}))
    # O after the first P V, from the kernel's own packed P
    ro, co = acc_coords(d // 2)
    a16 = a_matrix(x["PK"], kvb)
    o1_ref = a16 @ v64
    o1_tol = kvb * U23 * (np.abs(a16) @ np.abs(v64)) + 1e-30
    o1_got = x["O1"].astype(np.float64)
    alts = {"A registers 1 and 2 swapped": frac_ok(o1_got, (a_matrix(x["PK"], kvb, True) @ v64)[ro, co], o1_tol[ro, co])}
    if kvb == d:
        alts["V transposed"] = frac_ok(o1_got, (a16 @ v64.T)[ro, co], o1_tol[ro, co])
    fr = frac_ok(o1_got, o1_ref[ro, co], o1_tol[ro, co])
    out.append(stage("O1", fr, "O after the first P V vs float64 f16(P) @ V block 0", alts,
                     [] if fr == 1 else displacements(o1_got, o1_ref, ro, co, float(o1_tol.max()))))
    # final output (every CTA)
    err = np.abs(np.asarray(o, np.float64) - reference(q, k, v, ap))
    tol = error_bound(q, k, v, ap)
    fr = float(np.mean(err <= tol))
    out.append(stage("O", fr, f"final O vs reference.py's bound (max |err| {float(np.nanmax(err)):.3g}, "
                     f"unwritten {int(np.isnan(o).sum())})"))
    return out


def first_failure(stages: list[dict]) -> str:
    bad = [s for s in stages if not s["ok"]]
    return "all stages ok" if not bad else f"FIRST FAILING STAGE: {bad[0]['stage']}"


def report(kernel: str, stages: list[dict]) -> str:
    lines = [f"{kernel}: {first_failure(stages)}"]
    for s in stages:
        lines.append(f"  {s['stage']:<7} {'ok  ' if s['ok'] else 'FAIL'} {s['fraction_ok']:.4f}  {s['detail']}")
        if not s["ok"]:
            lines += [f"          alt {k}: {v:.4f}" for k, v in s["alternatives"].items()]
            lines += [f"          where: {p}" for p in s["pattern"]]
    return "\n".join(lines)


# ---------------------------------------------------------------- GPU (cupy passed in)
def run_one(fn, d: int, kvb: int, cp, encode, sync, seed: int) -> tuple[dict, dict]:
    """Launch the debug kernel once on fresh inputs; (arrays, stages)."""
    seq = KV_BLOCKS * kvb
    p = pat.point(d, kvb, STAGES, seq, Q_TILES)
    rs = cp.random.RandomState(seed)
    (q, k, v), o = pat.make_set(p, rs, cp)
    dbg = cp.full(dump_words(d, kvb), np.nan, dtype=cp.float32)
    o.view(cp.uint32).fill(0xFFFFFFFF)
    args = (pat.tensor_map(p, q, 64, encode), pat.tensor_map(p, k, kvb, encode), pat.tensor_map(p, v, kvb, encode),
            o, np.int32(seq), np.int32(STAGES), np.float32(p["c"]), dbg)
    fn.max_dynamic_shared_size_bytes = p["dynamic_smem"]
    fn((Q_TILES,), (THREADS,), args, shared_mem=p["dynamic_smem"])
    sync(f"{p['kernel']} debug launch")
    arrs = {n: cp.asnumpy(a) for n, a in (("q", q), ("k", k), ("v", v), ("o", o), ("dump", dbg))}
    return arrs, {"point": p, "stages": analyse(arrs["q"], arrs["k"], arrs["v"], arrs["o"], arrs["dump"],
                                                pat.params(p), p["c"])}


def run(out: pathlib.Path, kernel_of, cp, encode, sync) -> int:
    """Every debug point: DIR/<kernel>.npz, DIR/attention_debug.json, the report on stdout.
    `kernel_of(name)` returns the loaded debug kernel."""
    out.mkdir(parents=True, exist_ok=True)
    recs = []
    for n, (d, kvb) in enumerate(POINTS):
        name = f"attention_d{d}_kv{kvb}"
        try:
            arrs, rec = run_one(kernel_of(name), d, kvb, cp, encode, sync, 9000 + n)
        except Exception as exc:  # noqa: BLE001  (one kernel's failure must not hide the others')
            print(f"{name}: ERROR {type(exc).__name__}: {exc}", flush=True)
            recs.append({"kernel": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        np.savez_compressed(out / f"{name}.npz", **arrs)
        print(report(name, rec["stages"]), flush=True)
        recs.append({"kernel": name, **rec})
    (out / "attention_debug.json").write_text(json.dumps(recs, indent=1, default=str))
    return 0
