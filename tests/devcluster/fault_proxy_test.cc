// The fault proxy against a small HTTPS upstream written here: requests and watch streams pass
// through as they are, and each fault (errors, conflicts, latency, cut and compacted watches, a
// dead upstream, garbage from a client) is answered as kube-apiserver would, seen both as raw
// HTTP and through the operator's own client. Waits are on conditions with deadlines.
#include "tests/devcluster/fault_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "tests/devcluster/tls.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using namespace std::string_view_literals;

constexpr auto kDeadline = std::chrono::seconds(10);

// A one-shot event that tests wait on, with a deadline, instead of sleeping.
class Signal {
 public:
  void Notify() {
    std::lock_guard lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool WaitFor(Clock::duration limit = kDeadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return set_; });
  }
  bool IsSet() {
    std::lock_guard lock(mu_);
    return set_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// How many times something happened, waited on with a deadline.
class Counter {
 public:
  void Add() {
    std::lock_guard lock(mu_);
    ++count_;
    cv_.notify_all();
  }
  bool WaitFor(int at_least, Clock::duration limit = kDeadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return count_ >= at_least; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

// An HTTP request or response as read off the wire.
struct Message {
  std::string first_line;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // without its framing
  bool complete = false;                       // the body ended as framed (last chunk, length)

  int code() const { return std::stoi(first_line.substr(9, 3)); }
  std::string Header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  json Json() const { return json::parse(body); }
  // A watch body's events, one per line.
  std::vector<json> Events() const {
    std::vector<json> events;
    std::size_t start = 0;
    for (std::size_t end = body.find('\n'); end != std::string::npos; end = body.find('\n', start)) {
      events.push_back(json::parse(body.substr(start, end - start)));
      start = end + 1;
    }
    return events;
  }
};

struct SslCtxFree {
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
};
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxFree>;

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;
using Pkey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

Bio PemBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
}

SslCtx ServerContext(const Certificates& certs) {
  SslCtx ctx(SSL_CTX_new(TLS_server_method()));
  const Cert cert(PEM_read_bio_X509(PemBio(certs.server_cert_pem).get(), nullptr, nullptr, nullptr),
                  &X509_free);
  const Pkey key(PEM_read_bio_PrivateKey(PemBio(certs.server_key_pem).get(), nullptr, nullptr, nullptr),
                 &EVP_PKEY_free);
  EXPECT_EQ(SSL_CTX_use_certificate(ctx.get(), cert.get()), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx.get(), key.get()), 1);
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  return ctx;
}

SslCtx ClientContext(const Certificates& certs) {
  SslCtx ctx(SSL_CTX_new(TLS_client_method()));
  const Cert ca(PEM_read_bio_X509(PemBio(certs.ca_cert_pem).get(), nullptr, nullptr, nullptr), &X509_free);
  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), ca.get());
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  return ctx;
}

int ConnectTcp(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  const timeval timeout{15, 0};  // a broken test fails instead of hanging
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  return fd;
}

