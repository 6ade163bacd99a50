// Runs every malformed TrainingJob in tests/data/bad-trainingjobs through YAML parsing, the
// strict field check and ParseAndValidate, as `ringleader-operator validate` does: each must be
// refused with an error at the field path its header names.
//
// Each file starts with "# expect: <field path>" and may add "# expect-message: <substring>".
// The path "<yaml>" means the file is not valid YAML and the YAML parser must refuse it.
// A "# server: ..." line says what kubectl and the API server do with the file; the devcluster
// test kubectl_validation_test.sh checks it.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/api/trainingjob_schema.h"
#include "operator/api/validation.h"
#include "operator/yaml/yaml_to_json.h"

namespace ringleader::api {
namespace {

using nlohmann::json;

constexpr const char* kCorpusDir = "tests/data/bad-trainingjobs";
constexpr const char* kYamlErrorPath = "<yaml>";

std::vector<std::filesystem::path> CorpusFiles() {
  std::vector<std::filesystem::path> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpusDir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Expectation {
  std::string path;
  std::optional<std::string> message;
};

// Reads the header comments; nullopt when the first line is not "# expect: <path>".
std::optional<Expectation> ReadExpectation(const std::string& text) {
  constexpr std::string_view kExpect = "# expect: ";
  constexpr std::string_view kExpectMessage = "# expect-message: ";
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || !line.starts_with(kExpect) || line.size() == kExpect.size()) {
    return std::nullopt;
  }
  Expectation expectation{line.substr(kExpect.size()), std::nullopt};
  if (std::getline(lines, line) && line.starts_with(kExpectMessage)) {
    expectation.message = line.substr(kExpectMessage.size());
  }
  return expectation;
}

// "replicas-zero.yaml" -> "replicas_zero": gtest names allow only letters, digits and '_'.
std::string CaseName(const ::testing::TestParamInfo<std::filesystem::path>& info) {
  std::string name = info.param.stem().string();
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
      '_');
  return name;
}

class BadInputTest : public ::testing::TestWithParam<std::filesystem::path> {};

TEST_P(BadInputTest, IsRefusedWithAnErrorAtTheExpectedPath) {
  const std::string text = ReadFile(GetParam());
  const std::optional<Expectation> expectation = ReadExpectation(text);
  ASSERT_TRUE(expectation.has_value())
      << GetParam() << " must start with \"# expect: <field path>\"";

  json object;
  try {
    object = ringleader::yaml::ParseYaml(text);
  } catch (const ringleader::yaml::YamlError& error) {
    EXPECT_EQ(expectation->path, kYamlErrorPath) << "unexpected YAML error: " << error.what();
    EXPECT_THAT(error.what(), ::testing::HasSubstr("line")) << "a YAML error names the line";
    if (expectation->message) {
      EXPECT_THAT(error.what(), ::testing::HasSubstr(*expectation->message));
    }
    return;
  }
  ASSERT_NE(expectation->path, kYamlErrorPath) << "expected a YAML error, got " << object.dump();

  TrainingJob job;
  FieldErrors errors = UnknownTrainingJobFields(object);
  for (FieldError& error : ParseAndValidate(object, ValidationOptions{}, &job)) {
    errors.push_back(std::move(error));
  }
  ASSERT_FALSE(errors.empty()) << "accepted: " << object.dump();
  const std::string all = JoinErrors(errors);
  const auto at_path = [&expectation](const FieldError& error) {
    return error.path == expectation->path;
  };
  EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), at_path))
      << "no error at " << expectation->path << "; got: " << all;
  if (expectation->message) {
    const auto names_it = [&expectation, &at_path](const FieldError& error) {
      return at_path(error) && error.message.find(*expectation->message) != std::string::npos;
    };
    EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), names_it))
        << "no error at " << expectation->path << " mentions \"" << *expectation->message
        << "\"; got: " << all;
  }
  for (const FieldError& error : errors) {
    EXPECT_FALSE(error.path.empty()) << all;
    EXPECT_FALSE(error.message.empty()) << error.path;
    EXPECT_TRUE(error.ToString().starts_with(error.path + ": ")) << error.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInputTest, ::testing::ValuesIn(CorpusFiles()), CaseName);

TEST(BadInputCorpusTest, HoldsAtLeast35Cases) {
  EXPECT_GE(CorpusFiles().size(), 35U) << "in " << kCorpusDir;
}

TEST(BadInputCorpusTest, CaseNamesAreUnique) {
  std::vector<std::string> names;
  for (const std::filesystem::path& file : CorpusFiles()) {
    names.push_back(CaseName(::testing::TestParamInfo<std::filesystem::path>(file, 0)));
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

}  // namespace
}  // namespace ringleader::api
