#!/usr/bin/env python3
# attn_prefill_mma_emu.py - a CPU emulation of the mma.sync kernel
# (attn_prefill_mma.cuh, SM80+), for checking its fragments without a GPU:
#
#   python3 kernels/dev/attn_prefill_mma_emu.py D,G,HKV,N_TOK,P0 ...
#   e.g. python3 kernels/dev/attn_prefill_mma_emu.py 64,2,2,65,37 256,6,1,40,100
#
# ldmatrix x4 (and .trans) and mma.sync m16n8k16 are modelled from the PTX
# ISA's fragment tables, lane by lane; the kernel's own formulas (ldmatrix
# lane addresses, S accumulators reused as P's A fragments, the quad
# shuffles, the row of each O element, masks, padding rows, zero-filled
# keys past the block's last) are copied from the kernel.  Each case is
# compared with a float64 attention (relative L2 and max-abs < 2e-3, as
# tests/check_cuda.c); the output starts as NaN and a write twice or a
# missing one fails.  What it cannot check: the hardware itself, the
# cp.async/barrier pipeline, registers.  Slow (pure numpy): seconds a case.
import numpy as np, sys
BC = 64; NW = 8; BR = 16 * NW
L = np.arange(32); GID = L // 4; TIG = L % 4
f16 = np.float16

