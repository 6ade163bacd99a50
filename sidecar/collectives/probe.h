// Probes: one collective at one size (nccl-tests' timing and #wrong check), sweeps over sizes,
// and pairwise sendrecv patterns that name the slowest rank and edge. Every function here is a
// collective call: all ranks call it with the same arguments, in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sidecar/collectives/communicator.h"

namespace ringleader::collectives {

struct ProbeOptions {
  int warmup_iters = 1;  // nccl-tests -w
  int iters = 5;         // nccl-tests -n
  bool check = true;     // one extra, verified iteration (nccl-tests -c 1)
  std::uint64_t seed = 1;
  // sendrecv's peers; unset (-1) means the ring: send to rank+1, receive from rank-1.
  Peers peers;
  // Test hook: this rank adds 1000 to its first input element, so the check must count the
  // outputs that depend on it.
  int corrupt_rank_for_test = -1;
  // Inputs are written and outputs checked this many elements at a time, so a probe's host
  // memory beyond its buffers is two such pieces (8 MiB), whatever the message size.
  std::size_t piece_elems = std::size_t{1} << 20;
};

struct ProbeRow {
  Collective collective = Collective::kAllReduce;
  std::size_t bytes = 0;  // nccl-tests' size column (see ReportedBytes)
  std::size_t count = 0;  // elements per rank, nccl-tests' count column
  double time_us = 0;     // the slowest rank's mean time per iteration
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::uint64_t wrong = 0;  // wrong output elements, summed over ranks (0 when not checked)
  int slowest_rank = 0;
  bool operator==(const ProbeRow&) const = default;
};

// Buffers kept from one probe to the next, as nccl-tests allocates once per run: a probe on
// fresh memory pays for cold caches and page mappings in its timed calls (with 4 Gloo ranks on
// 2 cores, all_reduce of 1 MiB took 12-40% longer; tests/bench/probe_overhead_bench.cc). They
// grow to the largest probe and are freed with this object. For one communicator, one thread.
class ProbeBuffers {
 public:
  explicit ProbeBuffers(Communicator& comm) : comm_(comm) {}

  // Buffers of at least this many send and receive elements.
  Buffers& AtLeast(std::size_t send_elems, std::size_t recv_elems);

 private:
  Communicator& comm_;
  std::unique_ptr<Buffers> buffers_;
};

// Runs `collective` with `count` elements per rank: warm-up, then the wall clock around `iters`
// launches and one Synchronize, divided by iters; every rank's time is gathered and the max is
// the row's time. The buffers come from `reuse` when given, else are allocated for this probe.
// Throws std::invalid_argument for count 0 or iters < 1, CommunicatorError when the
// communicator fails.
ProbeRow RunProbe(Communicator& comm, Collective collective, std::size_t count,
                  const ProbeOptions& options = {}, ProbeBuffers* reuse = nullptr);

// nccl-tests' -b/-e/-f: sizes min_bytes, min_bytes x factor, ... up to max_bytes.
struct SweepRange {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 1 << 20;
  std::size_t factor = 2;
};

// For each collective in turn, one row per size; a size too small to hold one element per rank
// is skipped (count 0). The probes share their buffers. Throws std::invalid_argument when
// factor < 2 or min_bytes is 0.
std::vector<ProbeRow> Sweep(Communicator& comm, std::span<const Collective> collectives,
                            const SweepRange& range, const ProbeOptions& options = {});

// The preflight's rows on one rank: all_reduce over `range`, then every other collective once at
// its largest size (each must work and return exact data). Throws as Sweep does.
std::vector<ProbeRow> PreflightSweep(Communicator& comm, const SweepRange& range,
                                     const ProbeOptions& options = {});

enum class PairPattern {
  kRingNeighbour,  // rank r sends to r+1 and receives from r-1
  kHalves,         // rank r sends to r+n/2 and receives from r-n/2 (mod n): pairs when n is even
};

// The peers rank `rank` of `n` uses in `pattern`.
Peers PeersFor(PairPattern pattern, int rank, int n);

struct Edge {
  int from = 0;
  int to = 0;
  double time_us = 0;  // the receiving rank's mean sendrecv time
  double bandwidth_gbps = 0;
  std::string name() const;  // "from->to"
};

struct PairwiseResult {
  PairPattern pattern = PairPattern::kRingNeighbour;
  std::size_t bytes = 0;
  std::vector<Edge> edges;  // one per receiving rank, indexed by that rank
  int slowest_rank = 0;
  std::string slowest_edge;  // the edge with the longest time, e.g. "2->3"
  std::uint64_t wrong = 0;
};

// sendrecv of `bytes` per rank along every edge of `pattern` at once. An edge is timed by the
// rank at its receiving end. Throws std::invalid_argument when bytes hold no float.
PairwiseResult Pairwise(Communicator& comm, PairPattern pattern, std::size_t bytes,
                        const ProbeOptions& options = {}, ProbeBuffers* reuse = nullptr);

// Rows as nccl-tests prints them (plus the collective and the slowest rank), for a failure
// message: collective, size(B), count(elements), type, redop, root, time(us), algbw(GB/s),
// busbw(GB/s), #wrong, slowest.
std::string FormatTable(std::span<const ProbeRow> rows);

}  // namespace ringleader::collectives
