// YAML <-> JSON for manifests: a resolver for plain scalars (YAML 1.2 core schema), a converter
// over yaml-cpp's node tree, and a small block-style writer whose quoting keeps types exact.
#include "operator/yaml/yaml_to_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

namespace ringleader::yaml {
namespace {

using nlohmann::json;

// Deep enough for any manifest; a cyclic alias (`&a [*a]`, which yaml-cpp builds) stops here.
constexpr int kMaxDepth = 1000;
// Far above any object the API server would store; stops alias bombs ("billion laughs").
constexpr std::size_t kMaxNodes = std::size_t{1} << 20;

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

std::string Locate(const YAML::Mark& mark) {
  if (mark.is_null()) {
    return "";
  }
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
         ": ";
}

[[noreturn]] void Fail(const YAML::Mark& mark, const std::string& message) {
  throw YamlError(Locate(mark) + message);
}

bool IsDigit(char c, int base) {
  if (base == 8) {
    return c >= '0' && c <= '7';
  }
  if (base == 16) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }
  return c >= '0' && c <= '9';
}

bool AllDigits(std::string_view text, int base) {
  if (text.empty()) {
    return false;
  }
  for (char c : text) {
    if (!IsDigit(c, base)) {
      return false;
    }
  }
  return true;
}

bool IsNullText(std::string_view text) {
  return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

std::optional<bool> BoolFromText(std::string_view text) {
  if (text == "true" || text == "True" || text == "TRUE") {
    return true;
  }
  if (text == "false" || text == "False" || text == "FALSE") {
    return false;
  }
  return std::nullopt;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? - the core schema's float, which also
// matches integers; callers try integers first.
bool IsFloatSyntax(std::string_view text) {
  std::size_t i = 0;
  auto digits = [&]() {
    std::size_t start = i;
    while (i < text.size() && IsDigit(text[i], 10)) {
      ++i;
    }
    return i - start;
  };
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
    ++i;
  }
  std::size_t mantissa = digits();
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) {
    return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
      ++i;
    }
    if (digits() == 0) {
      return false;
    }
  }
  return i == text.size();
}

// .inf and .nan: valid YAML floats with no JSON form.
bool IsSpecialFloatText(std::string_view text) {
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    text.remove_prefix(1);
    return text == ".inf" || text == ".Inf" || text == ".INF";
  }
  return text == ".inf" || text == ".Inf" || text == ".INF" || text == ".nan" || text == ".NaN" ||
         text == ".NAN";
}

std::optional<double> DoubleFromText(std::string_view text) {
  if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

// Decimal, 0x and 0o integers; beyond int64 they become doubles, as the API server's decoder
// turns them.
std::optional<json> IntegerFromText(std::string_view text) {
  int base = 10;
  bool negative = false;
  std::string_view digits = text;
  if (text.starts_with("0x")) {
    base = 16;
    digits.remove_prefix(2);
  } else if (text.starts_with("0o")) {
    base = 8;
    digits.remove_prefix(2);
  } else if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    digits.remove_prefix(1);
  }
  if (!AllDigits(digits, base)) {
    return std::nullopt;
  }
  std::uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (ec == std::errc() && end == digits.data() + digits.size()) {
    if (!negative && magnitude <= kMax) {
      return json(static_cast<std::int64_t>(magnitude));
    }
    if (negative && magnitude <= kMax + 1) {
      // -(2^63) fits, but negating it as int64 would overflow.
      return json(magnitude == kMax + 1 ? std::numeric_limits<std::int64_t>::min()
                                        : -static_cast<std::int64_t>(magnitude));
    }
  }
  if (base != 10) {
    double value = 0;
    for (char c : digits) {
      int digit = IsDigit(c, 10) ? c - '0' : (c | 0x20) - 'a' + 10;
      value = value * base + digit;
    }
    return json(value);
  }
  if (auto value = DoubleFromText(text)) {
    return json(*value);
  }
  return std::nullopt;
}

json ResolvePlain(const std::string& text) {
  if (IsNullText(text)) {
    return nullptr;
  }
  if (auto flag = BoolFromText(text)) {
    return *flag;
  }
  if (auto integer = IntegerFromText(text)) {
    return *integer;
  }
  if (IsFloatSyntax(text)) {
    if (auto value = DoubleFromText(text)) {
      return *value;
    }
  }
  return text;
}

