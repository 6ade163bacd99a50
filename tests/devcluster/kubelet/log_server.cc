// LogServer: a cpprestsdk HTTPS listener, the /containerLogs route, and a thread per followed log.
#include "tests/devcluster/kubelet/log_server.h"

// Before cpprestsdk: pplx/threadpool.h uses std::move without including <utility>.
#include <utility>

#include <boost/asio/ssl.hpp>
#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>

#include <atomic>
#include <exception>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sidecar/service/plain_http_listener.h"
#include "tests/devcluster/tls.h"
#include "tests/support/test_environment.h"

namespace ringleader::devcluster::kubelet {
namespace {

namespace http = web::http;
using http::experimental::listener::http_listener;
using http::experimental::listener::http_listener_config;

constexpr int kListenAttempts = 20;
constexpr const char* kPlainText = "text/plain; charset=utf-8";

// "/containerLogs/ns/pod/container" -> {ns, pod, container}; empty when the path is another.
std::vector<std::string> LogPath(const std::string& path) {
  std::vector<std::string> segments = web::uri::split_path(path);
  if (segments.size() != 4 || segments[0] != "containerLogs") {
    return {};
  }
  for (std::string& segment : segments) {
    segment = web::uri::decode(segment);
  }
  return {segments[1], segments[2], segments[3]};
}

// "/devcluster/podAddress/ns/pod" -> {ns, pod}; empty when the path is another.
std::vector<std::string> PodAddressPath(const std::string& path) {
  std::vector<std::string> segments = web::uri::split_path(path);
  if (segments.size() != 4 || segments[0] != "devcluster" || segments[1] != "podAddress") {
    return {};
  }
  return {web::uri::decode(segments[2]), web::uri::decode(segments[3])};
}

}  // namespace

// One followed log: the stream its reply reads and the thread that feeds it.
struct LogServer::Follower {
  std::atomic<bool> done{false};
  std::jthread thread;
};

LogServer::LogServer(LogHandler handler, PodAddressHandler pod_address)
    : handler_(std::move(handler)), pod_address_(std::move(pod_address)) {
  const Certificates certs = GenerateCertificates({"127.0.0.1", "localhost"});
  http_listener_config config;
  config.set_ssl_context_callback([certs](boost::asio::ssl::context& ctx) {
    ctx.set_options(boost::asio::ssl::context::default_workarounds | boost::asio::ssl::context::no_sslv2 |
                    boost::asio::ssl::context::no_sslv3 | boost::asio::ssl::context::no_tlsv1 |
                    boost::asio::ssl::context::no_tlsv1_1);
    ctx.use_certificate_chain(boost::asio::buffer(certs.server_cert_pem));
    ctx.use_private_key(boost::asio::buffer(certs.server_key_pem), boost::asio::ssl::context::pem);
  });
  std::string last_error;
  for (int attempt = 0; attempt < kListenAttempts && !listener_; ++attempt) {
    const int port = ringleader::testing::FreePort();
    auto listener =
        std::make_unique<http_listener>(web::uri("https://127.0.0.1:" + std::to_string(port) + "/"), config);
    listener->support([this](const http::http_request& request) { Handle(request); });
    try {
      listener->open().wait();
      listener_ = std::move(listener);
      port_ = port;
    } catch (const std::exception& e) {
      last_error = e.what();  // another process took the port first
    }
  }
  if (!listener_) {
    throw std::runtime_error("node agent's log server: cannot listen on 127.0.0.1: " + last_error);
  }
}

LogServer::~LogServer() { Stop(); }

void LogServer::Stop() {
  std::vector<std::unique_ptr<Follower>> followers;
  {
    std::lock_guard lock(mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
    followers.swap(followers_);
  }
  for (auto& follower : followers) {
    follower->thread.request_stop();
  }
  followers.clear();  // joins
  try {
    listener_->close().wait();
  } catch (const std::exception&) {
    // Closing is best effort.
  }
}

void LogServer::Handle(const http::http_request& request) {
  if (request.method() != http::methods::GET) {
    plain_http::Reply(request, http::status_codes::MethodNotAllowed, "only GET is served here", kPlainText, true);
    return;
  }
  const std::vector<std::string> address = PodAddressPath(request.relative_uri().path());
  if (!address.empty()) {
    std::optional<PodAddress> pod;
    try {
      pod = pod_address_(address[0], address[1]);
    } catch (const std::exception& e) {
      plain_http::Reply(request, http::status_codes::InternalError, e.what(), kPlainText);
      return;
    }
    if (!pod) {
      plain_http::Reply(request, http::status_codes::NotFound, "pod does not exist", kPlainText);
      return;
    }
    plain_http::Reply(request, http::status_codes::OK, nlohmann::json{{"uid", pod->uid}, {"ip", pod->ip}}.dump(),
                      "application/json");
    return;
  }
  const std::vector<std::string> target = LogPath(request.relative_uri().path());
  if (target.empty()) {
    plain_http::Reply(request, http::status_codes::NotFound, "404 page not found", kPlainText);
    return;
  }
  std::map<std::string, std::string> query;
  for (const auto& [key, value] : web::uri::split_query(request.relative_uri().query())) {
    query[web::uri::decode(key)] = web::uri::decode(value);
  }
  LogReply reply;
  try {
    reply = handler_(target[0], target[1], target[2], query);
  } catch (const std::exception& e) {
    reply = {500, e.what(), nullptr};
  }
  if (reply.code == 200 && reply.more) {
    Follow(request, std::move(reply));
    return;
  }
  plain_http::Reply(request, static_cast<http::status_code>(reply.code), reply.body, kPlainText);
}

void LogServer::Follow(const http::http_request& request, LogReply reply) {
  std::lock_guard lock(mu_);
  if (stopped_) {
    plain_http::Reply(request, http::status_codes::ServiceUnavailable, "the node agent is stopping", kPlainText);
    return;
  }
  // Followers whose stream has ended go first.
  std::erase_if(followers_, [](const std::unique_ptr<Follower>& follower) { return follower->done.load(); });
  concurrency::streams::producer_consumer_buffer<unsigned char> buffer;
  http::http_response response(http::status_codes::OK);
  // No length: the listener sends the body chunked, as it is written.
  response.set_body(concurrency::streams::istream(buffer), kPlainText);
  try {
    request.reply(response).then([](pplx::task<void> sent) {
      try {
        sent.get();
      } catch (const std::exception&) {
        // The client hung up.
      }
    });
  } catch (const std::exception&) {
    return;
  }
  auto follower = std::make_unique<Follower>();
  Follower* self = follower.get();
  follower->thread = std::jthread([buffer, reply = std::move(reply), self](std::stop_token stop) mutable {
    const auto write = [&buffer](const std::string& chunk) {
      if (!chunk.empty()) {
        buffer.putn_nocopy(reinterpret_cast<const unsigned char*>(chunk.data()), chunk.size()).wait();
      }
    };
    try {
      write(reply.body);
      while (!stop.stop_requested()) {
        const std::optional<std::string> chunk = reply.more(stop);
        if (!chunk) {
          break;
        }
        write(*chunk);
      }
    } catch (const std::exception&) {
      // The stream broke; its end below tells the client.
    }
    buffer.close(std::ios_base::out).wait();
    self->done = true;
  });
  followers_.push_back(std::move(follower));
}

}  // namespace ringleader::devcluster::kubelet
