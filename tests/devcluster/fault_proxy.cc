// The fault proxy on Boost.Beast: one io_context thread runs every client connection as a C++20
// coroutine, and Stop() and CutWatches() reach the connections by posting to that thread.
#include "tests/devcluster/fault_proxy.h"

#include <fcntl.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cpprest/base_uri.h>

namespace ringleader::devcluster {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::awaitable;
using asio::ip::tcp;
using boost::system::error_code;
using nlohmann::json;
using TlsStream = ssl::stream<beast::tcp_stream>;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;

constexpr std::string_view kAdminPath = "/devcluster/faults";
constexpr std::uint32_t kMaxHeadBytes = 1u << 20;
constexpr std::uint64_t kMaxRequestBodyBytes = 64u << 20;
constexpr std::size_t kMaxScannedBodyBytes = 16u << 20;  // larger bodies are not read for RVs
constexpr std::size_t kMaxWatchLineBytes = 64u << 20;    // one watch event
constexpr std::size_t kReadBytes = 64u << 10;
constexpr auto kConnectTimeout = std::chrono::seconds(10);
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
constexpr auto kLingerTimeout = std::chrono::milliseconds(500);

// An asio completion token for coroutines that reports failure in `ec` instead of throwing.
auto Into(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

[[noreturn]] void StartFailed(const std::string& what) {
  throw std::runtime_error("fault proxy: " + what);
}

// The control plane's processes are forked from this one and must not inherit its sockets.
void CloseOnExec(int fd) { ::fcntl(fd, F_SETFD, FD_CLOEXEC); }

// Where requests go: "https://host[:port]", resolved once.
struct Upstream {
  std::string url;
  std::string host;  // without brackets
  bool host_is_ip = false;
  std::string host_header;  // "host:port" for requests that came without a Host
  tcp::resolver::results_type endpoints;
};

Upstream ResolveUpstream(const std::string& url, asio::io_context& io) {
  web::uri uri;
  try {
    uri = web::uri(url);
  } catch (const web::uri_exception& e) {
    StartFailed("bad upstream URL \"" + url + "\": " + e.what());
  }
  if (uri.scheme() != "https" || uri.host().empty() || (!uri.path().empty() && uri.path() != "/") ||
      !uri.query().empty() || !uri.fragment().empty() || !uri.user_info().empty()) {
    StartFailed("the upstream URL must be https://HOST[:PORT] with no path, got \"" + url + "\"");
  }
  Upstream upstream;
  const std::string port = std::to_string(uri.port() > 0 ? uri.port() : 443);
  upstream.host_header = uri.host() + ":" + port;
  upstream.url = "https://" + upstream.host_header;
  upstream.host = uri.host().front() == '[' ? uri.host().substr(1, uri.host().size() - 2) : uri.host();
  error_code ec;
  asio::ip::make_address(upstream.host, ec);
  upstream.host_is_ip = !ec;
  upstream.endpoints = tcp::resolver(io).resolve(upstream.host, port, ec);
  if (ec) {
    StartFailed("cannot resolve \"" + url + "\": " + ec.message());
  }
  return upstream;
}

ssl::context ServerContext(const FaultProxyOptions& options) {
  ssl::context ctx(ssl::context::tls_server);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  ctx.use_certificate_chain(asio::buffer(options.server_cert_pem));
  ctx.use_private_key(asio::buffer(options.server_key_pem), ssl::context::pem);  // must fit the cert
  return ctx;
}

ssl::context ClientContext(const FaultProxyOptions& options) {
  ssl::context ctx(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  ctx.add_certificate_authority(asio::buffer(options.upstream_ca_pem));  // each certificate in it
  ctx.set_verify_mode(ssl::verify_peer);
  return ctx;
}

// The upstream's certificate must name the URL's host (or IP); SNI names a DNS host.
void ExpectUpstreamName(SSL* ssl, const Upstream& upstream) {
  if (upstream.host_is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), upstream.host.c_str());
    return;
  }
  SSL_set1_host(ssl, upstream.host.c_str());
  // SSL_set_tlsext_host_name, without the macro's C cast.
  SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(upstream.host.c_str()));
}