// JSON text must be UTF-8; yaml-cpp passes other bytes (and its own decoding of "\N") through.
bool IsValidUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = lead < 0x80           ? 1
                         : (lead >> 5) == 0x6  ? 2
                         : (lead >> 4) == 0xe  ? 3
                         : (lead >> 3) == 0x1e ? 4
                                               : 0;
    if (length == 0 || i + length > text.size()) {
      return false;
    }
    std::uint32_t code = length == 1 ? lead : lead & (0x7f >> length);
    for (std::size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) {
        return false;
      }
      code = (code << 6) | (next & 0x3f);
    }
    static constexpr std::uint32_t kSmallestForLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kSmallestForLength[length] || code > 0x10ffff ||
        (code >= 0xd800 && code <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

json ResolveTagged(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  const std::string& text = node.Scalar();
  if (!IsValidUtf8(text)) {
    Fail(node.Mark(), "scalar is not valid UTF-8");
  }
  if (tag == "?") {
    return ResolvePlain(text);
  }
  if (!std::string_view(tag).starts_with(kTagPrefix)) {
    // "!" marks quoted and block scalars; local tags (!foo) carry no JSON meaning either.
    return text;
  }
  std::string_view kind = std::string_view(tag).substr(kTagPrefix.size());
  if (kind == "null") {
    if (!IsNullText(text)) {
      Fail(node.Mark(), "\"" + text + "\" is not a valid !!null");
    }
    return nullptr;
  }
  if (kind == "bool") {
    if (auto flag = BoolFromText(text)) {
      return *flag;
    }
    Fail(node.Mark(), "\"" + text + "\" is not a valid !!bool");
  }
  if (kind == "int") {
    if (auto integer = IntegerFromText(text)) {
      return *integer;
    }
    Fail(node.Mark(), "\"" + text + "\" is not a valid !!int");
  }
  if (kind == "float") {
    if (auto integer = IntegerFromText(text)) {
      return json(integer->get<double>());
    }
    if (IsFloatSyntax(text)) {
      if (auto value = DoubleFromText(text)) {
        return *value;
      }
    }
    Fail(node.Mark(), "\"" + text + "\" is not a finite !!float");
  }
  return text;  // !!str, and !!binary/!!timestamp, which JSON only has as text
}

// Walks one yaml-cpp tree; holds the depth and node budget so a hostile document cannot
// overflow the stack or memory.
class Converter {
 public:
  json Convert(const YAML::Node& node, int depth) {
    if (depth > kMaxDepth) {
      Fail(node.Mark(),
           "nesting deeper than " + std::to_string(kMaxDepth) + " levels (or a cyclic alias)");
    }
    if (++nodes_ > kMaxNodes) {
      Fail(node.Mark(), "document expands to more than " + std::to_string(kMaxNodes) +
                            " nodes (too many aliases?)");
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
        return nullptr;
      case YAML::NodeType::Scalar:
        return ResolveTagged(node);
      case YAML::NodeType::Sequence: {
        json array = json::array();
        for (const YAML::Node& item : node) {
          array.push_back(Convert(item, depth + 1));
        }
        return array;
      }
      case YAML::NodeType::Map:
        return ConvertMap(node, depth);
      case YAML::NodeType::Undefined:
        break;
    }
    Fail(node.Mark(), "undefined YAML node");
  }

 private:
  json ConvertMap(const YAML::Node& node, int depth) {
    json object = json::object();
    std::vector<YAML::Node> merges;
    for (const auto& entry : node) {
      if (IsMergeKey(entry.first)) {
        merges.push_back(entry.second);
        continue;
      }
      std::string key = KeyText(entry.first);
      if (object.contains(key)) {
        Fail(entry.first.Mark(), "duplicate map key \"" + key + "\"");
      }
      object[key] = Convert(entry.second, depth + 1);
    }
    // `<<: *base` (YAML merge keys, which Kubernetes' YAML library honours): keys written in
    // this map win, then earlier merge sources over later ones.
    for (const YAML::Node& merge : merges) {
      json sources = Convert(merge, depth + 1);
      if (sources.is_object()) {
        sources = json::array({sources});
      }
      if (!sources.is_array()) {
        Fail(merge.Mark(), "a merge key (<<) needs a map or a list of maps");
      }
      for (const json& source : sources) {
        if (!source.is_object()) {
          Fail(merge.Mark(), "a merge key (<<) needs a map or a list of maps");
        }
        for (const auto& [key, value] : source.items()) {
          if (!object.contains(key)) {
            object[key] = value;
          }
        }
      }
    }
    return object;
  }

  static bool IsMergeKey(const YAML::Node& key) {
    return key.IsScalar() && key.Tag() == "?" && key.Scalar() == "<<";
  }

  // JSON keys are strings: scalar keys become their canonical text, as sigs.k8s.io/yaml does.
  static std::string KeyText(const YAML::Node& key) {
    if (!key.IsScalar()) {
      Fail(key.Mark(), "map keys must be scalars");
    }
    json resolved = ResolveTagged(key);
    if (resolved.is_string()) {
      return resolved.get<std::string>();
    }
    if (resolved.is_null()) {
      Fail(key.Mark(), "map keys must not be null");
    }
    return resolved.dump();
  }

  std::size_t nodes_ = 0;
};

std::vector<YAML::Node> LoadAll(std::string_view text) {
  try {
    return YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& error) {
    Fail(error.mark, error.msg);
  }
}

// --- JsonToYaml -------------------------------------------------------------------------------

bool ContainsYamlLineBreakOrBom(std::string_view text) {
  return text.find("\xC2\x85") != std::string_view::npos ||      // NEL
         text.find("\xE2\x80\xA8") != std::string_view::npos ||  // line separator
         text.find("\xE2\x80\xA9") != std::string_view::npos ||  // paragraph separator
         text.find("\xEF\xBB\xBF") != std::string_view::npos;    // byte order mark
}

bool HasControlCharacter(std::string_view text, bool allow_newline_and_tab) {
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (allow_newline_and_tab && (c == '\n' || c == '\t')) {
      continue;
    }
    if (byte < 0x20 || byte == 0x7f) {
      return true;
    }
  }
  return false;
}

