#include "sidecar/rendezvous/protocol.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringleader::rendezvous {
namespace {

using ::testing::HasSubstr;

// Big-endian helpers to hand-build bad input.
std::string U32(std::uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
  }
  return out;
}

std::string U16(std::uint16_t v) {
  return {static_cast<char>(v >> 8), static_cast<char>(v & 0xFF)};
}

std::string Header(std::uint32_t magic, std::uint16_t version, std::uint16_t type,
                   std::uint32_t length) {
  return U32(magic) + U16(version) + U16(type) + U32(length);
}

Nonce Counting(std::uint8_t start) {
  Nonce n{};
  for (std::size_t i = 0; i < n.size(); ++i) {
    n[i] = static_cast<std::uint8_t>(start + i);
  }
  return n;
}

// One of every message type, with awkward contents: empty fields, NUL and high bytes, extremes.
std::vector<Message> AllMessages() {
  const std::string binary("a\0b\xff\x80", 5);
  Proof proof;
  proof.hmac = Counting(200);
  return {
      Hello{3, 8},
      Hello{0, 1},
      Hello{7, 8, kAnyAttempt, INT64_MAX, Counting(9), Counting(41)},
      Challenge{Counting(0)},
      proof,
      Welcome{},
      Refused{"bad proof"},
      Set{"job/x/rank/0", binary},
      Set{"", ""},
      Get{binary},
      Wait{{"a", "", binary, std::string(kMaxKeyBytes, 'k')}, 30000},
      Wait{{}, 0},
      Add{"counter", -5},
      Add{"counter", INT64_MIN},
      Add{"counter", INT64_MAX},
      CompareSet{"k", "", binary},
      Barrier{"init", 0xFFFFFFFFu},
      Ok{},
      Value{std::string(kMaxValueBytes, 'v')},
      Counter{-1},
      Counter{INT64_MIN},
      NotFound{},
      TimedOut{"ranks 1,3"},
      Error{"store: key too long"},
  };
}

Frame FrameOf(const Message& m) {
  Frame f;
  f.type = std::visit([](const auto& x) { return x.kType; }, m);
  f.payload = std::visit([](const auto& x) { return x.Encode(); }, m);
  return f;
}

TEST(RendezvousProtocolTest, EveryMessageRoundTrips) {
  const std::vector<Message> messages = AllMessages();
  // Every type appears at least once.
  std::vector<bool> seen(std::variant_size_v<Message>, false);
  for (const Message& m : messages) {
    seen[m.index()] = true;
    const Frame frame = FrameOf(m);
    Result<Message> decoded = DecodeMessage(frame);
    ASSERT_TRUE(decoded.ok()) << MessageTypeName(frame.type) << ": " << decoded.error();
    EXPECT_EQ(decoded.value(), m) << MessageTypeName(frame.type);
    EXPECT_TRUE(decoded.error().empty());
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_TRUE(seen[i]) << "no round trip for variant index " << i;
  }
}

TEST(RendezvousProtocolTest, TypedDecodeAndEncodeMessageAgree) {
  const Set set{"key", "value"};
  const std::string wire = EncodeMessage(set);
  EXPECT_EQ(wire, EncodeMessage(Message(set)));
  // Header bytes exactly as the spec says.
  EXPECT_EQ(wire.substr(0, 12),
            Header(0x524C525A, kVersion, 16, static_cast<std::uint32_t>(wire.size() - 12)));
  EXPECT_EQ(wire.substr(0, 4), "RLRZ");
  // Payload layout: u32 length-prefixed key then value.
  EXPECT_EQ(wire.substr(12), U32(3) + "key" + U32(5) + "value");
  Result<Set> decoded = Set::Decode(wire.substr(12));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded.value(), set);
}