// Blocking TLS over one socket, either side, with HTTP/1.1 message reading.
class TlsSocket {
 public:
  TlsSocket(SSL_CTX* ctx, int fd, bool server) : fd_(fd), ssl_(SSL_new(ctx)) {
    SSL_set_fd(ssl_, fd_);
    if (!server) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), "127.0.0.1");
    }
    ok_ = fd_ >= 0 && (server ? SSL_accept(ssl_) : SSL_connect(ssl_)) == 1;
    ERR_clear_error();
  }
  ~TlsSocket() {
    SSL_free(ssl_);
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  bool ok() const { return ok_; }

  bool Write(std::string_view data) {
    std::size_t written = 0;
    return SSL_write_ex(ssl_, data.data(), data.size(), &written) == 1;
  }

  // Waits for the peer to close: true at the end of the stream, false on a timeout.
  bool WaitForEof() {
    while (Fill()) {
    }
    return eof_;
  }

  // Ends blocked reads from another thread.
  void ShutDown() { ::shutdown(fd_, SHUT_RDWR); }

  std::optional<std::string> ReadUntil(std::string_view delimiter) {
    for (;;) {
      if (const std::size_t at = buffer_.find(delimiter); at != std::string::npos) {
        std::string out = buffer_.substr(0, at);
        buffer_.erase(0, at + delimiter.size());
        return out;
      }
      if (!Fill()) {
        return std::nullopt;
      }
    }
  }

  // A message whose body is framed by Content-Length or chunks (without either: a request has
  // none, a response runs to the close). `on_piece` sees each piece of the body as it arrives.
  std::optional<Message> ReadMessage(bool response,
                                     const std::function<void(std::string_view)>& on_piece = {}) {
    std::optional<std::string> head = ReadUntil("\r\n\r\n");
    if (!head) {
      return std::nullopt;
    }
    Message message;
    std::size_t start = 0;
    for (std::size_t end = head->find("\r\n"); start <= head->size(); end = head->find("\r\n", start)) {
      const std::size_t length = end == std::string::npos ? std::string::npos : end - start;
      const std::string line = head->substr(start, length);
      start = end == std::string::npos ? head->size() + 1 : end + 2;
      if (message.first_line.empty()) {
        message.first_line = line;
        continue;
      }
      const std::size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      message.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    auto take = [&](std::string piece) {
      if (on_piece) {
        on_piece(piece);
      }
      message.body += piece;
    };
    if (message.Header("transfer-encoding") == "chunked") {
      for (;;) {
        std::optional<std::string> size_line = ReadUntil("\r\n");
        if (!size_line) {
          return message;
        }
        const std::size_t size = std::stoul(*size_line, nullptr, 16);
        if (size == 0) {
          message.complete = ReadUntil("\r\n").has_value();
          return message;
        }
        while (buffer_.size() < size + 2) {
          if (!Fill()) {
            return message;
          }
        }
        take(buffer_.substr(0, size));
        buffer_.erase(0, size + 2);
      }
    }
    if (!message.Header("content-length").empty()) {
      const std::size_t length = std::stoul(message.Header("content-length"));
      while (buffer_.size() < length) {
        if (!Fill()) {
          return message;
        }
      }
      take(buffer_.substr(0, length));
      buffer_.erase(0, length);
      message.complete = true;
      return message;
    }
    if (response) {
      while (Fill()) {
      }
      take(std::exchange(buffer_, ""));
    }
    message.complete = !response;
    return message;
  }

 private:
  bool Fill() {
    char chunk[16384];
    std::size_t n = 0;
    if (SSL_read_ex(ssl_, chunk, sizeof(chunk), &n) == 1) {
      buffer_.append(chunk, n);
      return true;
    }
    const int error = SSL_get_error(ssl_, 0);
    const bool timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
    eof_ = error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && !timed_out);
    ERR_clear_error();
    return false;
  }

  int fd_;
  SSL* ssl_;
  bool ok_ = false;
  bool eof_ = false;
  std::string buffer_;
};

std::string JsonResponse(int code, const json& body, const std::string& extra_headers = "") {
  const std::string text = body.dump();
  return "HTTP/1.1 " + std::to_string(code) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(text.size()) + "\r\n" + extra_headers + "\r\n" + text;
}

constexpr std::string_view kWatchHead =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

std::string Chunk(std::string_view data) {
  char size[20];
  const auto end = std::to_chars(size, size + sizeof(size), data.size(), 16).ptr;
  return std::string(size, end) + "\r\n" + std::string(data) + "\r\n";
}

json ConfigMapJson(const std::string& name, int rv) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", std::to_string(rv)}}}};
}

// A watch event line: the ConfigMap `name` ADDED at `rv`.
std::string Event(const std::string& name, int rv) {
  return json{{"type", "ADDED"}, {"object", ConfigMapJson(name, rv)}}.dump() + "\n";
}

// A stand-in for kube-apiserver: HTTPS on a free port, one request per connection, answered by
// the test's handler (which writes the raw response and may keep the connection open).
class FakeUpstream {
 public:
  using Handler = std::function<void(const Message& request, TlsSocket& connection)>;

  FakeUpstream(SSL_CTX* ctx, Handler handler) : ctx_(ctx), handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(listen_fd_, 64), 0);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    url_ = "https://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    acceptor_ = std::thread([this] { Accept(); });
  }

  ~FakeUpstream() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    ::close(listen_fd_);
    {
      std::lock_guard lock(mu_);
      for (const auto& socket : sockets_) {
        socket->ShutDown();
      }
    }
    for (std::thread& thread : threads_) {
      thread.join();
    }
  }

  const std::string& url() const { return url_; }

  std::vector<Message> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void Accept() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (stopping_) {
          return;
        }
        continue;
      }
      const timeval timeout{15, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
      auto socket = std::make_shared<TlsSocket>(ctx_, fd, true);
      std::lock_guard lock(mu_);
      sockets_.push_back(socket);
      threads_.emplace_back([this, socket] {
        if (!socket->ok()) {
          return;
        }
        std::optional<Message> request = socket->ReadMessage(false);
        if (!request) {
          return;
        }
        {
          std::lock_guard requests_lock(mu_);
          requests_.push_back(*request);
        }
        handler_(*request, *socket);
      });
    }
  }

  SSL_CTX* ctx_;
  Handler handler_;
  int listen_fd_ = -1;
  std::string url_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::shared_ptr<TlsSocket>> sockets_;
  std::list<std::thread> threads_;
  std::vector<Message> requests_;
};

class FaultProxyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ::signal(SIGPIPE, SIG_IGN);  // the garbage test writes to connections the proxy closes
    certs_.emplace(GenerateCertificates({"127.0.0.1"}));
  }

  void SetUp() override {
    server_ctx_ = ServerContext(*certs_);
    client_ctx_ = ClientContext(*certs_);
  }

  void TearDown() override {
    proxy_.reset();  // first: its upstream connections close, which ends the handlers' waits
    upstream_.reset();
  }

  void Start(FakeUpstream::Handler handler) {
    upstream_ = std::make_unique<FakeUpstream>(server_ctx_.get(), std::move(handler));
    StartProxy(upstream_->url());
  }

  void StartProxy(const std::string& upstream_url, const std::string& upstream_ca_pem = "") {
    FaultProxyOptions options;
    options.upstream_url = upstream_url;
    options.upstream_ca_pem = upstream_ca_pem.empty() ? certs_->ca_cert_pem : upstream_ca_pem;
    options.server_cert_pem = certs_->server_cert_pem;
    options.server_key_pem = certs_->server_key_pem;
    proxy_ = FaultProxy::Start(options);
  }

  std::unique_ptr<TlsSocket> Connect() {
    auto socket = std::make_unique<TlsSocket>(client_ctx_.get(), ConnectTcp(proxy_->port()), false);
    EXPECT_TRUE(socket->ok());
    return socket;
  }

  // One request on a new connection; the response as read (nullopt when none came).
  std::optional<Message> Call(const std::string& method, const std::string& target,
                              const std::string& body = "") {
    std::unique_ptr<TlsSocket> socket = Connect();
    std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (!body.empty() || method == "POST" || method == "PUT") {
      request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    }
    socket->Write(request + "\r\n" + body);
    return socket->ReadMessage(true);
  }

  std::unique_ptr<kube::Client> KubeClient() {
    kube::Config config;
    config.server = proxy_->url();
    config.ca_pem = certs_->ca_cert_pem;
    config.token = kube::MakeStaticTokenSource("secret-token");
    kube::ClientOptions options;
    options.qps = 0;
    options.backoff.max_attempts = 1;  // the faults themselves are under test, not the retries
    return kube::MakeClient(config, options);
  }

  static inline std::optional<Certificates> certs_;
  SslCtx server_ctx_;
  SslCtx client_ctx_;
  std::unique_ptr<FakeUpstream> upstream_;
  std::unique_ptr<FaultProxy> proxy_;
};

// Answers every request with the ConfigMap "c" at resourceVersion 7.
void ServeConfigMap(const Message&, TlsSocket& connection) {
  connection.Write(JsonResponse(200, ConfigMapJson("c", 7)));
}

TEST_F(FaultProxyTest, ForwardsRequestsVerbatimAndKeepsTheClientConnection) {
  Start([](const Message& request, TlsSocket& connection) {
    connection.Write(JsonResponse(201, {{"echo", request.body}}, "X-Upstream: seen\r\n"));
  });
  std::unique_ptr<TlsSocket> client = Connect();
  const std::string target = "/api/v1/namespaces/default/configmaps?labelSelector=a%3Db&limit=5";
  client->Write("GET " + target +
                " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer secret-token\r\nX-Custom: one\r\n"
                "Content-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"hello\":\"x\"}");
  std::optional<Message> first = client->ReadMessage(true);
  ASSERT_TRUE(first && first->complete);
  EXPECT_EQ(first->code(), 201);
  EXPECT_EQ(first->Header("x-upstream"), "seen");
  EXPECT_EQ(first->Json()["echo"], "{\"hello\":\"x\"}");

  // A chunked body on the same connection reaches the upstream whole.
  client->Write("POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  std::optional<Message> second = client->ReadMessage(true);
  ASSERT_TRUE(second && second->complete);
  EXPECT_EQ(second->Json()["echo"], "hello world");

  const std::vector<Message> seen = upstream_->requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first_line, "GET " + target + " HTTP/1.1");
  EXPECT_EQ(seen[0].Header("authorization"), "Bearer secret-token");
  EXPECT_EQ(seen[0].Header("x-custom"), "one");
  EXPECT_EQ(seen[0].Header("content-type"), "application/json");
  EXPECT_EQ(seen[0].body, "{\"hello\":\"x\"}");
  EXPECT_EQ(seen[1].Header("content-length"), "11");
  EXPECT_EQ(seen[1].Header("transfer-encoding"), "");
}

