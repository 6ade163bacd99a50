// The TCPStore request decoder and reply encoders. The byte strings below were recorded from
// real clients (PyTorch 1.13's and 2.15's torch.distributed.TCPStore talking to their own
// servers through a logging proxy); the real clients against the sidecar's server are
// torch_store_server_test's.
#include "sidecar/rendezvous/torch_store_protocol.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringleader::rendezvous::torch_store {
namespace {

using ::testing::HasSubstr;

std::string Hex(std::string_view hex) {
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return bytes;
}

constexpr std::size_t kBound = 1 << 20;
constexpr std::size_t kFirstBound = 4096;

std::vector<Request> DecodeAll(RequestDecoder& decoder, std::string_view bytes,
                               std::size_t piece = 0) {
  std::vector<Request> requests;
  if (piece == 0) {
    piece = bytes.size() + 1;
  }
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    decoder.Feed(bytes.substr(at, piece));
    while (std::optional<Request> request = decoder.Next()) {
      requests.push_back(std::move(*request));
    }
  }
  return requests;
}

Request Make(Query query, std::vector<std::string> keys = {}, std::vector<std::string> values = {},
             std::int64_t number = 0, std::uint32_t nonce = 0) {
  return Request{query, std::move(keys), std::move(values), number, nonce};
}

// What a 2.15 client sent for set, get (a WAIT then the GET), add, compare_set, num_keys,
// delete_key, a wait that timed out (then CANCEL_WAIT), check, append, multi_get, multi_set,
// queue_push + queue_len (in one write), queue_pop, list_keys and barrier, after its opening.
const char kTorch2Session[] =
    "00cef7853c0d14590000"
    "0102000000000000002f6b01000000000000007606010000000000000002000000000000002f6b"
    "0302000000000000002f6b"
    "0402000000000000002f6e0500000000000000"
    "0202000000000000002f6b010000000000000076010000000000000077"
    "07"
    "0802000000000000002f6e"
    "06010000000000000008000000000000002f6d697373696e67"
    "0c"
    "05020000000000000002000000000000002f6b03000000000000002f7a7a"
    "0902000000000000002f6b010000000000000078"
    "0a010000000000000002000000000000002f6b"
    "0b020000000000000002000000000000002f6101000000000000003102000000000000002f62010000000000000032"
    "0e02000000000000002f7104000000000000006974656d1002000000000000002f71"
    "0f02000000000000002f71"
    "11"
    "1204000000000000002f6261720100000000000000";

std::vector<Request> Torch2SessionRequests() {
  return {
      Make(Query::kValidate, {}, {}, 0, kValidationMagic),
      Make(Query::kPing, {}, {}, 0, 0x5914),
      Make(Query::kSet, {"/k"}, {"v"}),
      Make(Query::kWait, {"/k"}),
      Make(Query::kGet, {"/k"}),
      Make(Query::kAdd, {"/n"}, {}, 5),
      Make(Query::kCompareSet, {"/k"}, {"v", "w"}),
      Make(Query::kGetNumKeys),
      Make(Query::kDeleteKey, {"/n"}),
      Make(Query::kWait, {"/missing"}),
      Make(Query::kCancelWait),
      Make(Query::kCheck, {"/k", "/zz"}),
      Make(Query::kAppend, {"/k"}, {"x"}),
      Make(Query::kMultiGet, {"/k"}),
      Make(Query::kMultiSet, {"/a", "/b"}, {"1", "2"}),
      Make(Query::kQueuePush, {"/q"}, {"item"}),
      Make(Query::kQueueLen, {"/q"}),
      Make(Query::kQueuePop, {"/q"}),
      Make(Query::kListKeys),
      Make(Query::kBarrier, {"/bar"}, {}, 1),
  };
}

// What a 1.13 client sent for set, get, add, compare_set, num_keys, delete_key and wait.
const char kTorch1Session[] =
    "0002000000000000002f6b01000000000000007605010000000000000002000000000000002f6b"
    "0202000000000000002f6b"
    "0302000000000000002f6e0500000000000000"
    "0102000000000000002f6b010000000000000076010000000000000077"
    "06"
    "0802000000000000002f6e"
    "05010000000000000002000000000000002f6b";

