// The Node's kubelet endpoint: kubelet-streaming (tests/controlplane/kubelet-streaming, built by
// scripts/setup), a Go program on Kubernetes' own streaming server, run as a child of the node
// agent. It serves /portForward/ itself and passes every other request to the agent's LogServer.
#pragma once

#include <filesystem>
#include <memory>

namespace ringleader::testing {
class ChildProcess;
}  // namespace ringleader::testing

namespace ringleader::devcluster::kubelet {

// Where scripts/setup puts kubelet-streaming (beside the control plane's programs).
std::filesystem::path DefaultStreamingProgram();

class StreamingFront {
 public:
  // Writes a certificate for 127.0.0.1 into `dir`, starts `program` there in front of the agent's
  // HTTPS server on 127.0.0.1:backend_port, and returns once it listens (its log: dir/log).
  // Throws std::runtime_error naming the program when it is missing or does not start in 10 s.
  StreamingFront(const std::filesystem::path& program, const std::filesystem::path& dir, int backend_port);
  StreamingFront(const StreamingFront&) = delete;
  StreamingFront& operator=(const StreamingFront&) = delete;
  ~StreamingFront();

  // The kubelet port: the Node's daemonEndpoints.kubeletEndpoint.Port.
  int port() const { return port_; }
  // SIGTERM, then SIGKILL after 5 s. Idempotent.
  void Stop();

 private:
  std::unique_ptr<testing::ChildProcess> process_;
  int port_ = 0;
};

}  // namespace ringleader::devcluster::kubelet
