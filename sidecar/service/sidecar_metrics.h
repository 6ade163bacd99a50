// The sidecar's Prometheus metrics. They depend only on a registry; main builds the endpoint
// that serves them. Every label takes one of a short known list of values, or a rank of this job,
// so one sidecar exports a bounded number of series.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "sidecar/collectives/communicator.h"
#include "sidecar/rendezvous/torch_store_server.h"

namespace ringleader::sidecar {

// The `collective` label is collectives::CollectiveName(): "all_reduce", ..., "alltoall",
// "sendrecv".
enum class ProbeResult : std::uint8_t { kOk, kWrongData, kBelowFloor, kError };
enum class RendezvousFailure : std::uint8_t { kTimeout, kConnect, kRefused, kProtocol, kMismatch };
enum class Direction : std::uint8_t { kSend, kRecv };
enum class PreflightState : std::uint8_t { kPending, kRunning, kPassed, kFailed, kDisabled };

// Label values: "ok", "wrong_data", "below_floor", "timeout", "send", "passed", ...
std::string_view ProbeResultName(ProbeResult result);
std::string_view RendezvousFailureName(RendezvousFailure reason);
std::string_view DirectionName(Direction direction);
std::string_view PreflightStateName(PreflightState state);

// The `size` label: the smallest power of two >= bytes, clamped to 1 B..16 GiB (the largest
// preflight message), written "1B", "512B", "1KiB", "64MiB", "16GiB": at most 35 values.
std::string SizeBucket(std::uint64_t bytes);
inline constexpr std::uint64_t kMaxSizeBucketBytes = std::uint64_t{16} << 30;

// Labels of the info gauge that are only known once the communicator is up.
struct SidecarInfo {
  std::string backend;       // "gloo" or "nccl"
  std::string transport;     // e.g. "tcp", "ib", "nvlink"
  std::string nccl_version;  // "" under gloo
  // What the probes measure: "gpus" (nccl, the GPUs and the fabric behind them) or "network"
  // (gloo, host memory over the Pod's network, as a native sidecar without devices does).
  std::string measures;
  std::string job;
  std::string job_namespace;
};

class SidecarMetrics {
 public:
  // Registers, in `registry` (which must outlive this):
  //   ringleader_sidecar_bus_bandwidth_bytes_per_second{collective,size}        gauge
  //   ringleader_sidecar_algorithm_bandwidth_bytes_per_second{collective,size}  gauge
  //   ringleader_sidecar_probe_duration_seconds{collective}    histogram, one timed call
  //   ringleader_sidecar_probe_runs_total{collective,result}   counter
  //   ringleader_sidecar_probe_wrong_elements_total{collective} counter
  //   ringleader_sidecar_rendezvous_duration_seconds           histogram
  //   ringleader_sidecar_rendezvous_failures_total{reason}     counter
  //   ringleader_sidecar_refused_connections_total{reason}     counter; reason: the rendezvous
  //                                                            server's refusal:: reasons, else
  //                                                            "other"
  //   ringleader_sidecar_edge_bandwidth_bytes_per_second{local_rank,peer_rank,direction}
  //                                                            gauge, this sidecar's edges only
  //   ringleader_sidecar_preflight_state{state}                gauge, 1 for the current state
  //   ringleader_sidecar_info{backend,transport,nccl_version,measures,world_size,rank,job,
  //                           namespace} = 1
  //   ringleader_sidecar_preflight_transport_info{backend,transport,rdma_requested,rdma_fallback}
  //                                                            = 1, what the preflight ran over
  //   ringleader_sidecar_rdma_fallback                         gauge, 1 when RDMA was asked for
  //                                                            and NCCL used sockets
  // The sidecar is Pod rank `rank` of `world_size` and drives `local_ranks` ranks of the probe
  // communicator: rank x local_ranks + l for local rank l, of world_size x local_ranks.
  // Methods are thread-safe.
  SidecarMetrics(prometheus::Registry& registry, int rank, int world_size, int local_ranks = 1);

