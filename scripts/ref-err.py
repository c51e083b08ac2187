#!/usr/bin/env python3
"""ref-err.py - how far a build's logits are from the float64 reference.

For every file of the tiny fixture model and every prompt of
tiny/reference.json, rs-verify writes the prompt's logits (--logits) on the
CPU backend and on the GPU token by token (-b 1: the decode matvecs) and in
groups of 4 (-b 4: the verification matvecs); the script prints, per file,
the worst prompt's relative error ||out - ref|| / ||ref|| over its rows
against ref-logits.npy (HF transformers in float64) and of the GPU against
the CPU backend.  Used for docs/perf-log.md's accuracy rows; needs a CUDA
build and a GPU, no Python packages.

    python3 scripts/ref-err.py [FIXTURES]    (default ../shared/fixtures)

Environment: RS_BIN (default build/bin).
"""
import array
import ast
import json
import math
import os
import subprocess
import sys

FILES = ['model-f16', 'model-q8_0', 'model-q6_k', 'model-q5_k_m',
         'model-q4_k_m', 'model-q4_0']


def npy(path):
    """A little-endian float32 .npy file as (flat array, shape)."""
    with open(path, 'rb') as f:
        b = f.read()
    hl = int.from_bytes(b[8:10], 'little')
    h = ast.literal_eval(b[10:10 + hl].decode())
    if h['descr'] != '<f4' or h['fortran_order']:
        sys.exit('%s: not a C-ordered float32 array' % path)
    a = array.array('f')
    a.frombytes(b[10 + hl:])
    return a, h['shape']


def logits(rs_bin, model, tokens, backend, batch, out):
    cmd = [os.path.join(rs_bin, 'rs-verify'), '-m', model, '--tokens',
           ','.join(map(str, tokens)), '--logits', out, '--backend',
           backend, '-b', str(batch), '-q']
    if subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit('ref-err: %s failed (the cuda rows need a CUDA build and '
                 'a GPU)' % ' '.join(cmd))
    return npy(out)[0]


def rel(a, b, off, n):
    """||a[0:n] - b[off:off+n]|| / ||b[off:off+n]||"""
    d = s = 0.0
    for i in range(n):
        w = b[off + i]
        d += (a[i] - w) ** 2
        s += w * w
    return math.sqrt(d / s)


def main():
    fx = sys.argv[1] if len(sys.argv) > 1 else '../shared/fixtures'
    rs_bin = os.environ.get('RS_BIN', 'build/bin')
    r = json.load(open(os.path.join(fx, 'tiny/reference.json')))
    ref, shape = npy(os.path.join(fx, 'tiny', r['logits_file']))
    out = '/tmp/ref-err-%d.npy' % os.getpid()
    try:
        report(fx, rs_bin, r, ref, shape[1], out)
    finally:
        if os.path.exists(out):
            os.remove(out)


def report(fx, rs_bin, r, ref, v, out):
    for f in FILES:
        model = os.path.join(fx, 'tiny', f + '.gguf')
        row, worst = 0, {'cpu': 0.0, 'cuda -b 1': 0.0, 'cuda -b 4': 0.0,
                         'cuda vs cpu': 0.0}
        for p, n in zip(r['prompts'], r['logits_rows_per_prompt']):
            c = logits(rs_bin, model, p, 'cpu', 64, out)
            g1 = logits(rs_bin, model, p, 'cuda', 1, out)
            g4 = logits(rs_bin, model, p, 'cuda', 4, out)
            for k, e in (('cpu', rel(c, ref, row * v, n * v)),
                         ('cuda -b 1', rel(g1, ref, row * v, n * v)),
                         ('cuda -b 4', rel(g4, ref, row * v, n * v)),
                         ('cuda vs cpu', rel(g1, c, 0, n * v))):
                worst[k] = max(worst[k], e)
            row += n
        print(f, '  '.join('%s %.3g' % kv for kv in worst.items()))


if __name__ == '__main__':
    main()