// Why a TLS handshake failed, in the certificate check's words when it was that.
std::string TlsFailure(const error_code& ec, SSL* ssl) {
  const long verify = SSL_get_verify_result(ssl);
  return verify == X509_V_OK
             ? ec.message()
             : std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
}

// Hop-by-hop fields describe one connection, so they are not passed on; Content-Length is set
// anew for the next hop.
bool IsHopByHop(const http::fields& fields, beast::string_view name) {
  static const char* const kHopByHop[] = {"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer",
                                          "Transfer-Encoding", "Upgrade", "Content-Length", "Expect"};
  for (const char* hop : kHopByHop) {
    if (beast::iequals(name, hop)) {
      return true;
    }
  }
  for (const beast::string_view token : http::token_list(fields[http::field::connection])) {
    if (beast::iequals(token, name)) {
      return true;
    }
  }
  return false;
}

void CopyEndToEndFields(const http::fields& from, http::fields& to) {
  for (const auto& field : from) {
    if (!IsHopByHop(from, field.name_string())) {
      to.insert(field.name_string(), field.value());
    }
  }
}

// The string at `path` in `value`, or "" when there is none.
std::string StringAt(const json& value, const json::json_pointer& path) {
  if (!value.is_object() || !value.contains(path) || !value.at(path).is_string()) {
    return "";
  }
  return value.at(path).get<std::string>();
}

// Tells `faults` the resourceVersion of an object, a list (newer than any of its items) or a
// watch event's object.
void ObserveResourceVersion(const json& object, Faults& faults) {
  static const json::json_pointer kPath("/metadata/resourceVersion");
  const std::string text = StringAt(object, kPath);
  const char* end = text.data() + text.size();
  std::uint64_t rv = 0;
  if (!text.empty() && std::from_chars(text.data(), end, rv).ptr == end) {
    faults.ObserveResourceVersion(rv);
  }
}

// Percent-decoded; text with a broken escape is kept as it came.
std::string Decoded(const std::string& text) {
  try {
    return web::uri::decode(text);
  } catch (const web::uri_exception&) {
    return text;
  }
}

// Go's strconv.ParseBool, true side.
bool IsTrue(std::string_view value) {
  return value == "1" || value == "t" || value == "T" || value == "true" || value == "TRUE" ||
         value == "True";
}

struct Request {
  HttpRequest message;
  std::string path;
  std::map<std::string, std::string> query;  // decoded
  bool is_watch = false;
  std::string group_resource;  // "configmaps", "trainingjobs.ringleader.dev"; "" off the API
  std::string name;
};

// The request as the API server would see it: the resource and object it is about, from
// /api/v1/... or /apis/GROUP/VERSION/..., and whether it is a watch (?watch=true or the legacy
// /watch/ prefix). A create names its object in the body.
Request Classify(HttpRequest message) {
  Request request;
  const std::string target(message.target());
  const std::size_t question = target.find('?');
  request.path = target.substr(0, question);
  if (question != std::string::npos) {
    for (const auto& [key, value] : web::uri::split_query(target.substr(question + 1))) {
      request.query[Decoded(key)] = Decoded(value);
    }
  }
  std::vector<std::string> segments = web::uri::split_path(request.path);
  for (std::string& segment : segments) {
    segment = Decoded(segment);
  }
  std::size_t at = segments.size();  // off the API: no resource
  std::string group;
  if (segments.size() >= 2 && segments[0] == "api") {
    at = 2;
  } else if (segments.size() >= 3 && segments[0] == "apis") {
    group = segments[1];
    at = 3;
  }
  if (at < segments.size() && segments[at] == "watch") {
    request.is_watch = true;
    ++at;
  }
  if (at < segments.size()) {
    if (segments[at] == "namespaces" && at + 2 < segments.size()) {
      at += 2;
    }
    request.group_resource = group.empty() ? segments[at] : segments[at] + "." + group;
    request.name = at + 1 < segments.size() ? segments[at + 1] : "";
  }
  if (const auto watch = request.query.find("watch"); watch != request.query.end() && IsTrue(watch->second)) {
    request.is_watch = true;
  }
  if (request.name.empty() && message.method() == http::verb::post) {
    static const json::json_pointer kName("/metadata/name");
    request.name = StringAt(json::parse(message.body(), nullptr, false), kName);
  }
  request.message = std::move(message);
  return request;
}