  // One size of a probe: the bandwidths and the mean seconds of one timed call.
  void ObserveProbe(collectives::Collective collective, std::uint64_t bytes,
                    double algbw_bytes_per_second, double busbw_bytes_per_second,
                    double seconds_per_call);
  void CountProbeRun(collectives::Collective collective, ProbeResult result);
  void AddWrongElements(collectives::Collective collective, std::uint64_t count);
  void ObserveRendezvous(double seconds);
  void CountRendezvousFailure(RendezvousFailure reason);
  // `reason` is one of rendezvous::refusal's (the server's on_refused); any other counts as
  // "other", so a new reason cannot add series unnoticed.
  void CountRefusedConnection(std::string_view reason);
  // The edge between local rank `local_rank` and communicator rank `peer_rank`. False (and
  // nothing recorded) for a local rank out of range, or a peer that is that rank itself or
  // outside the communicator.
  bool SetEdgeBandwidth(int local_rank, int peer_rank, Direction direction,
                        double bytes_per_second);
  void SetPreflightState(PreflightState state);
  // Replaces the info series (only one exists at a time).
  void SetInfo(const SidecarInfo& info);
  // Replaces the preflight's transport series (only one exists at a time) and sets the fallback
  // gauge. `transport` is NCCL's own account (collectives::NcclTransportLabel) or Gloo's "tcp".
  void SetPreflightTransport(const std::string& backend, const std::string& transport,
                             bool rdma_requested, bool rdma_fallback);

 private:
  const int rank_;
  const int world_size_;
  const int local_ranks_;
  prometheus::Family<prometheus::Gauge>& busbw_;
  prometheus::Family<prometheus::Gauge>& algbw_;
  prometheus::Family<prometheus::Histogram>& probe_duration_;
  prometheus::Family<prometheus::Counter>& probe_runs_;
  prometheus::Family<prometheus::Counter>& wrong_elements_;
  prometheus::Histogram& rendezvous_duration_;
  prometheus::Family<prometheus::Counter>& rendezvous_failures_;
  prometheus::Family<prometheus::Counter>& refused_connections_;
  prometheus::Family<prometheus::Gauge>& edge_bandwidth_;
  prometheus::Family<prometheus::Gauge>& preflight_state_;
  prometheus::Family<prometheus::Gauge>& info_;
  prometheus::Family<prometheus::Gauge>& transport_info_;
  prometheus::Gauge& rdma_fallback_;
  std::mutex mutex_;  // makes SetPreflightState, SetInfo and SetPreflightTransport whole
  prometheus::Gauge* info_series_ = nullptr;            // guarded by mutex_
  prometheus::Gauge* transport_info_series_ = nullptr;  // guarded by mutex_
};

// The trainer store's metrics (PyTorch's TCPStore protocol on MASTER_PORT; rank 0's sidecar,
// when RINGLEADER_TRAINER_STORE_PORT is set), fed as the server's observer:
//   ringleader_sidecar_trainer_store_clients                  gauge, client connections open
//   ringleader_sidecar_trainer_store_connections_total        counter, connections accepted
//   ringleader_sidecar_trainer_store_requests_total{query}    counter; query: torch_store::
//                                                             QueryName() ("set", "wait", ...)
//   ringleader_sidecar_trainer_store_unknown_queries_total{dialect,type}
//                                                             counter; dialect "torch1" (1.13)
//                                                             or "torch2", type the byte in
//                                                             decimal: at most 512 series
//   ringleader_sidecar_trainer_store_closed_connections_total{reason}
//                                                             counter; reason: torch_close::
//                                                             (evicted, too_many_connections,
//                                                             unknown_query, ...), else "other"
// Every query and reason series exists from the start at 0. Thread-safe.
class TrainerStoreMetrics final : public rendezvous::TorchStoreObserver {
 public:
  explicit TrainerStoreMetrics(prometheus::Registry& registry);

  void OnAccepted() override;
  void OnClosed() override;
  void OnRequest(rendezvous::torch_store::Query query) override;
  void OnUnknownQuery(rendezvous::torch_store::Dialect dialect, std::uint8_t type_byte) override;
  void OnClosedForCause(std::string_view reason) override;

 private:
  prometheus::Gauge& clients_;
  prometheus::Counter& connections_;
  prometheus::Family<prometheus::Counter>& requests_family_;
  prometheus::Family<prometheus::Counter>& unknown_queries_;
  prometheus::Family<prometheus::Counter>& closed_;
  // Resolved once: a request costs one atomic add, not a label lookup.
  std::array<prometheus::Counter*, rendezvous::torch_store::kQueryCount> requests_{};
};

}  // namespace ringleader::sidecar
