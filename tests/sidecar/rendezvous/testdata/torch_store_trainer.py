"""One rank of a real PyTorch job whose every rank is a client of the store on MASTER_PORT.

Run with MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, TORCHELASTIC_USE_AGENT_STORE=True and
TORCHELASTIC_RESTART_COUNT (as the operator injects them), or under torchrun (which sets its own).
init_process_group("gloo", "env://"), an all_reduce whose sum it checks, dist.barrier(),
monitored_barrier, one DDP step, then a check that this process never listened on MASTER_PORT.
Prints "rank R of W ok ..." and exits 0.
"""
import datetime
import os

import torch
import torch.distributed as dist


def listening_inodes(port):
    """Inodes of the sockets listening on `port` (any address), from /proc/net/tcp{,6}."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        inodes.add(inode)
        except FileNotFoundError:
            pass
    return inodes


def own_socket_inodes():
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def main():
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    port = int(os.environ["MASTER_PORT"])
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
    assert dist.get_rank() == rank and dist.get_world_size() == world
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    expected = world * (world + 1) / 2
    assert total.item() == expected, f"all_reduce gave {total.item()}, not {expected}"
    dist.barrier()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=60))
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    model(torch.full((2, 4), float(rank))).sum().backward()
    # DDP averages the gradients: every rank holds the same ones.
    grad = model.module.weight.grad.clone()
    gathered = [torch.zeros_like(grad) for _ in range(world)]
    dist.all_gather(gathered, grad)
    assert all(torch.equal(g, gathered[0]) for g in gathered), "DDP gradients differ across ranks"
    listeners = listening_inodes(port)
    mine = listeners & own_socket_inodes()
    assert not mine, f"rank {rank} listens on MASTER_PORT {port}"
    assert listeners, f"nobody listens on MASTER_PORT {port}"
    local = os.environ.get("LOCAL_RANK", "-")
    print(f"rank {rank} of {world} ok: local rank {local}, sum {total.item():g}, "
          f"attempt {os.environ.get('TORCHELASTIC_RESTART_COUNT', '-')}, master port {port}, "
          f"torch {torch.__version__}",
          flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