TEST(RendezvousProtocolTest, IntegersAreBigEndian) {
  Hello hello{0x01020304, 0x05060708, 0x090A0B0C, 0x0102030405060708};
  hello.nonce = Counting(0);
  hello.early_proof = Counting(100);
  const std::string encoded = hello.Encode();
  ASSERT_EQ(encoded.size(), kHelloPayloadBytes);
  EXPECT_EQ(encoded.substr(0, 20),
            std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0A\x0B\x0C"
                        "\x01\x02\x03\x04\x05\x06\x07\x08", 20));
  EXPECT_EQ(encoded.substr(20, 2), std::string("\x00\x01", 2));  // the nonce, then the proof
  EXPECT_EQ(encoded.substr(52, 2), std::string("\x64\x65", 2));
  EXPECT_EQ(Counter{-2}.Encode(), std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));
}

std::string AllFramesConcatenated(std::vector<Frame>* frames) {
  std::string wire;
  for (const Message& m : AllMessages()) {
    frames->push_back(FrameOf(m));
    wire += EncodeMessage(m);
  }
  return wire;
}

std::vector<Frame> Drain(FrameDecoder& decoder) {
  std::vector<Frame> out;
  while (std::optional<Frame> f = decoder.Next()) {
    out.push_back(std::move(*f));
  }
  return out;
}

TEST(RendezvousProtocolTest, DecoderWholeStreamAtOnce) {
  std::vector<Frame> want;
  const std::string wire = AllFramesConcatenated(&want);
  FrameDecoder decoder;
  ASSERT_TRUE(decoder.Feed(wire));
  EXPECT_EQ(Drain(decoder), want);
  EXPECT_FALSE(decoder.Next().has_value());
  EXPECT_FALSE(decoder.failed());
}

TEST(RendezvousProtocolTest, DecoderOneByteAtATime) {
  std::vector<Frame> want;
  const std::string wire = AllFramesConcatenated(&want);
  FrameDecoder decoder;
  std::vector<Frame> got;
  for (char c : wire) {
    ASSERT_TRUE(decoder.Feed(std::string_view(&c, 1)));
    for (Frame& f : Drain(decoder)) {
      got.push_back(std::move(f));
    }
  }
  EXPECT_EQ(got, want);
}

TEST(RendezvousProtocolTest, DecoderRandomChunkSplits) {
  std::vector<Frame> want;
  const std::string wire = AllFramesConcatenated(&want);
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 50; ++trial) {
    std::uniform_int_distribution<std::size_t> chunk(0, trial % 2 == 0 ? 20 : 70000);
    FrameDecoder decoder;
    std::vector<Frame> got;
    std::size_t at = 0;
    while (at < wire.size()) {
      const std::size_t n = std::min(chunk(rng), wire.size() - at);
      ASSERT_TRUE(decoder.Feed(std::string_view(wire).substr(at, n)));
      at += n;
      for (Frame& f : Drain(decoder)) {
        got.push_back(std::move(f));
      }
    }
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

TEST(RendezvousProtocolTest, PartialFrameIsHeldUntilComplete) {
  const std::string wire = EncodeMessage(Get{"abc"});
  FrameDecoder decoder;
  ASSERT_TRUE(decoder.Feed(wire.substr(0, wire.size() - 1)));
  EXPECT_FALSE(decoder.Next().has_value());
  ASSERT_TRUE(decoder.Feed(wire.substr(wire.size() - 1)));
  std::optional<Frame> f = decoder.Next();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->type, MessageType::kGet);
}

FrameError FeedExpectingError(std::string_view bytes,
                              std::size_t max_payload = kDefaultMaxPayload) {
  FrameDecoder decoder(max_payload);
  EXPECT_FALSE(decoder.Feed(bytes));
  EXPECT_TRUE(decoder.failed());
  EXPECT_TRUE(decoder.error().has_value());
  return decoder.error().value_or(FrameError{});
}

TEST(RendezvousProtocolTest, BadMagic) {
  const FrameError e = FeedExpectingError(Header(0x48545450, kVersion, 32, 0));  // "HTTP"
  EXPECT_EQ(e.code, FrameErrorCode::kBadMagic);
  EXPECT_THAT(e.message, HasSubstr("header.magic"));
  EXPECT_THAT(e.message, HasSubstr("0x48545450"));
}

