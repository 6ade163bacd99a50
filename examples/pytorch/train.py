#!/usr/bin/python3
"""Data-parallel training with PyTorch DDP over Gloo on CPU, joined through torch's env://
rendezvous from the MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE that ringleader injects, or that
torchrun sets for each worker it starts. With TORCHELASTIC_USE_AGENT_STORE=True (ringleader's
default) every rank, rank 0 included, is a client of the store on MASTER_PORT, which rank 0's
sidecar serves; otherwise rank 0 hosts that store itself. Every rank ends by printing a line the
ranks can be compared by: "final steps N checksum C weights w0 w1 ...". Any failure (a peer gone,
a port taken) ends the process non-zero, so ringleader restarts the gang.

With --checkpoint-every N under torchrun the workers also survive an elastic job's world
re-forming: torchrun restarts every worker whenever a node joins or leaves or a worker fails, so
each node keeps a checkpoint (step, model, optimizer) in a directory of its own every N steps, and
at every (re)start the workers agree on the furthest step any of them holds and resume from it."""

import argparse
import datetime
import hashlib
import os
import socket
import sys
import tempfile
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
    parser.add_argument("--checkpoint-every", type=int, default=0,
                        help="under torchrun: save a checkpoint every N steps (0, the default: "
                             "never), so that a world torchrun re-forms resumes where it was")
    parser.add_argument("--checkpoint-dir", default=os.environ.get("TRAIN_CHECKPOINT_DIR", ""),
                        help="under torchrun: where this node keeps its checkpoint, a local directory "
                             "(not shared storage); default $TRAIN_CHECKPOINT_DIR, else "
                             "<tmp>/train-py/<TORCHELASTIC_RUN_ID>/<PET_LOCAL_ADDR or host name>")
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


def checkpoint_path(args):
    """This node's checkpoint file under torchrun, or None when checkpoints are off. One file per
    node (Pod): its workers' weights are equal, so local rank 0 writes it for all of them."""
    run_id = os.environ.get("TORCHELASTIC_RUN_ID")
    if run_id is None or args.checkpoint_every <= 0:
        return None
    directory = args.checkpoint_dir
    if not directory:
        node = os.environ.get("PET_LOCAL_ADDR") or socket.gethostname()
        directory = os.path.join(tempfile.gettempdir(), "train-py", run_id, node)
    return os.path.join(directory, "checkpoint.pt")


def save_checkpoint(path, step, model, optimizer):
    """Written whole (a rename), so a worker torchrun stops mid-save leaves the last one intact."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, partial)
    os.replace(partial, path)


def resume(path, rank, world_size, model, optimizer):
    """The (re)started world agrees on the furthest step any node's checkpoint holds (all_reduce
    MAX), and the lowest rank holding it broadcasts its model and optimizer state. Returns the
    step to continue after (0: none held)."""
    held = None
    if os.path.exists(path):
        try:
            held = torch.load(path)
        except Exception as error:  # a damaged file counts as none, and says so
            print(f"rank {rank}: ignoring checkpoint {path}: {type(error).__name__}: {error}", flush=True)
    held_step = held["step"] if held else 0
    furthest = torch.tensor([held_step], dtype=torch.int64)
    dist.all_reduce(furthest, op=dist.ReduceOp.MAX)
    furthest = int(furthest.item())
    holder = torch.tensor([rank if held_step == furthest else world_size], dtype=torch.int64)
    dist.all_reduce(holder, op=dist.ReduceOp.MIN)
    holder = int(holder.item())
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    if furthest == 0:
        print(f"rank {rank} of {world_size}: elastic start (restart count {restart}), resuming after step 0 "
              "(no checkpoint)", flush=True)
        return 0
    state = [held if rank == holder else None]
    dist.broadcast_object_list(state, src=holder)
    model.load_state_dict(state[0]["model"])
    optimizer.load_state_dict(state[0]["optimizer"])
    print(f"rank {rank} of {world_size}: elastic start (restart count {restart}), resuming after step {furthest} "
          f"(checkpoint of rank {holder})", flush=True)
    return furthest


def train(args, rank, world_size):
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = torch.nn.Linear(FEATURES, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    checkpoint = checkpoint_path(args)
    first = 1
    if checkpoint is not None:
        first = resume(checkpoint, rank, world_size, model, optimizer) + 1
    writes_checkpoint = checkpoint is not None and os.environ.get("LOCAL_RANK", "0") == "0"
    ddp = DistributedDataParallel(model)  # broadcasts rank 0's weights, equal by now
    loss_fn = torch.nn.MSELoss()
    for step in range(first, args.steps + 1):
        x, y = batch(args.seed, rank, step, args.batch_size)
        optimizer.zero_grad()
        loss = loss_fn(ddp(x), y)
        loss.backward()  # DDP all-reduces the gradients here, over Gloo
        optimizer.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f}", flush=True)
        if writes_checkpoint and (step % args.checkpoint_every == 0 or step == args.steps):
            save_checkpoint(checkpoint, step, model, optimizer)
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
