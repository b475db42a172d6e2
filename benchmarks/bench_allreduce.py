"""Allreduce of 4M float32 between MPI ranks: ferromx.distributed.allreduce_ against
MPI's own MPI_Allreduce (mpi4py, blocking, in place) on the same buffer, in one run.

    mpirun --allow-run-as-root -np 2 .venv/bin/python benchmarks/bench_allreduce.py

Rounds alternate between the two (so load from other work hits both alike); each round
times 10 back-to-back calls. Prints best and median per call and their ratios (MPI time
over ferromx time: 1.0 means as fast as MPI). ``--rounds N`` (default 15).
"""

import argparse
import statistics
import time

import ferromx.distributed as dist
import numpy as np
from ferromx import nd
from mpi4py import MPI

N = 4 * 1024 * 1024
CALLS = 10


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--iallreduce", action="store_true",
                    help="also time MPI_Iallreduce + Test polling (the old ferromx path)")
    args = ap.parse_args()
    dist.init()
    c = MPI.COMM_WORLD
    a = nd.ones((N,))
    a.wait_to_read()
    buf = np.from_dlpack(a)  # the same storage for both

    def t_mpi():
        c.Barrier()
        t = time.perf_counter()
        for _ in range(CALLS):
            c.Allreduce(MPI.IN_PLACE, buf)
        return (time.perf_counter() - t) / CALLS

    def t_fx():
        a.wait_to_read()
        c.Barrier()
        t = time.perf_counter()
        for _ in range(CALLS):
            dist.allreduce_(a, average=False)
        a.wait_to_read()
        return (time.perf_counter() - t) / CALLS

    def t_i():
        c.Barrier()
        t = time.perf_counter()
        for _ in range(CALLS):
            q = c.Iallreduce(MPI.IN_PLACE, buf)
            while not q.Test():
                pass
        return (time.perf_counter() - t) / CALLS

    t_mpi(), t_fx()  # warm up (pool, watchdog, MPI connections)
    ms, fs, ii = [], [], []
    for _ in range(args.rounds):
        ms.append(t_mpi())
        fs.append(t_fx())
        if args.iallreduce:
            ii.append(t_i())
    # every rank's times: the slower rank decides a collective's time
    ms, fs = np.array(ms), np.array(fs)
    c.Allreduce(MPI.IN_PLACE, ms, op=MPI.MAX)
    c.Allreduce(MPI.IN_PLACE, fs, op=MPI.MAX)
    if c.rank == 0:
        bm, bf = min(ms) * 1e3, min(fs) * 1e3
        mm, mf = statistics.median(ms) * 1e3, statistics.median(fs) * 1e3
        print(f"allreduce 4M float32, {c.size} ranks, {args.rounds} rounds x {CALLS} calls")
        print(f"  MPI_Allreduce (mpi4py):        best {bm:7.2f} ms  median {mm:7.2f} ms")
        print(f"  ferromx.distributed.allreduce_: best {bf:7.2f} ms  median {mf:7.2f} ms")
        print(f"  ratio MPI/ferromx: best {bm / bf:.2f}  median {mm / mf:.2f}  (goal >= 0.9)")
        if ii:
            print(f"  MPI_Iallreduce + Test polling: best {min(ii) * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
