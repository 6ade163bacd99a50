// The /summary contract: what the sidecar writes the operator reads back, and every bad member
// is refused with its name.
#include "sidecar/contract/summary.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace ringleader::contract {
namespace {

Summary FullSummary() {
  Summary summary;
  summary.backend = "nccl";
  summary.preflight = "Passed";
  summary.last_probe_time = "2026-11-29T18:00:00Z";
  summary.all_reduce_bus_bandwidth = 1.18e10;
  summary.preflight_all_reduce_bus_bandwidth = 1.2e10;
  summary.slowest_rank = 3;
  summary.transport = "NET/IB (mlx5_0:1, GDRDMA)";
  summary.training = TrainingSummary{.collective = "all_reduce",
                                     .size = "64MiB",
                                     .bus_bandwidth = 1.1e11,
                                     .ranks_reporting = 4,
                                     .slowest_rank = 2,
                                     .slowest_rank_bus_bandwidth = 9.5e10};
  summary.stall = StallSummary{.collective = "all_reduce",
                               .bytes = 67108864,
                               .sequence = 18342,
                               .communicator = "0x9f3c5a00000000e1",
                               .missing_ranks = {2, 5},
                               .missing_rank_count = 2,
                               .missing_pods = {1},
                               .waiting_ranks = 6,
                               .waited_seconds = 95,
                               .attempt = 1};
  return summary;
}

TEST(SummaryTest, RoundTripsEveryMember) {
  const Summary summary = FullSummary();
  const std::string text = SummaryToJson(summary).dump();
  std::string error;
  const std::optional<Summary> parsed = SummaryFromJson(text, &error);
  ASSERT_TRUE(parsed.has_value()) << error;
  EXPECT_EQ(*parsed, summary);
}

TEST(SummaryTest, WritesTheDocumentedMemberNames) {
  const nlohmann::json json = SummaryToJson(FullSummary());
  EXPECT_EQ(json, nlohmann::json::parse(R"js({"backend": "nccl", "preflight": "Passed",
      "lastProbeTime": "2026-11-29T18:00:00Z", "allReduceBusBandwidthBytesPerSecond": 1.18e10,
      "preflightAllReduceBusBandwidthBytesPerSecond": 1.2e10, "slowestRank": 3, "transport": "NET/IB (mlx5_0:1, GDRDMA)",
      "training": {"collective": "all_reduce", "size": "64MiB", "busBandwidthBytesPerSecond": 1.1e11,
                   "ranksReporting": 4, "slowestRank": 2,
                   "slowestRankBusBandwidthBytesPerSecond": 9.5e10},
      "stall": {"collective": "all_reduce", "bytes": 67108864, "sequence": 18342,
                "communicator": "0x9f3c5a00000000e1", "missingRanks": [2, 5],
                "missingRankCount": 2, "missingPods": [1], "waitingRanks": 6,
                "waitedSeconds": 95, "attempt": 1}})js"));
}

// The stall member as written in summary.h's comment reads into exactly these values, and the
// one without an op (every waiting rank went past it) leaves collective and bytes unset.
TEST(SummaryTest, ReadsTheDocumentedStallMember) {
  const std::optional<Summary> parsed = SummaryFromJson(R"js({"backend": "nccl", "preflight": "Passed",
      "stall": {"collective": "all_reduce", "bytes": 67108864, "sequence": 18342,
                "communicator": "0x9f3c5a00000000e1", "missingRanks": [2, 5], "missingRankCount": 2,
                "missingPods": [1], "waitingRanks": 6, "waitedSeconds": 95, "attempt": 1}})js");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->stall, FullSummary().stall);
  const std::optional<Summary> no_op = SummaryFromJson(R"js({"backend": "nccl", "preflight": "",
      "stall": {"sequence": 1, "communicator": "0x0000000000000000", "missingRanks": [0],
                "missingRankCount": 40, "missingPods": [0], "waitingRanks": 1, "waitedSeconds": 0,
                "attempt": 0}})js");
  ASSERT_TRUE(no_op.has_value());
  ASSERT_TRUE(no_op->stall.has_value());
  EXPECT_FALSE(no_op->stall->collective.has_value());
  EXPECT_FALSE(no_op->stall->bytes.has_value());
  EXPECT_EQ(no_op->stall->missing_rank_count, 40);
  EXPECT_EQ(CommunicatorHex(0x9f3c5a00000000e1ULL), "0x9f3c5a00000000e1");
  EXPECT_EQ(CommunicatorHex(1), "0x0000000000000001");
}

