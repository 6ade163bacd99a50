// The TCPStore client (torch_store_client.h) against the sidecar's real trainer store
// (TorchStoreServer on a StoreServer's loop, as rank 0's sidecar runs it) and against a real
// PyTorch 2.x server (TCPStore(is_master=True) in .deps/torch-venv, skipped when it is absent):
// every op, the prefix, waits that time out and are cancelled, connecting before the store is up,
// and the errors naming the store and the key.
#include "sidecar/rendezvous/torch_store_client.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/rendezvous/store_server.h"
#include "sidecar/rendezvous/torch_store_server.h"
#include "tests/support/child_process.h"
#include "tests/support/test_environment.h"
#include "tests/support/wait_until.h"

namespace ringleader::rendezvous {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ringleader::testing::ChildExit;
using ringleader::testing::ChildOptions;
using ringleader::testing::ChildProcess;
using ringleader::testing::ReadLog;
using ringleader::testing::WaitUntil;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// rank 0's sidecar in small: the native store with the trainer store as its loop guest.
class TrainerStore {
 public:
  explicit TrainerStore(std::uint16_t port = 0) {
    TorchStoreOptions torch;
    torch.bind_address = "127.0.0.1";
    torch.port = port;
    ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.token = "job-token";
    options.make_guest = TorchStoreServer::GuestFactory(std::move(torch));
    server_ = std::make_unique<StoreServer>(std::move(options));
  }
  TorchStoreServer& torch() const { return *static_cast<TorchStoreServer*>(server_->guest()); }
  std::uint16_t port() const { return torch().port(); }

 private:
  std::unique_ptr<StoreServer> server_;
};

TorchStoreClientOptions OptionsFor(std::uint16_t port, std::string prefix = "",
                                   milliseconds connect_for = seconds(10)) {
  TorchStoreClientOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  options.key_prefix = std::move(prefix);
  options.deadline = Clock::now() + connect_for;
  options.io_timeout = seconds(10);
  return options;
}

std::unique_ptr<TorchStoreClient> ConnectOrDie(const TorchStoreClientOptions& options) {
  auto client = TorchStoreClient::Connect(options);
  if (!client) {
    ADD_FAILURE() << client.error();
    return nullptr;
  }
  return std::move(client).value();
}

TEST(TorchStoreClientTest, SetGetAddAndCheckRoundTripUnderThePrefix) {
  TrainerStore store;
  auto client = ConnectOrDie(OptionsFor(store.port(), "/worker/attempt_2/"));
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Set("a", std::string("one\0two", 7)));
  const auto got = client->Get("a", seconds(5));
  ASSERT_TRUE(got) << got.error();
  EXPECT_EQ(got.value(), std::string("one\0two", 7));
  EXPECT_EQ(client->Add("counter", 2).value(), 2);
  EXPECT_EQ(client->Add("counter", -5).value(), -3);
  EXPECT_TRUE(client->Check({"a", "counter"}).value());
  EXPECT_FALSE(client->Check({"a", "nobody-set-this"}).value());

  // The keys are stored whole, prefix and all: a client without one reads them there.
  auto bare = ConnectOrDie(OptionsFor(store.port()));
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->Get("/worker/attempt_2/a", seconds(5)).value(), std::string("one\0two", 7));
  EXPECT_EQ(bare->Get("/worker/attempt_2/counter", seconds(5)).value(), "-3");
  EXPECT_FALSE(bare->Check({"a"}).value());
}

TEST(TorchStoreClientTest, AWaitEndsWhenAnotherClientSetsTheKeys) {
  TrainerStore store;
  auto waiter = ConnectOrDie(OptionsFor(store.port(), "p/"));
  auto setter = ConnectOrDie(OptionsFor(store.port(), "p/"));
  ASSERT_TRUE(waiter && setter);
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_TRUE(setter->Set("x", "1"));
    EXPECT_TRUE(setter->Set("y", "2"));
  });
  const auto waited = waiter->Wait({"x", "y"}, seconds(10));
  later.join();
  ASSERT_TRUE(waited) << waited.error();
  EXPECT_FALSE(waited.value().timed_out);
  // Get waits for its key as PyTorch's does, rather than reading a missing key as empty.
  std::thread late_value([&] {
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_TRUE(setter->Set("z", "3"));
  });
  EXPECT_EQ(waiter->Get("z", seconds(10)).value(), "3");
  late_value.join();
}

