// Listener setup and the per-request pipeline.
#include "tests/devcluster/server.h"

#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "tests/devcluster/auth.h"
#include "tests/devcluster/discovery.h"
#include "tests/devcluster/kubeconfig.h"
#include "tests/devcluster/machinery/object_meta.h"
#include "tests/devcluster/token_request.h"

namespace ringleader::devcluster {
namespace {

namespace http = web::http;
using web::http::experimental::listener::http_listener;
using web::http::experimental::listener::http_listener_config;

constexpr std::size_t kMaxWatchBacklog = 64u << 20;  // a client this far behind is treated as gone

// Asks the kernel for a free port on `host` (the listener cannot report the one it bound).
int PickFreePort(const std::string& host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    throw std::runtime_error("devcluster: socket() failed");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    ::close(fd);
    throw std::runtime_error("devcluster: listen host must be an IPv4 address, got " + host);
  }
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("devcluster: cannot bind " + host + ":0");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Streams watch lines into the response body; each Send is flushed as its own chunk.
class StreamSink : public WatchSink {
 public:
  StreamSink(concurrency::streams::producer_consumer_buffer<uint8_t> buffer, pplx::task<void> replied)
      : buffer_(std::move(buffer)), replied_(std::move(replied)) {}

  bool Send(const std::string& line) override {
    if (replied_.is_done() || buffer_.in_avail() > kMaxWatchBacklog) {
      return false;
    }
    buffer_.putn_nocopy(reinterpret_cast<const uint8_t*>(line.data()), line.size()).wait();
    buffer_.sync().wait();
    return !replied_.is_done();
  }

  // Does not wait for the client to read the rest: a stalled client must not hold the thread.
  void Close() override { buffer_.close(std::ios_base::out).wait(); }

 private:
  concurrency::streams::producer_consumer_buffer<uint8_t> buffer_;
  pplx::task<void> replied_;
};

}  // namespace

// The replies the listener is still writing. Stop closes the listener only once they are out:
// cpprestsdk's listener closes its connections from the closing thread, and a reply whose write
// starts on a connection closed under it crashes inside Asio (start_op on a closed socket).
struct PendingReplies : std::enable_shared_from_this<PendingReplies> {
  std::mutex mu;
  std::condition_variable none;
  int count = 0;

  void Track(const pplx::task<void>& sent) {
    {
      std::lock_guard lock(mu);
      ++count;
    }
    sent.then([self = shared_from_this()](pplx::task<void> done) {
      try {
        done.get();
      } catch (const std::exception&) {
        // The client hung up before reading the answer.
      }
      std::lock_guard lock(self->mu);
      if (--self->count == 0) {
        self->none.notify_all();
      }
    });
  }

  // False when some reply is still being written after `limit` (a client that stopped reading).
  bool WaitForNone(std::chrono::seconds limit) {
    std::unique_lock lock(mu);
    return none.wait_for(lock, limit, [this] { return count == 0; });
  }
};

namespace {

void Reply(http::http_request& request, const Response& response, PendingReplies& pending) {
  http::http_response out(static_cast<http::status_code>(response.code));
  for (const auto& [name, value] : response.headers) {
    out.headers().add(name, value);
  }
  out.set_body(response.body, response.content_type);
  out.headers().set_content_type(response.content_type);
  try {
    pending.Track(request.reply(out));
  } catch (const std::exception&) {
    // Already answered (a watch that failed after its headers went out); nothing more to say.
  }
}

bool IsWrite(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

}  // namespace

Server::Server(const Options& options)
    : options_(options),
      certs_(GenerateCertificates({options.listen_host, "127.0.0.1", "localhost"})),
      token_(NewToken()),
      store_(options.watch_history),
      api_(store_, catalog_),
      authenticator_(token_,
                     [this](const std::string& ns, const std::string& name) {
                       try {
                         api_.Get(*catalog_.Find("", "v1", "serviceaccounts"), ns, name);
                         return true;
                       } catch (const ApiError&) {
                         return false;
                       }
                     }),
      audit_(options.audit_log.empty() ? nullptr : std::make_unique<AuditLog>(options.audit_log)),
      resources_(api_, catalog_, std::chrono::minutes(30)),
      watches_(store_, faults_, options.bookmark_interval),
      pending_replies_(std::make_shared<PendingReplies>()) {
  faults_.SetHooksForServer([this] { store_.Wake(); }, [this] { store_.Compact(); });
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    api_.EnsureNamespace(ns);
  }
  const std::string now = FormatTime(std::chrono::system_clock::now());
  store_.Write([&](Store::Txn& txn) {
    for (const NodeConfig& config : options.nodes) {
      nlohmann::json node = NodeObject(config, now);
      node["metadata"]["uid"] = NewUid();
      node["metadata"]["creationTimestamp"] = now;
      txn.Put(StoreKey(*catalog_.Find("", "v1", "nodes")), std::move(node));
    }
  });
  if (options.schedule_pods || options.run_pods) {
    scheduler_ = std::make_unique<SchedulingController>(store_);
  }
  if (options.run_pods) {
    if (options.pods_dir.empty() && options.data_dir.empty()) {
      throw std::runtime_error("running Pods needs a data dir or a pods dir");
    }
    kubelet::KubeletOptions pods;
    pods.root_dir = !options.pods_dir.empty() ? std::filesystem::path(options.pods_dir)
                                              : std::filesystem::path(options.data_dir) / "kubelet";
    for (const auto& [image, program] : options.images) {
      pods.images.programs[image] = program;
    }
    pods.network_prefix = options.network_prefix;
    pods.on_pod_network_for_test = options.on_pod_network_for_test;
    // A stopped Pod's last step goes through the API (finalizers, garbage collection), as a kubelet's.
    pods.delete_pod = [this](const std::string& ns, const std::string& name, const std::string& uid) {
      api_.Delete(*catalog_.Find("", "v1", "pods"), ns, name,
                  {{"gracePeriodSeconds", 0}, {"preconditions", {{"uid", uid}}}}, false);
    };
    resources_.SetKubeletRoot(pods.root_dir);
    kubelet_ = std::make_unique<kubelet::Kubelet>(store_, options.nodes, std::move(pods));
  }

