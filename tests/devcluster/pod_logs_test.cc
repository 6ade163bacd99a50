// pods/log: the options, the container and run the server and kubelet choose, tail and byte
// limit, over log files laid out as devcluster's kubelet writes them.
#include "tests/devcluster/pod_logs.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/devcluster/machinery/status.h"
#include "tests/support/test_environment.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

json Pod() {
  return {{"metadata", {{"name", "job-0"}, {"namespace", "ml"}, {"uid", "u1"}}},
          {"spec",
           {{"nodeName", "node-a"},
            {"initContainers", {{{"name", "sidecar"}}, {{"name", "preflight"}}}},
            {"containers", {{{"name", "trainer"}}}}}},
          {"status",
           {{"initContainerStatuses",
             {{{"name", "sidecar"}, {"state", {{"running", json::object()}}}, {"lastState", json::object()}},
              {{"name", "preflight"}, {"state", {{"terminated", {{"exitCode", 0}}}}}}}},
            {"containerStatuses",
             {{{"name", "trainer"},
               {"state", {{"terminated", {{"exitCode", 1}}}}},
               {"lastState", {{"terminated", {{"exitCode", 2}}}}}}}}}}};
}

std::string Error(const std::function<void()>& call) {
  try {
    call();
  } catch (const ApiError& error) {
    return std::to_string(error.code) + " " + error.message;
  }
  return "none";
}

TEST(PodLogsTest, TheOnlyAppContainerIsTheDefaultAndANamedInitContainerIsValid) {
  EXPECT_EQ(LogContainer(Pod(), ""), "trainer");
  EXPECT_EQ(LogContainer(Pod(), "preflight"), "preflight");
  EXPECT_EQ(Error([] { LogContainer(Pod(), "nope"); }), "400 container nope is not valid for pod job-0");
  json two = Pod();
  two["spec"]["containers"].push_back({{"name", "helper"}});
  EXPECT_EQ(Error([&] { LogContainer(two, ""); }),
            "400 a container name must be specified for pod job-0, choose one of: [sidecar preflight trainer helper]");
}

TEST(PodLogsTest, TheRunFollowsTheContainersStateAsTheKubeletJudgesIt) {
  EXPECT_EQ(LogRun(Pod(), "trainer", false), kubelet::ContainerRun::kLast);
  EXPECT_EQ(LogRun(Pod(), "trainer", true), kubelet::ContainerRun::kBeforeLast);
  EXPECT_EQ(LogRun(Pod(), "sidecar", false), kubelet::ContainerRun::kLast);
  EXPECT_EQ(Error([] { LogRun(Pod(), "sidecar", true); }),
            "400 previous terminated container \"sidecar\" in pod \"job-0\" not found");
  json waiting = Pod();
  waiting["status"]["containerStatuses"][0] = {{"name", "trainer"},
                                               {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}};
  EXPECT_EQ(Error([&] { LogRun(waiting, "trainer", false); }),
            "400 container \"trainer\" in pod \"job-0\" is waiting to start: PodInitializing");
  json unknown = Pod();
  unknown["status"].erase("containerStatuses");
  EXPECT_EQ(Error([&] { LogRun(unknown, "trainer", false); }),
            "400 container \"trainer\" in pod \"job-0\" is not available");
}

TEST(PodLogsTest, TailLinesCountsALastLineWithoutANewlineAndLimitBytesCutsAfter) {
  PodLogOptions options;
  options.tail_lines = 2;
  EXPECT_EQ(TrimLog("a\nb\nc\n", options), "b\nc\n");
  EXPECT_EQ(TrimLog("a\nb\nc", options), "b\nc");
  EXPECT_EQ(TrimLog("c\n", options), "c\n");
  options.tail_lines = 0;
  EXPECT_EQ(TrimLog("a\nb\n", options), "");
  options.tail_lines.reset();
  options.limit_bytes = 3;
  EXPECT_EQ(TrimLog("a\nb\nc\n", options), "a\nb");
}

TEST(PodLogsTest, OptionsAreValidatedAndWhatDevclusterLacksIsRefusedByName) {
  EXPECT_EQ(ParsePodLogOptions({{"container", "trainer"}, {"tailLines", "3"}, {"previous", "true"}}, "job-0").tail_lines, 3);
  EXPECT_EQ(Error([] { ParsePodLogOptions({{"tailLines", "-1"}}, "job-0"); }),
            "422 PodLogOptions \"job-0\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0");
  EXPECT_EQ(Error([] { ParsePodLogOptions({{"limitBytes", "0"}}, "job-0"); }),
            "422 PodLogOptions \"job-0\" is invalid: limitBytes: Invalid value: 0: must be greater than 0");
  EXPECT_NE(Error([] { ParsePodLogOptions({{"tailLines", "x"}}, "job-0"); }).find("400 invalid tailLines"),
            std::string::npos);
  EXPECT_NE(Error([] { ParsePodLogOptions({{"follow", "true"}}, "job-0"); }).find("400 devcluster cannot serve pods/log with follow=true"),
            std::string::npos);
  EXPECT_NE(Error([] { ParsePodLogOptions({{"timestamps", "true"}}, "job-0"); }).find("timestamps=true"),
            std::string::npos);
}

TEST(PodLogsTest, EachRunIsServedApartFromTheFilesTheKubeletWrites) {
  const std::filesystem::path root = ringleader::testing::MakeTempDir("pod-logs-test");
  const std::filesystem::path dir = kubelet::PodDirectory(root, "ml", "job-0", "u1");
  std::filesystem::create_directories(dir / "logs");
  kubelet::NoteContainerRunStart(dir, "trainer");
  std::ofstream(kubelet::ContainerLogPath(dir, "trainer"), std::ios::app) << "run 1 a\nrun 1 b\n";
  kubelet::NoteContainerRunStart(dir, "trainer");
  std::ofstream(kubelet::ContainerLogPath(dir, "trainer"), std::ios::app) << "run 2 a\nrun 2 b\nrun 2 c\n";
  PodLogOptions options;
  EXPECT_EQ(ReadPodLog(Pod(), options, root), "run 2 a\nrun 2 b\nrun 2 c\n");
  options.tail_lines = 1;
  EXPECT_EQ(ReadPodLog(Pod(), options, root), "run 2 c\n");
  options.previous = true;
  EXPECT_EQ(ReadPodLog(Pod(), options, root), "run 1 b\n");
  json unbound = Pod();
  unbound["spec"].erase("nodeName");
  EXPECT_EQ(ReadPodLog(unbound, {}, root), "");
  EXPECT_EQ(Error([] { ReadPodLog(Pod(), {}, ""); }).substr(0, 3), "500");
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace ringleader::devcluster