// The client cancels a timed-out wait (CANCEL_WAIT) so the store holds nothing for it and the
// connection stays in step: the next ops answer right.
TEST(TorchStoreClientTest, ATimedOutWaitNamesTheMissingKeysAndLeavesTheConnectionUsable) {
  TrainerStore store;
  auto client = ConnectOrDie(OptionsFor(store.port(), "p/"));
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Set("here", "1"));
  const auto started = Clock::now();
  const auto waited = client->Wait({"here", "missing-1", "missing-2"}, milliseconds(300));
  const auto took = Clock::now() - started;
  ASSERT_TRUE(waited) << waited.error();
  EXPECT_TRUE(waited.value().timed_out);
  EXPECT_THAT(waited.value().missing_keys, ElementsAre("missing-1", "missing-2"));
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, seconds(5));
  EXPECT_TRUE(WaitUntil([&] { return store.torch().Stats().pending == 0; }, seconds(5),
                        milliseconds(10)))
      << "the cancelled wait is still pending on the store";
  EXPECT_EQ(client->Add("n", 1).value(), 1);
  EXPECT_EQ(client->Get("here", seconds(1)).value(), "1");

  const auto get = client->Get("never", milliseconds(200));
  ASSERT_FALSE(get);
  EXPECT_EQ(get.error(), "TCPStore 127.0.0.1:" + std::to_string(store.port()) +
                             ": get of p/never: the key was not set within 200 ms");
  EXPECT_EQ(client->Add("n", 1).value(), 2) << "a Get that timed out leaves the connection good";
}

// Other ranks' trainers can start before rank 0's Pod, and with it the store: Connect retries.
TEST(TorchStoreClientTest, ConnectRetriesUntilTheStoreIsUp) {
  const auto port = static_cast<std::uint16_t>(ringleader::testing::FreePort());
  std::atomic<int> failed_attempts{0};
  TorchStoreClientOptions options = OptionsFor(port, "", seconds(20));
  options.on_attempt_failed = [&](std::string_view) { ++failed_attempts; };
  Result<std::unique_ptr<TorchStoreClient>> client = Result<std::unique_ptr<TorchStoreClient>>::Failure("not run");
  std::thread connecting([&] { client = TorchStoreClient::Connect(options); });
  ASSERT_TRUE(WaitUntil([&] { return failed_attempts.load() >= 2; }, seconds(10), milliseconds(10)));
  TrainerStore store(port);
  connecting.join();
  ASSERT_TRUE(client) << client.error();
  ASSERT_TRUE(client.value()->Set("k", "v"));
  EXPECT_EQ(client.value()->Get("k", seconds(1)).value(), "v");
}

TEST(TorchStoreClientTest, ConnectGivesUpAtItsDeadlineNamingTheStoreAndWhy) {
  const auto port = ringleader::testing::FreePort();
  const auto client =
      TorchStoreClient::Connect(OptionsFor(static_cast<std::uint16_t>(port), "", milliseconds(300)));
  ASSERT_FALSE(client);
  EXPECT_THAT(client.error(), HasSubstr("TCPStore 127.0.0.1:" + std::to_string(port) + " unreachable for"));
  EXPECT_THAT(client.error(), HasSubstr("connection refused"));
}

// A server that accepts but speaks another protocol (the native store) is not taken for
// a TCPStore; the error says the validation failed.
TEST(TorchStoreClientTest, AServerOfAnotherProtocolFailsTheValidation) {
  StoreServer native([] {
    ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.token = "job-token";
    return options;
  }());
  TorchStoreClientOptions options = OptionsFor(native.port(), "", milliseconds(1500));
  options.io_timeout = milliseconds(300);
  const auto client = TorchStoreClient::Connect(options);
  ASSERT_FALSE(client);
  EXPECT_THAT(client.error(), HasSubstr("validation:"));
}

TEST(TorchStoreClientTest, AStopEndsAWaitWithoutTimeout) {
  TrainerStore store;
  std::atomic<bool> stop{false};
  TorchStoreClientOptions options = OptionsFor(store.port());
  options.stop = &stop;
  auto client = ConnectOrDie(options);
  ASSERT_TRUE(client);
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    stop = true;
  });
  const auto started = Clock::now();
  const auto waited = client->Wait({"never"}, kWaitForever);
  stopper.join();
  ASSERT_FALSE(waited);
  EXPECT_THAT(waited.error(), HasSubstr("stopped"));
  EXPECT_LT(Clock::now() - started, seconds(2));
}

TEST(TorchStoreClientTest, AStoreThatWentAwayFailsEveryLaterOpNamingTheStoreAndKey) {
  auto store = std::make_unique<TrainerStore>();
  const std::string name = "TCPStore 127.0.0.1:" + std::to_string(store->port());
  auto client = ConnectOrDie(OptionsFor(store->port(), "p/"));
  ASSERT_TRUE(client);
  store.reset();
  const auto got = client->Get("k", seconds(5));
  ASSERT_FALSE(got);
  EXPECT_THAT(got.error(), HasSubstr(name + ": get of p/k: "));
  const auto added = client->Add("other", 1);
  ASSERT_FALSE(added);
  EXPECT_EQ(added.error(), got.error()) << "the first failure sticks";
}

