// The contract file the trainers read: its JSON, the round trip, and the atomic replace that
// leaves no partial file behind.
#include "sidecar/service/contract_file.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ringleader::sidecar {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

ResolvedContract Example() {
  ResolvedContract contract;
  contract.master_addr = "10.0.3.7";
  contract.master_port = 61000;
  contract.rendezvous_port = 61001;
  contract.metrics_port = 61002;
  contract.spare_port = 61003;
  contract.rank = 2;
  contract.world_size = 32;
  contract.local_world_size = 8;
  contract.node_rank = 2;
  contract.job_name = "llama";
  contract.job_namespace = "team-a";
  contract.backend = "nccl";
  return contract;
}

// A fresh empty directory for one test.
std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("contract-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteRaw(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  out << text;
}

std::string ReadError(const std::string& path) {
  try {
    ReadContractFile(path);
  } catch (const ContractFileError& error) {
    return error.what();
  }
  return "";
}

TEST(ContractFileTest, JsonUsesTheDocumentedMembers) {
  const nlohmann::json json = ContractToJson(Example());
  EXPECT_EQ(json, nlohmann::json::parse(R"({
      "version": 1, "masterAddr": "10.0.3.7", "masterPort": 61000, "rendezvousPort": 61001,
      "metricsPort": 61002, "sparePort": 61003, "rank": 2, "worldSize": 32, "localWorldSize": 8,
      "nodeRank": 2, "jobName": "llama", "jobNamespace": "team-a", "backend": "nccl"})"));
}

TEST(ContractFileTest, RoundTripsThroughTheFile) {
  const std::string path = FreshDir("round-trip") + "/contract.json";
  WriteContractFile(path, Example());
  EXPECT_EQ(ReadContractFile(path), Example());
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);  // the trainers may run as another user
}

TEST(ContractFileTest, ReplacesAnOldFileAndLeavesNoTemporaryBehind) {
  const std::string dir = FreshDir("replace");
  const std::string path = dir + "/contract.json";
  WriteContractFile(path, Example());
  ResolvedContract next = Example();
  next.master_addr = "10.0.9.9";
  next.world_size = 64;
  WriteContractFile(path, next);
  EXPECT_EQ(ReadContractFile(path), next);
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"contract.json"});
}

TEST(ContractFileTest, AFailedWriteLeavesNoFileAndNamesThePath) {
  const std::string dir = FreshDir("missing-dir");
  const std::string path = dir + "/no/such/dir/contract.json";
  try {
    WriteContractFile(path, Example());
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const ContractFileError& error) {
    EXPECT_THAT(error.what(), HasSubstr(path));
    EXPECT_THAT(error.what(), HasSubstr("No such file or directory"));
  }
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(ContractFileTest, AFailedRenameRemovesTheTemporaryAndKeepsWhatWasThere) {
  // The target is a non-empty directory: the temporary is written whole, then rename fails.
  const std::string dir = FreshDir("rename-fails");
  const std::string path = dir + "/contract.json";
  fs::create_directories(path + "/occupied");
  try {
    WriteContractFile(path, Example());
    ADD_FAILURE() << "renamed over a directory";
  } catch (const ContractFileError& error) {
    EXPECT_THAT(error.what(), HasSubstr(path + ": cannot rename into place"));
  }
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"contract.json"});
  EXPECT_TRUE(fs::is_directory(path + "/occupied"));
}

TEST(ContractFileTest, AnUnwritableDirectoryKeepsTheOldFile) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "root writes anywhere";
  }
  const std::string dir = FreshDir("read-only");
  const std::string path = dir + "/contract.json";
  WriteContractFile(path, Example());
  const std::string before = ReadAll(path);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  ResolvedContract next = Example();
  next.rank = 5;
  EXPECT_THROW(WriteContractFile(path, next), ContractFileError);
  fs::permissions(dir, fs::perms::owner_all);
  EXPECT_EQ(ReadAll(path), before);
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"contract.json"});
}

TEST(ContractFileTest, AWriteCutShortRemovesThePartialTemporaryAndKeepsTheOldFile) {
  // A file size limit makes write() fail part way, even for root.
  const std::string dir = FreshDir("cut-short");
  const std::string path = dir + "/contract.json";
  WriteFileAtomically(path, "old");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto saved_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    WriteFileAtomically(path, std::string(1000, 'x'));
  } catch (const ContractFileError& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, saved_handler);
  EXPECT_EQ(error, path + ": cannot write: File too large");
  EXPECT_EQ(ReadAll(path), "old");
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"contract.json"});
}

TEST(ContractFileTest, WriteFileAtomicallyWritesExactBytes) {
  const std::string path = FreshDir("bytes") + "/blob";
  const std::string content("a\0b\nc", 5);
  WriteFileAtomically(path, content);
  EXPECT_EQ(ReadAll(path), content);
  WriteFileAtomically(path, "");
  EXPECT_EQ(ReadAll(path), "");
}

TEST(ContractFileTest, ReadErrorsNameThePathAndMember) {
  const std::string dir = FreshDir("read-errors");
  const std::string path = dir + "/contract.json";
  EXPECT_THAT(ReadError(path), HasSubstr(path + ": cannot read"));

  WriteRaw(path, "{not json");
  EXPECT_EQ(ReadError(path), path + ": not a JSON object");

  nlohmann::json json = ContractToJson(Example());
  json.erase("masterAddr");
  WriteRaw(path, json.dump());
  EXPECT_EQ(ReadError(path), path + ": masterAddr: missing");

  json = ContractToJson(Example());
  json["worldSize"] = 0;
  WriteRaw(path, json.dump());
  EXPECT_EQ(ReadError(path), path + ": worldSize: must be an integer in 1-2147483647");

  json = ContractToJson(Example());
  json["rank"] = 32;
  WriteRaw(path, json.dump());
  EXPECT_EQ(ReadError(path), path + ": rank: must be an integer in 0-31");

  json = ContractToJson(Example());
  json["masterPort"] = "61000";
  WriteRaw(path, json.dump());
  EXPECT_EQ(ReadError(path), path + ": masterPort: must be an integer in 1-65535");

  json = ContractToJson(Example());
  json["version"] = 2;
  WriteRaw(path, json.dump());
  EXPECT_EQ(ReadError(path), path + ": version: must be 1");

  WriteRaw(path, std::string(70 * 1024, ' '));
  EXPECT_EQ(ReadError(path), path + ": larger than 65536 bytes");
}

}  // namespace
}  // namespace ringleader::sidecar
