// One sidecar's life: endpoints up, rendezvous (rank 0 also serves the store), the resolved
// contract file, a communicator, then the mode's probes, until done, a failure or a stop. In
// "sidecar" and "run" modes it also serves the trainers' NCCL profiler plugin (copied before the
// endpoints start, snapshots on a Unix socket) and reports their collectives to rank 0.
#pragma once

#include <atomic>

#include "sidecar/service/sidecar_config.h"

namespace ringleader::sidecar {

// Exit codes of ringleader-sidecar.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // rendezvous, preflight, probe or peer failure
inline constexpr int kExitUsage = 2;    // bad configuration

// Runs the sidecar as `config` says and returns its exit code. Every failure is logged to stderr
// with what broke (the rank that never joined, the collective and the peer that vanished, the
// preflight table). `stop_requested` (set by SIGTERM) ends the monitor loop, and a rendezvous
// wait (connecting to rank 0, the barrier) within 100 ms, with kExitOk.
int RunSidecar(const SidecarConfig& config, const std::atomic<bool>& stop_requested);

}  // namespace ringleader::sidecar