TEST(TorchStoreClientTest, AValueBeyondTheBoundIsRefusedBeforeItIsRead) {
  TrainerStore store;
  TorchStoreClientOptions options = OptionsFor(store.port());
  options.max_value_bytes = 100;
  auto client = ConnectOrDie(options);
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Set("big", std::string(1000, 'x')));
  const auto got = client->Get("big", seconds(5));
  ASSERT_FALSE(got);
  EXPECT_THAT(got.error(), HasSubstr("a reply of 1000 bytes exceeds the bound of 100"));
}

// ---- Against PyTorch's own server ----

std::filesystem::path VenvPython() {
  return std::filesystem::path(RINGLEADER_SOURCE_DIR) / ".deps/torch-venv/bin/python";
}

// A real TCPStore(is_master=True) on an ephemeral port: it says its port, writes a key for the
// C++ client, waits for the client's "cxx/done" and checks what the client wrote.
constexpr char kPythonServer[] = R"(
import datetime, torch.distributed as d
s = d.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
               timeout=datetime.timedelta(seconds=120))
print("port", s.port, flush=True)
s.set("/worker/attempt_1/py/hello", "from python")
s.wait(["/worker/attempt_1/cxx/done"])
assert s.get("/worker/attempt_1/cxx/set") == b"from c++", s.get("/worker/attempt_1/cxx/set")
assert s.add("/worker/attempt_1/cxx/counter", 0) == 5
print("python saw the c++ client's keys", flush=True)
)";

TEST(TorchStoreClientPyTorchTest, EveryOpWorksAgainstPyTorchsOwnServer) {
  if (!std::filesystem::exists(VenvPython())) {
    GTEST_SKIP() << VenvPython() << " is missing (scripts/setup installs the project's PyTorch "
                 << "there): the client was not checked against PyTorch's own TCPStore server";
  }
  const std::filesystem::path dir = ringleader::testing::MakeTempDir("torch-store-client");
  ChildOptions child;
  child.binary = VenvPython();
  child.args = {"-c", kPythonServer};
  child.log = dir / "server.log";
  ChildProcess server(child);
  std::uint16_t port = 0;
  const bool listening = WaitUntil(
      [&] {
        std::smatch match;
        const std::string log = ReadLog(child.log);
        if (std::regex_search(log, match, std::regex("port ([0-9]+)"))) {
          port = static_cast<std::uint16_t>(std::stoi(match[1]));
        }
        return port != 0 || !server.Running();
      },
      seconds(180), milliseconds(100));
  ASSERT_TRUE(listening && port != 0) << ReadLog(child.log);

  auto client = ConnectOrDie(OptionsFor(port, "/worker/attempt_1/"));
  ASSERT_TRUE(client) << ReadLog(child.log);
  const auto hello = client->Get("py/hello", seconds(30));
  ASSERT_TRUE(hello) << hello.error();
  EXPECT_EQ(hello.value(), "from python");
  ASSERT_TRUE(client->Set("cxx/set", "from c++"));
  EXPECT_EQ(client->Add("cxx/counter", 2).value(), 2);
  EXPECT_EQ(client->Add("cxx/counter", 3).value(), 5);
  EXPECT_TRUE(client->Check({"py/hello", "cxx/set"}).value());
  EXPECT_FALSE(client->Check({"py/nothing"}).value());
  // PyTorch's server takes the cancel of a timed-out wait as its own client's.
  const auto waited = client->Wait({"py/hello", "py/nothing"}, milliseconds(300));
  ASSERT_TRUE(waited) << waited.error();
  EXPECT_TRUE(waited.value().timed_out);
  EXPECT_THAT(waited.value().missing_keys, ElementsAre("py/nothing"));
  EXPECT_EQ(client->Get("cxx/set", seconds(5)).value(), "from c++");
  ASSERT_TRUE(client->Set("cxx/done", "1"));

  const std::optional<ChildExit> exit = server.WaitFor(seconds(60));
  if (!exit) {
    server.Signal(SIGKILL);
  }
  ASSERT_TRUE(exit && exit->exited() && exit->exit_code == 0) << ReadLog(child.log);
  EXPECT_THAT(ReadLog(child.log), HasSubstr("python saw the c++ client's keys"));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace ringleader::rendezvous