TEST_F(FaultProxyTest, StreamsEachWatchEventBeforeTheUpstreamFinishes) {
  Signal first_delivered;
  std::atomic<bool> upstream_waited{false};
  Start([&](const Message&, TlsSocket& connection) {
    connection.Write(std::string(kWatchHead) + Chunk(Event("a", 11)));
    // The second event only once the client holds the first: a buffering proxy fails here.
    upstream_waited = first_delivered.WaitFor();
    connection.Write(Chunk(Event("b", 12)) + "0\r\n\r\n");
  });
  std::unique_ptr<kube::Client> client = KubeClient();
  std::vector<std::string> names;
  const kube::WatchEnd end =
      client->Watch(kube::ConfigMaps(), "default", {}, [&](const kube::WatchEvent& event) {
        names.push_back(event.object["metadata"]["name"]);
        first_delivered.Notify();
        return true;
      });
  EXPECT_EQ(end, kube::WatchEnd::kClosed);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(upstream_waited) << "the first event reached the client only after the upstream finished";
}

TEST_F(FaultProxyTest, InjectedErrorsAreStatusBodiesAndNeverForwarded) {
  Start(ServeConfigMap);
  proxy_->faults().SetErrorRate(1.0, 500);
  std::optional<Message> failed = Call("GET", "/api/v1/namespaces/default/configmaps/c");
  ASSERT_TRUE(failed && failed->complete);
  EXPECT_EQ(failed->code(), 500);
  const json status = failed->Json();
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["apiVersion"], "v1");
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["reason"], "InternalError");
  EXPECT_EQ(status["code"], 500);
  EXPECT_EQ(status["message"], "Internal error occurred: devcluster fault injection");

  proxy_->faults().SetErrorRate(1.0, 429);
  std::optional<Message> throttled = Call("GET", "/api/v1/namespaces/default/configmaps/c");
  ASSERT_TRUE(throttled);
  EXPECT_EQ(throttled->code(), 429);
  EXPECT_EQ(throttled->Header("retry-after"), "1");
  EXPECT_EQ(throttled->Json()["reason"], "TooManyRequests");
  EXPECT_EQ(throttled->Json()["details"]["retryAfterSeconds"], 1);
  std::unique_ptr<kube::Client> client = KubeClient();
  try {
    client->Get(kube::ConfigMaps(), "default", "c");
    ADD_FAILURE() << "a 100% 429 rate let a GET through";
  } catch (const kube::ApiError& e) {
    EXPECT_TRUE(kube::IsTooManyRequests(e)) << e.what();
  }
  EXPECT_TRUE(upstream_->requests().empty());

  proxy_->faults().Reset();
  EXPECT_EQ(client->Get(kube::ConfigMaps(), "default", "c")["metadata"]["name"], "c");
  EXPECT_EQ(upstream_->requests().size(), 1u);
}

TEST_F(FaultProxyTest, ConflictNextWritesAnswersWritesInTheServersWords) {
  Start(ServeConfigMap);
  proxy_->faults().ConflictNextWrites(2);
  std::unique_ptr<kube::Client> client = KubeClient();
  const json cm = client->Get(kube::ConfigMaps(), "default", "c");  // reads are not counted
  try {
    client->Update(kube::ConfigMaps(), "default", cm);
    ADD_FAILURE() << "the forced conflict was not reported";
  } catch (const kube::ApiError& e) {
    EXPECT_TRUE(kube::IsConflict(e)) << e.what();
    EXPECT_EQ(e.message(),
              "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply "
              "your changes to the latest version and try again");
  }
  std::optional<Message> created =
      Call("POST", "/apis/ringleader.dev/v1alpha1/namespaces/default/trainingjobs",
           json{{"metadata", {{"name", "job"}}}}.dump());
  ASSERT_TRUE(created);
  EXPECT_EQ(created->code(), 409);
  EXPECT_EQ(created->Json()["reason"], "Conflict");
  EXPECT_EQ(created->Json()["details"],
            (json{{"name", "job"}, {"group", "ringleader.dev"}, {"kind", "trainingjobs"}}));
  EXPECT_EQ(created->Json()["message"],
            "Operation cannot be fulfilled on trainingjobs.ringleader.dev \"job\": the object has been "
            "modified; please apply your changes to the latest version and try again");
  EXPECT_EQ(client->Update(kube::ConfigMaps(), "default", cm)["metadata"]["name"], "c");
  EXPECT_EQ(upstream_->requests().size(), 2u);  // the GET and the third write
}

