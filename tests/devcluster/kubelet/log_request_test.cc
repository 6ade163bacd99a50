// The kubelet's container log requests: the query as it decodes it, the run it serves judged from
// the Pod's status, tail and byte limit, over log files laid out as the node agent writes them.
#include "tests/devcluster/kubelet/log_request.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "tests/support/test_environment.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;

json Status() {
  return {{"initContainerStatuses",
           {{{"name", "sidecar"}, {"state", {{"running", json::object()}}}, {"lastState", json::object()}},
            {{"name", "preflight"}, {"state", {{"terminated", {{"exitCode", 0}}}}}}}},
          {"containerStatuses",
           {{{"name", "trainer"},
             {"state", {{"terminated", {{"exitCode", 1}}}}},
             {"lastState", {{"terminated", {{"exitCode", 2}}}}}}}}};
}

std::string Error(const std::function<void()>& call) {
  try {
    call();
  } catch (const LogRequestError& error) {
    return std::to_string(error.code()) + " " + error.what();
  }
  return "none";
}

TEST(LogRequestTest, TheRunFollowsTheContainersStateAsTheKubeletJudgesIt) {
  EXPECT_EQ(LogRun(Status(), "job-0", "trainer", false), ContainerRun::kLast);
  EXPECT_EQ(LogRun(Status(), "job-0", "trainer", true), ContainerRun::kBeforeLast);
  EXPECT_EQ(LogRun(Status(), "job-0", "sidecar", false), ContainerRun::kLast);
  EXPECT_EQ(Error([] { LogRun(Status(), "job-0", "sidecar", true); }),
            "400 previous terminated container \"sidecar\" in pod \"job-0\" not found");
  json waiting = Status();
  waiting["containerStatuses"][0] = {{"name", "trainer"}, {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}};
  EXPECT_EQ(Error([&] { LogRun(waiting, "job-0", "trainer", false); }),
            "400 container \"trainer\" in pod \"job-0\" is waiting to start: PodInitializing");
  json restarting = Status();
  restarting["containerStatuses"][0]["state"] = {{"waiting", {{"reason", "CrashLoopBackOff"}}}};
  EXPECT_EQ(LogRun(restarting, "job-0", "trainer", false), ContainerRun::kLast);
  EXPECT_EQ(LogRun(restarting, "job-0", "trainer", true), ContainerRun::kLast);
  json unknown = Status();
  unknown.erase("containerStatuses");
  EXPECT_EQ(Error([&] { LogRun(unknown, "job-0", "trainer", false); }),
            "400 container \"trainer\" in pod \"job-0\" is not available");
}

TEST(LogRequestTest, TailLinesCountsALastLineWithoutANewlineAndLimitBytesCutsAfter) {
  LogRequest request;
  request.tail_lines = 2;
  EXPECT_EQ(TrimLog("a\nb\nc\n", request), "b\nc\n");
  EXPECT_EQ(TrimLog("a\nb\nc", request), "b\nc");
  EXPECT_EQ(TrimLog("c\n", request), "c\n");
  request.tail_lines = 0;
  EXPECT_EQ(TrimLog("a\nb\n", request), "");
  request.tail_lines.reset();
  request.limit_bytes = 3;
  EXPECT_EQ(TrimLog("a\nb\nc\n", request), "a\nb");
}

TEST(LogRequestTest, TheQueryIsDecodedAsTheKubeletDecodesItAndWhatTheStandInLacksIsRefusedByName) {
  const LogRequest request = ParseLogQuery({{"tailLines", "3"}, {"previous", "true"}, {"follow", "1"}});
  EXPECT_EQ(request.tail_lines, 3);
  EXPECT_TRUE(request.previous);
  EXPECT_TRUE(request.follow);
  EXPECT_EQ(ParseLogQuery({{"tail", "5"}}).tail_lines, 5);
  EXPECT_FALSE(ParseLogQuery({{"tail", "all"}}).tail_lines.has_value());
  EXPECT_EQ(Error([] { ParseLogQuery({{"tailLines", "x"}}); }), R"(400 {"message": "Unable to decode query."})");
  EXPECT_EQ(Error([] { ParseLogQuery({{"tailLines", "-1"}}); }), R"(422 {"message": "Invalid request."})");
  EXPECT_EQ(Error([] { ParseLogQuery({{"limitBytes", "0"}}); }), R"(422 {"message": "Invalid request."})");
  EXPECT_NE(Error([] { ParseLogQuery({{"timestamps", "true"}}); }).find("400 devcluster's node agent cannot serve"),
            std::string::npos);
  EXPECT_NE(Error([] { ParseLogQuery({{"sinceSeconds", "10"}}); }).find("sinceSeconds"), std::string::npos);
}

TEST(LogRequestTest, EachRunIsReadApartAndAFollowerReadsOnFromWhereItWas) {
  const std::filesystem::path dir = ringleader::testing::MakeTempDir("log-request-test");
  std::filesystem::create_directories(dir / "logs");
  NoteContainerRunStart(dir, "trainer");
  std::ofstream(ContainerLogPath(dir, "trainer"), std::ios::app) << "run 1 a\nrun 1 b\n";
  NoteContainerRunStart(dir, "trainer");
  std::ofstream(ContainerLogPath(dir, "trainer"), std::ios::app) << "run 2 a\n";
  EXPECT_EQ(ReadContainerRun(dir, "trainer", ContainerRun::kLast), "run 2 a\n");
  EXPECT_EQ(ReadContainerRun(dir, "trainer", ContainerRun::kBeforeLast), "run 1 a\nrun 1 b\n");
  std::uintmax_t offset = LastRunStart(dir, "trainer");
  EXPECT_EQ(ReadContainerLogFrom(dir, "trainer", offset), "run 2 a\n");
  EXPECT_EQ(ReadContainerLogFrom(dir, "trainer", offset), "");
  std::ofstream(ContainerLogPath(dir, "trainer"), std::ios::app) << "run 2 b\n";
  EXPECT_EQ(ReadContainerLogFrom(dir, "trainer", offset), "run 2 b\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