// A JSON answer of the proxy's own, in the client's HTTP version.
HttpResponse JsonResponse(unsigned code, std::string body, unsigned version) {
  HttpResponse response;
  response.result(code);
  response.version(version);
  response.set(http::field::content_type, "application/json");
  response.set(http::field::cache_control, "no-cache, private");
  response.body() = std::move(body);
  return response;
}

HttpResponse StatusResponse(const InjectedError& error, unsigned version) {
  HttpResponse response = JsonResponse(error.code, error.StatusBody().dump(), version);
  if (error.retry_after_seconds > 0) {
    response.set(http::field::retry_after, std::to_string(error.retry_after_seconds));
  }
  return response;
}

// Malformed or oversized requests are answered; other read failures mean the client is gone.
bool IsMalformed(const error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

// A fresh parser for the next request, with the proxy's limits (Beast's own are 8 KiB and 1 MiB).
void ResetParser(std::optional<http::request_parser<http::string_body>>& parser) {
  parser.emplace();
  parser->header_limit(kMaxHeadBytes);
  parser->body_limit(kMaxRequestBodyBytes);
}

// A flag one coroutine awaits and another sets, both on the proxy's thread: a timer that never
// expires by itself, cancelled to wake the waiter.
class Flag {
 public:
  Flag(const asio::any_io_executor& executor, bool set)
      : timer_(executor, asio::steady_timer::time_point::max()), set_(set) {}
  bool is_set() const { return set_; }
  void Clear() { set_ = false; }
  void Set() {
    set_ = true;
    timer_.cancel();
  }
  awaitable<void> Wait() {
    while (!set_) {
      error_code cancelled;
      co_await timer_.async_wait(Into(cancelled));
    }
  }

 private:
  asio::steady_timer timer_;
  bool set_;
};

class Session;

// What every connection shares; FaultProxy::Impl is one.
struct Server {
  explicit Server(const FaultProxyOptions& options_in)
      : options(options_in),
        upstream(ResolveUpstream(options.upstream_url, io)),
        server_ctx(ServerContext(options)),
        client_ctx(ClientContext(options)) {}

  void Listen();
  awaitable<void> Accept();
  void WakeAll();  // from any thread
  void Stop();

  FaultProxyOptions options;
  asio::io_context io{1};
  Upstream upstream;
  ssl::context server_ctx;
  ssl::context client_ctx;
  Faults faults;
  tcp::acceptor acceptor{io};
  int port = 0;
  std::string url;
  std::atomic<bool> stopping{false};  // soft: idle connections and watches end, requests finish
  std::atomic<bool> aborting{false};  // hard: every connection is cut
  std::mutex mu;
  std::condition_variable sessions_changed;
  std::set<Session*> sessions;  // guarded by mu
  std::thread thread;
  std::once_flag stopped;
};

// One client connection: requests in turn (keep-alive), each answered by a fault or forwarded.
// Everything here runs on the proxy's thread.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server& server, tcp::socket socket)
      : server_(server),
        client_(std::move(socket), server.server_ctx),
        head_ready_(client_.get_executor(), true),
        delay_(client_.get_executor()) {
    std::lock_guard lock(server_.mu);
    server_.sessions.insert(this);
  }

  ~Session() {
    std::lock_guard lock(server_.mu);
    server_.sessions.erase(this);
    server_.sessions_changed.notify_all();
  }

  static awaitable<void> Run(std::shared_ptr<Session> self) { co_await self->Serve(); }

  // Stop(), CutWatches() or the abort reaching this connection; see Phase for what each ends.
  void Wake() {
    const bool abort = server_.aborting;
    if (abort || (server_.stopping && phase_ == Phase::kIdle)) {
      beast::get_lowest_layer(client_).close();
    }
    if (abort || (server_.stopping && phase_ == Phase::kDelayed)) {
      delay_.cancel();
    }
    if (abort || (phase_ == Phase::kWatching && Cut())) {
      CloseUpstream();  // the watch loop sees why and ends the body cleanly
    }
  }

 private:
  enum class Phase {
    kIdle,      // handshake, between requests, lingering close: a stop ends the connection
    kBusy,      // reading a request or forwarding one: it has Stop()'s grace to finish
    kDelayed,   // the latency fault: a stop ends the request unanswered
    kWatching,  // streaming a watch: a stop or a cut ends it cleanly
  };

  awaitable<void> Serve() {
    error_code ec;
    beast::tcp_stream& tcp = beast::get_lowest_layer(client_);
    tcp.expires_after(kHandshakeTimeout);
    co_await client_.async_handshake(ssl::stream_base::server, Into(ec));
    tcp.expires_never();
    if (ec) {
      co_return;  // not TLS, or gone: there is no one to answer
    }
    StartReadingHead();
    for (;;) {
      phase_ = Phase::kIdle;
      co_await head_ready_.Wait();
      if (head_error_) {
        if (!IsMalformed(head_error_)) {
          co_return;  // the client closed the connection, or a stop did
        }
        co_await Refuse(head_error_);
        break;
      }
      phase_ = Phase::kBusy;
      http::request_parser<http::string_body>& parser = *parser_;
      const beast::string_view target = parser.get().target();
      if (target.empty() || target.front() != '/') {  // origin-form only
        co_await Refuse(http::error::bad_target);
        break;
      }
      if (!parser.is_done() && beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        const http::response<http::empty_body> go_on{http::status::continue_, 11};
        co_await http::async_write(client_, go_on, Into(ec));
      }
      co_await http::async_read(client_, buffer_, parser, Into(ec));  // the body
      if (ec) {
        if (!IsMalformed(ec)) {
          co_return;
        }
        co_await Refuse(ec);
        break;
      }
      const Request request = Classify(parser.release());
      StartReadingHead();  // the next request's; failing meanwhile means the client left
      if (!co_await Handle(request) || server_.stopping) {
        break;
      }
    }
    co_await Close();
  }

  void StartReadingHead() {
    ResetParser(parser_);
    head_ready_.Clear();
    asio::co_spawn(client_.get_executor(), ReadHead(shared_from_this()), asio::detached);
  }

  // `self` keeps the session alive while the read is in flight.
  awaitable<void> ReadHead([[maybe_unused]] std::shared_ptr<Session> self) {
    for (;;) {
      co_await http::async_read_header(client_, buffer_, *parser_, Into(head_error_));
      // Blank lines before a request line are ignored (RFC 9112 2.2), which Beast does not do.
      const std::string_view buffered(static_cast<const char*>(buffer_.data().data()), buffer_.size());
      if (head_error_ != http::error::bad_method || buffered.substr(0, 2) != "\r\n") {
        break;
      }
      buffer_.consume(2);
      ResetParser(parser_);
    }
    if (head_error_) {
      client_gone_ = true;
      CloseUpstream();  // a response in flight has no one to go to
    }
    head_ready_.Set();
  }

  // False when the connection must close after this request.
  awaitable<bool> Handle(const Request& request) {
    const HttpRequest& message = request.message;
    if (request.path == kAdminPath) {
      co_return co_await ServeAdmin(message);
    }
    if (const std::chrono::milliseconds latency = server_.faults.latency(); latency.count() > 0) {
      phase_ = Phase::kDelayed;
      error_code ec;
      delay_.expires_after(latency);
      if (!server_.stopping) {
        co_await delay_.async_wait(Into(ec));
      }
      phase_ = Phase::kBusy;
      if (ec || server_.stopping) {
        co_return false;
      }
    }
    // A watch's cut settings are those in force when it starts, as the old server's were.
    const int cut_every = server_.faults.cut_watches_every();
    epoch_ = server_.faults.cut_epoch();

    const http::verb method = message.method();
    const bool is_write = method == http::verb::post || method == http::verb::put ||
                          method == http::verb::patch || method == http::verb::delete_;
    // Off the API (no resource in the path) the conflict names what the old server named.
    const bool api = !request.group_resource.empty();
    const std::string group_resource = api ? request.group_resource : "devcluster";
    const std::string name = api ? request.name : "fault-injection";
    if (std::optional<InjectedError> injected = server_.faults.Decide(is_write, group_resource, name)) {
      co_return co_await Send(StatusResponse(*injected, message.version()), message.keep_alive());
    }
    if (const auto rv = request.query.find("resourceVersion");
        request.is_watch && method == http::verb::get && rv != request.query.end()) {
      if (std::optional<InjectedError> expired = server_.faults.ExpiredWatch(rv->second)) {
        co_return co_await SendExpiredWatch(*expired, message);
      }
    }
    const bool keep_alive = co_await Forward(request, cut_every);
    upstream_.reset();  // a fresh upstream connection for each request
    co_return keep_alive;
  }

  awaitable<bool> ServeAdmin(const HttpRequest& message) {
    std::optional<InjectedError> refused;
    if (message.method() == http::verb::put || message.method() == http::verb::post) {
      try {
        const std::string& body = message.body();
        server_.faults.ApplyJson(body.empty() ? json::object() : json::parse(body));
      } catch (const json::parse_error& e) {
        refused = InjectedError{400, "BadRequest", std::string("malformed faults body: ") + e.what()};
      } catch (const std::invalid_argument& e) {
        refused = InjectedError{400, "BadRequest", e.what()};
      }
    } else if (message.method() != http::verb::get) {
      refused = InjectedError{405, "MethodNotAllowed",
                              std::string(message.method_string()) +
                                  " is not supported on resources of kind \"devcluster/faults\""};
    }
    // C++ has no co_await in a catch block, hence the answer out here.
    HttpResponse response = refused ? StatusResponse(*refused, message.version())
                                    : JsonResponse(200, server_.faults.ToJson().dump(), message.version());
    co_return co_await Send(std::move(response), message.keep_alive());
  }

  // Answers a request that cannot be read; the connection ends after it.
  awaitable<void> Refuse(const error_code& why) {
    const bool too_large = why == http::error::header_limit || why == http::error::body_limit ||
                           why == http::error::buffer_overflow;
    const InjectedError refusal{too_large ? 413 : 400, too_large ? "RequestEntityTooLarge" : "BadRequest",
                                "malformed or oversized HTTP request: " + why.message()};
    co_await Send(StatusResponse(refusal, 11), false);
  }

  // False when the connection must close after this response.
  awaitable<bool> Send(HttpResponse response, bool keep_alive) {
    response.keep_alive(keep_alive);
    if (!response.chunked()) {
      response.prepare_payload();  // Content-Length
    }
    error_code ec;
    co_await http::async_write(client_, response, Into(ec));
    co_return !ec && keep_alive;
  }

  // The real server's answer to a watch from a compacted version: 200, one ERROR event, the end.
  awaitable<bool> SendExpiredWatch(const InjectedError& expired, const HttpRequest& to) {
    const json event = {{"type", "ERROR"}, {"object", expired.StatusBody()}};
    HttpResponse response = JsonResponse(200, event.dump() + "\n", to.version());
    response.chunked(to.version() == 11);  // Beast sends the body as one chunk, then the last
    co_return co_await Send(std::move(response), to.keep_alive());
  }

  // Why the upstream could not be asked, as a 502 Status naming it.
  awaitable<bool> BadGateway(const HttpRequest& to, const std::string& why) {
    if (client_gone_ || server_.aborting) {
      co_return false;
    }
    const InjectedError error{502, "ServiceUnavailable",
                              "error trying to reach the API server at " + server_.upstream.url + ": " + why};
    co_return co_await Send(StatusResponse(error, to.version()), to.keep_alive());
  }

  // Sends the request on a new upstream connection and streams the response back as it arrives;
  // false when the client connection must close after it.
  awaitable<bool> Forward(const Request& request, int cut_every) {
    const HttpRequest& in = request.message;
    if (client_gone_ || server_.aborting) {
      co_return false;
    }
    TlsStream& up = upstream_.emplace(client_.get_executor(), server_.client_ctx);
    beast::tcp_stream& up_tcp = beast::get_lowest_layer(up);
    error_code ec;
    up_tcp.expires_after(kConnectTimeout);
    co_await up_tcp.async_connect(server_.upstream.endpoints, Into(ec));
    if (ec) {
      co_return co_await BadGateway(in, "connect: " + ec.message());
    }
    CloseOnExec(up_tcp.socket().native_handle());
    up_tcp.socket().set_option(tcp::no_delay(true), ec);
    ExpectUpstreamName(up.native_handle(), server_.upstream);
    up_tcp.expires_after(kConnectTimeout);
    co_await up.async_handshake(ssl::stream_base::client, Into(ec));
    up_tcp.expires_never();
    if (ec) {
      co_return co_await BadGateway(in, "TLS: " + TlsFailure(ec, up.native_handle()));
    }

    // As it came, but framed anew, closing after the response, and with Host when it had none.
    HttpRequest out;
    out.method_string(in.method_string());  // also verbs that Beast has no name for
    out.target(in.target());
    CopyEndToEndFields(in, out);
    if (out.count(http::field::host) == 0) {
      out.set(http::field::host, server_.upstream.host_header);
    }
    if (in.count(http::field::content_length) > 0 || in.count(http::field::transfer_encoding) > 0 ||
        !in.body().empty()) {
      out.content_length(in.body().size());
    }
    out.body() = in.body();
    out.keep_alive(false);
    co_await http::async_write(up, out, Into(ec));
    if (ec) {
      co_return co_await BadGateway(in, "the connection broke while sending the request");
    }

    beast::flat_buffer up_buffer;
    std::optional<http::response_parser<http::buffer_body>> parser;
    do {  // interim (1xx) responses are skipped
      parser.emplace();
      parser->header_limit(kMaxHeadBytes);
      // Not boost::none: Beast 1.74 takes that for a limit below any Content-Length.
      parser->body_limit(std::numeric_limits<std::uint64_t>::max());
      parser->skip(in.method() == http::verb::head);
      co_await http::async_read_header(up, up_buffer, *parser, Into(ec));
      if (ec) {
        co_return co_await BadGateway(in, "no usable response: " + ec.message());
      }
    } while (parser->get().result_int() / 100 == 1);

    http::response<http::buffer_body>& response = parser->get();
    const bool done = parser->is_done();  // no body: HEAD, 204, 304 or an empty one
    const bool watch = request.is_watch && response.result_int() / 100 == 2 && !done;
    // Bodies of unknown length go chunked, and so do watches, which a cut may end early.
    const bool chunked = in.version() == 11 && !done && (watch || !parser->content_length());
    const bool length_known = done || (parser->content_length() && !watch);
    const bool keep_alive = in.keep_alive() && (chunked || length_known);  // else: to the close
    const beast::string_view content_type = response[http::field::content_type];
    const beast::string_view encoding = response[http::field::content_encoding];
    const bool json_body = content_type.find("json") != beast::string_view::npos &&
                           (encoding.empty() || beast::iequals(encoding, "identity"));

    http::response<http::empty_body> head;
    head.version(in.version());
    head.result(response.result_int());
    head.reason(response.reason());
    CopyEndToEndFields(response, head);
    if (chunked) {
      head.chunked(true);
    } else if (response.count(http::field::content_length) > 0) {
      head.set(http::field::content_length, response[http::field::content_length]);  // as Beast read it
    }
    head.keep_alive(keep_alive);
    http::response_serializer<http::empty_body> serializer{head};
    co_await http::async_write_header(client_, serializer, Into(ec));
    if (ec) {
      co_return false;
    }

    phase_ = watch ? Phase::kWatching : Phase::kBusy;
    std::array<char, kReadBytes> buffer;
    const bool lines = watch && json_body;  // JSON watch events are newline-terminated lines
    bool capturing = json_body && !watch;   // a JSON body, read for its resourceVersion
    std::string captured;
    std::string pending;  // a watch event not yet complete
    int events = 0;
    bool cut = false;
    while (!parser->is_done() && !cut) {
      if (watch && Cut()) {
        cut = true;
        break;
      }
      response.body().data = buffer.data();
      response.body().size = buffer.size();
      co_await http::async_read_some(up, up_buffer, *parser, Into(ec));
      const std::string_view piece(buffer.data(), buffer.size() - response.body().size);
      if (ec == http::error::need_buffer) {
        ec = {};  // the piece filled the buffer
      }
      if (ec == ssl::error::stream_truncated && !parser->content_length() && !parser->chunked()) {
        parser->put_eof(ec);  // a body to the close, closed without a close_notify
      }
      if (ec) {
        if (watch && Cut() && !client_gone_) {
          cut = true;  // the cut closed the upstream
          break;
        }
        co_return false;  // the client left, or the upstream broke off: the client sees the cut
      }
      if (!lines) {
        capturing = capturing && captured.size() + piece.size() <= kMaxScannedBodyBytes;
        if (capturing) {
          captured.append(piece);
        }
        if (capturing && parser->is_done()) {
          // Before the client has it all: a test may Compact() as soon as its List returns.
          ObserveResourceVersion(json::parse(captured, nullptr, false), server_.faults);
        }
        if (!co_await WriteBody(piece, chunked)) {
          co_return false;
        }
        continue;
      }
      // Watch events go out whole, so that a cut always falls between two of them.
      pending.append(piece);
      std::size_t start = 0;
      for (std::size_t newline = 0; !cut && (newline = pending.find('\n', start)) != std::string::npos;
           start = newline + 1) {
        const json event = json::parse(pending.begin() + static_cast<std::ptrdiff_t>(start),
                                       pending.begin() + static_cast<std::ptrdiff_t>(newline), nullptr, false);
        if (!event.is_object()) {
          continue;  // a blank line
        }
        if (const auto object = event.find("object"); object != event.end()) {
          ObserveResourceVersion(*object, server_.faults);
        }
        // Bookmarks are not counted, as the old server did not count them.
        cut = cut_every > 0 && event.value("type", "") != "BOOKMARK" && ++events >= cut_every;
      }
      if (!co_await WriteBody(std::string_view(pending).substr(0, start), chunked)) {
        co_return false;
      }
      pending.erase(0, start);
      if (pending.size() > kMaxWatchLineBytes) {
        co_return false;
      }
    }
    phase_ = Phase::kBusy;
    if (!cut && !co_await WriteBody(pending, chunked)) {  // a last line without its newline
      co_return false;
    }
    if (chunked) {
      co_await asio::async_write(client_, http::make_chunk_last(), Into(ec));
    }
    co_return !ec && keep_alive;
  }

  // A piece of a body to the client, as a chunk when the body goes chunked.
  awaitable<bool> WriteBody(std::string_view data, bool chunked) {
    if (data.empty()) {
      co_return true;  // an empty chunk would end the body
    }
    error_code ec;
    if (chunked) {
      co_await asio::async_write(client_, http::make_chunk(asio::buffer(data)), Into(ec));
    } else {
      co_await asio::async_write(client_, asio::buffer(data), Into(ec));
    }
    co_return !ec;
  }

  // Ends the connection after its last response: close_notify, then a moment to read what the
  // client still sends, so that closing does not reset the connection under that response.
  awaitable<void> Close() {
    phase_ = Phase::kIdle;
    beast::tcp_stream& tcp = beast::get_lowest_layer(client_);
    if (!head_ready_.is_set()) {
      tcp.cancel();  // the next request's head is not wanted now
      co_await head_ready_.Wait();
    }
    if (server_.stopping) {
      co_return;  // a stop cuts the lingering short
    }
    error_code ec;
    tcp.expires_after(kLingerTimeout);
    co_await client_.async_shutdown(Into(ec));
  }

  bool Cut() const { return server_.stopping || server_.faults.cut_epoch() != epoch_; }

  void CloseUpstream() {
    if (upstream_) {
      beast::get_lowest_layer(*upstream_).close();
    }
  }

  Server& server_;
  TlsStream client_;
  beast::flat_buffer buffer_;  // what the client sent beyond the request being read
  std::optional<http::request_parser<http::string_body>> parser_;  // the request being read
  error_code head_error_;
  Flag head_ready_;  // the head read has ended, in a request or head_error_
  bool client_gone_ = false;
  Phase phase_ = Phase::kIdle;
  asio::steady_timer delay_;
  std::uint64_t epoch_ = 0;  // the cut epoch when the request in flight started
  std::optional<TlsStream> upstream_;
};