TEST_F(FaultProxyTest, LatencyDelaysEachRequest) {
  Start(ServeConfigMap);
  proxy_->faults().SetLatency(milliseconds(300));
  const auto started = Clock::now();
  std::optional<Message> reply = Call("GET", "/api/v1/namespaces/default/configmaps/c");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->code(), 200);
  EXPECT_GE(Clock::now() - started, milliseconds(300));
}

TEST_F(FaultProxyTest, CutWatchesEveryEndsEachWatchCleanlyAfterThatManyEvents) {
  Start([](const Message&, TlsSocket& connection) {
    // Two events in one chunk, then three: the cut falls inside the second chunk. An event
    // split over two chunks counts once, and a bookmark not at all.
    const std::string third = Event("e3", 3);
    const std::string bookmark = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2"}}})" "\n";
    connection.Write(std::string(kWatchHead) + Chunk(Event("e1", 1) + bookmark + Event("e2", 2)) +
                     Chunk(third.substr(0, 10)) + Chunk(third.substr(10) + Event("e4", 4) + Event("e5", 5)) +
                     "0\r\n\r\n");
    connection.WaitForEof();
  });
  proxy_->faults().CutWatchesEvery(3);
  std::optional<Message> cut = Call("GET", "/api/v1/namespaces/default/configmaps?watch=true");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->code(), 200);
  EXPECT_TRUE(cut->complete) << "the watch must end with the last chunk, not a broken connection";
  std::vector<json> events = cut->Events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1]["type"], "BOOKMARK");
  EXPECT_EQ(events[3]["object"]["metadata"]["name"], "e3");

  std::unique_ptr<kube::Client> client = KubeClient();
  std::vector<std::string> names;
  const auto collect = [&](const kube::WatchEvent& event) {
    if (event.type != kube::WatchEventType::kBookmark) {
      names.push_back(event.object["metadata"]["name"]);
    }
    return true;
  };
  EXPECT_EQ(client->Watch(kube::ConfigMaps(), "default", {}, collect), kube::WatchEnd::kClosed);
  EXPECT_EQ(names, (std::vector<std::string>{"e1", "e2", "e3"}));

  proxy_->faults().CutWatchesEvery(0);
  std::optional<Message> whole = Call("GET", "/api/v1/namespaces/default/configmaps?watch=1");
  ASSERT_TRUE(whole && whole->complete);
  EXPECT_EQ(whole->Events().size(), 6u);
}

TEST_F(FaultProxyTest, CutWatchesEndsTheOpenWatchesNow) {
  Counter upstream_closed;
  Start([&](const Message&, TlsSocket& connection) {
    connection.Write(std::string(kWatchHead) + Chunk(Event("a", 1)));
    if (connection.WaitForEof()) {  // held open until the proxy lets go
      upstream_closed.Add();
    }
  });
  std::unique_ptr<kube::Client> client = KubeClient();
  auto watch_once = [&](Signal& opened, Signal& ended) {
    return std::thread([&] {
      client->Watch(kube::ConfigMaps(), "default", {}, [&](const kube::WatchEvent&) {
        opened.Notify();
        return true;
      });
      ended.Notify();
    });
  };
  Signal opened, ended;
  std::thread watcher = watch_once(opened, ended);
  ASSERT_TRUE(opened.WaitFor());
  proxy_->faults().CutWatches();
  EXPECT_TRUE(ended.WaitFor()) << "the watch outlived CutWatches()";
  watcher.join();
  EXPECT_TRUE(upstream_closed.WaitFor(1)) << "the proxy kept the cut watch's upstream open";

  // A watch started after the cut is not ended by it.
  Signal opened_again, ended_again;
  std::thread second = watch_once(opened_again, ended_again);
  ASSERT_TRUE(opened_again.WaitFor());
  EXPECT_FALSE(ended_again.IsSet());
  proxy_->faults().CutWatches();
  EXPECT_TRUE(ended_again.WaitFor());
  second.join();
  EXPECT_TRUE(upstream_closed.WaitFor(2));
}