std::string Lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return lower;
}

// True when `text` can be written as a plain scalar and every YAML parser (1.2 core, and the
// 1.1 rules older Kubernetes tooling uses) reads it back as this same string.
bool IsSafePlain(std::string_view text) {
  if (text.empty() || HasControlCharacter(text, false) || ContainsYamlLineBreakOrBom(text)) {
    return false;
  }
  if (!ResolvePlain(std::string(text)).is_string() || IsSpecialFloatText(text)) {
    return false;
  }
  static const std::set<std::string, std::less<>> kYaml11Words = {"y",  "n",   "yes", "no",
                                                                  "on", "off", "=",   "<<"};
  if (kYaml11Words.contains(Lowercase(text))) {
    return false;
  }
  // Numbers, dates, versions, sexagesimals: 1.1 resolves many digit-led forms, so quote them all.
  char first = text.front();
  if (IsDigit(first, 10) ||
      ((first == '-' || first == '+' || first == '.') && text.size() > 1 && IsDigit(text[1], 10))) {
    return false;
  }
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(first) != std::string_view::npos) {
    return false;
  }
  if (text.starts_with("...") || text.front() == ' ' || text.back() == ' ' || text.back() == ':' ||
      text.find(": ") != std::string_view::npos || text.find(" #") != std::string_view::npos) {
    return false;
  }
  return true;
}

// A literal block (`|`) is exact for text whose first line starts with a visible character
// (indentation is then detected right) and which has no characters a block cannot hold.
bool FitsLiteralBlock(std::string_view text) {
  if (text.find('\n') == std::string_view::npos || HasControlCharacter(text, true) ||
      ContainsYamlLineBreakOrBom(text)) {
    return false;
  }
  char first = text.front();
  return first != ' ' && first != '\t' && first != '\n';
}