TEST(RendezvousProtocolTest, UnsupportedVersion) {
  // Version 1, whose Hello asked for a Challenge, is no longer spoken (protocol.h).
  const FrameError e = FeedExpectingError(Header(kMagic, 1, 32, 0));
  EXPECT_EQ(e.code, FrameErrorCode::kUnsupportedVersion);
  EXPECT_EQ(e.message, "header.version: 1 is not supported (want 2)");
}

TEST(RendezvousProtocolTest, UnknownType) {
  for (std::uint16_t type : {0, 6, 15, 22, 31, 38, 0xFFFF}) {
    const FrameError e = FeedExpectingError(Header(kMagic, kVersion, type, 0));
    EXPECT_EQ(e.code, FrameErrorCode::kUnknownType) << type;
    EXPECT_EQ(e.message, "header.type: " + std::to_string(type) + " is not a known message type");
  }
}

TEST(RendezvousProtocolTest, HugePayloadIsRefusedFromTheHeaderWithoutAllocating) {
  FrameDecoder decoder;
  // Only the header arrives: the error must come now, not after 4 GiB.
  EXPECT_FALSE(decoder.Feed(Header(kMagic, kVersion, static_cast<std::uint16_t>(MessageType::kSet),
                                   0xFFFFFFFFu)));
  ASSERT_TRUE(decoder.failed());
  EXPECT_EQ(decoder.error()->code, FrameErrorCode::kPayloadTooLarge);
  EXPECT_EQ(decoder.error()->message,
            "header.length: 4294967295 exceeds " + std::to_string(kDefaultMaxPayload));
  EXPECT_LT(decoder.BufferCapacityForTest(), 64u);
}

TEST(RendezvousProtocolTest, PayloadBoundIsConfigurableAndInclusive) {
  {
    FrameDecoder decoder(16);
    ASSERT_TRUE(decoder.Feed(Header(kMagic, kVersion, 33, 16) + std::string(16, 'x')));
    EXPECT_TRUE(decoder.Next().has_value());
  }
  const FrameError e = FeedExpectingError(Header(kMagic, kVersion, 33, 17), 16);
  EXPECT_EQ(e.code, FrameErrorCode::kPayloadTooLarge);
  EXPECT_EQ(e.message, "header.length: 17 exceeds 16");
}

TEST(RendezvousProtocolTest, PayloadGrowsOnlyWithArrivedBytes) {
  FrameDecoder decoder;
  // A legal header announcing a large payload, then only a few bytes of it.
  ASSERT_TRUE(decoder.Feed(Header(kMagic, kVersion, 33, static_cast<std::uint32_t>(kMaxValueBytes)) +
                           "abcd"));
  EXPECT_LT(decoder.BufferCapacityForTest(), 4096u);
}

// The server's handshake bounds: before the Welcome only the expected message, at its size.
TEST(RendezvousProtocolTest, ExpectOnlyRefusesAnotherTypeOrALongerPayloadFromTheHeader) {
  const auto hello = static_cast<std::uint16_t>(MessageType::kHello);
  const auto set = static_cast<std::uint16_t>(MessageType::kSet);
  {
    FrameDecoder decoder;
    decoder.ExpectOnly(MessageType::kHello, kHelloPayloadBytes);
    ASSERT_TRUE(decoder.Feed(EncodeMessage(Hello{1, 2})));
    EXPECT_EQ(decoder.Next(), (Frame{MessageType::kHello, Hello{1, 2}.Encode()}));
  }
  {
    FrameDecoder decoder;
    decoder.ExpectOnly(MessageType::kHello, kHelloPayloadBytes);
    EXPECT_FALSE(decoder.Feed(Header(kMagic, kVersion, hello, 2 * 1024 * 1024)));
    EXPECT_EQ(decoder.error()->code, FrameErrorCode::kPayloadTooLarge);
    EXPECT_EQ(decoder.error()->message, "header.length: 2097152 exceeds 84 (a Hello)");
  }
  {
    FrameDecoder decoder;
    decoder.ExpectOnly(MessageType::kProof, kProofBytes);
    EXPECT_FALSE(decoder.Feed(Header(kMagic, kVersion, set, 16)));
    EXPECT_EQ(decoder.error()->code, FrameErrorCode::kUnexpectedType);
    EXPECT_EQ(decoder.error()->message, "header.type: expected Proof, got Set");
  }
  {
    // Back to the constructor's bound once the handshake is done.
    FrameDecoder decoder(1024);
    decoder.ExpectOnly(MessageType::kProof, kProofBytes);
    decoder.ExpectAny();
    ASSERT_TRUE(decoder.Feed(Header(kMagic, kVersion, set, 1024) + std::string(1024, 'v')));
    EXPECT_TRUE(decoder.Next().has_value());
    EXPECT_FALSE(decoder.Feed(Header(kMagic, kVersion, set, 1025)));
  }
}