TEST_F(FaultProxyTest, CompactExpiresWatchesFromVersionsOlderThanTheNewestSeen) {
  Start([](const Message& request, TlsSocket& connection) {
    if (request.first_line.find("watch=true") != std::string::npos) {
      connection.Write(std::string(kWatchHead) + Chunk(Event("late", 120)) + "0\r\n\r\n");
      return;
    }
    connection.Write(JsonResponse(200, {{"kind", "ConfigMapList"},
                                        {"apiVersion", "v1"},
                                        {"metadata", {{"resourceVersion", "100"}}},
                                        {"items", json::array({ConfigMapJson("c", 90)})}}));
  });
  std::unique_ptr<kube::Client> client = KubeClient();
  ASSERT_EQ(client->List(kube::ConfigMaps(), "default").resource_version, "100");
  proxy_->faults().Compact();
  const std::string watch = "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=";

  std::optional<Message> gone = Call("GET", watch + "50");
  ASSERT_TRUE(gone && gone->complete);
  EXPECT_EQ(gone->code(), 200);
  std::vector<json> events = gone->Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "ERROR");
  EXPECT_EQ(events[0]["object"]["kind"], "Status");
  EXPECT_EQ(events[0]["object"]["code"], 410);
  EXPECT_EQ(events[0]["object"]["reason"], "Expired");
  EXPECT_EQ(events[0]["object"]["message"], "too old resource version: 50 (100)");
  EXPECT_EQ(upstream_->requests().size(), 1u) << "an expired watch reached the upstream";

  kube::WatchOptions old;
  old.resource_version = "99";
  bool saw_gone = false;
  std::string what = "no event";
  try {
    client->Watch(kube::ConfigMaps(), "default", old, [&](const kube::WatchEvent& event) {
      saw_gone = event.type == kube::WatchEventType::kError && event.object.value("code", 0) == 410;
      what = event.object.dump();
      return false;
    });
  } catch (const kube::ApiError& e) {
    saw_gone = kube::IsGone(e);
    what = e.what();
  }
  EXPECT_TRUE(saw_gone) << what;

  // The newest version seen, newer ones, "0" and "now" pass.
  for (const std::string rv : {"100", "150", "0", ""}) {
    std::optional<Message> passed = Call("GET", watch + rv);
    ASSERT_TRUE(passed);
    ASSERT_EQ(passed->Events().size(), 1u) << rv;
    EXPECT_EQ(passed->Events()[0]["object"]["metadata"]["name"], "late") << rv;
  }
  // Versions seen in watch events count too: 120 is the newest now.
  proxy_->faults().Compact();
  std::optional<Message> after_events = Call("GET", watch + "110");
  ASSERT_TRUE(after_events);
  EXPECT_EQ(after_events->Events().at(0)["object"]["message"], "too old resource version: 110 (120)");
}

TEST_F(FaultProxyTest, DeadUpstreamIsA502NamingIt) {
  // A port that is bound but not listening refuses connections, and no one else can take it.
  const int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length);
  const std::string dead = "https://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  StartProxy(dead);

  std::optional<Message> reply = Call("GET", "/api/v1/namespaces/default/configmaps");
  ASSERT_TRUE(reply && reply->complete);
  EXPECT_EQ(reply->code(), 502);
  EXPECT_EQ(reply->Json()["kind"], "Status");
  EXPECT_EQ(reply->Json()["code"], 502);
  EXPECT_NE(reply->Json()["message"].get<std::string>().find(dead), std::string::npos) << reply->body;
  try {
    KubeClient()->Get(kube::ConfigMaps(), "default", "c");
    ADD_FAILURE() << "a GET through a proxy with no upstream succeeded";
  } catch (const kube::ApiError& e) {
    EXPECT_TRUE(kube::IsServerError(e)) << e.what();
  }
  ::close(holder);
}

TEST_F(FaultProxyTest, UpstreamNotSignedByTheGivenCaIsA502) {
  upstream_ = std::make_unique<FakeUpstream>(server_ctx_.get(), ServeConfigMap);
  StartProxy(upstream_->url(), GenerateCertificates({"127.0.0.1"}).ca_cert_pem);
  std::optional<Message> reply = Call("GET", "/api/v1/namespaces/default/configmaps/c");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->code(), 502);
  EXPECT_NE(reply->Json()["message"].get<std::string>().find("certificate verify failed"), std::string::npos)
      << reply->body;
  EXPECT_TRUE(upstream_->requests().empty());
}