  http_listener_config config;
  const Certificates certs = certs_;
  config.set_ssl_context_callback([certs](boost::asio::ssl::context& ctx) {
    ctx.set_options(boost::asio::ssl::context::default_workarounds | boost::asio::ssl::context::no_sslv2 |
                    boost::asio::ssl::context::no_sslv3 | boost::asio::ssl::context::no_tlsv1 |
                    boost::asio::ssl::context::no_tlsv1_1);
    ctx.use_certificate_chain(boost::asio::buffer(certs.server_cert_pem));
    ctx.use_private_key(boost::asio::buffer(certs.server_key_pem), boost::asio::ssl::context::pem);
  });

  std::string last_error;
  for (int attempt = 0; attempt < 20 && !listener_; ++attempt) {
    const int port = options.port != 0 ? options.port : PickFreePort(options.listen_host);
    auto listener = std::make_unique<http_listener>(
        web::uri("https://" + options.listen_host + ":" + std::to_string(port) + "/"), config);
    listener->support([this](http::http_request request) { Handle(std::move(request)); });
    try {
      listener->open().wait();
      listener_ = std::move(listener);
      address_ = options.listen_host + ":" + std::to_string(port);
      url_ = "https://" + address_;
    } catch (const std::exception& e) {
      last_error = e.what();
      if (options.port != 0) {
        break;
      }
    }
  }
  if (!listener_) {
    throw std::runtime_error("devcluster: cannot listen on " + options.listen_host + ":" +
                             std::to_string(options.port) + ": " + last_error);
  }
  if (!options.data_dir.empty()) {
    try {
      kubeconfig_path_ = WriteClientFiles(options.data_dir, url_, certs_.ca_cert_pem, token_);
    } catch (...) {
      Stop();
      throw;
    }
  }
}

Server::~Server() { Stop(); }

void Server::Stop() {
  {
    std::unique_lock lock(mu_);
    if (stopped_) {
      return;
    }
    stopped_ = true;
  }
  if (scheduler_) {
    scheduler_->Stop();
  }
  if (kubelet_) {
    kubelet_->Stop();
  }
  watches_.StopAll();
  {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [this] { return in_flight_ == 0; });
  }
  // Every handler has replied; let the replies go out before the listener closes their
  // connections. A client that stopped reading holds its reply; after the grace period the
  // close cuts it.
  pending_replies_->WaitForNone(std::chrono::seconds(5));
  if (listener_) {
    try {
      listener_->close().wait();
    } catch (const std::exception&) {
      // Closing a listener that failed half-way; nothing left to release.
    }
  }
}