TEST(RendezvousProtocolTest, BytesToFrameEndCountsTheRestOfTheHeaderAndThePayload) {
  FrameDecoder decoder(1000);
  decoder.ExpectOnly(MessageType::kProof, kProofBytes);
  EXPECT_EQ(decoder.BytesToFrameEnd(), kHeaderBytes + kProofBytes);
  const std::string proof = EncodeMessage(Proof{});
  ASSERT_TRUE(decoder.Feed(proof.substr(0, 5)));
  EXPECT_EQ(decoder.BytesToFrameEnd(), kHeaderBytes - 5 + kProofBytes);
  ASSERT_TRUE(decoder.Feed(proof.substr(5, kHeaderBytes - 5 + 2)));
  EXPECT_EQ(decoder.BytesToFrameEnd(), kProofBytes - 2);
  ASSERT_TRUE(decoder.Feed(proof.substr(kHeaderBytes + 2)));
  EXPECT_TRUE(decoder.Next().has_value());
  decoder.ExpectAny();
  EXPECT_EQ(decoder.BytesToFrameEnd(), kHeaderBytes + 1000);
}

TEST(RendezvousProtocolTest, BufferedBytesFollowsTheFrameInProgressAndIsEmptyAfterNext) {
  FrameDecoder decoder;
  EXPECT_EQ(decoder.BufferedBytes(), 0U);
  const std::string set = EncodeMessage(Set{"key", std::string(1000, 'v')});
  ASSERT_TRUE(decoder.Feed(set.substr(0, 600)));
  EXPECT_GE(decoder.BufferedBytes(), 600U - kHeaderBytes);
  EXPECT_LE(decoder.BufferedBytes(), 2 * 600U);
  ASSERT_TRUE(decoder.Feed(set.substr(600)));
  EXPECT_GE(decoder.BufferedBytes(), set.size() - kHeaderBytes);  // complete, not yet taken
  ASSERT_TRUE(decoder.Next().has_value());
  EXPECT_EQ(decoder.BufferedBytes(), 0U);
}

TEST(RendezvousProtocolTest, DecoderStaysFailed) {
  FrameDecoder decoder;
  const std::string good = EncodeMessage(Ok{});
  // A good frame, then garbage, in one chunk: the good frame is still delivered.
  EXPECT_FALSE(decoder.Feed(good + Header(0, kVersion, 32, 0)));
  EXPECT_TRUE(decoder.Next().has_value());
  EXPECT_FALSE(decoder.Next().has_value());
  // Valid input afterwards is ignored.
  EXPECT_FALSE(decoder.Feed(good));
  EXPECT_FALSE(decoder.Next().has_value());
  EXPECT_EQ(decoder.error()->code, FrameErrorCode::kBadMagic);
}

TEST(RendezvousProtocolTest, TruncatedField) {
  const std::string payload = Set{"key", "value"}.Encode();
  Result<Set> r = Set::Decode(payload.substr(0, payload.size() - 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "Set.value: length 5 exceeds the 4 bytes left in the payload");

  Result<Hello> h = Hello::Decode(std::string("\0\0\0\1\0\0", 6));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), "Hello.world_size: truncated (needs 4 bytes, 2 left)");

  Result<Challenge> c = Challenge::Decode(std::string(31, 'n'));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error(), "Challenge.nonce: truncated (needs 32 bytes, 31 left)");

  Result<Add> a = Add::Decode(U32(1) + "k" + "1234567");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error(), "Add.delta: truncated (needs 8 bytes, 7 left)");

  Result<Get> g = Get::Decode("");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), "Get.key: truncated (needs 4 bytes, 0 left)");
}

