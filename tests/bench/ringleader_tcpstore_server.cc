// ringleader's TCPStore-protocol server as a program of its own, for tcpstore_rendezvous_bench's
// PyTorch clients to meet in: a StoreServer (the sidecar's native store, unused here) with the
// TorchStoreServer as its loop guest, exactly as rank 0's sidecar runs it. Prints the TCPStore
// port as a decimal line on stdout, serves on every address until stdin closes, then stops.
//   ringleader_tcpstore_server [--max-connections 65536]
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "sidecar/rendezvous/store_server.h"
#include "sidecar/rendezvous/torch_store_server.h"
#include "tests/bench/bench_args.h"

namespace ringleader::bench {
namespace {

int Main(int argc, char** argv) {
  rendezvous::TorchStoreOptions torch_options;
  torch_options.bind_address = "";
  torch_options.port = 0;
  // Every rank holds a connection (two with 1.13's clients); the bench goes to 16,384 ranks.
  torch_options.max_connections = 65'536;
  ParseFlags(argc, argv, [&](const std::string& flag, const std::string& value) {
    if (flag == "--max-connections") {
      torch_options.max_connections = std::stoul(value);
      return true;
    }
    return false;
  });
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);

  rendezvous::ServerOptions options;
  options.bind_address = "127.0.0.1";
  options.token = "unused-by-the-tcpstore-clients";
  options.make_guest = rendezvous::TorchStoreServer::GuestFactory(torch_options);
  rendezvous::StoreServer server(options);
  const auto* guest = dynamic_cast<const rendezvous::TorchStoreServer*>(server.guest());
  if (guest == nullptr) {
    throw std::runtime_error("the store has no TCPStore guest");
  }
  std::printf("%u\n", static_cast<unsigned>(guest->port()));
  std::fflush(stdout);
  char byte = 0;
  while (::read(STDIN_FILENO, &byte, 1) > 0) {
  }
  server.Stop();
  return 0;
}

}  // namespace
}  // namespace ringleader::bench

int main(int argc, char** argv) {
  try {
    return ringleader::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringleader_tcpstore_server: %s\n", e.what());
    return 1;
  }
}