TEST_F(FaultProxyTest, GarbageFromClientsIsRefusedAndTheProxyGoesOn) {
  Start(ServeConfigMap);
  for (const std::string_view garbage :
       {"\x16\x03\x01garbage\xff\x00\r\n\r\n"sv, "GET / HTTP/1.1\r\nContent-Length: nope\r\n\r\n"sv,
        "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"sv,
        "GET / HTTP/1.1\r\nbad header line\r\n\r\n"sv, "GET /\r\n\r\n"sv}) {
    std::unique_ptr<TlsSocket> client = Connect();
    client->Write(garbage);
    std::optional<Message> reply = client->ReadMessage(true);
    ASSERT_TRUE(reply) << garbage;
    EXPECT_EQ(reply->code(), 400) << garbage;
    EXPECT_EQ(reply->Json()["reason"], "BadRequest") << garbage;
    EXPECT_EQ(reply->Header("connection"), "close");
    EXPECT_TRUE(client->WaitForEof());
  }
  {  // a head over the limit
    std::unique_ptr<TlsSocket> client = Connect();
    client->Write("GET / HTTP/1.1\r\nX-Big: " + std::string(2u << 20, 'a'));
    client->WaitForEof();
  }
  {  // not TLS at all
    const int fd = ConnectTcp(proxy_->port());
    ASSERT_GE(fd, 0);
    const std::string plain = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(::send(fd, plain.data(), plain.size(), MSG_NOSIGNAL), static_cast<ssize_t>(plain.size()));
    char byte = 0;
    EXPECT_LE(::recv(fd, &byte, 1, 0), 0) << "the proxy answered plain text on its TLS port";
    ::close(fd);
  }
  {  // a connection that hangs up before and after the handshake
    ::close(ConnectTcp(proxy_->port()));
    Connect().reset();
  }
  EXPECT_TRUE(upstream_->requests().empty());
  std::optional<Message> fine = Call("GET", "/api/v1/namespaces/default/configmaps/c");
  ASSERT_TRUE(fine);
  EXPECT_EQ(fine->code(), 200);
}

TEST_F(FaultProxyTest, AdminEndpointReadsAndAppliesFaults) {
  Start(ServeConfigMap);
  std::optional<Message> set = Call("PUT", "/devcluster/faults", R"({"errorRate": 1.0, "errorCode": 429})");
  ASSERT_TRUE(set);
  EXPECT_EQ(set->code(), 200);
  EXPECT_EQ(set->Json()["errorCode"], 429);
  std::optional<Message> read = Call("GET", "/devcluster/faults");
  ASSERT_TRUE(read);
  EXPECT_EQ(read->Json(), proxy_->faults().ToJson());
  EXPECT_EQ(read->Json()["errorRate"], 1.0);
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/default/configmaps/c")->code(), 429);

  std::optional<Message> unknown = Call("POST", "/devcluster/faults", R"({"bogus": 1})");
  EXPECT_EQ(unknown->code(), 400);
  EXPECT_EQ(unknown->Json()["message"], "unknown fault \"bogus\"");
  EXPECT_EQ(Call("POST", "/devcluster/faults", "{not json")->code(), 400);
  EXPECT_EQ(Call("DELETE", "/devcluster/faults")->code(), 405);
  EXPECT_EQ(Call("POST", "/devcluster/faults", R"({"reset": true})")->code(), 200);
  EXPECT_EQ(Call("GET", "/api/v1/namespaces/default/configmaps/c")->code(), 200);
  EXPECT_EQ(upstream_->requests().size(), 1u);
}

TEST_F(FaultProxyTest, StopEndsOpenWatchesCleanlyAndIsIdempotent) {
  Start([](const Message&, TlsSocket& connection) {
    connection.Write(std::string(kWatchHead) + Chunk(Event("a", 1)));
    connection.WaitForEof();
  });
  std::unique_ptr<TlsSocket> client = Connect();
  client->Write("GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n\r\n");
  Signal opened;
  std::optional<Message> watch;
  std::thread reader([&] { watch = client->ReadMessage(true, [&](std::string_view) { opened.Notify(); }); });
  ASSERT_TRUE(opened.WaitFor());
  const auto started = Clock::now();
  proxy_->Stop();
  reader.join();
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(1)) << "Stop waited out its grace for a watch";
  ASSERT_TRUE(watch);
  EXPECT_TRUE(watch->complete);
  EXPECT_EQ(watch->Events().size(), 1u);
  proxy_->Stop();
  EXPECT_LT(ConnectTcp(proxy_->port()), 0) << "still listening after Stop()";
}

