// Tests for YAML -> JSON conversion (scalar typing, structure, errors) and the JsonToYaml writer.
#include "operator/yaml/yaml_to_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace ringleader::yaml {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct ScalarCase {
  std::string yaml;  // the value as written after "v: "
  json expected;
};

void PrintTo(const ScalarCase& c, std::ostream* os) { *os << "v: " << c.yaml; }

class YamlPlainScalarTest : public ::testing::TestWithParam<ScalarCase> {};

TEST_P(YamlPlainScalarTest, ResolvesToTheCoreSchemaType) {
  const ScalarCase& c = GetParam();
  json parsed = ParseYaml("v: " + c.yaml + "\n");
  ASSERT_TRUE(parsed.is_object());
  const json& value = parsed.at("v");
  EXPECT_EQ(value.type(), c.expected.type()) << value.dump();
  EXPECT_EQ(value, c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Scalars, YamlPlainScalarTest,
    ::testing::Values(
        ScalarCase{"", nullptr}, ScalarCase{"~", nullptr}, ScalarCase{"null", nullptr},
        ScalarCase{"Null", nullptr}, ScalarCase{"NULL", nullptr}, ScalarCase{"true", true},
        ScalarCase{"True", true}, ScalarCase{"TRUE", true}, ScalarCase{"false", false},
        ScalarCase{"False", false}, ScalarCase{"FALSE", false}, ScalarCase{"0", std::int64_t{0}},
        ScalarCase{"42", std::int64_t{42}}, ScalarCase{"-17", std::int64_t{-17}},
        ScalarCase{"+5", std::int64_t{5}}, ScalarCase{"0x1F", std::int64_t{31}},
        ScalarCase{"0o17", std::int64_t{15}},
        // YAML 1.2 has no leading-zero octal: 010 is ten.
        ScalarCase{"010", std::int64_t{10}},
        ScalarCase{"9223372036854775807", std::numeric_limits<std::int64_t>::max()},
        ScalarCase{"-9223372036854775808", std::numeric_limits<std::int64_t>::min()},
        ScalarCase{"9223372036854775808", 9223372036854775808.0}, ScalarCase{"1.5", 1.5},
        ScalarCase{"-0.25", -0.25}, ScalarCase{".5", 0.5}, ScalarCase{"1.", 1.0},
        ScalarCase{"1e3", 1000.0}, ScalarCase{"2.5E-1", 0.25}, ScalarCase{"1.0", 1.0},
        // No JSON form for these, so they stay text.
        ScalarCase{".inf", ".inf"}, ScalarCase{"-.inf", "-.inf"}, ScalarCase{".nan", ".nan"},
        // YAML 1.1 words are plain strings under the 1.2 core schema.
        ScalarCase{"yes", "yes"}, ScalarCase{"off", "off"}, ScalarCase{"tRUE", "tRUE"},
        ScalarCase{"1_000", "1_000"}, ScalarCase{"0x", "0x"}, ScalarCase{"0xZZ", "0xZZ"},
        ScalarCase{"-0x10", "-0x10"}, ScalarCase{"1.2.3", "1.2.3"}, ScalarCase{"64Mi", "64Mi"},
        ScalarCase{"e3", "e3"}, ScalarCase{"hello world", "hello world"},
        ScalarCase{"2024-01-01", "2024-01-01"}));

TEST(YamlToJsonTest, QuotedScalarsAreAlwaysStrings) {
  json parsed = ParseYaml(R"(
a: "123"
b: 'true'
c: ""
d: "null"
e: '0x10'
f: "1.5"
)");
  EXPECT_EQ(
      parsed,
      json({{"a", "123"}, {"b", "true"}, {"c", ""}, {"d", "null"}, {"e", "0x10"}, {"f", "1.5"}}));
}

TEST(YamlToJsonTest, BlockScalarsAreStringsEvenWhenTheyLookLikeNumbers) {
  json parsed = ParseYaml("a: |-\n  123\nb: >-\n  true\nc: |\n  x\n  y\n");
  EXPECT_EQ(parsed, json({{"a", "123"}, {"b", "true"}, {"c", "x\ny\n"}}));
}

TEST(YamlToJsonTest, ExplicitCoreTagsOverridePlainResolution) {
  json parsed = ParseYaml(
      "a: !!str 12\nb: !!int \"0x10\"\nc: !!float 3\nd: !!bool 'false'\n"
      "e: !!null ''\nf: !custom text\n");
  EXPECT_EQ(
      parsed,
      json({{"a", "12"}, {"b", 16}, {"c", 3.0}, {"d", false}, {"e", nullptr}, {"f", "text"}}));
  EXPECT_TRUE(parsed["c"].is_number_float());
}

TEST(YamlToJsonTest, TagThatDoesNotFitItsValueIsAnError) {
  EXPECT_THROW(ParseYaml("a: !!int abc\n"), YamlError);
  EXPECT_THROW(ParseYaml("a: !!bool yes\n"), YamlError);
}

TEST(YamlToJsonTest, ConvertsNestedMapsAndLists) {
  json parsed = ParseYaml(R"(
apiVersion: ringleader.dev/v1alpha1
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: trainer
        args: ["--epochs", 3, true]
        env: []
        resources: {}
      - name: sidecar
  matrix:
  - - 1
    - 2
  - []
)");
  json expected = {{"apiVersion", "ringleader.dev/v1alpha1"},
                   {"spec",
                    {{"replicas", 2},
                     {"template",
                      {{"spec",
                        {{"containers", json::array({{{"name", "trainer"},
                                                      {"args", json::array({"--epochs", 3, true})},
                                                      {"env", json::array()},
                                                      {"resources", json::object()}},
                                                     {{"name", "sidecar"}}})}}}}},
                     {"matrix", json::array({json::array({1, 2}), json::array()})}}}};
  EXPECT_EQ(parsed, expected);
}

TEST(YamlToJsonTest, NonStringKeysBecomeTheirCanonicalText) {
  json parsed = ParseYaml("1: a\ntrue: b\n0x10: c\n\"quoted\": d\n");
  EXPECT_EQ(parsed, json({{"1", "a"}, {"true", "b"}, {"16", "c"}, {"quoted", "d"}}));
}

TEST(YamlToJsonTest, NonScalarMapKeyIsAnError) {
  EXPECT_THROW(ParseYaml("? [a, b]\n: c\n"), YamlError);
  EXPECT_THROW(ParseYaml("{x: 1}: c\n"), YamlError);
}

TEST(YamlToJsonTest, NullMapKeyIsAnError) { EXPECT_THROW(ParseYaml("~: a\n"), YamlError); }

TEST(YamlToJsonTest, DuplicateKeyIsAnErrorNamingTheLine) {
  try {
    ParseYaml("a: 1\nb: 2\na: 3\n");
    FAIL() << "expected YamlError";
  } catch (const YamlError& error) {
    EXPECT_THAT(error.what(), HasSubstr("line 3"));
    EXPECT_THAT(error.what(), HasSubstr("duplicate map key \"a\""));
  }
}

TEST(YamlToJsonTest, AnchorsAliasesAndMergeKeysExpand) {
  json parsed = ParseYaml(R"(
base: &base
  image: busybox
  pull: Always
list: &items [1, 2]
copy: *items
job:
  <<: *base
  pull: Never
)");
  EXPECT_EQ(parsed["copy"], json::array({1, 2}));
  EXPECT_EQ(parsed["job"], json({{"image", "busybox"}, {"pull", "Never"}}));
}

TEST(YamlToJsonTest, QuotedMergeKeyIsAnOrdinaryKey) {
  EXPECT_EQ(ParseYaml("\"<<\": x\n"), json({{"<<", "x"}}));
}

TEST(YamlToJsonTest, CyclicAliasIsAnErrorNotACrash) {
  EXPECT_THROW(ParseYaml("a: &x [*x]\n"), YamlError);
}

TEST(YamlToJsonTest, AliasBombIsRefused) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int j = 0; j < 9; ++j) {
      text += ", " + prev;
    }
    text += "]\n";
  }
  EXPECT_THROW(ParseYaml(text), YamlError);
}

