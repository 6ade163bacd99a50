// Tests for Table responses, printer-column JSONPath and kubectl's age formatting.
#include "tests/devcluster/machinery/table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

struct DurationCase {
  std::chrono::nanoseconds duration;
  std::string text;
};

class HumanDurationTest : public ::testing::TestWithParam<DurationCase> {};

TEST_P(HumanDurationTest, RoundsLikeKubectl) {
  EXPECT_EQ(HumanDuration(GetParam().duration), GetParam().text);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HumanDurationTest,
    ::testing::Values(DurationCase{seconds(-5), "<invalid>"}, DurationCase{seconds(-1), "0s"},
                      DurationCase{seconds(0), "0s"}, DurationCase{seconds(5), "5s"},
                      DurationCase{seconds(119), "119s"}, DurationCase{seconds(120), "2m"},
                      DurationCase{seconds(200), "3m20s"}, DurationCase{seconds(599), "9m59s"},
                      DurationCase{minutes(10) + seconds(30), "10m"},
                      DurationCase{minutes(179), "179m"}, DurationCase{hours(3), "3h"},
                      DurationCase{hours(5) + minutes(3), "5h3m"},
                      DurationCase{hours(8) + minutes(59), "8h"}, DurationCase{hours(47), "47h"},
                      DurationCase{hours(48), "2d"}, DurationCase{hours(76), "3d4h"},
                      DurationCase{hours(24 * 8), "8d"}, DurationCase{hours(24 * 729), "729d"},
                      DurationCase{hours(24 * 730), "2y"},
                      DurationCase{hours(24 * (365 * 2 + 5)), "2y5d"},
                      DurationCase{hours(24 * 365 * 10), "10y"}));

const json kJob = json::parse(R"({
  "metadata": {"name": "demo", "namespace": "default", "labels": {"a": "b"},
               "creationTimestamp": "2024-05-01T12:00:00Z"},
  "spec": {"replicas": 4, "backend": "nccl"},
  "status": {
    "phase": "Running",
    "conditions": [{"type": "Ready", "status": "True"}, {"type": "Succeeded", "status": "False"}],
    "workers": [{"rank": 0, "host": "a"}, {"rank": 1, "host": "b"}, {"rank": 2, "host": "c"}],
    "key.with.dots": "dotted"
  }
})");

struct PathCase {
  std::string path;
  json results;
};

class JsonPathTest : public ::testing::TestWithParam<PathCase> {};

TEST_P(JsonPathTest, SelectsValues) {
  std::vector<json> results = EvaluateJsonPath(kJob, GetParam().path);
  EXPECT_EQ(json(results), GetParam().results) << GetParam().path;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, JsonPathTest,
    ::testing::Values(
        PathCase{".spec.replicas", json::array({4})},
        PathCase{"{.spec.replicas}", json::array({4})},
        PathCase{"spec.backend", json::array({"nccl"})},
        PathCase{".spec.missing", json::array()},
        PathCase{".status.conditions[?(@.type==\"Ready\")].status", json::array({"True"})},
        PathCase{".status.conditions[?(@.type=='Succeeded')].status", json::array({"False"})},
        PathCase{".status.conditions[?(@.type!=\"Ready\")].type", json::array({"Succeeded"})},
        PathCase{".status.conditions[?(@.type==\"Nope\")].status", json::array()},
        PathCase{".status.workers[?(@.rank==1)].host", json::array({"b"})},
        PathCase{".status.workers[0].host", json::array({"a"})},
        PathCase{".status.workers[-1].host", json::array({"c"})},
        PathCase{".status.workers[-1:].host", json::array({"c"})},
        PathCase{".status.workers[0:2].rank", json::array({0, 1})},
        PathCase{".status.workers[*].rank", json::array({0, 1, 2})},
        PathCase{".status.workers[9].host", json::array()},
        PathCase{".status['key.with.dots']", json::array({"dotted"})},
        PathCase{".metadata.labels.a", json::array({"b"})}));

