// The probe runner: backend-agnostic timing and verification over a Communicator.
#include "sidecar/collectives/probe.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "sidecar/collectives/bus_bandwidth.h"
#include "sidecar/collectives/verify.h"

namespace ringleader::collectives {
namespace {

// What every rank learns from one probe: each rank's mean seconds per iteration, and the wrong
// elements summed over ranks.
struct Measurement {
  std::vector<double> seconds;
  std::uint64_t wrong = 0;
};

Peers ResolvePeers(Peers peers, int rank, int n) {
  if (peers.send_to < 0 && peers.recv_from < 0) {
    return PeersFor(PairPattern::kRingNeighbour, rank, n);
  }
  return peers;
}

Measurement Measure(Communicator& comm, Collective collective, std::size_t count, Peers peers,
                    const ProbeOptions& options, ProbeBuffers* reuse) {
  if (count == 0) {
    throw std::invalid_argument("probe: count must be positive");
  }
  if (options.iters < 1 || options.warmup_iters < 0) {
    throw std::invalid_argument("probe: needs iters >= 1 and warmup_iters >= 0");
  }
  const int n = comm.size();
  const int rank = comm.rank();
  const BufferElems elems = ElemsFor(collective, count, n);
  std::unique_ptr<Buffers> own;
  if (reuse == nullptr) {
    own = comm.Allocate(elems.send, elems.recv);
  }
  Buffers* const buffers = reuse != nullptr ? &reuse->AtLeast(elems.send, elems.recv) : own.get();
  if (options.piece_elems == 0) {
    throw std::invalid_argument("probe: piece_elems must be positive");
  }
  // Host pieces for writing inputs and reading outputs, and for the expected values.
  std::vector<float> piece(std::min(options.piece_elems, std::max(elems.send, elems.recv)));
  std::vector<float> expected;
  const auto each_piece = [&](std::size_t total, const auto& visit) {
    for (std::size_t offset = 0; offset < total; offset += piece.size()) {
      visit(offset, std::span<float>(piece).first(std::min(piece.size(), total - offset)));
    }
  };
  each_piece(elems.send, [&](std::size_t offset, std::span<float> part) {
    FillInput(options.seed, rank, offset, part);
    if (offset == 0 && options.corrupt_rank_for_test == rank) {
      part[0] += 1000.0f;
    }
    buffers->WriteSend(offset, part);
  });

  for (int i = 0; i < options.warmup_iters; ++i) {
    comm.Run(collective, *buffers, count, peers);
  }
  comm.Synchronize();
  comm.AllGatherDouble(0.0);  // a barrier, so every rank starts its clock together
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < options.iters; ++i) {
    comm.Run(collective, *buffers, count, peers);
  }
  comm.Synchronize();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;

  Measurement measurement;
  measurement.seconds = comm.AllGatherDouble(elapsed.count() / options.iters);
  if (options.check) {
    // Poison the output first, so an element the collective never wrote is counted.
    each_piece(elems.recv, [&](std::size_t offset, std::span<float> part) {
      std::fill(part.begin(), part.end(), std::numeric_limits<float>::quiet_NaN());
      buffers->WriteRecv(offset, part);
    });
    comm.Run(collective, *buffers, count, peers);
    comm.Synchronize();
    std::uint64_t wrong = 0;
    expected.resize(piece.size());
    each_piece(elems.recv, [&](std::size_t offset, std::span<float> part) {
      buffers->ReadRecv(offset, part);
      const std::span<float> want = std::span<float>(expected).first(part.size());
      FillExpected(collective, count, rank, n, options.seed, peers, offset, want);
      wrong += CountWrong(part, want);
    });
    double total = 0;
    for (const double rank_wrong : comm.AllGatherDouble(static_cast<double>(wrong))) {
      total += rank_wrong;
    }
    measurement.wrong = static_cast<std::uint64_t>(std::llround(total));
  }
  return measurement;
}

int Slowest(const std::vector<double>& seconds) {
  return static_cast<int>(std::max_element(seconds.begin(), seconds.end()) - seconds.begin());
}

}  // namespace

Peers PeersFor(PairPattern pattern, int rank, int n) {
  const int stride = pattern == PairPattern::kRingNeighbour ? 1 : n / 2;
  return {(rank + stride) % n, ((rank - stride) % n + n) % n};
}

std::string Edge::name() const { return std::to_string(from) + "->" + std::to_string(to); }

Buffers& ProbeBuffers::AtLeast(std::size_t send_elems, std::size_t recv_elems) {
  if (!buffers_ || buffers_->send_elems() < send_elems || buffers_->recv_elems() < recv_elems) {
    const std::size_t send = std::max(send_elems, buffers_ ? buffers_->send_elems() : 0);
    const std::size_t recv = std::max(recv_elems, buffers_ ? buffers_->recv_elems() : 0);
    buffers_.reset();  // the old ones go first, so peak memory is the new size alone
    buffers_ = comm_.Allocate(send, recv);
  }
  return *buffers_;
}