TEST(YamlToJsonTest, BadYamlErrorNamesLineAndColumn) {
  try {
    ParseYaml("a: 1\nb:\n  - c\n - d\n");
    FAIL() << "expected YamlError";
  } catch (const YamlError& error) {
    EXPECT_THAT(error.what(), HasSubstr("line 4"));
    EXPECT_THAT(error.what(), HasSubstr("column"));
  }
  EXPECT_THROW(ParseYaml("a: b: c\n"), YamlError);
  EXPECT_THROW(ParseYaml("a: [1, 2\n"), YamlError);
  EXPECT_THROW(ParseYaml("a: \"\\q\"\n"), YamlError);
  EXPECT_THROW(ParseYaml("a: 1\n\tb: 2\n"), YamlError);
}

TEST(YamlToJsonTest, TextThatIsNotUtf8IsAnError) {
  EXPECT_THROW(ParseYaml("a: caf\xe9\n"), YamlError);
  EXPECT_THROW(ParseYaml("a: \"\\N\"\n"), YamlError);  // yaml-cpp decodes \N to a lone byte
  EXPECT_EQ(ParseYaml("a: \"\\u00e9\"\n"), json({{"a", "\u00e9"}}));
}

TEST(YamlToJsonTest, EmptyTextIsNull) {
  EXPECT_TRUE(ParseYaml("").is_null());
  EXPECT_TRUE(ParseYaml("# only a comment\n").is_null());
  EXPECT_TRUE(ParseYaml("---\n").is_null());
}

