// The preflight result file between the two containers of a Pod: what is written is read back
// whole (compared as structs), the documented form is read and written exactly, and a file that is
// not one is refused naming the member.
#include "sidecar/service/preflight_result.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/test_environment.h"

namespace ringleader::sidecar {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Every top-level member but `enabled` differs from its default (UnknownValuesAreLeftOut... reads
// enabled=false), the first row's members all differ from theirs, and the two rows differ in every
// member: a member the writer or the reader drops, or a row read into the wrong place, makes the
// structs differ.
PreflightResult Sample() {
  PreflightResult result;
  result.passed = false;
  result.reason = "all_reduce bus bandwidth 8.12 GB/s at 64 MiB is below the floor 40.00 GB/s; slowest rank 3";
  result.backend = "nccl";
  result.transport = "NET/Socket (eth0)";
  result.rdma_requested = true;
  result.rdma_fallback = "asked for RDMA but NCCL used NET/Socket (eth0)";
  result.ranks = 16;
  result.local_ranks = 8;
  result.rendezvous_seconds = 0.75;
  result.seconds = 12.5;
  result.all_reduce_bus_bandwidth = 8.12e9;
  result.slowest_rank = 3;
  result.devices = "GPU-a,GPU-b";
  collectives::ProbeRow gather;
  gather.collective = collectives::Collective::kAllGather;
  gather.bytes = 1 << 20;
  gather.count = 1 << 16;
  gather.time_us = 85.5;
  gather.algbw_gbps = 12.25;
  gather.busbw_gbps = 23.5;
  gather.wrong = 2;
  gather.slowest_rank = 7;
  collectives::ProbeRow reduce;
  reduce.collective = collectives::Collective::kAllReduce;
  reduce.bytes = 64 << 20;
  reduce.count = 16 << 20;
  reduce.time_us = 15500.25;
  reduce.algbw_gbps = 4.25;
  reduce.busbw_gbps = 8.0;
  reduce.wrong = 0;
  reduce.slowest_rank = 3;
  result.rows = {gather, reduce};
  result.below_floor_row = 1;
  return result;
}

// Sample() as the file holds it, written out by hand: the other container of the Pod may come
// from another build, so the member names and units are a contract, not whatever both functions
// of this build agree on.
constexpr const char* kSampleDocument = R"json({
  "version": 1, "enabled": true, "passed": false,
  "reason": "all_reduce bus bandwidth 8.12 GB/s at 64 MiB is below the floor 40.00 GB/s; slowest rank 3",
  "backend": "nccl", "transport": "NET/Socket (eth0)", "rdmaRequested": true,
  "rdmaFallback": "asked for RDMA but NCCL used NET/Socket (eth0)",
  "ranks": 16, "localRanks": 8, "rendezvousSeconds": 0.75, "seconds": 12.5,
  "allReduceBusBandwidthBytesPerSecond": 8.12e9, "slowestRank": 3, "belowFloorRow": 1,
  "devices": "GPU-a,GPU-b",
  "rows": [
    {"collective": "all_gather", "bytes": 1048576, "count": 65536, "timeUs": 85.5,
     "algbwGbps": 12.25, "busbwGbps": 23.5, "wrong": 2, "slowestRank": 7},
    {"collective": "all_reduce", "bytes": 67108864, "count": 16777216, "timeUs": 15500.25,
     "algbwGbps": 4.25, "busbwGbps": 8.0, "wrong": 0, "slowestRank": 3}
  ]
})json";

// Both sides as JSON, for reading a failed comparison (a member the writer drops is missing from
// both, so the difference is then in a member the dump does not show).
std::string Shown(const PreflightResult& read, const PreflightResult& expected) {
  return "read:     " + PreflightResultToJson(read).dump() + "\nexpected: " + PreflightResultToJson(expected).dump();
}

TEST(PreflightResultTest, WhatIsWrittenIsReadBackWhole) {
  const std::filesystem::path dir = testing::MakeTempDir("preflight-result");
  const std::string path = (dir / "preflight.json").string();
  EXPECT_FALSE(ReadPreflightResult(path).has_value());  // not written yet
  WritePreflightResult(path, Sample());
  const std::optional<PreflightResult> read = ReadPreflightResult(path);
  ASSERT_TRUE(read.has_value());
  EXPECT_TRUE(*read == Sample()) << Shown(*read, Sample());
  std::filesystem::remove_all(dir);
}

