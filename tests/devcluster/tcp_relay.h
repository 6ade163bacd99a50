// A TCP relay: accepts on one address and copies each connection's bytes both ways to a target.
// devcluster's stand-in for what kube-proxy does for the `kubernetes` Service: the API server
// listens on loopback only, and this relay, on this machine's address on the Pod bridge, is where
// Pods reach it (TLS passes through untouched, so they verify the API server itself).
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace ringleader::devcluster {

class TcpRelay {
 public:
  // Listens on listen_ip at a free port and relays each connection to target_ip:target_port.
  // Throws std::runtime_error naming the address when it cannot listen.
  TcpRelay(const std::string& listen_ip, std::string target_ip, int target_port);
  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;
  ~TcpRelay();

  int port() const { return port_; }
  // Closes the listener and every relayed connection. Idempotent.
  void Stop();

 private:
  void Accept(std::stop_token stop);
  void Relay(int client, std::stop_token stop);

  const std::string target_ip_;
  const int target_port_;
  int listener_ = -1;
  int port_ = 0;
  int wake_ = -1;  // an eventfd that ends every poll on Stop
  struct Connection {
    std::atomic<bool> done{false};
    std::jthread thread;
  };
  std::mutex mu_;  // guards connections_
  std::list<Connection> connections_;  // finished ones are joined when the next one comes
  std::jthread acceptor_;
};

}  // namespace ringleader::devcluster