TEST(RendezvousProtocolTest, FieldLengthBeyondPayload) {
  // The key claims 4000 bytes (within the bound) but 3 are present.
  Result<Get> g = Get::Decode(U32(4000) + "abc");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), "Get.key: length 4000 exceeds the 3 bytes left in the payload");

  Result<CompareSet> cs = CompareSet::Decode(U32(1) + "k" + U32(0) + U32(100) + "x");
  ASSERT_FALSE(cs.ok());
  EXPECT_EQ(cs.error(), "CompareSet.desired: length 100 exceeds the 1 bytes left in the payload");
}

TEST(RendezvousProtocolTest, TrailingBytes) {
  Result<Get> g = Get::Decode(Get{"k"}.Encode() + "zz");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error(), "Get: 2 trailing bytes after the last field");

  Result<Ok> ok = Ok::Decode("x");
  ASSERT_FALSE(ok.ok());
  EXPECT_EQ(ok.error(), "Ok: 1 trailing bytes after the last field");

  Result<Message> m = DecodeMessage(Frame{MessageType::kWelcome, "?"});
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.error(), HasSubstr("Welcome"));
}

TEST(RendezvousProtocolTest, OversizedFields) {
  Result<Set> s = Set::Decode(Set{std::string(5000, 'k'), "v"}.Encode());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "Set.key: length 5000 exceeds 4096");

  // Exactly at the bound is fine.
  EXPECT_TRUE(Set::Decode(Set{std::string(kMaxKeyBytes, 'k'), "v"}.Encode()).ok());

  Result<Value> v = Value::Decode(Value{std::string(kMaxValueBytes + 1, 'v')}.Encode());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error(), "Value.value: length 1048577 exceeds 1048576");

  // A length far past the bound is refused from the prefix alone (no 4 GiB string).
  Result<Set> huge = Set::Decode(U32(0xFFFFFFFFu));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error(), "Set.key: length 4294967295 exceeds 4096");

  Result<Barrier> b = Barrier::Decode(Barrier{std::string(kMaxKeyBytes + 1, 'b'), 1}.Encode());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error(), "Barrier.name: length 4097 exceeds 4096");

  Result<Wait> w = Wait::Decode(Wait{{"a", std::string(kMaxKeyBytes + 1, 'k')}, 1}.Encode());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error(), "Wait.keys[1]: length 4097 exceeds 4096");
}

TEST(RendezvousProtocolTest, WaitKeyCountIsBounded) {
  Result<Wait> over = Wait::Decode(U32(kMaxWaitKeys + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error(), "Wait.keys: count 4097 exceeds 4096");

  // A count within the bound but larger than the payload could hold is refused before reserving.
  Result<Wait> unfit = Wait::Decode(U32(4096) + U32(0) + U32(0));
  ASSERT_FALSE(unfit.ok());
  EXPECT_EQ(unfit.error(), "Wait.keys: count 4096 does not fit in the 8 bytes left in the payload");

  Wait full;
  full.keys.assign(kMaxWaitKeys, "k");
  full.timeout_ms = 7;
  Result<Wait> ok = Wait::Decode(full.Encode());
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_EQ(ok.value(), full);
}

TEST(RendezvousProtocolTest, HelloRanksAreChecked) {
  Result<Hello> zero = Hello::Decode(Hello{0, 0}.Encode());
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error(), "Hello.world_size: must be at least 1");
  Result<Hello> high = Hello::Decode(Hello{4, 4}.Encode());
  ASSERT_FALSE(high.ok());
  EXPECT_EQ(high.error(), "Hello.rank: 4 is not below world_size 4");
  Result<Hello> before_1970 = Hello::Decode(Hello{0, 1, 0, -1}.Encode());
  ASSERT_FALSE(before_1970.ok());
  EXPECT_EQ(before_1970.error(), "Hello.sent_at_ms: must not be negative");
  // A version 1 Hello (rank and world size only) is short of the early proof's fields.
  Result<Hello> short_hello = Hello::Decode(Hello{0, 1}.Encode().substr(0, 8));
  ASSERT_FALSE(short_hello.ok());
  EXPECT_THAT(short_hello.error(), HasSubstr("Hello.attempt"));
}

