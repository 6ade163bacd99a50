// The devcluster binary: serves until SIGTERM or SIGINT, leaving a kubeconfig in --data-dir.
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/devcluster/devcluster.h"

namespace {

int Usage() {
  std::cerr << "usage: devcluster --data-dir DIR [--run-pods --image IMAGE=PROGRAM ... [--network-prefix NAME]]\n"
               "                  [--feature-gates NAME=BOOL,...] [--kueue]\n"
               "  starts the real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)\n"
               "  and writes DIR/kubeconfig; its components' logs and the audit log go under DIR/control-plane\n"
               "  --run-pods  node agents register Nodes and run the Pods scheduled there as local processes;\n"
               "              --image maps a container image (or its repository) to a program\n"
               "  --kueue     also runs Kueue (scripts/build-kueue), managing namespaces labelled kueue-managed=true\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ringleader::devcluster::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--run-pods") {
      options.run_pods = true;
      continue;
    }
    if (arg == "--kueue") {
      options.kueue = true;
      continue;
    }
    if (i + 1 >= argc) {
      return Usage();
    }
    const std::string value = argv[++i];
    try {
      if (arg == "--data-dir") {
        options.data_dir = value;
      } else if (arg == "--image") {
        const auto equals = value.find('=');
        if (equals == std::string::npos || equals == 0 || equals + 1 == value.size()) {
          return Usage();
        }
        options.images[value.substr(0, equals)] = value.substr(equals + 1);
      } else if (arg == "--network-prefix") {
        options.network_prefix = value;
      } else if (arg == "--feature-gates") {
        options.feature_gates.push_back(value);
      } else {
        return Usage();
      }
    } catch (const std::exception&) {
      return Usage();
    }
  }
  if (options.data_dir.empty()) {
    return Usage();
  }

  // Block the signals before any thread starts so that only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<ringleader::devcluster::DevCluster> cluster;
  try {
    cluster = ringleader::devcluster::DevCluster::Start(options);
  } catch (const std::exception& e) {
    std::cerr << "devcluster: " << e.what() << "\n";
    return 1;
  }
  std::cout << "devcluster: serving " << cluster->url() << " (kubeconfig " << cluster->kubeconfig_path()
            << ", audit log " << cluster->audit_log().string() << ")" << std::endl;

  int received = 0;
  sigwait(&signals, &received);
  std::cerr << "devcluster: stopping on signal " << received << "\n";
  cluster->Stop();
  return 0;
}