TEST(JsonPathTest, UnparsablePathIsABadRequest) {
  for (const char* path : {".status.workers[", ".status..phase", ".a[?(@.x<1)]", ".a[x]"}) {
    try {
      EvaluateJsonPath(kJob, path);
      ADD_FAILURE() << path;
    } catch (const ApiError& error) {
      EXPECT_EQ(error.code, 400) << path;
    }
  }
}

ResourceInfo JobInfo() {
  ResourceInfo info;
  info.group = "ringleader.dev";
  info.version = "v1";
  info.kind = "TrainingJob";
  info.plural = "trainingjobs";
  info.is_custom = true;
  info.columns = {
      {"Replicas", "integer", ".spec.replicas", "Workers", 0, "", nullptr},
      {"Ready", "string", ".status.conditions[?(@.type==\"Ready\")].status", "", 0, "", nullptr},
      {"Hosts", "string", ".status.workers[*].host", "", 1, "", nullptr},
      {"Message", "string", ".status.message", "", 0, "", nullptr},
      {"Age", "date", ".metadata.creationTimestamp", "", 0, "", nullptr},
  };
  return info;
}

TEST(BuildTableTest, HasTheTableShapeKubectlReads) {
  Time now = *ParseTime("2024-05-01T12:03:20Z");
  json table = BuildTable(JobInfo(), {kJob}, now, "42", true);
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(table["metadata"]["resourceVersion"], "42");
  ASSERT_EQ(table["columnDefinitions"].size(), 6u);
  EXPECT_EQ(table["columnDefinitions"][0]["name"], "Name");
  EXPECT_EQ(table["columnDefinitions"][0]["format"], "name");
  EXPECT_EQ(table["columnDefinitions"][1],
            json({{"name", "Replicas"}, {"type", "integer"}, {"format", ""},
                  {"description", "Workers"}, {"priority", 0}}));
  EXPECT_EQ(table["columnDefinitions"][3]["priority"], 1);
  ASSERT_EQ(table["rows"].size(), 1u);
  EXPECT_EQ(table["rows"][0]["cells"], json::parse(R"(["demo", 4, "True", "a b c", null, "3m20s"])"));
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(table["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(table["rows"][0]["object"]["metadata"]["labels"]["a"], "b");
}

TEST(BuildTableTest, WithoutObjectMetadataRowsHaveCellsOnly) {
  json table = BuildTable(JobInfo(), {kJob, kJob}, Time(), "", false);
  EXPECT_EQ(table["rows"].size(), 2u);
  EXPECT_FALSE(table["rows"][0].contains("object"));
  EXPECT_FALSE(table["metadata"].contains("resourceVersion"));
}

TEST(BuildTableTest, EmptyListStillDefinesColumns) {
  json table = BuildTable(JobInfo(), {}, Time(), "7", true);
  EXPECT_EQ(table["rows"], json::array());
  EXPECT_EQ(table["columnDefinitions"].size(), 6u);
}

TEST(BuildTableTest, StringColumnsPrintNonStrings) {
  ResourceInfo info = JobInfo();
  info.columns = {{"Replicas", "string", ".spec.replicas", "", 0, "", nullptr}};
  EXPECT_EQ(BuildTable(info, {kJob}, Time(), "1", false)["rows"][0]["cells"][1], "4");
}

TEST(BuildTableTest, ComputedColumnsGetTheObjectAndNow) {
  ResourceInfo info = JobInfo();
  Time now = *ParseTime("2024-05-01T13:00:00Z");
  info.columns = {{"Computed", "string", "", "", 0, "", [now](const json& object, Time when) {
                     EXPECT_EQ(when, now);
                     return json(object["spec"]["backend"].get<std::string>() + "!");
                   }}};
  EXPECT_EQ(BuildTable(info, {kJob}, now, "1", false)["rows"][0]["cells"][1], "nccl!");
}

}  // namespace
}  // namespace ringleader::devcluster
