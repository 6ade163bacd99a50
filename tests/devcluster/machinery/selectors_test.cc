// Tests for label and field selectors: parsing, matching and parse errors.
#include "tests/devcluster/machinery/selectors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

struct LabelCase {
  std::string selector;
  json labels;
  bool matches;
};

class LabelSelectorTest : public ::testing::TestWithParam<LabelCase> {};

TEST_P(LabelSelectorTest, Matches) {
  const LabelCase& c = GetParam();
  EXPECT_EQ(LabelSelector::Parse(c.selector).Matches(c.labels), c.matches)
      << c.selector << " on " << c.labels.dump();
}

const json kTrain = {{"app", "train"}, {"tier", "gpu"}, {"example.com/role", "worker"}};

INSTANTIATE_TEST_SUITE_P(
    Cases, LabelSelectorTest,
    ::testing::Values(LabelCase{"", kTrain, true}, LabelCase{"", nullptr, true},
                      LabelCase{"app=train", kTrain, true}, LabelCase{"app==train", kTrain, true},
                      LabelCase{"app=serve", kTrain, false},
                      LabelCase{"app!=serve", kTrain, true},
                      LabelCase{"app!=train", kTrain, false},
                      LabelCase{"missing!=x", kTrain, true},
                      LabelCase{"app in (serve, train)", kTrain, true},
                      LabelCase{"app in (serve)", kTrain, false},
                      LabelCase{"app notin (serve)", kTrain, true},
                      LabelCase{"app notin (train,serve)", kTrain, false},
                      LabelCase{"missing notin (x)", kTrain, true},
                      LabelCase{"missing in (x)", kTrain, false}, LabelCase{"app", kTrain, true},
                      LabelCase{"missing", kTrain, false}, LabelCase{"!missing", kTrain, true},
                      LabelCase{"!app", kTrain, false},
                      LabelCase{"app=train,tier=gpu", kTrain, true},
                      LabelCase{"app=train,tier=cpu", kTrain, false},
                      LabelCase{" app = train , tier in (gpu,cpu) ", kTrain, true},
                      LabelCase{"example.com/role=worker", kTrain, true},
                      LabelCase{"app=train", json::object(), false},
                      LabelCase{"app=", json{{"app", ""}}, true}));

class LabelSelectorErrorTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LabelSelectorErrorTest, IsABadRequestNamingThePart) {
  try {
    LabelSelector::Parse(GetParam());
    FAIL() << "parsed " << GetParam();
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 400);
    EXPECT_EQ(error.reason, "BadRequest");
    EXPECT_THAT(error.message, ::testing::StartsWith("unable to parse requirement: "));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LabelSelectorErrorTest,
                         ::testing::Values("app=a b", "a b", "app in ()", "app in (x",
                                           "-app=x", "app=train,", "a!b", "app=-x-"));

TEST(LabelSelectorTest, ErrorQuotesTheBadRequirement) {
  try {
    LabelSelector::Parse("app=ok,tier=bad value");
    FAIL();
  } catch (const ApiError& error) {
    EXPECT_THAT(error.message, ::testing::HasSubstr("\"tier=bad value\""));
  }
}

TEST(LabelSelectorTest, EmptyReportsWhetherAnythingIsRequired) {
  EXPECT_TRUE(LabelSelector::Parse("").Empty());
  EXPECT_FALSE(LabelSelector::Parse("a").Empty());
}

struct FieldCase {
  std::string selector;
  bool matches;
};

class FieldSelectorTest : public ::testing::TestWithParam<FieldCase> {};

const json kEvent = json::parse(R"({
  "metadata": {"name": "demo.1", "namespace": "default"},
  "involvedObject": {"kind": "TrainingJob", "name": "demo", "namespace": "default",
                     "uid": "u-1"},
  "count": 3,
  "spec": {"nodeName": "node-a"},
  "status": {"phase": "Running"}
})");

TEST_P(FieldSelectorTest, Matches) {
  EXPECT_EQ(FieldSelector::Parse(GetParam().selector).Matches(kEvent), GetParam().matches)
      << GetParam().selector;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FieldSelectorTest,
    ::testing::Values(
        FieldCase{"", true}, FieldCase{"metadata.name=demo.1", true},
        FieldCase{"metadata.name==demo.1", true}, FieldCase{"metadata.name=other", false},
        FieldCase{"metadata.name!=other", true}, FieldCase{"metadata.name!=demo.1", false},
        FieldCase{"metadata.namespace=default", true},
        FieldCase{"involvedObject.name=demo,involvedObject.namespace=default,"
                  "involvedObject.kind=TrainingJob,involvedObject.uid=u-1",
                  true},
        FieldCase{"involvedObject.name=demo,involvedObject.uid=u-2", false},
        FieldCase{"spec.nodeName=node-a", true}, FieldCase{"status.phase=Running", true},
        FieldCase{"spec.missing=", true}, FieldCase{"spec.missing!=", false},
        FieldCase{"spec.missing=x", false}, FieldCase{"count=3", true},
        FieldCase{"metadata.name=demo\\.1", true}));

TEST(FieldSelectorTest, EscapedCommaIsPartOfTheValue) {
  json object = {{"metadata", {{"name", "a,b"}}}};
  EXPECT_TRUE(FieldSelector::Parse("metadata.name=a\\,b").Matches(object));
  EXPECT_FALSE(FieldSelector::Parse("metadata.name=a").Matches(object));
}

TEST(FieldSelectorTest, TermWithoutOperatorIsABadRequest) {
  try {
    FieldSelector::Parse("metadata.name");
    FAIL();
  } catch (const ApiError& error) {
    EXPECT_EQ(error.code, 400);
    EXPECT_EQ(error.message,
              "invalid selector: 'metadata.name'; can't understand 'metadata.name'");
  }
}

}  // namespace
}  // namespace ringleader::devcluster
