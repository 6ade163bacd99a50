// StreamingFront: kubelet-streaming's certificate, arguments and port file.
#include "tests/devcluster/kubelet/streaming_front.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/devcluster/control_plane.h"
#include "tests/devcluster/kubeconfig.h"
#include "tests/devcluster/tls.h"
#include "tests/support/child_process.h"

namespace ringleader::devcluster::kubelet {

std::filesystem::path DefaultStreamingProgram() { return DefaultControlPlaneBinDir() / "kubelet-streaming"; }

StreamingFront::StreamingFront(const std::filesystem::path& program, const std::filesystem::path& dir,
                               int backend_port) {
  if (!std::filesystem::exists(program)) {
    throw std::runtime_error("node agent: " + program.string() + " is missing; scripts/setup builds it");
  }
  std::filesystem::create_directories(dir);
  // A certificate of its own, as the agent's server has: kube-apiserver does not verify kubelets
  // here (no --kubelet-certificate-authority).
  const Certificates certs = GenerateCertificates({"127.0.0.1", "localhost"});
  WritePrivateFile(dir / "tls.crt", certs.server_cert_pem);
  WritePrivateFile(dir / "tls.key", certs.server_key_pem);
  const std::filesystem::path port_file = dir / "port";
  std::filesystem::remove(port_file);
  testing::ChildOptions child;
  child.binary = program;
  child.args = {"--listen=127.0.0.1:0",
                "--port-file=" + port_file.string(),
                "--backend=https://127.0.0.1:" + std::to_string(backend_port),
                "--tls-cert-file=" + (dir / "tls.crt").string(),
                "--tls-private-key-file=" + (dir / "tls.key").string()};
  child.log = dir / "log";
  child.die_with_parent = true;
  process_ = std::make_unique<testing::ChildProcess>(child);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (port_ == 0) {
    if (std::ifstream in(port_file); in >> port_ && port_ > 0) {
      break;
    }
    port_ = 0;
    if (!process_->Running() || std::chrono::steady_clock::now() > deadline) {
      Stop();
      throw std::runtime_error("node agent: " + program.string() + " did not start; its log (" +
                               child.log.string() + "):\n" + testing::ReadLog(child.log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

StreamingFront::~StreamingFront() { Stop(); }

void StreamingFront::Stop() {
  if (!process_) {
    return;
  }
  process_->Signal(SIGTERM);
  if (!process_->WaitFor(std::chrono::seconds(5))) {
    process_->Signal(SIGKILL);
    process_->WaitFor(std::chrono::seconds(5));
  }
  process_.reset();
}

}  // namespace ringleader::devcluster::kubelet