TEST(SummaryTest, OmitsOptionalMembersThatAreUnset) {
  Summary summary;
  summary.backend = "gloo";
  const nlohmann::json json = SummaryToJson(summary);
  EXPECT_EQ(json, nlohmann::json::parse(R"({"backend": "gloo", "preflight": ""})"));
  const std::optional<Summary> parsed = SummaryFromJson(json.dump());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, summary);
}

TEST(SummaryTest, IgnoresUnknownMembersAndTreatsNullAsAbsent) {
  const std::optional<Summary> parsed = SummaryFromJson(
      R"({"backend": "gloo", "preflight": "Failed", "lastProbeTime": null,
          "slowestRank": null, "futureMember": {"x": [1, 2]}})");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->backend, "gloo");
  EXPECT_EQ(parsed->preflight, "Failed");
  EXPECT_EQ(parsed->last_probe_time, "");
  EXPECT_FALSE(parsed->slowest_rank.has_value());
}

TEST(SummaryTest, AcceptsAFractionalProbeTimeAndAnIntegerBandwidth) {
  const std::optional<Summary> parsed = SummaryFromJson(
      R"({"backend": "nccl", "preflight": "", "lastProbeTime": "2024-02-29T23:59:60.123456Z",
          "allReduceBusBandwidthBytesPerSecond": 0, "slowestRank": 0})");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->all_reduce_bus_bandwidth, 0.0);
  EXPECT_EQ(parsed->slowest_rank, 0);
}

struct BadCase {
  std::string json;
  std::string member;  // the start of the error
};

