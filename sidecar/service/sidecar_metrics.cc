// The sidecar's metric families. Label values come from the enums in the header, the size
// buckets, or this job's ranks, never from free text the network could choose.
#include "sidecar/service/sidecar_metrics.h"

#include <algorithm>
#include <array>
#include <bit>

#include "sidecar/rendezvous/store_server.h"

namespace ringleader::sidecar {
namespace {

constexpr std::array<ProbeResult, 4> kProbeResults = {ProbeResult::kOk, ProbeResult::kWrongData,
                                                      ProbeResult::kBelowFloor, ProbeResult::kError};
constexpr std::array<RendezvousFailure, 5> kRendezvousFailures = {
    RendezvousFailure::kTimeout, RendezvousFailure::kConnect, RendezvousFailure::kRefused,
    RendezvousFailure::kProtocol, RendezvousFailure::kMismatch};
namespace refusal = rendezvous::refusal;
constexpr std::array<std::string_view, 12> kRefusedReasons = {
    refusal::kBadFrame,          refusal::kUnsupportedVersion, refusal::kAuthenticationFailed,
    refusal::kBadRank,           refusal::kWorldSizeMismatch,  refusal::kHandshakeTimeout,
    refusal::kProtocolViolation, refusal::kTooManyConnections, refusal::kInternalError,
    refusal::kStaleProof,        refusal::kAttemptMismatch,    "other"};
constexpr std::array<std::string_view, 7> kTrainerStoreCloseReasons = {
    rendezvous::torch_close::kUnknownQuery, rendezvous::torch_close::kTooLarge,
    rendezvous::torch_close::kProtocolViolation, rendezvous::torch_close::kBadRequest,
    rendezvous::torch_close::kEvicted, rendezvous::torch_close::kTooManyConnections, "other"};
constexpr std::array<PreflightState, 5> kPreflightStates = {
    PreflightState::kPending, PreflightState::kRunning, PreflightState::kPassed,
    PreflightState::kFailed, PreflightState::kDisabled};

prometheus::Histogram::BucketBoundaries DoublingBuckets(double first, int count) {
  prometheus::Histogram::BucketBoundaries buckets;
  double bound = first;
  for (int i = 0; i < count; ++i) {
    buckets.push_back(bound);
    bound *= 2;
  }
  return buckets;
}

// 10 us doubling to about 84 s: a small all-reduce over NVLink up to a large one over a
// congested TCP link.
prometheus::Histogram::BucketBoundaries ProbeBuckets() { return DoublingBuckets(1e-5, 24); }

// 10 ms doubling to about 22 min: every rank at once, up to a slow scheduler's last Pod.
prometheus::Histogram::BucketBoundaries RendezvousBuckets() { return DoublingBuckets(0.01, 18); }

std::string Label(std::string_view value) { return std::string(value); }

std::string CollectiveLabel(collectives::Collective collective) {
  return std::string(collectives::CollectiveName(collective));
}

constexpr collectives::Collective kAllReduce = collectives::Collective::kAllReduce;

}  // namespace

std::string_view ProbeResultName(ProbeResult result) {
  switch (result) {
    case ProbeResult::kOk: return "ok";
    case ProbeResult::kWrongData: return "wrong_data";
    case ProbeResult::kBelowFloor: return "below_floor";
    case ProbeResult::kError: return "error";
  }
  return "unknown";
}

std::string_view RendezvousFailureName(RendezvousFailure reason) {
  switch (reason) {
    case RendezvousFailure::kTimeout: return "timeout";
    case RendezvousFailure::kConnect: return "connect";
    case RendezvousFailure::kRefused: return "refused";
    case RendezvousFailure::kProtocol: return "protocol";
    case RendezvousFailure::kMismatch: return "mismatch";
  }
  return "unknown";
}

std::string_view DirectionName(Direction direction) {
  return direction == Direction::kSend ? "send" : "recv";
}

std::string_view PreflightStateName(PreflightState state) {
  switch (state) {
    case PreflightState::kPending: return "pending";
    case PreflightState::kRunning: return "running";
    case PreflightState::kPassed: return "passed";
    case PreflightState::kFailed: return "failed";
    case PreflightState::kDisabled: return "disabled";
  }
  return "unknown";
}

std::string SizeBucket(std::uint64_t bytes) {
  const std::uint64_t clamped = bytes < 1 ? 1 : (bytes > kMaxSizeBucketBytes ? kMaxSizeBucketBytes : bytes);
  const int exponent = std::countr_zero(std::bit_ceil(clamped));
  static constexpr std::array<std::string_view, 4> kUnits = {"B", "KiB", "MiB", "GiB"};
  return std::to_string(std::uint64_t{1} << (exponent % 10)) + std::string(kUnits[exponent / 10]);
}

SidecarMetrics::SidecarMetrics(prometheus::Registry& registry, int rank, int world_size,
                               int local_ranks)
    : rank_(rank),
      world_size_(world_size),
      local_ranks_(local_ranks),
      busbw_(prometheus::BuildGauge()
                 .Name("ringleader_sidecar_bus_bandwidth_bytes_per_second")
                 .Help("Bus bandwidth of the last probe by collective and message size bucket "
                       "(nccl-tests' busbw)")
                 .Register(registry)),
      algbw_(prometheus::BuildGauge()
                 .Name("ringleader_sidecar_algorithm_bandwidth_bytes_per_second")
                 .Help("Algorithm bandwidth (bytes / time) of the last probe by collective and "
                       "message size bucket")
                 .Register(registry)),
      probe_duration_(prometheus::BuildHistogram()
                          .Name("ringleader_sidecar_probe_duration_seconds")
                          .Help("Mean time of one timed collective call in a probe")
                          .Register(registry)),
      probe_runs_(prometheus::BuildCounter()
                      .Name("ringleader_sidecar_probe_runs_total")
                      .Help("Probes by collective and result (ok, wrong_data, below_floor, error)")
                      .Register(registry)),
      wrong_elements_(prometheus::BuildCounter()
                          .Name("ringleader_sidecar_probe_wrong_elements_total")
                          .Help("Elements a probe found with the wrong value after the collective")
                          .Register(registry)),
      rendezvous_duration_(prometheus::BuildHistogram()
                               .Name("ringleader_sidecar_rendezvous_duration_seconds")
                               .Help("Time from start until every rank had joined")
                               .Register(registry)
                               .Add({}, RendezvousBuckets())),
      rendezvous_failures_(prometheus::BuildCounter()
                               .Name("ringleader_sidecar_rendezvous_failures_total")
                               .Help("Failed rendezvous attempts by reason")
                               .Register(registry)),
      refused_connections_(prometheus::BuildCounter()
                               .Name("ringleader_sidecar_refused_connections_total")
                               .Help("Connections the rendezvous server turned away, by reason")
                               .Register(registry)),
      edge_bandwidth_(prometheus::BuildGauge()
                          .Name("ringleader_sidecar_edge_bandwidth_bytes_per_second")
                          .Help("Point-to-point bandwidth between one of this sidecar's ranks "
                                "and a peer rank, by direction seen from this sidecar")
                          .Register(registry)),
      preflight_state_(prometheus::BuildGauge()
                           .Name("ringleader_sidecar_preflight_state")
                           .Help("1 for the preflight's current state, 0 for the others")
                           .Register(registry)),
      info_(prometheus::BuildGauge()
                .Name("ringleader_sidecar_info")
                .Help("Always 1; the labels describe this sidecar")
                .Register(registry)),
      transport_info_(prometheus::BuildGauge()
                          .Name("ringleader_sidecar_preflight_transport_info")
                          .Help("Always 1; the transport the preflight's collectives ran over, "
                                "as NCCL's own log names it")
                          .Register(registry)),
      rdma_fallback_(prometheus::BuildGauge()
                         .Name("ringleader_sidecar_rdma_fallback")
                         .Help("1 when the job asked for RDMA and the preflight's NCCL talked "
                               "over sockets")
                         .Register(registry)
                         .Add({})) {
  // Every known series exists from the start, so rate() and absent() see a zero, not a gap.
  for (const ProbeResult result : kProbeResults) {
    probe_runs_.Add({{"collective", CollectiveLabel(kAllReduce)},
                     {"result", Label(ProbeResultName(result))}});
  }
  wrong_elements_.Add({{"collective", CollectiveLabel(kAllReduce)}});
  for (const RendezvousFailure reason : kRendezvousFailures) {
    rendezvous_failures_.Add({{"reason", Label(RendezvousFailureName(reason))}});
  }
  for (const std::string_view reason : kRefusedReasons) {
    refused_connections_.Add({{"reason", Label(reason)}});
  }
  SetPreflightState(PreflightState::kPending);
}

void SidecarMetrics::ObserveProbe(collectives::Collective collective, std::uint64_t bytes,
                                  double algbw_bytes_per_second, double busbw_bytes_per_second,
                                  double seconds_per_call) {
  const prometheus::Labels labels = {{"collective", CollectiveLabel(collective)},
                                     {"size", SizeBucket(bytes)}};
  busbw_.Add(labels).Set(busbw_bytes_per_second);
  algbw_.Add(labels).Set(algbw_bytes_per_second);
  probe_duration_.Add({{"collective", CollectiveLabel(collective)}}, ProbeBuckets())
      .Observe(seconds_per_call);
}

void SidecarMetrics::CountProbeRun(collectives::Collective collective, ProbeResult result) {
  probe_runs_.Add({{"collective", CollectiveLabel(collective)},
                   {"result", Label(ProbeResultName(result))}})
      .Increment();
}

void SidecarMetrics::AddWrongElements(collectives::Collective collective, std::uint64_t count) {
  wrong_elements_.Add({{"collective", CollectiveLabel(collective)}})
      .Increment(static_cast<double>(count));
}

void SidecarMetrics::ObserveRendezvous(double seconds) { rendezvous_duration_.Observe(seconds); }

void SidecarMetrics::CountRendezvousFailure(RendezvousFailure reason) {
  rendezvous_failures_.Add({{"reason", Label(RendezvousFailureName(reason))}}).Increment();
}

void SidecarMetrics::CountRefusedConnection(std::string_view reason) {
  const bool known = std::find(kRefusedReasons.begin(), kRefusedReasons.end(), reason) !=
                     kRefusedReasons.end();
  refused_connections_.Add({{"reason", Label(known ? reason : "other")}}).Increment();
}

bool SidecarMetrics::SetEdgeBandwidth(int local_rank, int peer_rank, Direction direction,
                                      double bytes_per_second) {
  const int own = rank_ * local_ranks_ + local_rank;
  if (local_rank < 0 || local_rank >= local_ranks_ || peer_rank < 0 ||
      peer_rank >= world_size_ * local_ranks_ || peer_rank == own) {
    return false;
  }
  edge_bandwidth_
      .Add({{"local_rank", std::to_string(local_rank)},
            {"peer_rank", std::to_string(peer_rank)},
            {"direction", Label(DirectionName(direction))}})
      .Set(bytes_per_second);
  return true;
}

void SidecarMetrics::SetPreflightState(PreflightState state) {
  const std::lock_guard<std::mutex> lock(mutex_);
  for (const PreflightState each : kPreflightStates) {
    preflight_state_.Add({{"state", Label(PreflightStateName(each))}}).Set(each == state ? 1 : 0);
  }
}

void SidecarMetrics::SetInfo(const SidecarInfo& info) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (info_series_ != nullptr) {
    info_.Remove(info_series_);
  }
  info_series_ = &info_.Add({{"backend", info.backend},
                             {"transport", info.transport},
                             {"nccl_version", info.nccl_version},
                             {"measures", info.measures},
                             {"world_size", std::to_string(world_size_)},
                             {"rank", std::to_string(rank_)},
                             {"job", info.job},
                             {"namespace", info.job_namespace}});
  info_series_->Set(1);
}

