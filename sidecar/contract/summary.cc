// The /summary JSON: written by the sidecar, checked member by member by the operator.
#include "sidecar/contract/summary.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace ringleader::contract {
namespace {

using nlohmann::json;

// A summary is a handful of short members; anything larger is not one.
constexpr std::size_t kMaxSummaryBytes = 64 * 1024;
constexpr std::size_t kMaxQuotedValue = 64;

// The offending value for an error message, cut short so a bad answer cannot flood the log.
// Arrays and objects are only named: dumping one recurses once per nesting level, and a 64 KiB
// body can nest 32,768 deep.
std::string Quote(const json& value) {
  if (value.is_array()) {
    return "an array";
  }
  if (value.is_object()) {
    return "an object";
  }
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > kMaxQuotedValue) {
    text = text.substr(0, kMaxQuotedValue) + "...";
  }
  return text;
}

bool AllDigits(std::string_view text, std::size_t from, std::size_t count) {
  if (from + count > text.size()) {
    return false;
  }
  for (std::size_t i = from; i < from + count; ++i) {
    if (text[i] < '0' || text[i] > '9') {
      return false;
    }
  }
  return true;
}

int Number(std::string_view text, std::size_t from, std::size_t count) {
  int value = 0;
  for (std::size_t i = from; i < from + count; ++i) {
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

// YYYY-MM-DDTHH:MM:SS[.fraction]Z with a real calendar date: the UTC form of RFC 3339.
bool IsRfc3339Utc(std::string_view text) {
  if (text.size() < 20 || !AllDigits(text, 0, 4) || text[4] != '-' || !AllDigits(text, 5, 2) ||
      text[7] != '-' || !AllDigits(text, 8, 2) || text[10] != 'T' || !AllDigits(text, 11, 2) ||
      text[13] != ':' || !AllDigits(text, 14, 2) || text[16] != ':' || !AllDigits(text, 17, 2)) {
    return false;
  }
  const int year = Number(text, 0, 4);
  const int month = Number(text, 5, 2);
  const int day = Number(text, 8, 2);
  if (month < 1 || month > 12 || day < 1 || Number(text, 11, 2) > 23 || Number(text, 14, 2) > 59 ||
      Number(text, 17, 2) > 60) {
    return false;
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) {
    return false;
  }
  std::size_t pos = 19;
  if (text[pos] == '.') {
    const std::size_t digits_from = ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      ++pos;
    }
    if (pos == digits_from) {
      return false;
    }
  }
  return pos + 1 == text.size() && text[pos] == 'Z';
}

bool Fail(std::string* error, std::string message) {
  if (error != nullptr) {
    *error = std::move(message);
  }
  return false;
}

// Optional members: absent and null both mean "not reported".
const json* FindOptional(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// A finite number >= 0, or nullopt.
std::optional<double> NonNegative(const json& value) {
  const double number = value.is_number() ? value.get<double>() : -1;
  if (!std::isfinite(number) || number < 0) {
    return std::nullopt;
  }
  return number;
}

// An integer in [minimum, INT_MAX], or nullopt.
std::optional<int> IntAtLeast(const json& value, int minimum) {
  std::int64_t number = 0;
  if (value.is_number_unsigned()) {
    if (value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      return std::nullopt;
    }
    number = static_cast<std::int64_t>(value.get<std::uint64_t>());
  } else if (value.is_number_integer()) {
    number = value.get<std::int64_t>();
  } else {
    return std::nullopt;
  }
  if (number < minimum || number > std::numeric_limits<int>::max()) {
    return std::nullopt;
  }
  return static_cast<int>(number);
}

// A non-empty string of at most `limit` bytes, or nullopt.
std::optional<std::string> ShortString(const json& value, std::size_t limit) {
  if (!value.is_string() || value.get_ref<const std::string&>().empty() ||
      value.get_ref<const std::string&>().size() > limit) {
    return std::nullopt;
  }
  return value.get<std::string>();
}

bool ReadTraining(const json& object, TrainingSummary* out, std::string* error) {
  if (!object.is_object()) {
    return Fail(error, "training: must be an object, got " + Quote(object));
  }
  const auto member = [&](const char* key) -> const json* { return FindOptional(object, key); };
  const json* collective = member("collective");
  const auto collective_value = collective ? ShortString(*collective, kMaxTrainingCollectiveBytes) : std::nullopt;
  if (!collective_value) {
    return Fail(error, "training.collective: must be a string of 1 to " +
                           std::to_string(kMaxTrainingCollectiveBytes) + " bytes, got " +
                           (collective ? Quote(*collective) : std::string("nothing")));
  }
  out->collective = *collective_value;
  const json* size = member("size");
  const auto size_value = size ? ShortString(*size, kMaxTrainingSizeBytes) : std::nullopt;
  if (!size_value) {
    return Fail(error, "training.size: must be a string of 1 to " +
                           std::to_string(kMaxTrainingSizeBytes) + " bytes, got " +
                           (size ? Quote(*size) : std::string("nothing")));
  }
  out->size = *size_value;
  const json* busbw = member("busBandwidthBytesPerSecond");
  const auto busbw_value = busbw ? NonNegative(*busbw) : std::nullopt;
  if (!busbw_value) {
    return Fail(error, "training.busBandwidthBytesPerSecond: must be a finite number >= 0, got " +
                           (busbw ? Quote(*busbw) : std::string("nothing")));
  }
  out->bus_bandwidth = *busbw_value;
  const json* reporting = member("ranksReporting");
  const auto reporting_value = reporting ? IntAtLeast(*reporting, 1) : std::nullopt;
  if (!reporting_value) {
    return Fail(error, "training.ranksReporting: must be an integer >= 1, got " +
                           (reporting ? Quote(*reporting) : std::string("nothing")));
  }
  out->ranks_reporting = *reporting_value;
  const json* slowest = member("slowestRank");
  const json* slowest_busbw = member("slowestRankBusBandwidthBytesPerSecond");
  if ((slowest == nullptr) != (slowest_busbw == nullptr)) {
    return Fail(error, "training.slowestRank and training.slowestRankBusBandwidthBytesPerSecond: "
                       "must come together");
  }
  if (slowest != nullptr) {
    const auto rank = IntAtLeast(*slowest, 0);
    if (!rank) {
      return Fail(error, "training.slowestRank: must be an integer >= 0, got " + Quote(*slowest));
    }
    const auto value = NonNegative(*slowest_busbw);
    if (!value) {
      return Fail(error, "training.slowestRankBusBandwidthBytesPerSecond: must be a finite number "
                         ">= 0, got " + Quote(*slowest_busbw));
    }
    out->slowest_rank = rank;
    out->slowest_rank_bus_bandwidth = value;
  }
  return true;
}

// An unsigned integer of at least `minimum` (JSON integers up to 2^64 - 1), or nullopt.
std::optional<std::uint64_t> UnsignedAtLeast(const json& value, std::uint64_t minimum) {
  std::uint64_t number = 0;
  if (value.is_number_unsigned()) {
    number = value.get<std::uint64_t>();
  } else if (value.is_number_integer() && value.get<std::int64_t>() >= 0) {
    number = static_cast<std::uint64_t>(value.get<std::int64_t>());
  } else {
    return std::nullopt;
  }
  return number >= minimum ? std::optional<std::uint64_t>(number) : std::nullopt;
}

bool IsCommunicatorHex(const std::string& text) {
  if (text.size() != 18 || text.compare(0, 2, "0x") != 0) {
    return false;
  }
  for (std::size_t i = 2; i < text.size(); ++i) {
    const char c = text[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

// A list of 1 to kMaxStallRanksListed ranks (integers >= 0), strictly ascending.
std::optional<std::vector<int>> RankList(const json& value) {
  if (!value.is_array() || value.empty() || value.size() > kMaxStallRanksListed) {
    return std::nullopt;
  }
  std::vector<int> ranks;
  for (const json& item : value) {
    const std::optional<int> rank = IntAtLeast(item, 0);
    if (!rank || (!ranks.empty() && *rank <= ranks.back())) {
      return std::nullopt;
    }
    ranks.push_back(*rank);
  }
  return ranks;
}

std::string Got(const json* value) { return value ? Quote(*value) : std::string("nothing"); }

bool ReadStall(const json& object, StallSummary* out, std::string* error) {
  if (!object.is_object()) {
    return Fail(error, "stall: must be an object, got " + Quote(object));
  }
  const auto member = [&](const char* key) -> const json* { return FindOptional(object, key); };
  const json* collective = member("collective");
  const json* bytes = member("bytes");
  if ((collective == nullptr) != (bytes == nullptr)) {
    return Fail(error, "stall.collective and stall.bytes: must come together");
  }
  if (collective != nullptr) {
    out->collective = ShortString(*collective, kMaxTrainingCollectiveBytes);
    if (!out->collective) {
      return Fail(error, "stall.collective: must be a string of 1 to " +
                             std::to_string(kMaxTrainingCollectiveBytes) + " bytes, got " +
                             Quote(*collective));
    }
    out->bytes = UnsignedAtLeast(*bytes, 0);
    if (!out->bytes) {
      return Fail(error, "stall.bytes: must be an integer >= 0, got " + Quote(*bytes));
    }
  }
  const json* sequence = member("sequence");
  const auto sequence_value = sequence ? UnsignedAtLeast(*sequence, 1) : std::nullopt;
  if (!sequence_value) {
    return Fail(error, "stall.sequence: must be an integer >= 1, got " + Got(sequence));
  }
  out->sequence = *sequence_value;
  const json* communicator = member("communicator");
  if (communicator == nullptr || !communicator->is_string() ||
      !IsCommunicatorHex(communicator->get_ref<const std::string&>())) {
    return Fail(error, "stall.communicator: must be \"0x\" and 16 lower-case hex digits, got " +
                           Got(communicator));
  }
  out->communicator = communicator->get<std::string>();
  const std::string list_rule = "must be a list of 1 to " + std::to_string(kMaxStallRanksListed) +
                                " integers >= 0 in ascending order, got ";
  const json* missing = member("missingRanks");
  auto missing_value = missing ? RankList(*missing) : std::nullopt;
  if (!missing_value) {
    return Fail(error, "stall.missingRanks: " + list_rule + Got(missing));
  }
  out->missing_ranks = std::move(*missing_value);
  const json* count = member("missingRankCount");
  const auto count_value = count ? IntAtLeast(*count, static_cast<int>(out->missing_ranks.size()))
                                 : std::nullopt;
  if (!count_value) {
    return Fail(error, "stall.missingRankCount: must be an integer >= the " +
                           std::to_string(out->missing_ranks.size()) + " missingRanks, got " +
                           Got(count));
  }
  out->missing_rank_count = *count_value;
  const json* pods = member("missingPods");
  auto pods_value = pods ? RankList(*pods) : std::nullopt;
  if (!pods_value) {
    return Fail(error, "stall.missingPods: " + list_rule + Got(pods));
  }
  out->missing_pods = std::move(*pods_value);
  const json* waiting = member("waitingRanks");
  const auto waiting_value = waiting ? IntAtLeast(*waiting, 1) : std::nullopt;
  if (!waiting_value) {
    return Fail(error, "stall.waitingRanks: must be an integer >= 1, got " + Got(waiting));
  }
  out->waiting_ranks = *waiting_value;
  const json* waited = member("waitedSeconds");
  const auto waited_value = waited ? UnsignedAtLeast(*waited, 0) : std::nullopt;
  if (!waited_value ||
      *waited_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return Fail(error, "stall.waitedSeconds: must be an integer >= 0, got " + Got(waited));
  }
  out->waited_seconds = static_cast<std::int64_t>(*waited_value);
  const json* attempt = member("attempt");
  const auto attempt_value = attempt ? IntAtLeast(*attempt, 0) : std::nullopt;
  if (!attempt_value) {
    return Fail(error, "stall.attempt: must be an integer >= 0, got " + Got(attempt));
  }
  out->attempt = *attempt_value;
  return true;
}

bool ReadSummary(const json& object, Summary* out, std::string* error) {
  if (!object.is_object()) {
    return Fail(error, "summary must be a JSON object, got " + Quote(object));
  }

  const auto backend = object.find("backend");
  if (backend == object.end()) {
    return Fail(error, "backend: required");
  }
  if (!backend->is_string() || (*backend != "gloo" && *backend != "nccl")) {
    return Fail(error, "backend: must be \"gloo\" or \"nccl\", got " + Quote(*backend));
  }
  out->backend = backend->get<std::string>();

  const auto preflight = object.find("preflight");
  if (preflight == object.end()) {
    return Fail(error, "preflight: required");
  }
  if (!preflight->is_string() ||
      (*preflight != "" && *preflight != "Passed" && *preflight != "Failed")) {
    return Fail(error, "preflight: must be \"\", \"Passed\" or \"Failed\", got " + Quote(*preflight));
  }
  out->preflight = preflight->get<std::string>();

  if (const json* time = FindOptional(object, "lastProbeTime")) {
    if (!time->is_string() || !IsRfc3339Utc(time->get_ref<const std::string&>())) {
      return Fail(error, "lastProbeTime: must be an RFC 3339 UTC time such as "
                         "2026-11-29T18:00:00Z, got " + Quote(*time));
    }
    out->last_probe_time = time->get<std::string>();
  }

  if (const json* bandwidth = FindOptional(object, "allReduceBusBandwidthBytesPerSecond")) {
    out->all_reduce_bus_bandwidth = NonNegative(*bandwidth);
    if (!out->all_reduce_bus_bandwidth) {
      return Fail(error, "allReduceBusBandwidthBytesPerSecond: must be a finite number >= 0, got " +
                             Quote(*bandwidth));
    }
  }

  if (const json* bandwidth = FindOptional(object, "preflightAllReduceBusBandwidthBytesPerSecond")) {
    out->preflight_all_reduce_bus_bandwidth = NonNegative(*bandwidth);
    if (!out->preflight_all_reduce_bus_bandwidth) {
      return Fail(error, "preflightAllReduceBusBandwidthBytesPerSecond: must be a finite number >= 0, got " +
                             Quote(*bandwidth));
    }
  }

  if (const json* rank = FindOptional(object, "slowestRank")) {
    out->slowest_rank = IntAtLeast(*rank, 0);
    if (!out->slowest_rank) {
      return Fail(error, "slowestRank: must be an integer >= 0, got " + Quote(*rank));
    }
  }

  if (const json* transport = FindOptional(object, "transport")) {
    if (!transport->is_string() || transport->get_ref<const std::string&>().size() > kMaxTransportBytes) {
      return Fail(error, "transport: must be a string of at most " +
                             std::to_string(kMaxTransportBytes) + " bytes, got " + Quote(*transport));
    }
    out->transport = transport->get<std::string>();
  }

  if (const json* training = FindOptional(object, "training")) {
    TrainingSummary value;
    if (!ReadTraining(*training, &value, error)) {
      return false;
    }
    out->training = std::move(value);
  }

  if (const json* stall = FindOptional(object, "stall")) {
    StallSummary value;
    if (!ReadStall(*stall, &value, error)) {
      return false;
    }
    out->stall = std::move(value);
  }
  return true;
}

}  // namespace

std::string CommunicatorHex(std::uint64_t comm_hash) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text = "0x";
  for (int shift = 60; shift >= 0; shift -= 4) {
    text += kDigits[(comm_hash >> shift) & 0xf];
  }
  return text;
}

json SummaryToJson(const Summary& summary) {
  json out = {{"backend", summary.backend}, {"preflight", summary.preflight}};
  if (!summary.last_probe_time.empty()) {
    out["lastProbeTime"] = summary.last_probe_time;
  }
  if (summary.all_reduce_bus_bandwidth) {
    out["allReduceBusBandwidthBytesPerSecond"] = *summary.all_reduce_bus_bandwidth;
  }
  if (summary.preflight_all_reduce_bus_bandwidth) {
    out["preflightAllReduceBusBandwidthBytesPerSecond"] = *summary.preflight_all_reduce_bus_bandwidth;
  }
  if (summary.slowest_rank) {
    out["slowestRank"] = *summary.slowest_rank;
  }
  if (!summary.transport.empty()) {
    out["transport"] = summary.transport;
  }
  if (summary.training) {
    const TrainingSummary& training = *summary.training;
    json value = {{"collective", training.collective},
                  {"size", training.size},
                  {"busBandwidthBytesPerSecond", training.bus_bandwidth},
                  {"ranksReporting", training.ranks_reporting}};
    if (training.slowest_rank && training.slowest_rank_bus_bandwidth) {
      value["slowestRank"] = *training.slowest_rank;
      value["slowestRankBusBandwidthBytesPerSecond"] = *training.slowest_rank_bus_bandwidth;
    }
    out["training"] = std::move(value);
  }
  if (summary.stall) {
    const StallSummary& stall = *summary.stall;
    json value = {{"sequence", stall.sequence},
                  {"communicator", stall.communicator},
                  {"missingRanks", stall.missing_ranks},
                  {"missingRankCount", stall.missing_rank_count},
                  {"missingPods", stall.missing_pods},
                  {"waitingRanks", stall.waiting_ranks},
                  {"waitedSeconds", stall.waited_seconds},
                  {"attempt", stall.attempt}};
    if (stall.collective && stall.bytes) {
      value["collective"] = *stall.collective;
      value["bytes"] = *stall.bytes;
    }
    out["stall"] = std::move(value);
  }
  return out;
}

std::optional<Summary> SummaryFromJson(std::string_view text, std::string* error) {
  if (text.size() > kMaxSummaryBytes) {
    Fail(error, "summary is " + std::to_string(text.size()) + " bytes, over the limit of " +
                    std::to_string(kMaxSummaryBytes));
    return std::nullopt;
  }
  try {
    const json object = json::parse(text);
    Summary summary;
    if (!ReadSummary(object, &summary, error)) {
      return std::nullopt;
    }
    return summary;
  } catch (const json::exception& e) {
    Fail(error, std::string("summary is not valid JSON: ") + e.what());
  } catch (const std::exception& e) {
    Fail(error, std::string("summary could not be read: ") + e.what());
  }
  return std::nullopt;
}

}  // namespace ringleader::contract