TEST(SummaryTest, RefusesEachBadMemberNamingIt) {
  const std::vector<BadCase> cases = {
      {R"({"preflight": ""})", "backend: required"},
      {R"({"backend": "mpi", "preflight": ""})", "backend: must be"},
      {R"({"backend": 1, "preflight": ""})", "backend: must be"},
      {R"({"backend": "NCCL", "preflight": ""})", "backend: must be"},
      {R"({"backend": "nccl"})", "preflight: required"},
      {R"({"backend": "nccl", "preflight": "passed"})", "preflight: must be"},
      {R"({"backend": "nccl", "preflight": null})", "preflight: must be"},
      {R"({"backend": "nccl", "preflight": "", "lastProbeTime": "yesterday"})", "lastProbeTime: must be"},
      {R"({"backend": "nccl", "preflight": "", "lastProbeTime": "2026-11-29T18:00:00+01:00"})",
       "lastProbeTime: must be"},
      {R"({"backend": "nccl", "preflight": "", "lastProbeTime": "2026-02-30T18:00:00Z"})",
       "lastProbeTime: must be"},
      {R"({"backend": "nccl", "preflight": "", "lastProbeTime": "2026-11-29T24:00:00Z"})",
       "lastProbeTime: must be"},
      {R"({"backend": "nccl", "preflight": "", "lastProbeTime": "2026-11-29T18:00:00.Z"})",
       "lastProbeTime: must be"},
      {R"({"backend": "nccl", "preflight": "", "lastProbeTime": 1700000000})", "lastProbeTime: must be"},
      {R"({"backend": "nccl", "preflight": "", "lastProbeTime": ""})", "lastProbeTime: must be"},
      {R"({"backend": "nccl", "preflight": "", "allReduceBusBandwidthBytesPerSecond": -1})",
       "allReduceBusBandwidthBytesPerSecond: must be a finite number >= 0"},
      {R"({"backend": "nccl", "preflight": "", "preflightAllReduceBusBandwidthBytesPerSecond": "fast"})",
       "preflightAllReduceBusBandwidthBytesPerSecond: must be a finite number >= 0"},
      {R"({"backend": "nccl", "preflight": "", "allReduceBusBandwidthBytesPerSecond": "11.8 GB/s"})",
       "allReduceBusBandwidthBytesPerSecond: must be"},
      {R"({"backend": "nccl", "preflight": "", "allReduceBusBandwidthBytesPerSecond": true})",
       "allReduceBusBandwidthBytesPerSecond: must be"},
      {R"({"backend": "nccl", "preflight": "", "slowestRank": -1})", "slowestRank: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "slowestRank": 1.5})", "slowestRank: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "slowestRank": "3"})", "slowestRank: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "slowestRank": 4294967296})",
       "slowestRank: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "slowestRank": 18446744073709551615})",
       "slowestRank: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "transport": 3})", "transport: must be a string"},
      {R"({"backend": "nccl", "preflight": "", "transport": ")" + std::string(257, 'x') + R"("})",
       "transport: must be a string of at most 256 bytes"},
      {R"({"backend": "nccl", "preflight": "", "training": []})", "training: must be an object"},
      {R"({"backend": "nccl", "preflight": "", "training": {"size": "1KiB",
          "busBandwidthBytesPerSecond": 1, "ranksReporting": 1}})", "training.collective: must be"},
      {R"({"backend": "nccl", "preflight": "", "training": {"collective": ")" + std::string(33, 'x') +
           R"(", "size": "1KiB", "busBandwidthBytesPerSecond": 1, "ranksReporting": 1}})",
       "training.collective: must be a string of 1 to 32 bytes"},
      {R"({"backend": "nccl", "preflight": "", "training": {"collective": "all_reduce", "size": "",
          "busBandwidthBytesPerSecond": 1, "ranksReporting": 1}})", "training.size: must be"},
      {R"({"backend": "nccl", "preflight": "", "training": {"collective": "all_reduce", "size": "1KiB",
          "busBandwidthBytesPerSecond": -2, "ranksReporting": 1}})",
       "training.busBandwidthBytesPerSecond: must be a finite number >= 0"},
      {R"({"backend": "nccl", "preflight": "", "training": {"collective": "all_reduce", "size": "1KiB",
          "busBandwidthBytesPerSecond": 1, "ranksReporting": 0}})",
       "training.ranksReporting: must be an integer >= 1"},
      {R"({"backend": "nccl", "preflight": "", "training": {"collective": "all_reduce", "size": "1KiB",
          "busBandwidthBytesPerSecond": 1, "ranksReporting": 2, "slowestRank": 1}})",
       "training.slowestRank and training.slowestRankBusBandwidthBytesPerSecond: must come together"},
      {R"({"backend": "nccl", "preflight": "", "training": {"collective": "all_reduce", "size": "1KiB",
          "busBandwidthBytesPerSecond": 1, "ranksReporting": 2, "slowestRank": -1,
          "slowestRankBusBandwidthBytesPerSecond": 1}})", "training.slowestRank: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "training": {"collective": "all_reduce", "size": "1KiB",
          "busBandwidthBytesPerSecond": 1, "ranksReporting": 2, "slowestRank": 1,
          "slowestRankBusBandwidthBytesPerSecond": "fast"}})",
       "training.slowestRankBusBandwidthBytesPerSecond: must be a finite number >= 0"},
      {R"({"backend": "nccl", "preflight": "", "stall": []})", "stall: must be an object"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"collective": "all_reduce", "sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.collective and stall.bytes: must come together"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"collective": "", "bytes": 1, "sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.collective: must be a string of 1 to 32 bytes"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"collective": "all_reduce", "bytes": -1, "sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.bytes: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 0, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.sequence: must be an integer >= 1"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.sequence: must be an integer >= 1, got nothing"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000AB", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.communicator: must be"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0xab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.communicator: must be"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.missingRanks: must be a list of 1 to 32"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [3, 1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.missingRanks: must be a list"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [-1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.missingRanks: must be a list"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1, 2], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.missingRankCount: must be an integer >= the 2 missingRanks"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1, 1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.missingPods: must be a list"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 0, "waitedSeconds": 12, "attempt": 0}})", "stall.waitingRanks: must be an integer >= 1"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 1.5, "attempt": 0}})", "stall.waitedSeconds: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 18446744073709551615, "attempt": 0}})", "stall.waitedSeconds: must be an integer >= 0"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [1], "missingRankCount": 1, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12}})", "stall.attempt: must be an integer >= 0, got nothing"},
      {R"({"backend": "nccl", "preflight": "", "stall": {"sequence": 7, "communicator": "0x00000000000000ab", "missingRanks": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32], "missingRankCount": 33, "missingPods": [1], "waitingRanks": 3, "waitedSeconds": 12, "attempt": 0}})", "stall.missingRanks: must be a list of 1 to 32"},
      {R"(["nccl"])", "summary must be a JSON object"},
      {R"("nccl")", "summary must be a JSON object"},
      {R"({"backend": "nccl", "preflight": "")", "summary is not valid JSON"},
      {R"({"backend": "nccl", "preflight": "", "allReduceBusBandwidthBytesPerSecond": 1e400})",
       "summary is not valid JSON"},
      {"", "summary is not valid JSON"},
  };
  for (const BadCase& bad : cases) {
    std::string error;
    EXPECT_FALSE(SummaryFromJson(bad.json, &error).has_value()) << bad.json;
    EXPECT_EQ(error.rfind(bad.member, 0), 0u) << bad.json << " gave: " << error;
  }
}