void SidecarMetrics::SetPreflightTransport(const std::string& backend, const std::string& transport,
                                           bool rdma_requested, bool rdma_fallback) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (transport_info_series_ != nullptr) {
    transport_info_.Remove(transport_info_series_);
  }
  transport_info_series_ = &transport_info_.Add({{"backend", backend},
                                                 {"transport", transport},
                                                 {"rdma_requested", rdma_requested ? "true" : "false"},
                                                 {"rdma_fallback", rdma_fallback ? "true" : "false"}});
  transport_info_series_->Set(1);
  rdma_fallback_.Set(rdma_fallback ? 1 : 0);
}

TrainerStoreMetrics::TrainerStoreMetrics(prometheus::Registry& registry)
    : clients_(prometheus::BuildGauge()
                   .Name("ringleader_sidecar_trainer_store_clients")
                   .Help("Client connections open to the trainers' store (PyTorch's TCPStore "
                         "protocol on MASTER_PORT)")
                   .Register(registry)
                   .Add({})),
      connections_(prometheus::BuildCounter()
                       .Name("ringleader_sidecar_trainer_store_connections_total")
                       .Help("Connections the trainers' store has accepted")
                       .Register(registry)
                       .Add({})),
      requests_family_(prometheus::BuildCounter()
                           .Name("ringleader_sidecar_trainer_store_requests_total")
                           .Help("Requests to the trainers' store by TCPStore query type")
                           .Register(registry)),
      unknown_queries_(prometheus::BuildCounter()
                           .Name("ringleader_sidecar_trainer_store_unknown_queries_total")
                           .Help("Connections to the trainers' store closed for a query type "
                                 "it does not know, by dialect and type byte")
                           .Register(registry)),
      closed_(prometheus::BuildCounter()
                  .Name("ringleader_sidecar_trainer_store_closed_connections_total")
                  .Help("Connections the trainers' store closed or refused, by reason")
                  .Register(registry)) {
  for (const rendezvous::torch_store::Query query : rendezvous::torch_store::AllQueries()) {
    requests_[static_cast<std::size_t>(query)] =
        &requests_family_.Add({{"query", Label(rendezvous::torch_store::QueryName(query))}});
  }
  for (const std::string_view reason : kTrainerStoreCloseReasons) {
    closed_.Add({{"reason", Label(reason)}});
  }
}

void TrainerStoreMetrics::OnAccepted() {
  clients_.Increment();
  connections_.Increment();
}

void TrainerStoreMetrics::OnClosed() { clients_.Decrement(); }

void TrainerStoreMetrics::OnRequest(rendezvous::torch_store::Query query) {
  const auto index = static_cast<std::size_t>(query);
  if (index < requests_.size()) {
    requests_[index]->Increment();
  }
}

void TrainerStoreMetrics::OnUnknownQuery(rendezvous::torch_store::Dialect dialect,
                                         std::uint8_t type_byte) {
  unknown_queries_
      .Add({{"dialect", Label(rendezvous::torch_store::DialectName(dialect))},
            {"type", std::to_string(type_byte)}})
      .Increment();
}

void TrainerStoreMetrics::OnClosedForCause(std::string_view reason) {
  const bool known = std::find(kTrainerStoreCloseReasons.begin(), kTrainerStoreCloseReasons.end(),
                               reason) != kTrainerStoreCloseReasons.end();
  closed_.Add({{"reason", Label(known ? reason : "other")}}).Increment();
}

}  // namespace ringleader::sidecar