TEST(PreflightResultTest, TheDocumentedFormIsReadIntoTheStructAndWrittenFromIt) {
  const json document = json::parse(kSampleDocument);
  const PreflightResult read = PreflightResultFromJson(document, "preflight.json");
  EXPECT_TRUE(read == Sample()) << Shown(read, Sample());
  EXPECT_EQ(PreflightResultToJson(Sample()), document) << PreflightResultToJson(Sample()).dump(2);
}

TEST(PreflightResultTest, UnknownValuesAreLeftOutAndReadAsUnknown) {
  PreflightResult disabled;
  disabled.enabled = false;
  disabled.passed = true;
  const json document = PreflightResultToJson(disabled);
  EXPECT_FALSE(document.contains("reason"));
  EXPECT_FALSE(document.contains("slowestRank"));
  EXPECT_FALSE(document.contains("rdmaFallback"));
  const PreflightResult read = PreflightResultFromJson(document, "preflight.json");
  EXPECT_TRUE(read == disabled) << Shown(read, disabled);
  EXPECT_FALSE(read.enabled);
  EXPECT_FALSE(read.slowest_rank.has_value());
  EXPECT_FALSE(read.rdma_fallback.has_value());
}

std::string ErrorFor(json document) {
  try {
    PreflightResultFromJson(document, "preflight.json");
  } catch (const PreflightResultError& error) {
    return error.what();
  }
  return "accepted";
}

TEST(PreflightResultTest, AFileThatIsNotOneIsRefusedNamingTheMember) {
  const json good = PreflightResultToJson(Sample());
  EXPECT_EQ(ErrorFor(json::array()), "preflight.json: must be an object");
  json bad = good;
  bad["version"] = 2;
  EXPECT_EQ(ErrorFor(bad), "preflight.json.version: this sidecar reads version 1, the file has 2");
  bad = good;
  bad.erase("passed");
  EXPECT_EQ(ErrorFor(bad), "preflight.json.passed: missing");
  bad = good;
  bad["ranks"] = -1;
  EXPECT_THAT(ErrorFor(bad), HasSubstr("preflight.json.ranks: must be an integer in 0-"));
  bad = good;
  bad["rows"][1]["collective"] = "all_to_nowhere";
  EXPECT_EQ(ErrorFor(bad),
            "preflight.json.rows[1].collective: \"all_to_nowhere\" is not a collective this sidecar knows");
  bad = good;
  bad["rows"][0]["busbwGbps"] = "fast";
  EXPECT_EQ(ErrorFor(bad), "preflight.json.rows[0].busbwGbps: must be a finite number >= 0");
  bad = good;
  bad["belowFloorRow"] = 2;
  EXPECT_EQ(ErrorFor(bad), "preflight.json.belowFloorRow: 2 is not a row index");
  bad = good;
  bad["rows"] = json::array();
  for (std::size_t i = 0; i <= kMaxPreflightRows; ++i) {
    bad["rows"].push_back(good["rows"][0]);
  }
  EXPECT_THAT(ErrorFor(bad), HasSubstr("preflight.json.rows: must be an array of at most 512 rows"));
}

TEST(PreflightResultTest, BytesThatAreNotJsonOrTooManyAreRefused) {
  const std::filesystem::path dir = testing::MakeTempDir("preflight-result");
  const std::string path = (dir / "preflight.json").string();
  std::ofstream(path) << "{\"version\": 1, \"passed";
  EXPECT_THROW(ReadPreflightResult(path), PreflightResultError);
  std::ofstream(path) << std::string(kMaxPreflightResultBytes + 1, ' ');
  try {
    ReadPreflightResult(path);
    ADD_FAILURE() << "accepted";
  } catch (const PreflightResultError& error) {
    EXPECT_THAT(error.what(), HasSubstr("larger than 1048576 bytes"));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringleader::sidecar