std::string DoubleQuoted(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto byte = static_cast<unsigned char>(c);
    std::string_view rest = text.substr(i);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else if (rest.starts_with("\xC2\x85")) {
      out += "\\u0085";  // not \N: yaml-cpp 0.7 decodes that to a lone Latin-1 byte
      i += 1;
    } else if (rest.starts_with("\xE2\x80\xA8")) {
      out += "\\u2028";
      i += 2;
    } else if (rest.starts_with("\xE2\x80\xA9")) {
      out += "\\u2029";
      i += 2;
    } else if (rest.starts_with("\xEF\xBB\xBF")) {
      out += "\\uFEFF";
      i += 2;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

// Writes block-style YAML into one string; `indent` is the column of the current collection.
class YamlWriter {
 public:
  std::string Write(const json& value) {
    if (IsNonEmptyContainer(value)) {
      WriteContainer(value, 0, false);
    } else {
      WriteInline(value, 2);
      out_.erase(0, 1);  // a top-level scalar has no key or dash to follow
    }
    return std::move(out_);
  }

 private:
  static bool IsNonEmptyContainer(const json& value) {
    return (value.is_object() || value.is_array()) && !value.empty();
  }

  // A scalar or empty container after "key:" or "-" (the caller has written no space yet);
  // a literal block's lines go at `block_indent`.
  void WriteInline(const json& value, int block_indent) {
    out_ += ' ';
    if (value.is_string() && FitsLiteralBlock(value.get_ref<const std::string&>())) {
      WriteLiteral(value.get_ref<const std::string&>(), block_indent);
      return;
    }
    out_ += ScalarText(value);
    out_ += '\n';
  }

  void WriteContainer(const json& value, int indent, bool first_inline) {
    if (value.is_object()) {
      WriteObject(value, indent, first_inline);
    } else {
      WriteArray(value, indent, first_inline);
    }
  }

  // first_inline: the first entry continues a line already begun ("- key: value").
  void WriteObject(const json& object, int indent, bool first_inline) {
    bool first = true;
    for (const auto& [key, value] : object.items()) {
      if (!first || !first_inline) {
        out_.append(static_cast<std::size_t>(indent), ' ');
      }
      first = false;
      out_ += KeyText(key);
      out_ += ':';
      if (IsNonEmptyContainer(value)) {
        out_ += '\n';
        WriteContainer(value, indent + 2, false);
      } else {
        WriteInline(value, indent + 2);
      }
    }
  }

  void WriteArray(const json& array, int indent, bool first_inline) {
    bool first = true;
    for (const json& item : array) {
      if (!first || !first_inline) {
        out_.append(static_cast<std::size_t>(indent), ' ');
      }
      first = false;
      out_ += '-';
      if (IsNonEmptyContainer(item)) {
        out_ += ' ';
        WriteContainer(item, indent + 2, true);
      } else {
        WriteInline(item, indent + 2);
      }
    }
  }

  void WriteLiteral(const std::string& text, int indent) {
    std::size_t trailing = 0;
    while (trailing < text.size() && text[text.size() - 1 - trailing] == '\n') {
      ++trailing;
    }
    // Chomping indicator: strip (no final newline), clip (one), keep (several).
    out_ += trailing == 0 ? "|-\n" : trailing == 1 ? "|\n" : "|+\n";
    std::string_view body(text);
    if (trailing > 0) {
      body.remove_suffix(1);  // the last line's own line break
    }
    std::size_t start = 0;
    while (true) {
      std::size_t end = body.find('\n', start);
      std::string_view line = body.substr(start, end == std::string_view::npos ? end : end - start);
      if (!line.empty()) {
        out_.append(static_cast<std::size_t>(indent), ' ');
        out_ += line;
      }
      out_ += '\n';
      if (end == std::string_view::npos) {
        break;
      }
      start = end + 1;
    }
  }

  static std::string KeyText(const std::string& key) {
    return IsSafePlain(key) ? key : DoubleQuoted(key);
  }

  static std::string ScalarText(const json& value) {
    switch (value.type()) {
      case json::value_t::null:
        return "null";
      case json::value_t::object:
        return "{}";
      case json::value_t::array:
        return "[]";
      case json::value_t::string: {
        const auto& text = value.get_ref<const std::string&>();
        return IsSafePlain(text) ? text : DoubleQuoted(text);
      }
      case json::value_t::number_float: {
        double number = value.get<double>();
        if (std::isnan(number)) {
          return ".nan";
        }
        if (std::isinf(number)) {
          return number > 0 ? ".inf" : "-.inf";
        }
        return value.dump();  // always has a '.' or an exponent, so it reads back as a float
      }
      case json::value_t::boolean:
      case json::value_t::number_integer:
      case json::value_t::number_unsigned:
        return value.dump();
      case json::value_t::binary:
      case json::value_t::discarded:
        break;
    }
    throw YamlError("JSON value of type " + std::string(value.type_name()) + " has no YAML form");
  }

  std::string out_;
};

}  // namespace

nlohmann::json YamlToJson(const YAML::Node& node) {
  Converter converter;
  return converter.Convert(node, 0);
}

std::vector<nlohmann::json> ParseYamlDocuments(std::string_view text) {
  std::vector<nlohmann::json> documents;
  for (const YAML::Node& node : LoadAll(text)) {
    nlohmann::json document = YamlToJson(node);
    if (!document.is_null()) {
      documents.push_back(std::move(document));
    }
  }
  return documents;
}

nlohmann::json ParseYaml(std::string_view text) {
  std::vector<nlohmann::json> documents = ParseYamlDocuments(text);
  if (documents.size() > 1) {
    throw YamlError("expected one YAML document, found " + std::to_string(documents.size()));
  }
  return documents.empty() ? nlohmann::json(nullptr) : std::move(documents.front());
}

nlohmann::json LoadYamlFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw YamlError(path + ": cannot open file");
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) {
    throw YamlError(path + ": cannot read file");
  }
  try {
    return ParseYaml(contents.str());
  } catch (const YamlError& error) {
    throw YamlError(path + ": " + error.what());
  }
}

std::string JsonToYaml(const nlohmann::json& value) {
  YamlWriter writer;
  return writer.Write(value);
}

}  // namespace ringleader::yaml