// Guards against a watch whose client left holding its upstream open until the next event.
TEST_F(FaultProxyTest, AClientHangingUpEndsItsUpstreamWatch) {
  Counter upstream_closed;
  Start([&](const Message&, TlsSocket& connection) {
    connection.Write(std::string(kWatchHead) + Chunk(Event("a", 1)));
    if (connection.WaitForEof()) {
      upstream_closed.Add();
    }
  });
  std::unique_ptr<TlsSocket> client = Connect();
  client->Write("GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(client->ReadUntil(Event("a", 1)));
  client.reset();
  EXPECT_TRUE(upstream_closed.WaitFor(1)) << "the proxy kept the upstream watch of a client that left";
}

TEST_F(FaultProxyTest, PipelinedAndExpectContinueRequestsAreAnsweredInTurn) {
  Start([](const Message& request, TlsSocket& connection) {
    connection.Write(JsonResponse(200, {{"echo", request.first_line + " " + request.body}}));
  });
  std::unique_ptr<TlsSocket> client = Connect();
  // Two requests in one write, the first after a blank line (RFC 9112 2.2).
  client->Write("\r\nGET /api/v1/namespaces/default/configmaps/a HTTP/1.1\r\nHost: x\r\n\r\n"
                "GET /api/v1/namespaces/default/configmaps/b HTTP/1.1\r\nHost: x\r\n\r\n");
  for (const std::string name : {"a", "b"}) {
    std::optional<Message> reply = client->ReadMessage(true);
    ASSERT_TRUE(reply && reply->complete) << name;
    EXPECT_EQ(reply->Json()["echo"], "GET /api/v1/namespaces/default/configmaps/" + name + " HTTP/1.1 ");
  }
  client->Write("POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                "Content-Length: 5\r\n\r\n");
  std::optional<std::string> interim = client->ReadUntil("\r\n\r\n");
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->substr(0, 13), "HTTP/1.1 100 ");
  client->Write("hello");
  std::optional<Message> created = client->ReadMessage(true);
  ASSERT_TRUE(created && created->complete);
  EXPECT_EQ(created->Json()["echo"], "POST /api/v1/namespaces/default/configmaps HTTP/1.1 hello");
  EXPECT_EQ(upstream_->requests().at(2).Header("expect"), "") << "Expect is for the proxy, not the upstream";
}

// Faults alone: the decisions and the admin body, no network.
TEST(FaultsTest, ApplyJsonRejectsUnknownFieldsAndWrongTypes) {
  Faults faults;
  EXPECT_THROW(faults.ApplyJson(json::array()), std::invalid_argument);
  EXPECT_THROW(faults.ApplyJson({{"bogus", 1}}), std::invalid_argument);
  EXPECT_THROW(faults.ApplyJson({{"latencyMs", "5"}}), std::invalid_argument);
  EXPECT_THROW(faults.ApplyJson({{"errorRate", 2.0}}), std::invalid_argument);
  EXPECT_THROW(faults.ApplyJson({{"errorCode", 503}}), std::invalid_argument);
  EXPECT_THROW(faults.ApplyJson({{"compact", 1}}), std::invalid_argument);
  faults.ApplyJson({{"errorRate", 0.25}, {"errorCode", 429}, {"conflictNextWrites", 2}, {"latencyMs", 5},
                    {"cutWatchesEvery", 7}});
  const json settings = faults.ToJson();
  EXPECT_EQ(settings, (json{{"errorRate", 0.25}, {"errorCode", 429}, {"conflictNextWrites", 2},
                            {"latencyMs", 5}, {"cutWatchesEvery", 7}}));
  Faults copy;
  copy.ApplyJson(settings);
  EXPECT_EQ(copy.ToJson(), settings);
  faults.ApplyJson({{"reset", true}});
  EXPECT_EQ(faults.ToJson()["cutWatchesEvery"], 0);
}

TEST(FaultsTest, ConflictsAreCountedOnWritesOnly) {
  Faults faults;
  faults.ConflictNextWrites(1);
  EXPECT_FALSE(faults.Decide(false, "pods", "p").has_value());
  std::optional<InjectedError> conflict = faults.Decide(true, "pods", "p");
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->code, 409);
  EXPECT_EQ(conflict->StatusBody()["details"], (json{{"name", "p"}, {"kind", "pods"}}));
  EXPECT_FALSE(faults.Decide(true, "pods", "p").has_value());
}

TEST(FaultsTest, CompactExpiresOnlyVersionsBelowTheNewestSeen) {
  Faults faults;
  faults.ObserveResourceVersion(100);
  EXPECT_FALSE(faults.ExpiredWatch("5").has_value()) << "nothing is expired before a Compact()";
  faults.Compact();
  faults.ObserveResourceVersion(200);  // after the compaction: does not move it
  ASSERT_TRUE(faults.ExpiredWatch("99").has_value());
  EXPECT_EQ(faults.ExpiredWatch("99")->StatusBody()["message"], "too old resource version: 99 (100)");
  EXPECT_EQ(faults.ExpiredWatch("1")->code, 410);
  for (const char* passes : {"100", "150", "0", "", "abc", "-1"}) {
    EXPECT_FALSE(faults.ExpiredWatch(passes).has_value()) << passes;
  }
  faults.Reset();  // a compaction, as a real one, is not undone
  EXPECT_TRUE(faults.ExpiredWatch("99").has_value());
  faults.Compact();
  EXPECT_TRUE(faults.ExpiredWatch("150").has_value());
}

}  // namespace
}  // namespace ringleader::devcluster