def ldsm(sm, rows, cols, trans=False):
    # rows/cols: per-lane address (row, col) in sm; returns regs (32,4,2)
    out = np.zeros((32, 4, 2), np.float32)
    for i in range(4):
        M = np.stack([sm[rows[8*i+x], cols[8*i+x]:cols[8*i+x]+8] for x in range(8)])
        for l in range(32):
            if not trans:
                out[l, i] = M[l//4, 2*(l%4):2*(l%4)+2]
            else:
                out[l, i] = [M[2*(l%4), l//4], M[2*(l%4)+1, l//4]]
    return out

def mma(c, a, b0, b1):
    # c (32,4) f32; a (32,4,2) f16 values; b0,b1 (32,2)
    A = np.zeros((16, 16)); B = np.zeros((16, 8))
    for l in range(32):
        g, t = l // 4, l % 4
        for i in range(8):
            row = g if i in (0, 1, 4, 5) else g + 8
            col = t*2 + (i & 1) + (8 if i >= 4 else 0)
            A[row, col] = a[l, i // 2, i % 2]
        bb = [b0[l, 0], b0[l, 1], b1[l, 0], b1[l, 1]]
        for i in range(4):
            k = t*2 + (i & 1) + (8 if i >= 2 else 0)
            B[k, g] = bb[i]
    D = A @ B
    out = c.copy()
    for l in range(32):
        g, t = l // 4, l % 4
        for i in range(4):
            row = g if i < 2 else g + 8
            out[l, i] += D[row, t*2 + (i & 1)]
    return out

def block(Dh, q, kc, vc, n_head, n_head_kv, n_tok, p0, scale, out, by, gy, j):
    LD = Dh + 8
    g = n_head // n_head_kv; n_rows = n_tok * g
    r0 = (gy - 1 - by) * BR
    n_keys = p0 + (min(r0 + BR, n_rows) - 1) // g + 1
    sq = np.zeros((BR, LD), f16)
    for r in range(BR):
        row = r0 + r
        if row < n_rows:
            sq[r, :Dh] = q[row // g, j*g + row % g, :Dh].astype(f16)
    sl2 = np.float32(scale * 1.4426950408889634)
    for w in range(NW):
        wr = r0 + 16*w
        last_a = p0 + np.minimum(wr + GID, n_rows - 1) // g
        last_b = p0 + np.minimum(wr + GID + 8, n_rows - 1) // g
        last_w = p0 + min(wr, n_rows - 1) // g
        o = np.zeros((32, Dh // 8, 4), np.float32)
        m = np.full((32, 2), -np.inf, np.float32); l = np.zeros((32, 2), np.float32)
        for kv0 in range(0, n_keys, BC):
            sk = np.zeros((BC, LD), f16); sv = np.zeros((BC, LD), f16)
            for key in range(BC):
                if kv0 + key < n_keys:
                    sk[key, :Dh] = kc[kv0 + key, j]; sv[key, :Dh] = vc[kv0 + key, j]
            # qk_mma
            s = np.zeros((32, BC // 8, 4), np.float32)
            qrow = 16*w + L % 16; qcol = 8 * (L // 16)
            krow = L % 8 + 8 * (L // 16); kcol = 8 * (L // 8 % 2)
            for k in range(0, Dh, 16):
                a = ldsm(sq, qrow, qcol + k)
                for nt in range(0, BC // 8, 2):
                    b = ldsm(sk, krow + nt*8, kcol + k)
                    s[:, nt] = mma(s[:, nt], a, b[:, 0], b[:, 1])
                    s[:, nt+1] = mma(s[:, nt+1], a, b[:, 2], b[:, 3])
            # softmax_mma
            mask = kv0 + BC - 1 > last_w
            lim_a = np.minimum(last_a - kv0, BC); lim_b = np.minimum(last_b - kv0, BC)
            s = s * sl2
            for nt in range(BC // 8):
                for e in range(4):
                    key = 8*nt + 2*TIG + e % 2
                    lim = lim_a if e < 2 else lim_b
                    if mask:
                        s[:, nt, e] = np.where(key > lim, -np.inf, s[:, nt, e])
            mx_a = np.maximum(m[:, 0], s[:, :, 0:2].max(axis=(1, 2)))
            mx_b = np.maximum(m[:, 1], s[:, :, 2:4].max(axis=(1, 2)))
            for x in (1, 2):
                mx_a = np.maximum(mx_a, mx_a[L ^ x]); mx_b = np.maximum(mx_b, mx_b[L ^ x])
            base_a = np.where(mx_a == -np.inf, 0, mx_a); base_b = np.where(mx_b == -np.inf, 0, mx_b)
            al_a = np.exp2(m[:, 0] - base_a); al_b = np.exp2(m[:, 1] - base_b)
            m[:, 0] = mx_a; m[:, 1] = mx_b
            o[:, :, 0:2] *= al_a[:, None, None]; o[:, :, 2:4] *= al_b[:, None, None]
            p = np.zeros((32, BC // 16, 4, 2), np.float32)
            sum_a = np.zeros(32, np.float32); sum_b = np.zeros(32, np.float32)
            def ep(x0, x1, base):
                return np.stack([np.exp2(x0 - base), np.exp2(x1 - base)], 1).astype(f16).astype(np.float32)
            for kk in range(BC // 16):
                p[:, kk, 0] = ep(s[:, 2*kk, 0], s[:, 2*kk, 1], base_a); sum_a += p[:, kk, 0].sum(1)
                p[:, kk, 1] = ep(s[:, 2*kk, 2], s[:, 2*kk, 3], base_b); sum_b += p[:, kk, 1].sum(1)
                p[:, kk, 2] = ep(s[:, 2*kk+1, 0], s[:, 2*kk+1, 1], base_a); sum_a += p[:, kk, 2].sum(1)
                p[:, kk, 3] = ep(s[:, 2*kk+1, 2], s[:, 2*kk+1, 3], base_b); sum_b += p[:, kk, 3].sum(1)
            l[:, 0] = l[:, 0] * al_a + sum_a; l[:, 1] = l[:, 1] * al_b + sum_b
            # pv_mma
            vrow = L % 16; vcol = 8 * (L // 16)
            for kk in range(BC // 16):
                for nt in range(0, Dh // 8, 2):
                    b = ldsm(sv, vrow + 16*kk, vcol + nt*8, trans=True)
                    o[:, nt] = mma(o[:, nt], p[:, kk], b[:, 0], b[:, 1])
                    o[:, nt+1] = mma(o[:, nt+1], p[:, kk], b[:, 2], b[:, 3])
        for h in range(2):
            l[:, h] += l[L ^ 1, h]
            l[:, h] += l[L ^ 2, h]
        for h in range(2):
            for ln in range(32):
                r = wr + GID[ln] + 8*h
                if r >= n_rows: continue
                t = r // g; hd = j*g + r % g
                for nt in range(Dh // 8):
                    for e in range(2):
                        c = 8*nt + 2*TIG[ln] + e
                        gate = q[t, hd, Dh + c]
                        assert np.isnan(out[t, hd, c]), "written twice"
                        out[t, hd, c] = o[ln, nt, 2*h + e] / l[ln, h] / (1 + np.exp(-gate))

def run(Dh, g, hkv, n_tok, p0, seed=1):
    rng = np.random.default_rng(seed)
    h = g * hkv; n_keys = p0 + n_tok
    q = rng.uniform(-2, 2, (n_tok, h, 2*Dh)).astype(np.float32)
    kc = rng.uniform(-2, 2, (n_keys, hkv, Dh)).astype(f16)
    vc = rng.uniform(-1, 1, (n_keys, hkv, Dh)).astype(f16)
    scale = 1 / np.sqrt(Dh)
    out = np.full((n_tok, h, Dh), np.nan, np.float32)
    gy = (n_tok * g + BR - 1) // BR
    for j in range(hkv):
        for by in range(gy):
            block(Dh, q, kc, vc, h, hkv, n_tok, p0, scale, out, by, gy, j)
    ref = np.zeros_like(out)
    for t in range(n_tok):
        for hh in range(h):
            jj = hh // g
            sc = kc[:p0+t+1, jj].astype(np.float64) @ q[t, hh, :Dh].astype(np.float64) * scale
            w = np.exp(sc - sc.max()); w /= w.sum()
            ref[t, hh] = (w @ vc[:p0+t+1, jj].astype(np.float64)) / (1 + np.exp(-q[t, hh, Dh:].astype(np.float64)))
    assert not np.isnan(out).any(), "unwritten"
    err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    mx = np.abs(out - ref).max()
    print(f"D {Dh} g {g} hkv {hkv} tok {n_tok} p0 {p0}: rel {err:.2e} max {mx:.2e}", flush=True)
    assert err < 2e-3 and mx < 2e-3 + 0.0
for a in sys.argv[1:]:
    run(*[int(x) for x in a.split(',')])