void Server::Handle(http::http_request request) {
  {
    std::lock_guard lock(mu_);
    if (stopped_) {
      pending_replies_->Track(request.reply(http::status_codes::ServiceUnavailable));
      return;
    }
    ++in_flight_;
  }
  // Called exactly once per request, when its handling is over, so that Stop can wait for it.
  auto done = [this] {
    std::lock_guard lock(mu_);
    if (--in_flight_ == 0) {
      idle_.notify_all();
    }
  };

  const auto& headers = request.headers();
  auto header = [&](const char* name) {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  };
  const std::optional<UserInfo> user = authenticator_.Authenticate(header("Authorization"));
  if (!user) {
    Reply(request, ErrorResponse(Unauthorized()), *pending_replies_);
    done();
    return;
  }
  std::size_t length = 0;
  if (headers.match(http::header_names::content_length, length) && length > options_.max_body_bytes) {
    Response response = ErrorResponse(RequestEntityTooLarge(
        "the request body is " + std::to_string(length) + " bytes, over the limit of " +
        std::to_string(options_.max_body_bytes)));
    response.headers.emplace_back("Connection", "close");
    Reply(request, response, *pending_replies_);
    done();
    return;
  }

  Request parsed;
  try {
    parsed.method = request.method();
    const web::uri uri = request.relative_uri();
    parsed.segments = SplitPath(uri.path());
    parsed.query = ParseQuery(uri.query());
    parsed.accept = header("Accept");
    parsed.content_type = header("Content-Type");
    Authorize(*user, parsed);
  } catch (const ApiError& error) {
    Reply(request, ErrorResponse(error), *pending_replies_);
    done();
    return;
  }

  request.extract_vector().then([this, request, parsed = std::move(parsed), done](
                                    pplx::task<std::vector<unsigned char>> body_task) mutable {
    try {
      const std::vector<unsigned char> body = body_task.get();
      if (body.size() > options_.max_body_bytes) {
        throw RequestEntityTooLarge("the request body is over the limit of " +
                                    std::to_string(options_.max_body_bytes) + " bytes");
      }
      parsed.body.assign(body.begin(), body.end());
      if (std::optional<Response> response = Dispatch(parsed, request)) {
        Reply(request, *response, *pending_replies_);
      }
    } catch (const ApiError& error) {
      Reply(request, ErrorResponse(error), *pending_replies_);
    } catch (const std::exception& e) {
      Reply(request, ErrorResponse(InternalError(e.what())), *pending_replies_);
    }
    done();
  });
}

void Server::Authorize(const UserInfo& user, const Request& request) {
  const RequestAttributes attributes = AttributesOf(request.method, request.segments, request.query);
  const std::string rbac = "rbac.authorization.k8s.io";
  const RbacObjects objects{
      [&](const std::string& kind, const std::string& ns) {
        return api_.List(*catalog_.FindKind(rbac, "v1", kind), ns, {}).items;
      },
      [&](const std::string& kind, const std::string& ns, const std::string& name) -> std::optional<nlohmann::json> {
        try {
          return api_.Get(*catalog_.FindKind(rbac, "v1", kind), ns, name);
        } catch (const ApiError&) {
          return std::nullopt;
        }
      }};
  const Decision decision = devcluster::Authorize(user, attributes, objects);
  if (audit_) {
    audit_->Record(user, attributes, decision);
  }
  if (!decision.allowed) {
    throw ForbiddenError(user, attributes);
  }
}

std::optional<Response> Server::Dispatch(const Request& request, http::http_request& raw) {
  const auto& seg = request.segments;
  if (seg.size() == 2 && seg[0] == "devcluster" && seg[1] == "faults") {
    if (request.method == "POST" || request.method == "PUT") {
      nlohmann::json body;
      try {
        body = request.body.empty() ? nlohmann::json::object() : nlohmann::json::parse(request.body);
      } catch (const nlohmann::json::parse_error& e) {
        throw BadRequest(std::string("malformed faults body: ") + e.what());
      }
      faults_.ApplyJson(body);
    } else if (request.method != "GET") {
      throw MethodNotAllowed(request.method, "devcluster/faults");
    }
    return JsonResponse(200, faults_.ToJson());
  }

  const auto latency = faults_.latency();
  if (latency.count() > 0) {
    std::this_thread::sleep_for(latency);
  }
  if (std::optional<ApiError> injected = faults_.Decide(IsWrite(request.method))) {
    throw *injected;
  }

  if (std::optional<Response> response = ServeTokenRequest(request, api_, catalog_, authenticator_)) {
    return response;
  }
  if (std::optional<Response> response = ServeDiscovery(request, catalog_, address_)) {
    return response;
  }
  return resources_.Serve(request, [&](WatchSpec spec) { StartWatch(raw, std::move(spec)); });
}

void Server::StartWatch(http::http_request& raw, WatchSpec spec) {
  concurrency::streams::producer_consumer_buffer<uint8_t> buffer;
  http::http_response response(http::status_codes::OK);
  response.set_body(concurrency::streams::istream(buffer), "application/json");
  response.headers().set_content_type("application/json");
  response.headers().add("Cache-Control", "no-cache, private");
  pplx::task<void> replied = raw.reply(response);
  pending_replies_->Track(replied);
  watches_.Start(std::move(spec), std::make_unique<StreamSink>(buffer, replied));
}

}  // namespace ringleader::devcluster
