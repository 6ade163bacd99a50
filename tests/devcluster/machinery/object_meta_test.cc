// Tests for the object-metadata helpers: spec/no-op comparisons, UIDs, times, owner references
// and name validation wording.
#include "tests/devcluster/machinery/object_meta.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ringleader::devcluster {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const json kJob = json::parse(R"({
  "apiVersion": "ringleader.dev/v1", "kind": "TrainingJob",
  "metadata": {"name": "x", "resourceVersion": "3", "generation": 1, "labels": {"a": "b"},
               "managedFields": [{"manager": "kubectl"}],
               "ownerReferences": [
                 {"uid": "u1", "kind": "A", "name": "a", "controller": true,
                  "blockOwnerDeletion": true},
                 {"uid": "u2", "kind": "B", "name": "b"}]},
  "spec": {"replicas": 2},
  "status": {"phase": "Running"}
})");

struct ChangeCase {
  std::string label;
  std::string pointer;
  json value;
  bool spec_changed;
  bool same_object;
};

class ObjectChangeTest : public ::testing::TestWithParam<ChangeCase> {};

TEST_P(ObjectChangeTest, ClassifiesTheChange) {
  const ChangeCase& c = GetParam();
  json changed = kJob;
  changed[json::json_pointer(c.pointer)] = c.value;
  EXPECT_EQ(SpecChanged(kJob, changed), c.spec_changed);
  EXPECT_EQ(SameObject(kJob, changed), c.same_object);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ObjectChangeTest,
    ::testing::Values(ChangeCase{"Spec", "/spec/replicas", 3, true, false},
                      ChangeCase{"NewTopLevelField", "/data", json{{"k", "v"}}, true, false},
                      ChangeCase{"Status", "/status/phase", "Done", false, false},
                      ChangeCase{"Labels", "/metadata/labels/a", "c", false, false},
                      ChangeCase{"ResourceVersionOnly", "/metadata/resourceVersion", "9", false,
                                 true},
                      ChangeCase{"ManagedFieldsOnly", "/metadata/managedFields", json::array(),
                                 false, true},
                      ChangeCase{"Nothing", "/spec/replicas", 2, false, true}),
    [](const ::testing::TestParamInfo<ChangeCase>& param) { return param.param.label; });

// Whether `text` matches `shape`, where 'h' is a lowercase hex digit, 'v' one of 8, 9, a, b,
// and other characters stand for themselves (std::regex trips GCC 12 warnings under ASan).
bool MatchesShape(const std::string& text, const std::string& shape, const std::string& alphabet) {
  if (text.size() != shape.size()) {
    return false;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool ok = shape[i] == 'h'   ? std::string("0123456789abcdef").find(c) != std::string::npos
              : shape[i] == 'v' ? std::string("89ab").find(c) != std::string::npos
              : shape[i] == 'r' ? alphabet.find(c) != std::string::npos
                                : shape[i] == c;
    if (!ok) {
      return false;
    }
  }
  return true;
}

TEST(ObjectMetaTest, NewUidIsARandomVersion4Uuid) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string uid = NewUid();
    EXPECT_TRUE(MatchesShape(uid, "hhhhhhhh-hhhh-4hhh-vhhh-hhhhhhhhhhhh", "")) << uid;
    seen.insert(uid);
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(ObjectMetaTest, GenerateNameAddsFiveSafeCharacters) {
  std::string name = GenerateName("job-");
  EXPECT_TRUE(MatchesShape(name, "job-rrrrr", "bcdfghjklmnpqrstvwxz2456789")) << name;
}

struct TimeCase {
  std::string text;
  long long epoch_seconds;
  std::string formatted;
};

class TimeTest : public ::testing::TestWithParam<TimeCase> {};

TEST_P(TimeTest, ParsesRfc3339AndFormatsInUtc) {
  std::optional<Time> parsed = ParseTime(GetParam().text);
  ASSERT_TRUE(parsed.has_value()) << GetParam().text;
  EXPECT_EQ(std::chrono::duration_cast<seconds>(parsed->time_since_epoch()).count(),
            GetParam().epoch_seconds);
  EXPECT_EQ(FormatTime(*parsed), GetParam().formatted);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TimeTest,
    ::testing::Values(TimeCase{"1970-01-01T00:00:00Z", 0, "1970-01-01T00:00:00Z"},
                      TimeCase{"2024-05-01T12:34:56Z", 1714566896, "2024-05-01T12:34:56Z"},
                      TimeCase{"2024-05-01T12:34:56.789123Z", 1714566896,
                               "2024-05-01T12:34:56Z"},
                      TimeCase{"2024-05-01T14:34:56+02:00", 1714566896, "2024-05-01T12:34:56Z"},
                      TimeCase{"2024-02-29T00:00:00-01:30", 1709170200,
                               "2024-02-29T01:30:00Z"}));

