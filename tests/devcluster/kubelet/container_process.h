// One container of devcluster's kubelet as a real local process: its own process group, the Pod's
// network namespace and, as root, a private mount namespace with the container's mounts.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tests/devcluster/kubelet/container_spec.h"

namespace ringleader::devcluster::kubelet {

enum class Isolation {
  kAuto,  // namespaces and mounts when ContainerIsolationSupported(), else the fallback
  kNone,  // always the fallback: no namespaces, mount paths rewritten to host paths
};

struct ContainerOptions {
  LaunchSpec spec;
  std::string netns;                 // a name under /run/netns; "" = the caller's network namespace
  std::filesystem::path hosts_file;  // bind-mounted on /etc/hosts when set
  std::filesystem::path log;         // stdout and stderr, appended; "" = discarded
  Isolation isolation = Isolation::kAuto;
};

// Root, a private mount namespace and setns work here; `why` (optional) says what is missing.
// Computed once per process.
bool ContainerIsolationSupported(std::string* why);

// Starts in the constructor and kills in the destructor. With isolation the child joins `netns`,
// gets a mount namespace with / made recursively private, binds each mount (parents before
// children; read-only ones remounted so) and hosts_file, then execs with exactly spec.env. A
// missing mount point is created on the host before the fork (inside an enclosing mount's host
// dir when nested) and listed by CreatedMountPoints(): the kubelet removes those once no
// container of the Pod uses them, since removing a directory another container has a mount on
// would detach that mount. Without isolation netns and hosts_file are ignored and the spec goes
// through MapMountPathsToHost.
// When the main process exits (or is stopped) the rest of its process group is killed, as a
// container's processes die with its init; a process that calls setsid() itself escapes.
// Thread-safe.
class ContainerProcess {
 public:
  // Throws std::runtime_error naming the step that failed (opening the netns or log, a mount,
  // chdir, exec ...); a child that failed is reaped first.
  explicit ContainerProcess(const ContainerOptions& options);
  ContainerProcess(const ContainerProcess&) = delete;
  ContainerProcess& operator=(const ContainerProcess&) = delete;
  ~ContainerProcess();

  pid_t pid() const { return pid_; }
  bool Running();
  // The exit status, or 128 + signal when killed (137 for SIGKILL) as Kubernetes reports it;
  // nullopt while running; -1 when something else in this process reaped it first.
  std::optional<int> ExitCode();
  // Waits up to `timeout` for the process to exit; ExitCode() afterwards.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // SIGTERM to the process group, SIGKILL after `grace`; returns once the process is reaped.
  void Terminate(std::chrono::milliseconds grace);
  // The log's last `max_bytes` bytes (terminated.message under FallbackToLogsOnError).
  std::string LogTail(std::size_t max_bytes) const;
  // Mount points this container created on the host, parents first.
  const std::vector<std::filesystem::path>& CreatedMountPoints() const { return created_mount_points_; }
  // Whether this container got namespaces and mounts (false: the fallback).
  bool isolated() const { return isolated_; }

 private:
  // Under mu_: if the process has exited, kills its group's stragglers (its pid, and so the group
  // id, stays reserved until it is reaped) and reaps it.
  bool ReapIfExitedLocked();
  bool SignalGroupIfAlive(int signal);
  // Waits for exit without reaping; false on timeout.
  bool WaitForExit(std::chrono::milliseconds timeout);

  std::filesystem::path log_;
  bool isolated_ = false;
  std::vector<std::filesystem::path> created_mount_points_;
  pid_t pid_ = -1;
  int pidfd_ = -1;  // -1 when pidfd_open is unavailable: waits poll instead
  mutable std::mutex mu_;
  std::optional<int> exit_code_;  // set once reaped
};

}  // namespace ringleader::devcluster::kubelet
