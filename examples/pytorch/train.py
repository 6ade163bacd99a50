#!/usr/bin/python3
"""Data-parallel training with PyTorch DDP over Gloo on CPU, joined through torch's env://
rendezvous from the MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE that ringleader injects, or that
torchrun sets for each worker it starts. With TORCHELASTIC_USE_AGENT_STORE=True (ringleader's
default) every rank, rank 0 included, is a client of the store on MASTER_PORT, which rank 0's
sidecar serves; otherwise rank 0 hosts that store itself. Every rank ends by printing a line the
ranks can be compared by: "final steps N checksum C weights w0 w1 ...". Any failure (a peer gone,
a port taken) ends the process non-zero, so ringleader restarts the gang."""

import argparse
import datetime
import hashlib
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

FEATURES = 8


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps to run")
    parser.add_argument("--batch-size", type=int, default=64, help="samples per rank per step")
    parser.add_argument("--lr", type=float, default=0.1, help="SGD learning rate")
    parser.add_argument("--seed", type=int, default=7, help="seed of the model and the data")
    parser.add_argument("--step-delay-ms", type=int, default=0,
                        help="sleep after each step, to stand for real work")
    parser.add_argument("--timeout-seconds", type=int, default=60,
                        help="how long joining the world and each collective may take")
    parser.add_argument("--master-port", type=int, default=0,
                        help="host the store on this port instead of using MASTER_PORT (a fixed "
                             "port, the way other operators hand one out; for comparison only)")
    return parser.parse_args()


def required_env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set; run under ringleader or set MASTER_ADDR, "
                           "MASTER_PORT, RANK and WORLD_SIZE yourself")
    return value


def batch(seed, rank, step, size):
    """This rank's shard of step `step`: y = x . w_true + b_true + noise, the same truth everywhere."""
    truth = torch.Generator().manual_seed(seed)
    w_true = torch.randn(FEATURES, 1, generator=truth)
    b_true = torch.randn(1, generator=truth)
    shard = torch.Generator().manual_seed(seed * 1_000_003 + step * 1_009 + rank + 1)
    x = torch.randn(size, FEATURES, generator=shard)
    y = x @ w_true + b_true + 0.01 * torch.randn(size, 1, generator=shard)
    return x, y


def train(args, rank, world_size):
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = torch.nn.Linear(FEATURES, 1)
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    loss_fn = torch.nn.MSELoss()
    for step in range(1, args.steps + 1):
        x, y = batch(args.seed, rank, step, args.batch_size)
        optimizer.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()  # DDP all-reduces the gradients here, over Gloo
        optimizer.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f}", flush=True)
        if args.step_delay_ms > 0:
            time.sleep(args.step_delay_ms / 1000)
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    checksum = hashlib.sha256(weights.numpy().tobytes()).hexdigest()[:16]
    shown = " ".join(f"{w:.6f}" for w in weights.tolist())
    print(f"final steps {args.steps} checksum {checksum} weights {shown}", flush=True)


def main():
    args = parse_args()
    torch.set_num_threads(1)  # tiny model; leave the node's cores to the other ranks
    rank = -1
    try:
        rank = int(required_env("RANK"))
        world_size = int(required_env("WORLD_SIZE"))
        required_env("MASTER_ADDR")
        if args.master_port:
            os.environ["MASTER_PORT"] = str(args.master_port)
            os.environ.pop("TORCHELASTIC_USE_AGENT_STORE", None)  # rank 0 hosts the store
        port = required_env("MASTER_PORT")
        # Whose store the ranks meet in: a client of someone else's (the sidecar's, or torchrun's
        # agent's) under /worker/attempt_<TORCHELASTIC_RESTART_COUNT>, or rank 0's own.
        agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        store = f"client, attempt {os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}" if agent_store else "rank 0 hosts"
        local_rank = os.environ.get("LOCAL_RANK", "0")
        print(f"rank {rank} of {world_size}: joining {os.environ['MASTER_ADDR']}:{port} (gloo) "
              f"local rank {local_rank}, store {store}, torch {torch.__version__}", flush=True)
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=args.timeout_seconds))
        train(args, rank, world_size)
        dist.destroy_process_group()
    except Exception as error:  # a clear last line, then a non-zero exit for the gang restart
        print(f"train.py: rank {rank} failed: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