TEST(TimeTest, RejectsMalformedTimes) {
  for (const char* text : {"", "2024-05-01", "2024-05-01T12:34:56", "2024-13-01T00:00:00Z",
                           "2024-05-01 12:34:56Z", "2024-05-01T12:34:56Zjunk",
                           "2023-02-29T00:00:00Z", "2024-05-01T12:34:56.Z"}) {
    EXPECT_FALSE(ParseTime(text).has_value()) << text;
  }
}

TEST(TimeTest, MicroTimeKeepsMicroseconds) {
  Time time = *ParseTime("2024-05-01T12:34:56.789123Z");
  EXPECT_EQ(FormatMicroTime(time), "2024-05-01T12:34:56.789123Z");
  EXPECT_EQ(*ParseTime(FormatMicroTime(time)), time);
}

TEST(OwnerReferenceTest, ListsUidsAndBlockingAndController) {
  EXPECT_THAT(OwnerUids(kJob), ::testing::ElementsAre("u1", "u2"));
  EXPECT_TRUE(BlocksOwnerDeletion(kJob, "u1"));
  EXPECT_FALSE(BlocksOwnerDeletion(kJob, "u2"));
  EXPECT_FALSE(BlocksOwnerDeletion(kJob, "u3"));
  EXPECT_EQ(ControllerUid(kJob), "u1");
}

TEST(OwnerReferenceTest, ToleratesObjectsWithoutOwners) {
  for (const json& object : {json::object(), json(nullptr), json{{"metadata", "odd"}},
                             json{{"metadata", {{"ownerReferences", 3}}}}}) {
    EXPECT_TRUE(OwnerUids(object).empty());
    EXPECT_FALSE(BlocksOwnerDeletion(object, "u1"));
    EXPECT_FALSE(ControllerUid(object).has_value());
  }
}

struct NameCase {
  std::string name;
  NameRule rule;
  std::vector<std::string> errors;
};

class NameTest : public ::testing::TestWithParam<NameCase> {};

const char kSubdomain[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const char kLabel[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const char kDns1035Label[] =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

TEST_P(NameTest, ValidatesWithTheServersWords) {
  std::vector<std::string> errors;
  for (const schema::SchemaError& error : NameErrors(GetParam().name, GetParam().rule)) {
    errors.push_back(error.ToString());
  }
  EXPECT_EQ(errors, GetParam().errors);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NameTest,
    ::testing::Values(
        NameCase{"demo", NameRule::kDnsSubdomain, {}},
        NameCase{"demo.v1-2", NameRule::kDnsSubdomain, {}},
        NameCase{"trainingjobs.ringleader.dev", NameRule::kDnsSubdomain, {}},
        NameCase{"Bad_Name",
                 NameRule::kDnsSubdomain,
                 {std::string("metadata.name: Invalid value: \"Bad_Name\": ") + kSubdomain}},
        NameCase{"a..b",
                 NameRule::kDnsSubdomain,
                 {std::string("metadata.name: Invalid value: \"a..b\": ") + kSubdomain}},
        NameCase{"-a", NameRule::kDnsLabel,
                 {std::string("metadata.name: Invalid value: \"-a\": ") + kLabel}},
        NameCase{"a.b", NameRule::kDnsLabel,
                 {std::string("metadata.name: Invalid value: \"a.b\": ") + kLabel}},
        NameCase{"team-a", NameRule::kDnsLabel, {}},
        NameCase{"svc-1", NameRule::kDns1035Label, {}},
        // A Service name must start with a letter, where a Namespace's may start with a digit.
        NameCase{"1svc", NameRule::kDnsLabel, {}},
        NameCase{"1svc", NameRule::kDns1035Label,
                 {std::string("metadata.name: Invalid value: \"1svc\": ") + kDns1035Label}},
        NameCase{std::string(64, 'a'),
                 NameRule::kDnsLabel,
                 {"metadata.name: Invalid value: \"" + std::string(64, 'a') +
                  "\": must be no more than 63 characters"}},
        NameCase{std::string(254, 'a'),
                 NameRule::kDnsSubdomain,
                 {"metadata.name: Invalid value: \"" + std::string(254, 'a') +
                  "\": must be no more than 253 characters"}},
        NameCase{"", NameRule::kDnsSubdomain,
                 {"metadata.name: Required value: name or generateName is required"}}));

TEST(NameTest, ValidateNameGivesAnInvalidError) {
  std::optional<ApiError> error =
      ValidateName("TrainingJob.ringleader.dev", "Bad_Name", NameRule::kDnsSubdomain);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, 422);
  EXPECT_EQ(error->message, std::string("TrainingJob.ringleader.dev \"Bad_Name\" is invalid: "
                                        "metadata.name: Invalid value: \"Bad_Name\": ") +
                                kSubdomain);
  EXPECT_EQ(error->details["causes"][0]["field"], "metadata.name");
  EXPECT_FALSE(ValidateName("Pod", "ok", NameRule::kDnsSubdomain).has_value());
}

}  // namespace
}  // namespace ringleader::devcluster