std::vector<Request> Torch1SessionRequests() {
  return {
      Make(Query::kSet, {"/k"}, {"v"}),
      Make(Query::kWait, {"/k"}),
      Make(Query::kGet, {"/k"}),
      Make(Query::kAdd, {"/n"}, {}, 5),
      Make(Query::kCompareSet, {"/k"}, {"v", "w"}),
      Make(Query::kGetNumKeys),
      Make(Query::kDeleteKey, {"/n"}),
      Make(Query::kWait, {"/k"}),
  };
}

TEST(TorchStoreProtocolTest, DecodesEveryRequestARealTorch2ClientSent) {
  RequestDecoder decoder(kBound, kFirstBound);
  EXPECT_EQ(DecodeAll(decoder, Hex(kTorch2Session)), Torch2SessionRequests());
  EXPECT_EQ(decoder.dialect(), Dialect::kTorch2);
  EXPECT_FALSE(decoder.failed());
}

TEST(TorchStoreProtocolTest, DecodesEveryRequestARealTorch1ClientSent) {
  RequestDecoder decoder(kBound, kFirstBound);
  EXPECT_EQ(DecodeAll(decoder, Hex(kTorch1Session)), Torch1SessionRequests());
  EXPECT_EQ(decoder.dialect(), Dialect::kTorch1);
  EXPECT_FALSE(decoder.failed());
}

// A 1.13 SET opens with byte 0 as a 2.x VALIDATE does; its key length is not the magic.
TEST(TorchStoreProtocolTest, ATorch1SetIsNotTakenForValidation) {
  RequestDecoder decoder(kBound, kFirstBound);
  decoder.Feed(Hex("0002000000"));  // the five bytes that decide
  EXPECT_EQ(decoder.dialect(), Dialect::kTorch1);
  EXPECT_FALSE(decoder.Next());
  decoder.Feed(Hex("000000002f6b0100000000000000"));
  EXPECT_FALSE(decoder.Next());
  decoder.Feed(Hex("76"));
  EXPECT_EQ(decoder.Next(), Make(Query::kSet, {"/k"}, {"v"}));
}

TEST(TorchStoreProtocolTest, TheDialectWaitsForFiveBytesWhenTheFirstIsZero) {
  RequestDecoder decoder(kBound, kFirstBound);
  decoder.Feed(Hex("00cef785"));
  EXPECT_EQ(decoder.dialect(), Dialect::kUndetermined);
  decoder.Feed(Hex("3c"));
  EXPECT_EQ(decoder.dialect(), Dialect::kTorch2);
  EXPECT_EQ(decoder.Next(), Make(Query::kValidate, {}, {}, 0, kValidationMagic));
}

TEST(TorchStoreProtocolTest, ANonZeroFirstByteIsTorch1) {
  RequestDecoder decoder(kBound, kFirstBound);
  decoder.Feed(Hex("06"));
  EXPECT_EQ(decoder.dialect(), Dialect::kTorch1);
  EXPECT_EQ(decoder.Next(), Make(Query::kGetNumKeys));
}

TEST(TorchStoreProtocolTest, AnySplitOfTheStreamGivesTheSameRequests) {
  for (const std::size_t piece : {1, 2, 3, 7, 13}) {
    RequestDecoder torch2(kBound, kFirstBound);
    EXPECT_EQ(DecodeAll(torch2, Hex(kTorch2Session), piece), Torch2SessionRequests()) << piece;
    RequestDecoder torch1(kBound, kFirstBound);
    EXPECT_EQ(DecodeAll(torch1, Hex(kTorch1Session), piece), Torch1SessionRequests()) << piece;
  }
}

TEST(TorchStoreProtocolTest, UnknownQueryTypesCloseNamingTheByteAndDialect) {
  RequestDecoder torch2(kBound, kFirstBound);
  torch2.Feed(Hex("00cef7853c" "13"));
  EXPECT_EQ(torch2.Next(), Make(Query::kValidate, {}, {}, 0, kValidationMagic));
  EXPECT_FALSE(torch2.Next());
  ASSERT_TRUE(torch2.failed());
  EXPECT_EQ(torch2.error()->code, DecodeErrorCode::kUnknownQuery);
  EXPECT_EQ(torch2.error()->type_byte, 0x13);
  EXPECT_EQ(torch2.error()->dialect, Dialect::kTorch2);
  EXPECT_EQ(torch2.error()->message, "unknown query type 19 (0x13) in the torch2 dialect");
  EXPECT_FALSE(torch2.Feed("more"));

  RequestDecoder torch1(kBound, kFirstBound);
  EXPECT_FALSE(torch1.Feed(Hex("09")));
  EXPECT_EQ(torch1.error()->message, "unknown query type 9 (0x09) in the torch1 dialect");

  RequestDecoder watch(kBound, kFirstBound);
  EXPECT_FALSE(watch.Feed(Hex("07")));
  EXPECT_EQ(watch.error()->code, DecodeErrorCode::kUnknownQuery);
  EXPECT_THAT(watch.error()->message, HasSubstr("WATCH_KEY"));

  RequestDecoder high(kBound, kFirstBound);
  EXPECT_FALSE(high.Feed(Hex("ff")));
  EXPECT_EQ(high.error()->type_byte, 0xff);
}

