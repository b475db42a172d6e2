"""Allreduce of 4M float32 between MPI ranks: ferromx.distributed.allreduce_ against
mpi4py's blocking Allreduce and non-blocking Iallreduce on the same buffer.

    mpirun --allow-run-as-root -np 2 .venv/bin/python benchmarks/bench_allreduce.py
"""
import time

import ferromx.distributed as dist
import numpy as np
from ferromx import nd
from mpi4py import MPI

dist.init(); c = MPI.COMM_WORLD; r = c.rank
N = 4 * 1024 * 1024
buf = np.ones(N, np.float32)
def t_mpi():
    c.Barrier(); t = time.perf_counter()
    for _ in range(10): c.Allreduce(MPI.IN_PLACE, buf)
    return (time.perf_counter() - t) / 10
a = nd.ones((N,))
def t_fx():
    a.wait_to_read(); c.Barrier(); t = time.perf_counter()
    for _ in range(10): dist.allreduce_(a, average=False)
    a.wait_to_read()
    return (time.perf_counter() - t) / 10
t_mpi(); t_fx()
ms = [t_mpi() for _ in range(3)]; fs = [t_fx() for _ in range(3)]
if r == 0:
    print(f"mpi4py Allreduce 4M f32: {min(ms)*1e3:.2f} ms; ferromx allreduce_: {min(fs)*1e3:.2f} ms; ratio {min(ms)/min(fs):.2f}")
def t_i():
    c.Barrier(); t = time.perf_counter()
    for _ in range(10):
        q = c.Iallreduce(MPI.IN_PLACE, buf)
        while not q.Test(): time.sleep(0)
    return (time.perf_counter() - t) / 10
t_i(); ii = [t_i() for _ in range(3)]
if r == 0: print(f"mpi4py Iallreduce+Test: {min(ii)*1e3:.2f} ms")
