"""A real torch.distributed.TCPStore client (is_master=False) against the sidecar's trainer store.

  torch_store_client.py ops PORT PREFIX   every op this PyTorch's Python API has; prints "ok"
  torch_store_client.py keys PORT         the store's keys, one a line (2.x: list_keys)

Runs under PyTorch 1.13 (/usr/bin/python3) and 2.x (.deps/torch-venv); an assertion names the op
that answered wrong.
"""
import datetime
import sys
import threading
import time

import torch
import torch.distributed as dist

T = datetime.timedelta
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def client(port, timeout=T(seconds=30)):
    return dist.TCPStore("127.0.0.1", port, None, False, timeout=timeout)


def set_later(port, key, value, delay):
    """Sets `key` from another connection after `delay` seconds."""
    def run():
        time.sleep(delay)
        client(port).set(key, value)
    thread = threading.Thread(target=run)
    thread.start()
    return thread


def expect_timeout(store, keys, what):
    started = time.monotonic()
    try:
        store.wait(keys, T(milliseconds=300))
    except RuntimeError:  # DistStoreError on 2.x, RuntimeError("Socket Timeout") on 1.13
        elapsed = time.monotonic() - started
        assert 0.25 <= elapsed < 10, f"{what}: timed out after {elapsed:.2f} s, not 0.3 s"
        return
    raise AssertionError(f"{what}: wait for keys nobody set returned")


def ops(port, prefix):
    k = lambda name: prefix + name
    store = client(port)
    store.set(k("a"), "1")
    assert store.get(k("a")) == b"1", "set/get"
    store.set(k("bin"), b"\x00\xff\x80")
    assert store.get(k("bin")) == b"\x00\xff\x80", "binary value"
    assert store.add(k("n"), 5) == 5, "add to a missing key"
    assert store.add(k("n"), -2) == 3, "add"
    assert store.get(k("n")) == b"3", "add keeps decimal text"
    assert store.compare_set(k("cas"), "", "first") == b"first", "compare_set on a missing key"
    assert store.compare_set(k("cas"), "wrong", "x") == b"first", "compare_set, not equal"
    assert store.compare_set(k("cas"), "first", "second") == b"second", "compare_set, equal"
    assert store.compare_set(k("nocas"), "expected", "x") == b"expected", "compare_set, missing"
    store.wait([k("a"), k("n")])
    store.wait([k("a")], T(seconds=5))
    before = store.num_keys()
    store.set(k("counted"), "x")
    assert store.num_keys() == before + 1, "num_keys"
    assert store.delete_key(k("counted")) is True, "delete_key of a key"
    assert store.delete_key(k("counted")) is False, "delete_key of a missing key"
    assert store.num_keys() == before, "num_keys after delete"

    # A wait that times out, then one that ends when another connection sets the key.
    expect_timeout(store, [k("late")], "wait")
    if not TORCH2:
        # A 1.13 client never cancels a timed-out wait, so its connection is out of step (as
        # with PyTorch's own server): carry on with a new one.
        store = client(port)
    writer = set_later(port, k("late"), "here", 0.5)
    started = time.monotonic()
    store.wait([k("late")], T(seconds=20))
    assert time.monotonic() - started >= 0.3, "wait returned before the key was set"
    writer.join()
    assert store.get(k("late")) == b"here", "get after wait"

    if TORCH2:
        assert store.check([k("a"), k("n")]) is True, "check, all present"
        assert store.check([k("a"), k("absent")]) is False, "check, one missing"
        store.append(k("a"), "2")
        store.append(k("new"), "x")
        assert store.get(k("a")) == b"12" and store.get(k("new")) == b"x", "append"
        store.multi_set([k("m1"), k("m2")], ["v1", b"v2"])
        assert store.multi_get([k("m1"), k("m2"), k("a")]) == [b"v1", b"v2", b"12"], "multi_get"
        store.queue_push(k("q"), "one")
        store.queue_push(k("q"), b"two")
        assert store.queue_len(k("q")) == 2, "queue_len"
        assert store.queue_pop(k("q")) == b"one", "queue_pop"
        assert store.queue_pop(k("q"), False) == b"two", "queue_pop, not blocking"
        try:
            store.queue_pop(k("q"), False)
            raise AssertionError("queue_pop of an empty queue did not raise")
        except dist.QueueEmptyError:
            pass
        pusher = threading.Thread(target=lambda: (time.sleep(0.3), client(port).queue_push(k("q"), "three")))
        pusher.start()
        assert store.queue_pop(k("q")) == b"three", "queue_pop waiting for a push"
        pusher.join()
        assert k("m1") in store.list_keys(), "list_keys"
        # A barrier of two connections: neither returns before the other enters.
        other = store.clone()
        entered = threading.Event()
        thread = threading.Thread(target=lambda: (entered.set(), other.barrier(k("bar"), 2, T(seconds=20))))
        thread.start()
        entered.wait()
        time.sleep(0.2)
        store.barrier(k("bar"), 2, T(seconds=20))
        thread.join()
        # A barrier nobody else enters times out (its CANCEL_WAIT answered), and the
        # connection still works after it.
        try:
            store.barrier(k("lonely"), 2, T(milliseconds=300))
            raise AssertionError("a barrier of one of two returned")
        except RuntimeError:
            pass
        assert store.get(k("a")) == b"12", "get after a timed-out barrier"
    print("ok", torch.__version__, flush=True)


def keys(port):
    for key in client(port).list_keys():
        print(key)


if __name__ == "__main__":
    if sys.argv[1] == "ops":
        ops(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "keys":
        keys(int(sys.argv[2]))
    else:
        sys.exit(f"unknown mode {sys.argv[1]}")