TEST(YamlToJsonTest, TopLevelScalarIsParsed) {
  EXPECT_EQ(ParseYaml("42"), json(42));
  EXPECT_EQ(ParseYaml("[a, 1]"), json::array({"a", 1}));
}

TEST(YamlToJsonTest, ParseYamlRefusesMoreThanOneDocument) {
  EXPECT_THROW(ParseYaml("a: 1\n---\nb: 2\n"), YamlError);
}

TEST(YamlToJsonTest, MultiDocumentStreamSkipsEmptyDocuments) {
  std::vector<json> documents =
      ParseYamlDocuments("---\n# nothing\n---\nkind: A\n---\n---\nkind: B\n...\n---\nnull\n");
  ASSERT_EQ(documents.size(), 2u);
  EXPECT_EQ(documents[0], json({{"kind", "A"}}));
  EXPECT_EQ(documents[1], json({{"kind", "B"}}));
  EXPECT_TRUE(ParseYamlDocuments("").empty());
}

TEST(YamlToJsonTest, MultiDocumentErrorNamesTheLineInTheStream) {
  try {
    ParseYamlDocuments("a: 1\n---\nb: [\n");
    FAIL() << "expected YamlError";
  } catch (const YamlError& error) {
    EXPECT_THAT(error.what(), HasSubstr("line"));
  }
}

TEST(YamlToJsonTest, YamlToJsonConvertsANodeDirectly) {
  YAML::Node node = YAML::Load("x: [1, 'b']");
  EXPECT_EQ(YamlToJson(node), json({{"x", json::array({1, "b"})}}));
}