ProbeRow RunProbe(Communicator& comm, Collective collective, std::size_t count,
                  const ProbeOptions& options, ProbeBuffers* reuse) {
  const Peers peers = collective == Collective::kSendRecv
                          ? ResolvePeers(options.peers, comm.rank(), comm.size())
                          : Peers{};
  const Measurement measurement = Measure(comm, collective, count, peers, options, reuse);
  ProbeRow row;
  row.collective = collective;
  row.count = count;
  row.bytes = ReportedBytes(collective, count, comm.size());
  row.slowest_rank = Slowest(measurement.seconds);
  const double seconds = measurement.seconds[static_cast<std::size_t>(row.slowest_rank)];
  row.time_us = seconds * 1e6;
  const Bandwidth bandwidth = ComputeBandwidth(collective, row.bytes, seconds, comm.size());
  row.algbw_gbps = bandwidth.algbw_gbps;
  row.busbw_gbps = bandwidth.busbw_gbps;
  row.wrong = measurement.wrong;
  return row;
}

std::vector<ProbeRow> Sweep(Communicator& comm, std::span<const Collective> collectives,
                            const SweepRange& range, const ProbeOptions& options) {
  if (range.factor < 2 || range.min_bytes == 0) {
    throw std::invalid_argument("sweep: needs factor >= 2 and min_bytes >= 1");
  }
  std::vector<ProbeRow> rows;
  ProbeBuffers buffers(comm);
  for (const Collective collective : collectives) {
    for (std::size_t bytes = range.min_bytes; bytes <= range.max_bytes;) {
      const std::size_t count = CountPerRank(collective, bytes, comm.size());
      if (count > 0) {
        rows.push_back(RunProbe(comm, collective, count, options, &buffers));
      }
      if (bytes > range.max_bytes / range.factor) {
        break;
      }
      bytes *= range.factor;
    }
  }
  return rows;
}

std::vector<ProbeRow> PreflightSweep(Communicator& comm, const SweepRange& range,
                                     const ProbeOptions& options) {
  const Collective all_reduce[] = {Collective::kAllReduce};
  std::vector<ProbeRow> rows = Sweep(comm, all_reduce, range, options);
  const Collective others[] = {Collective::kAllGather, Collective::kReduceScatter,
                               Collective::kBroadcast, Collective::kAllToAll, Collective::kSendRecv};
  const SweepRange largest{range.max_bytes, range.max_bytes, range.factor};
  for (ProbeRow& row : Sweep(comm, others, largest, options)) {
    rows.push_back(std::move(row));
  }
  return rows;
}

PairwiseResult Pairwise(Communicator& comm, PairPattern pattern, std::size_t bytes,
                        const ProbeOptions& options, ProbeBuffers* reuse) {
  const std::size_t count = bytes / sizeof(float);
  if (count == 0) {
    throw std::invalid_argument("pairwise: " + std::to_string(bytes) + " bytes hold no float");
  }
  const int n = comm.size();
  const Measurement measurement = Measure(comm, Collective::kSendRecv, count,
                                          PeersFor(pattern, comm.rank(), n), options, reuse);
  PairwiseResult result;
  result.pattern = pattern;
  result.bytes = count * sizeof(float);
  result.wrong = measurement.wrong;
  for (int to = 0; to < n; ++to) {
    Edge edge;
    edge.from = PeersFor(pattern, to, n).recv_from;
    edge.to = to;
    const double seconds = measurement.seconds[static_cast<std::size_t>(to)];
    edge.time_us = seconds * 1e6;
    edge.bandwidth_gbps =
        ComputeBandwidth(Collective::kSendRecv, result.bytes, seconds, n).algbw_gbps;
    result.edges.push_back(edge);
  }
  result.slowest_rank = Slowest(measurement.seconds);
  result.slowest_edge = result.edges[static_cast<std::size_t>(result.slowest_rank)].name();
  return result;
}

std::string FormatTable(std::span<const ProbeRow> rows) {
  std::string table =
      "#    collective         size        count      type   redop    root       time    algbw"
      "    busbw  #wrong  slowest\n"
      "#                        (B)   (elements)                              (us)   (GB/s)"
      "   (GB/s)             rank\n"
      "# time: the slowest rank's mean per call (nccl-tests -a 3); nccl-tests' default (-a 1) "
      "averages the ranks' times\n";
  char line[256];
  for (const ProbeRow& row : rows) {
    const bool reduces =
        row.collective == Collective::kAllReduce || row.collective == Collective::kReduceScatter;
    const int root = row.collective == Collective::kBroadcast ? kBroadcastRoot : -1;
    std::snprintf(line, sizeof(line),
                  "%15s %12zu %12zu %9s %7s %7d %10.2f %8.3f %8.3f %7" PRIu64 " %8d\n",
                  std::string(CollectiveName(row.collective)).c_str(), row.bytes, row.count,
                  "float", reduces ? "sum" : "none", root, row.time_us, row.algbw_gbps,
                  row.busbw_gbps, row.wrong, row.slowest_rank);
    table += line;
  }
  return table;
}

}  // namespace ringleader::collectives
