// The preflight result file between the two containers of a Pod: what is written is read back
// whole, and a file that is not one is refused naming the member.
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
  collectives::ProbeRow row;
  row.collective = collectives::Collective::kAllGather;
  row.bytes = 1 << 20;
  row.count = 1 << 16;
  row.time_us = 85.5;
  row.algbw_gbps = 12.25;
  row.busbw_gbps = 23.5;
  row.wrong = 0;
  row.slowest_rank = 7;
  result.rows = {row, row};
  result.rows[1].collective = collectives::Collective::kAllReduce;
  result.below_floor_row = 1;
  return result;
}

void ExpectSame(const PreflightResult& a, const PreflightResult& b) {
  EXPECT_EQ(PreflightResultToJson(a), PreflightResultToJson(b));
}

TEST(PreflightResultTest, WhatIsWrittenIsReadBackWhole) {
  const std::filesystem::path dir = testing::MakeTempDir("preflight-result");
  const std::string path = (dir / "preflight.json").string();
  EXPECT_FALSE(ReadPreflightResult(path).has_value());  // not written yet
  WritePreflightResult(path, Sample());
  const std::optional<PreflightResult> read = ReadPreflightResult(path);
  ASSERT_TRUE(read.has_value());
  ExpectSame(*read, Sample());
  EXPECT_EQ(read->rows.at(0).collective, collectives::Collective::kAllGather);
  EXPECT_EQ(read->rows.at(0).slowest_rank, 7);
  EXPECT_EQ(read->below_floor_row, 1u);
  EXPECT_EQ(read->rdma_fallback, Sample().rdma_fallback);
  std::filesystem::remove_all(dir);
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