class TempFile {
 public:
  explicit TempFile(const std::string& contents)
      : path_(std::filesystem::temp_directory_path() /
              ("yaml_to_json_test_" +
               std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml")) {
    std::ofstream(path_) << contents;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST(YamlToJsonTest, LoadYamlFileReadsTheFile) {
  TempFile file("kind: TrainingJob\nspec: {replicas: 2}\n");
  EXPECT_EQ(LoadYamlFile(file.path()),
            json({{"kind", "TrainingJob"}, {"spec", {{"replicas", 2}}}}));
}

TEST(YamlToJsonTest, LoadYamlFileErrorNamesThePathAndLine) {
  TempFile file("a: 1\nb: [\n");
  try {
    LoadYamlFile(file.path());
    FAIL() << "expected YamlError";
  } catch (const YamlError& error) {
    EXPECT_THAT(error.what(), HasSubstr(file.path()));
    EXPECT_THAT(error.what(), HasSubstr("line"));
  }
}

TEST(YamlToJsonTest, LoadYamlFileOnAMissingFileNamesThePath) {
  try {
    LoadYamlFile("/nonexistent/ringleader/x.yaml");
    FAIL() << "expected YamlError";
  } catch (const YamlError& error) {
    EXPECT_THAT(error.what(), HasSubstr("/nonexistent/ringleader/x.yaml"));
  }
}

class YamlRoundTripTest : public ::testing::TestWithParam<json> {};

TEST_P(YamlRoundTripTest, JsonToYamlThenParseYamlGivesTheOriginal) {
  const json& original = GetParam();
  std::string text = JsonToYaml(original);
  json parsed = ParseYaml(text);
  EXPECT_EQ(parsed, original) << "YAML was:\n" << text;
  // Numbers keep their kind: an integer does not come back as a float or the reverse.
  EXPECT_EQ(parsed.dump(), original.dump()) << "YAML was:\n" << text;
}

INSTANTIATE_TEST_SUITE_P(
    TrickyValues, YamlRoundTripTest,
    ::testing::Values(
        json("true"), json("1.0"), json(""), json("null"), json("0x10"), json("~"), json("yes"),
        json("No"), json("010"), json("1_000"), json(".inf"), json("-.nan"), json("2024-01-01"),
        json("64Mi"), json("key: value"), json("a #comment"), json("#start"), json("trailing:"),
        json(" leading space"), json("trailing space "), json("- dash"), json("--flag=1"),
        json("[x]"), json("{x}"), json("*alias"), json("&anchor"), json("!tag"), json("|pipe"),
        json(">fold"), json("%percent"), json("@at"), json("`tick"), json("'single'"),
        json("\"double\""), json("<<"), json("back\\slash"), json("tab\there"), json("bell\x07"),
        json("cr\r\nlf"), json("line one\nline two"), json("ends with newline\n"),
        json("two newlines\n\n"), json("\nleading newline"), json("  indented\nsecond"),
        json("first\n  indented"), json("blank\n\nlines\n"), json("spaces only line\n   \nafter"),
        json("unicode ünïcødé ✓"), json("nel\xC2\x85here"), json("---"), json("..."), json(nullptr),
        json(true), json(false), json(0), json(-7), json(std::numeric_limits<std::int64_t>::max()),
        json(1.0), json(-0.5), json(1e100), json(0.1), json::object(), json::array(),
        json({{"", "empty key"},
              {"true", 1},
              {"1", "one"},
              {"a: b", "colon key"},
              {"multi\nline key", "x"}}),
        json({{"args", json::array({"sh", "-c", "echo hi\nexit 1\n"})},
              {"nested", json::array({json::array({1, "2"}), json::array(), json::object(),
                                      json({{"k", "v"}, {"l", json::array({})}})})},
              {"obj", {{"inner", {{"deeper", "yes"}}}, {"script", "#!/bin/sh\nset -e\n"}}}}),
        json::array({json::array({json::array({"deep"})}), "x: y", json({{"a", nullptr}})})));

TEST(JsonToYamlTest, WritesReadableBlockStyle) {
  json job = {
      {"apiVersion", "ringleader.dev/v1alpha1"},
      {"kind", "TrainingJob"},
      {"spec",
       {{"replicas", 2},
        {"template",
         {{"spec",
           {{"containers",
             json::array({{{"name", "trainer"}, {"args", json::array({"--lr", "0.1"})}}})}}}}}}}};
  EXPECT_EQ(JsonToYaml(job),
            "apiVersion: ringleader.dev/v1alpha1\n"
            "kind: TrainingJob\n"
            "spec:\n"
            "  replicas: 2\n"
            "  template:\n"
            "    spec:\n"
            "      containers:\n"
            "        - args:\n"
            "            - \"--lr\"\n"
            "            - \"0.1\"\n"
            "          name: trainer\n");
}

TEST(JsonToYamlTest, MultiLineStringsUseLiteralBlocks) {
  EXPECT_EQ(JsonToYaml(json({{"script", "set -e\nrun\n"}})), "script: |\n  set -e\n  run\n");
  EXPECT_EQ(JsonToYaml(json({{"s", "a\nb"}})), "s: |-\n  a\n  b\n");
}

TEST(JsonToYamlTest, TopLevelScalarHasNoLeadingSpace) {
  EXPECT_EQ(JsonToYaml(json(5)), "5\n");
  EXPECT_EQ(JsonToYaml(json("true")), "\"true\"\n");
}

}  // namespace
}  // namespace ringleader::yaml
