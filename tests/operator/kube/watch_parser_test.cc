// The watch-stream parser: any split of the bytes gives the same events; bad input is a typed
// error with bounded memory.
#include "operator/kube/watch_parser.h"

#include <gtest/gtest.h>

namespace ringleader::kube {
namespace {

std::string Event(const std::string& type, const std::string& name, int rv) {
  return R"({"type":")" + type + R"(","object":{"kind":"ConfigMap","metadata":{"name":")" +
         name + R"(","resourceVersion":")" + std::to_string(rv) + R"("},"data":{"k":"a}\"{["}}})";
}

std::vector<std::string> Names(const std::vector<WatchEvent>& events) {
  std::vector<std::string> names;
  for (const auto& event : events) {
    names.push_back(std::string(WatchEventTypeName(event.type)) + ":" +
                    event.object["metadata"]["name"].get<std::string>());
  }
  return names;
}

TEST(WatchStreamParserTest, OneEventPerLine) {
  WatchStreamParser parser;
  auto events = parser.Push(Event("ADDED", "a", 1) + "\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(ResourceVersionOf(events[0].object), "1");
  EXPECT_EQ(events[0].object["data"]["k"], "a}\"{[");
  EXPECT_FALSE(parser.HasPartialEvent());
}

TEST(WatchStreamParserTest, ManyEventsInOneChunkWithAndWithoutSeparators) {
  WatchStreamParser parser;
  const std::string stream = Event("ADDED", "a", 1) + "\n" + Event("MODIFIED", "b", 2) +
                             Event("DELETED", "c", 3) + "\r\n\t " + Event("ADDED", "d", 4) + "\n";
  EXPECT_EQ(Names(parser.Push(stream)),
            (std::vector<std::string>{"ADDED:a", "MODIFIED:b", "DELETED:c", "ADDED:d"}));
}

TEST(WatchStreamParserTest, EverySplitPointGivesTheSameEvents) {
  const std::string stream = Event("ADDED", "a", 1) + "\n" + Event("MODIFIED", "b", 2) + "\n" +
                             R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})";
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    WatchStreamParser parser;
    auto events = parser.Push(std::string_view(stream).substr(0, split));
    auto rest = parser.Push(std::string_view(stream).substr(split));
    events.insert(events.end(), rest.begin(), rest.end());
    ASSERT_EQ(events.size(), 3u) << "split at " << split;
    EXPECT_EQ(events[2].type, WatchEventType::kBookmark);
    EXPECT_EQ(ResourceVersionOf(events[2].object), "9");
  }
}

TEST(WatchStreamParserTest, ByteAtATime) {
  const std::string stream = Event("ADDED", "a", 1) + Event("ADDED", "b", 2);
  WatchStreamParser parser;
  std::vector<WatchEvent> events;
  for (char c : stream) {
    for (auto& e : parser.Push(std::string_view(&c, 1))) {
      events.push_back(std::move(e));
    }
  }
  EXPECT_EQ(Names(events), (std::vector<std::string>{"ADDED:a", "ADDED:b"}));
}

TEST(WatchStreamParserTest, PrettyPrintedEventsWithoutNewlinesBetween) {
  const std::string stream =
      "{\n  \"type\": \"ADDED\",\n  \"object\": {\n    \"metadata\": {\"name\": \"a\"}\n  }\n}"
      "{\n  \"type\": \"ERROR\",\n  \"object\": {\"kind\": \"Status\", \"code\": 410,"
      " \"metadata\": {\"name\": \"x\"}}\n}";
  WatchStreamParser parser;
  auto events = parser.Push(stream);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].type, WatchEventType::kError);
  EXPECT_EQ(events[1].object["code"], 410);
}

TEST(WatchStreamParserTest, PartialEventIsReportedAndCompletedLater) {
  const std::string event = Event("ADDED", "a", 1);
  WatchStreamParser parser;
  EXPECT_TRUE(parser.Push(event.substr(0, 10)).empty());
  EXPECT_TRUE(parser.HasPartialEvent());
  EXPECT_EQ(parser.Push(event.substr(10)).size(), 1u);
  EXPECT_FALSE(parser.HasPartialEvent());
}

TEST(WatchStreamParserTest, GarbageIsATypedErrorAndTheParserStaysFailed) {
  WatchStreamParser parser;
  EXPECT_THROW(parser.Push("<html>502 Bad Gateway</html>"), WatchStreamError);
  EXPECT_THROW(parser.Push(Event("ADDED", "a", 1)), WatchStreamError);
}

TEST(WatchStreamParserTest, MalformedAndMisshapenEventsAreErrors) {
  const std::vector<std::string> bad = {
      R"({"type":"ADDED","object":{"a":1,}})",         // trailing comma
      R"({"type":"ADDED","object":{"a":[1}]})",        // mismatched brackets
      R"({"type":"SOMETHING","object":{}})",           // unknown type
      R"({"object":{}})",                              // no type
      R"({"type":"ADDED","object":"str"})",            // object not a mapping
      R"({"type":"ADDED"})",                           // no object
      R"(["type","ADDED"])",                           // not an object
      "{\"type\":\"ADDED\",\"object\":{\"a\":\"\xff\"}}",  // invalid UTF-8
  };
  for (const std::string& text : bad) {
    WatchStreamParser parser;
    EXPECT_THROW(parser.Push(text), WatchStreamError) << text;
  }
}

TEST(WatchStreamParserTest, OversizeEventIsRejectedEvenAcrossChunks) {
  WatchStreamParser parser(1024);
  EXPECT_TRUE(parser.Push(R"({"type":"ADDED","object":{"big":")").empty());
  const std::string filler(600, 'x');
  EXPECT_TRUE(parser.Push(filler).empty());
  EXPECT_THROW(parser.Push(filler), WatchStreamError);
}

TEST(WatchStreamParserTest, EventAtTheLimitIsAccepted) {
  std::string event = Event("ADDED", "a", 1);
  WatchStreamParser parser(event.size());
  EXPECT_EQ(parser.Push(event + "\n" + event).size(), 2u);
}

TEST(WatchStreamParserTest, DeepNestingIsRejectedBeforeParsing) {
  WatchStreamParser parser;
  std::string deep = R"({"type":"ADDED","object":{"a":)" + std::string(100000, '[');
  EXPECT_THROW(parser.Push(deep), WatchStreamError);
}

}  // namespace
}  // namespace ringleader::kube