void Server::Listen() {
  error_code ec;
  const asio::ip::address_v4 address = asio::ip::make_address_v4(options.listen_host, ec);
  if (ec) {
    StartFailed("listen_host must be an IPv4 address, got \"" + options.listen_host + "\"");
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  acceptor.open(endpoint.protocol());
  CloseOnExec(acceptor.native_handle());
  acceptor.set_option(tcp::acceptor::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen();
  port = acceptor.local_endpoint().port();
  url = "https://" + options.listen_host + ":" + std::to_string(port);
  faults.SetCutListener([this] { WakeAll(); });
  asio::co_spawn(io, Accept(), asio::detached);
  thread = std::thread([this] { io.run(); });
}

awaitable<void> Server::Accept() {
  for (;;) {
    error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(Into(ec));
    if (stopping) {
      co_return;
    }
    if (ec) {
      continue;  // the client gave up already, or out of descriptors for now
    }
    CloseOnExec(socket.native_handle());
    socket.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(io, Session::Run(std::make_shared<Session>(*this, std::move(socket))), asio::detached);
  }
}

void Server::WakeAll() {
  asio::post(io, [this] {
    std::lock_guard lock(mu);
    for (Session* session : sessions) {
      session->Wake();
    }
  });
}

void Server::Stop() {
  std::call_once(stopped, [this] {
    faults.SetCutListener(nullptr);
    stopping = true;
    asio::post(io, [this] {
      error_code ignored;
      acceptor.close(ignored);
    });
    WakeAll();
    {
      std::unique_lock lock(mu);
      sessions_changed.wait_for(lock, options.stop_grace, [this] { return sessions.empty(); });
    }
    aborting = true;
    WakeAll();
    thread.join();  // run() returns once the acceptor and every connection have ended
  });
}

}  // namespace

struct FaultProxy::Impl : Server {
  using Server::Server;
};

std::unique_ptr<FaultProxy> FaultProxy::Start(const FaultProxyOptions& options) {
  try {
    auto impl = std::make_unique<Impl>(options);
    impl->Listen();
    return std::make_unique<FaultProxy>(Key(), std::move(impl));
  } catch (const boost::system::system_error& e) {
    // Asio's own words for a PEM, a resolve or a listen that failed, e.g. "use_private_key: ...".
    StartFailed(e.what());
  }
}

FaultProxy::FaultProxy(Key, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FaultProxy::~FaultProxy() { Stop(); }

const std::string& FaultProxy::url() const { return impl_->url; }

int FaultProxy::port() const { return impl_->port; }

Faults& FaultProxy::faults() { return impl_->faults; }

void FaultProxy::Stop() { impl_->Stop(); }

}  // namespace ringleader::devcluster
