// ringleader-sidecar: proves and keeps measuring a training job's communication fabric. Reads
// the operator-injected environment (and flags); see SidecarConfigUsage() for both.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/app/sidecar_run.h"
#include "sidecar/service/sidecar_config.h"

namespace {

std::atomic<bool> stop_requested{false};

extern "C" void OnStopSignal(int /*signal*/) { stop_requested.store(true); }

// The last resort for a stop that arrives while the sidecar is blocked where it cannot look at
// the flag (Gloo's or NCCL's own connect, a collective): after a grace period it leaves anyway.
// The rendezvous waits watch the flag (ClientOptions::stop): SIGTERM to exit there went from
// this 10 s to about 0.1 s.
void StartStopWatchdog(std::chrono::seconds grace) {
  std::thread([grace] {
    while (!stop_requested.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::this_thread::sleep_for(grace);
    std::cerr << "ringleader-sidecar: still busy " << grace.count()
              << " s after SIGTERM; exiting\n" << std::flush;
    std::_Exit(ringleader::sidecar::kExitOk);
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ringleader::sidecar;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (HelpRequested(args)) {
    std::cout << "usage: ringleader-sidecar [flags]\n" << SidecarConfigUsage();
    return kExitOk;
  }
  SidecarConfig config;
  try {
    config = ParseSidecarConfig(args, ProcessEnvironment());
  } catch (const SidecarConfigError& error) {
    std::cerr << "ringleader-sidecar: " << error.what() << "\n";
    return kExitUsage;
  }
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  StartStopWatchdog(std::chrono::seconds(10));
  return RunSidecar(config, stop_requested);
}
