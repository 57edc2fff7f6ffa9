#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Multi-node data-parallel training the way DeepSpeed runs under Slurm.

srun starts one process per rank; torch.distributed is initialised from the
Slurm environment (env://, MASTER_ADDR/MASTER_PORT exported by the sbatch
script); the optimizer is a C++ op JIT-built at start-up by every rank with
torch.utils.cpp_extension.load(), as DeepSpeed's op builder does for
FusedAdam or cpu_adam.  That load() is where jobs hang when
TORCH_EXTENSIONS_DIR is a shared home directory; with --ext-cache=local it is
a private node-local directory of the job step, built once per node.

CPU only (gloo) so that it runs anywhere; on GPUs use backend nccl and move
the tensors to the rank's device.

    srun python3 train_ds_style.py [--steps N]
"""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
from torch.utils.cpp_extension import load

HERE = os.path.dirname(os.path.abspath(__file__))


class FusedSGDBuilder:
    """In the spirit of deepspeed.ops.op_builder.OpBuilder: sources shipped
    with the package, compiled on first use into TORCH_EXTENSIONS_DIR."""

    NAME = "fused_sgd"

    def sources(self):
        return [os.path.join(HERE, "ops", "fused_sgd.cpp")]

    def jit_load(self, verbose=True):
        start = time.time()
        op = load(name=self.NAME, sources=self.sources(), extra_cflags=["-O2"], verbose=verbose)
        print(f"Time to load {self.NAME} op: {time.time() - start:.2f} seconds", flush=True)
        return op


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--lr", type=float, default=0.05)
    args = ap.parse_args()

    rank = int(os.environ["SLURM_PROCID"])
    world = int(os.environ["SLURM_NTASKS"])
    node = os.environ.get("SLURMD_NODENAME", socket.gethostname())
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)

    op = FusedSGDBuilder().jit_load()

    # A linear model y = X w; every rank holds its own shard of the data.
    torch.manual_seed(0)
    w_true = torch.randn(16)
    gen = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(256, 16, generator=gen)
    y = x @ w_true + 0.01 * torch.randn(256, generator=gen)

    w = torch.zeros(16, requires_grad=True)
    buf = torch.zeros(16)
    losses = []
    for _ in range(args.steps):
        loss = torch.mean((x @ w - y) ** 2)
        w.grad = None
        loss.backward()
        dist.all_reduce(w.grad)  # data parallel: average the gradients
        w.grad /= world
        op.fused_sgd_step_(w.data, w.grad, buf, args.lr, 0.9)
        losses.append(loss.item())

    # every rank must end with the same weights
    lo, hi = w.detach().clone(), w.detach().clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    same = bool(torch.equal(lo, hi))
    print(
        f"rank {rank}/{world} on {node}: TORCH_EXTENSIONS_DIR={os.environ.get('TORCH_EXTENSIONS_DIR', '(unset)')} "
        f"op={op.__file__} loss {losses[0]:.4f} -> {losses[-1]:.4f}",
        flush=True,
    )
    dist.barrier()
    if rank == 0:
        print(
            f"training done: {args.steps} steps on {world} ranks, loss {losses[0]:.4f} -> {losses[-1]:.4f}, "
            f"weights identical on every rank: {same}",
            flush=True,
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
