// Join and roll call on a TCPStore, with set, add, check and wait only.
#include "examples/trainer/agent_store_rendezvous.h"

#include <algorithm>
#include <map>
#include <utility>

#include "sidecar/rendezvous/join.h"

namespace ringleader::examples {
namespace {

using rendezvous::Ok;
using rendezvous::Result;

std::string RecordKey(const std::string& prefix, int rank) {
  return prefix + "ranks/" + std::to_string(rank);
}

std::string PresentKey(const std::string& prefix, int rank) {
  return prefix + "present/" + std::to_string(rank);
}

std::string RollCallKey(const std::string& prefix) { return prefix + "roll-call"; }

// "1 s", or "250 ms" below a second.
std::string SettleText(std::chrono::milliseconds settle) {
  return settle.count() % 1000 == 0 ? std::to_string(settle.count() / 1000) + " s"
                                    : std::to_string(settle.count()) + " ms";
}

}  // namespace

Result<Ok> JoinAgentStore(rendezvous::TorchStoreClient& client, const AgentStoreJoin& join) {
  const std::string all_joined = join.key_prefix + "all-joined";
  if (Result<Ok> set = client.Set(RecordKey(join.key_prefix, join.rank), join.record); !set) {
    return set;
  }
  // The counter saves every rank from waiting on world_size keys: one key is waited for.
  Result<std::int64_t> joined = client.Add(join.key_prefix + "joined", 1);
  if (!joined) {
    return Result<Ok>::Failure(joined.error());
  }
  if (joined.value() == join.world_size) {
    if (Result<Ok> set = client.Set(all_joined, "1"); !set) {
      return set;
    }
  }
  Result<rendezvous::TorchWaitOutcome> met = client.Wait({all_joined}, join.timeout);
  if (!met) {
    return Result<Ok>::Failure(met.error());
  }
  if (!met.value().timed_out) {
    return Ok{};
  }
  std::vector<std::string> records;
  for (int r = 0; r < join.world_size; ++r) {
    records.push_back(RecordKey(join.key_prefix, r));
  }
  // The ranks that came have their record by now; the wait is zero, it only names the others.
  Result<rendezvous::TorchWaitOutcome> present = client.Wait(records, std::chrono::milliseconds(0));
  if (!present) {
    return Result<Ok>::Failure(present.error());
  }
  std::vector<std::uint32_t> missing;
  for (int r = 0; r < join.world_size; ++r) {
    const auto& keys = present.value().missing_keys;
    if (std::find(keys.begin(), keys.end(), records[static_cast<std::size_t>(r)]) != keys.end()) {
      missing.push_back(static_cast<std::uint32_t>(r));
    }
  }
  const auto within =
      std::max(std::chrono::ceil<std::chrono::seconds>(join.timeout), std::chrono::seconds(1));
  if (missing.empty()) {
    // Every record is there but all-joined is not: a store that another run's keys confuse.
    return Result<Ok>::Failure(client.store_name() + ": all " + std::to_string(join.world_size) +
                               " ranks wrote their record but " + client.key_prefix() +
                               all_joined + " was not set within " +
                               std::to_string(within.count()) + " s");
  }
  return Result<Ok>::Failure(rendezvous::FormatMissingRanks(
      std::move(missing), static_cast<std::uint32_t>(join.world_size), within));
}

Result<std::unique_ptr<RollCallResponder>> RollCallResponder::Start(
    rendezvous::TorchStoreClientOptions options, std::string key_prefix, int rank) {
  using R = Result<std::unique_ptr<RollCallResponder>>;
  auto responder = std::make_unique<RollCallResponder>(Passkey());
  options.stop = &responder->stop_;
  auto client = rendezvous::TorchStoreClient::Connect(options);
  if (!client) {
    return R::Failure(client.error());
  }
  responder->client_ = std::move(client).value();
  responder->thread_ = std::thread(&RollCallResponder::Answer, responder.get(), std::move(key_prefix), rank);
  return responder;
}

RollCallResponder::~RollCallResponder() {
  stop_ = true;
  if (thread_.joinable()) {
    thread_.join();
  }
}

void RollCallResponder::Answer(std::string key_prefix, int rank) {
  const auto called = client_->Wait({RollCallKey(key_prefix)}, rendezvous::kWaitForever);
  // Stopped, or the store is gone: there is nobody to answer.
  if (called && !called.value().timed_out) {
    (void)client_->Set(PresentKey(key_prefix, rank), "1");
  }
}

RollCall TakeRollCall(rendezvous::TorchStoreClient& client, const std::string& key_prefix, int rank,
                      int world_size, std::chrono::milliseconds settle) {
  RollCall roll_call;
  const auto gone = [&roll_call](std::string error) {
    roll_call.store_gone = true;
    roll_call.store_error = std::move(error);
    return roll_call;
  };
  if (auto marked = client.Set(PresentKey(key_prefix, rank), "1"); !marked) {
    return gone(marked.error());
  }
  if (auto called = client.Set(RollCallKey(key_prefix), "1"); !called) {
    return gone(called.error());
  }
  std::vector<std::string> keys;
  std::map<std::string, std::uint32_t> rank_of;
  for (int r = 0; r < world_size; ++r) {
    keys.push_back(PresentKey(key_prefix, r));
    rank_of[keys.back()] = static_cast<std::uint32_t>(r);
  }
  auto answered = client.Wait(keys, settle);
  if (!answered) {
    return gone(answered.error());
  }
  for (const std::string& key : answered.value().missing_keys) {
    roll_call.absent.push_back(rank_of.at(key));
  }
  std::sort(roll_call.absent.begin(), roll_call.absent.end());
  return roll_call;
}

std::string DescribeRollCall(const RollCall& roll_call, int world_size,
                             std::chrono::milliseconds settle) {
  const std::string world = std::to_string(world_size);
  if (roll_call.store_gone) {
    return "the trainers' store is gone (" + roll_call.store_error + ")";
  }
  if (roll_call.absent.empty()) {
    // No peer died: the error that follows is this rank's own, or a peer is stuck.
    return "no rank is gone (all " + world + " answered the roll call)";
  }
  std::string names;
  for (const auto rank : roll_call.absent) {
    names += (names.empty() ? "" : ", ") + std::to_string(rank);
  }
  const bool one = roll_call.absent.size() == 1;
  return (one ? "rank " : "ranks ") + names + " of " + world + (one ? " is" : " are") +
         " gone (" + (one ? "it" : "they") + " did not answer the roll call within " +
         SettleText(settle) + ")";
}

}  // namespace ringleader::examples