TEST(SummaryTest, ErrorQuotesTheBadValueButCutsItShort) {
  std::string error;
  EXPECT_FALSE(SummaryFromJson(R"({"backend": ")" + std::string(5000, 'x') + R"(", "preflight": ""})",
                               &error));
  EXPECT_NE(error.find("got \"xxxx"), std::string::npos) << error;
  EXPECT_LT(error.size(), 200u);
}

TEST(SummaryTest, RefusesInputOver64KiBBeforeParsing) {
  const std::string padding(64 * 1024, ' ');
  std::string error;
  EXPECT_FALSE(SummaryFromJson(R"({"backend": "nccl", "preflight": ""})" + padding, &error));
  EXPECT_NE(error.find("over the limit of 65536"), std::string::npos) << error;

  // Exactly at the limit is still read.
  const std::string object = R"({"backend": "nccl", "preflight": ""})";
  EXPECT_TRUE(SummaryFromJson(object + std::string(64 * 1024 - object.size(), ' ')));
}

// Regression: the error message dumped the bad value whole, recursing once per level of a
// deeply nested array until the stack ran out.
TEST(SummaryTest, DeeplyNestedBadMembersAreNamedNotDumped) {
  const std::string deep = std::string(30000, '[') + std::string(30000, ']');
  std::string error;
  EXPECT_FALSE(SummaryFromJson(deep, &error));
  EXPECT_EQ(error, "summary must be a JSON object, got an array");
  EXPECT_FALSE(SummaryFromJson(R"({"backend": )" + deep + R"(, "preflight": ""})", &error));
  EXPECT_EQ(error, "backend: must be \"gloo\" or \"nccl\", got an array");
  EXPECT_FALSE(SummaryFromJson(R"({"backend": "nccl", "preflight": "", "slowestRank": {"a": )" +
                                   deep + "}}",
                               &error));
  EXPECT_EQ(error, "slowestRank: must be an integer >= 0, got an object");
}

TEST(SummaryTest, WorksWithoutAnErrorString) {
  EXPECT_FALSE(SummaryFromJson("{", nullptr).has_value());
  EXPECT_FALSE(SummaryFromJson(R"({"backend": "x", "preflight": ""})", nullptr).has_value());
}

// Random bytes, random truncations of a good summary and deep nesting: never a crash or a throw.
TEST(SummaryTest, GarbageNeverCrashesOrThrows) {
  std::mt19937 random(20261129);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> length(0, 300);
  for (int i = 0; i < 2000; ++i) {
    std::string text(static_cast<std::size_t>(length(random)), '\0');
    for (char& c : text) {
      c = static_cast<char>(byte(random));
    }
    std::string error;
    EXPECT_NO_THROW(EXPECT_FALSE(SummaryFromJson(text, &error).has_value()));
    EXPECT_FALSE(error.empty());
  }
  const std::string good = SummaryToJson(FullSummary()).dump();
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_NO_THROW(SummaryFromJson(good.substr(0, cut)));
  }
  // Invalid UTF-8 inside a string, and nesting as deep as the size limit allows.
  EXPECT_NO_THROW(EXPECT_FALSE(SummaryFromJson("{\"backend\": \"\xff\xfe\", \"preflight\": \"\"}")));
  EXPECT_NO_THROW(EXPECT_FALSE(SummaryFromJson(std::string(32 * 1024, '[') + std::string(32 * 1024, ']'))));
  EXPECT_NO_THROW(EXPECT_FALSE(SummaryFromJson(std::string(64 * 1024, '['))));
}

}  // namespace
}  // namespace ringleader::contract