TEST(TorchStoreProtocolTest, ALaterValidateIsAProtocolViolation) {
  RequestDecoder decoder(kBound, kFirstBound);
  decoder.Feed(Hex("00cef7853c" "07" "00cef7853c"));
  EXPECT_TRUE(decoder.Next());
  EXPECT_TRUE(decoder.Next());
  EXPECT_FALSE(decoder.Next());
  ASSERT_TRUE(decoder.failed());
  EXPECT_EQ(decoder.error()->code, DecodeErrorCode::kProtocolViolation);
}

// Guards the bad-input acceptance: a length prefix of 2 GiB is refused as soon as its 8 bytes
// are in, and nothing is allocated for it.
TEST(TorchStoreProtocolTest, AHugeLengthIsRefusedBeforeAnythingIsAllocated) {
  RequestDecoder decoder(kBound, kFirstBound);
  decoder.Feed(Hex("00cef7853c"));
  ASSERT_TRUE(decoder.Next());
  EXPECT_FALSE(decoder.Feed(Hex("03" "0000008000000000")));  // GET, key of 2^31 bytes
  EXPECT_EQ(decoder.error()->code, DecodeErrorCode::kTooLarge);
  EXPECT_THAT(decoder.error()->message, HasSubstr("a key of 2147483648 bytes exceeds"));
  EXPECT_LT(decoder.BufferedBytes(), 64u);

  RequestDecoder count(kBound, kFirstBound);
  count.Feed(Hex("00cef7853c"));
  ASSERT_TRUE(count.Next());
  EXPECT_FALSE(count.Feed(Hex("06" "ffffffffffffffff")));  // WAIT for 2^64-1 keys
  EXPECT_EQ(count.error()->code, DecodeErrorCode::kTooLarge);
  EXPECT_THAT(count.error()->message, HasSubstr("wait: 18446744073709551615 keys exceed"));

  RequestDecoder torch1(kBound, kFirstBound);
  EXPECT_FALSE(torch1.Feed(Hex("00" "0000008000000000")));  // 1.13 SET, key of 2 GiB
  EXPECT_EQ(torch1.error()->code, DecodeErrorCode::kTooLarge);
}

TEST(TorchStoreProtocolTest, TheFirstRequestHasTheSmallerBound) {
  const std::string value(8000, 'x');  // beyond kFirstBound, within kBound
  const Request set = Make(Query::kSet, {"/k"}, {value});
  RequestDecoder first(kBound, kFirstBound);
  EXPECT_FALSE(first.Feed(*EncodeRequest(Dialect::kTorch1, set)));
  EXPECT_EQ(first.error()->code, DecodeErrorCode::kTooLarge);

  RequestDecoder later(kBound, kFirstBound);
  later.Feed(*EncodeRequest(Dialect::kTorch1, Make(Query::kGetNumKeys)));
  ASSERT_TRUE(later.Next());
  EXPECT_TRUE(later.decoded_any());
  later.Feed(*EncodeRequest(Dialect::kTorch1, set));
  EXPECT_EQ(later.Next(), set);
}

TEST(TorchStoreProtocolTest, ARequestExactlyAtTheBoundDecodesAndOneByteMoreDoesNot) {
  // GET: 1 type byte + 8 length bytes + the key.
  const std::size_t bound = 100;
  RequestDecoder at(bound, bound);
  at.Feed(*EncodeRequest(Dialect::kTorch1, Make(Query::kGet, {std::string(bound - 9, 'k')})));
  EXPECT_TRUE(at.Next());
  RequestDecoder over(bound, bound);
  EXPECT_FALSE(over.Feed(*EncodeRequest(Dialect::kTorch1, Make(Query::kGet, {std::string(bound - 8, 'k')}))));
}