TEST(RendezvousProtocolTest, LargestLegalMessageFitsTheDefaultFrameBound) {
  const CompareSet cs{std::string(kMaxKeyBytes, 'k'), std::string(kMaxValueBytes, 'e'),
                      std::string(kMaxValueBytes, 'd')};
  const std::string wire = EncodeMessage(cs);
  FrameDecoder decoder;
  ASSERT_TRUE(decoder.Feed(wire)) << decoder.error()->message;
  std::optional<Frame> f = decoder.Next();
  ASSERT_TRUE(f.has_value());
  Result<Message> m = DecodeMessage(*f);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(std::get<CompareSet>(m.value()), cs);
}

TEST(RendezvousProtocolTest, RandomPayloadsNeverCrashOrThrow) {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> len(0, 64);
  const std::vector<Message> messages = AllMessages();
  int decoded_ok = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string payload;
    if (i % 2 == 0) {
      // Pure noise.
      const int n = len(rng);
      for (int j = 0; j < n; ++j) {
        payload.push_back(static_cast<char>(byte(rng)));
      }
    } else {
      // A valid payload with a few bytes flipped or cut: exercises the deeper fields.
      payload = FrameOf(messages[static_cast<std::size_t>(i) % messages.size()]).payload;
      if (payload.size() > 4096) {
        payload.resize(4096);
      }
      if (!payload.empty()) {
        for (int flips = 0; flips < 3; ++flips) {
          payload[static_cast<std::size_t>(rng()) % payload.size()] = static_cast<char>(byte(rng));
        }
        if (rng() % 3 == 0) {
          payload.resize(static_cast<std::size_t>(rng()) % payload.size());
        }
      }
    }
    for (std::uint16_t type = 0; type < 40; ++type) {
      if (!IsKnownMessageType(type)) {
        continue;
      }
      const Frame frame{static_cast<MessageType>(type), payload};
      Result<Message> r(Ok{});
      ASSERT_NO_THROW(r = DecodeMessage(frame));
      if (r.ok()) {
        ++decoded_ok;
        // Whatever decodes re-encodes to the same bytes (the encoding is canonical).
        EXPECT_EQ(FrameOf(r.value()), frame);
      } else {
        EXPECT_FALSE(r.error().empty());
      }
    }
  }
  EXPECT_GT(decoded_ok, 0);
}

TEST(RendezvousProtocolTest, RandomStreamsNeverCrashTheDecoder) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::string good = EncodeMessage(Set{"k", "v"});
  for (int i = 0; i < 3000; ++i) {
    // Sometimes a valid prefix, so headers past the first one are tried too.
    std::string stream = (i % 3 == 0) ? good : std::string();
    const int n = static_cast<int>(rng() % 100);
    for (int j = 0; j < n; ++j) {
      stream.push_back(static_cast<char>(byte(rng)));
    }
    FrameDecoder decoder(1024);
    std::size_t at = 0;
    while (at < stream.size()) {
      const std::size_t chunk = std::min<std::size_t>(1 + rng() % 16, stream.size() - at);
      ASSERT_NO_THROW(decoder.Feed(std::string_view(stream).substr(at, chunk)));
      at += chunk;
    }
    while (std::optional<Frame> f = decoder.Next()) {
      EXPECT_LE(f->payload.size(), 1024u);
      ASSERT_NO_THROW((void)DecodeMessage(*f));
    }
    EXPECT_LT(decoder.BufferCapacityForTest(), 2048u);
  }
}

}  // namespace
}  // namespace ringleader::rendezvous
