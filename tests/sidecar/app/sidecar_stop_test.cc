// SIGTERM during the rendezvous, in both containers an operator-made Pod runs the sidecar in
// (the native sidecar, "sidecar" mode, and the preflight init container, "pod-preflight"): a
// rank whose peer never comes, or that cannot reach rank 0, exits 0 within 2 s of the signal.
// Regression: these waits did not watch the stop, so every Pod deletion and gang restart waited
// for the sidecar's 10 s stop watchdog.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include "sidecar/service/preflight_result.h"
#include "tests/sidecar/app/sidecar_world.h"

namespace ringleader::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// What "promptly" means: far below the 10 s watchdog, and above a stop check (100 ms) plus the
// process's teardown on a loaded machine.
constexpr milliseconds kPromptly = seconds(2);

// The world's rendezvous timeout is 30 s, so only the stop can end these waits within kPromptly.
SidecarWorldOptions PodWorld() { return {.world_size = 2, .mode = "sidecar"}; }

// Sends SIGTERM to `process` and expects it to exit 0 within kPromptly; `logs` for the message.
void ExpectSigtermEndsItPromptly(ChildProcess& process, const std::function<std::string()>& logs) {
  process.Signal(SIGTERM);
  const auto exit = process.WaitFor(kPromptly);
  ASSERT_TRUE(exit.has_value()) << "still running " << kPromptly.count()
                                << " ms after SIGTERM\n" << logs();
  EXPECT_TRUE(exit->exited() && exit->exit_code == 0)
      << "exit code " << exit->exit_code << ", signal " << exit->signal << "\n" << logs();
}

// A preflight container's result that lets its sidecar go on to the monitor's rendezvous.
void WritePassedPreflight(SidecarWorld& world, int rank) {
  std::filesystem::create_directories(world.run_dir(rank));
  sidecar::PreflightResult result;
  result.enabled = false;  // only the rendezvous ran, which passed
  result.passed = true;
  sidecar::WritePreflightResult((world.run_dir(rank) / "preflight.json").string(), result);
}

TEST(SidecarStopTest, PreflightContainerOfRankZeroWaitingForAnAbsentPeerStopsPromptlyThenItsSidecar) {
  SidecarWorld world(PodWorld());
  world.Start(0);  // rank 0's native sidecar serves the store
  world.StartPodPreflight(0);
  const auto logs = [&] { return world.PodPreflightLog(0) + world.AllLogs(); };
  ASSERT_TRUE(world.WaitForPodPreflightLog(0, "waiting for all 2 ranks at the preflight rendezvous",
                                           seconds(10)))
      << logs();
  ExpectSigtermEndsItPromptly(world.pod_preflight(0), logs);
  EXPECT_THAT(world.PodPreflightLog(0), HasSubstr("stopped (")) << logs();
  // A stopped preflight did not finish, so it hands its sidecar no result.
  EXPECT_FALSE(std::filesystem::exists(world.run_dir(0) / "preflight.json"));
  // Then the kubelet stops the native sidecar, as it does once the Pod's other containers left.
  ExpectSigtermEndsItPromptly(world.process(0), logs);
}

TEST(SidecarStopTest, PreflightContainerOfRankOneReachingForAnAbsentRankZeroStopsPromptly) {
  SidecarWorld world(PodWorld());
  world.StartPodPreflight(1);  // no rank 0: nothing serves the store
  const auto logs = [&] { return world.PodPreflightLog(1); };
  ASSERT_TRUE(world.WaitForPodPreflightLog(1, "joining the preflight rendezvous through rank 0's store",
                                           seconds(10)))
      << logs();
  ExpectSigtermEndsItPromptly(world.pod_preflight(1), logs);
  EXPECT_THAT(world.PodPreflightLog(1), HasSubstr("stopped (")) << logs();
}

TEST(SidecarStopTest, SidecarOfRankZeroWaitingForAnAbsentPeerAtTheMonitorRendezvousStopsPromptly) {
  SidecarWorld world(PodWorld());
  WritePassedPreflight(world, 0);
  world.Start(0);
  const auto logs = [&] { return world.AllLogs(); };
  ASSERT_TRUE(world.WaitForLog(0, "waiting for all 2 ranks at the monitor rendezvous", seconds(10)))
      << logs();
  ExpectSigtermEndsItPromptly(world.process(0), logs);
  EXPECT_THAT(world.Log(0), HasSubstr("stopped (")) << logs();
}

TEST(SidecarStopTest, SidecarOfRankOneReachingForAnAbsentRankZeroAtTheMonitorRendezvousStopsPromptly) {
  SidecarWorld world(PodWorld());
  WritePassedPreflight(world, 1);
  world.Start(1);  // no rank 0
  const auto logs = [&] { return world.AllLogs(); };
  ASSERT_TRUE(world.WaitForLog(1, "joining the monitor rendezvous through rank 0's store", seconds(10)))
      << logs();
  ExpectSigtermEndsItPromptly(world.process(1), logs);
  EXPECT_THAT(world.Log(1), HasSubstr("stopped (")) << logs();
}

}  // namespace
}  // namespace ringleader::testing