TEST(TorchStoreProtocolTest, EveryQueryRoundTripsInEachDialectThatHasIt) {
  const std::string binary("a\0b\xff\x80", 5);
  std::vector<Request> requests = {
      Make(Query::kSet, {binary}, {""}),
      Make(Query::kCompareSet, {"k"}, {"", binary}),
      Make(Query::kGet, {""}),
      Make(Query::kAdd, {"c"}, {}, INT64_MIN),
      Make(Query::kCheck, {"a", binary, ""}),
      Make(Query::kWait, {}),
      Make(Query::kGetNumKeys),
      Make(Query::kDeleteKey, {"d"}),
      Make(Query::kAppend, {"a"}, {binary}),
      Make(Query::kMultiGet, {"x", "y"}),
      Make(Query::kMultiSet, {"x", "y"}, {"1", binary}),
      Make(Query::kCancelWait),
      Make(Query::kPing, {}, {}, 0, 0xdeadbeef),
      Make(Query::kQueuePush, {"q"}, {binary}),
      Make(Query::kQueuePop, {"q"}),
      Make(Query::kQueueLen, {"q"}),
      Make(Query::kListKeys),
      Make(Query::kBarrier, {"b"}, {}, 4096),
  };
  for (const Dialect dialect : {Dialect::kTorch2, Dialect::kTorch1}) {
    std::string stream;
    std::vector<Request> expected;
    if (dialect == Dialect::kTorch2) {
      stream = *EncodeRequest(dialect, Make(Query::kValidate, {}, {}, 0, kValidationMagic));
      expected.push_back(Make(Query::kValidate, {}, {}, 0, kValidationMagic));
    }
    for (const Request& request : requests) {
      if (std::optional<std::string> bytes = EncodeRequest(dialect, request)) {
        stream += *bytes;
        expected.push_back(request);
      }
    }
    RequestDecoder decoder(kBound, kFirstBound);
    EXPECT_EQ(DecodeAll(decoder, stream, 5), expected) << DialectName(dialect);
    EXPECT_FALSE(decoder.failed());
  }
  // 1.13 has none of 2.x's additions.
  EXPECT_FALSE(EncodeRequest(Dialect::kTorch1, Make(Query::kAppend, {"a"}, {"b"})));
  EXPECT_FALSE(EncodeRequest(Dialect::kTorch1, Make(Query::kPing)));
}

// The replies the real servers sent in the sessions above, byte for byte.
TEST(TorchStoreProtocolTest, RepliesAreTheBytesPyTorchsServerSends) {
  std::string out;
  AppendUint32(out, 0x5914);
  EXPECT_EQ(out, Hex("14590000"));  // PING
  out.clear();
  AppendString(out, "v");
  EXPECT_EQ(out, Hex("010000000000000076"));  // GET
  out.clear();
  AppendInt64(out, 5);
  EXPECT_EQ(out, Hex("0500000000000000"));  // ADD
  out.clear();
  AppendByte(out, kWaitCanceled);
  EXPECT_EQ(out, Hex("01"));
  out.clear();
  AppendInt64(out, 1);
  AppendString(out, "item");
  EXPECT_EQ(out, Hex("010000000000000004000000000000006974656d"));  // QUEUE_POP
}

TEST(TorchStoreProtocolTest, BufferedBytesFollowWhatArrivedNotWhatWasAnnounced) {
  RequestDecoder decoder(64 << 20, 64 << 20);
  decoder.Feed(Hex("00" "0000000100000000"));  // 1.13 SET, key of 16 MiB announced
  EXPECT_FALSE(decoder.failed());
  EXPECT_LT(decoder.BufferedBytes(), 1024u);
  decoder.Feed(std::string(100000, 'k'));
  EXPECT_LT(decoder.BufferedBytes(), 400000u);
}

TEST(TorchStoreProtocolTest, QueryNamesAreTheMetricsLabels) {
  std::vector<std::string> names;
  for (const Query query : AllQueries()) {
    names.emplace_back(QueryName(query));
  }
  EXPECT_THAT(names, ::testing::ElementsAre("validate", "set", "compare_set", "get", "add",
                                            "check", "wait", "get_num_keys", "delete_key",
                                            "append", "multi_get", "multi_set", "cancel_wait",
                                            "ping", "queue_push", "queue_pop", "queue_len",
                                            "list_keys", "barrier"));
}

}  // namespace
}  // namespace ringleader::rendezvous::torch_store
