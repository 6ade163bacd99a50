// Label- and field-selector parsing and matching, with the API server's error wording.
#include "tests/devcluster/machinery/selectors.h"

#include <algorithm>
#include <cctype>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// Splits on commas outside parentheses.
std::vector<std::string_view> SplitTopLevel(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    } else if (text[i] == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// A label name or value: at most 63 characters, alphanumerics with '-', '_' or '.' inside.
bool IsQualifiedNamePart(std::string_view text) {
  if (text.empty() || text.size() > 63 || !IsAlnum(text.front()) || !IsAlnum(text.back())) {
    return false;
  }
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

// A DNS-1123 subdomain, the optional prefix of a label key.
bool IsDnsSubdomain(std::string_view text) {
  if (text.empty() || text.size() > 253) {
    return false;
  }
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool edge = i == 0 || i + 1 == text.size() || text[i - 1] == '.' || text[i + 1] == '.';
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (!edge && (c == '-' || c == '.'));
    if (!ok || (c == '.' && edge)) {
      return false;
    }
  }
  return true;
}

bool IsLabelKey(std::string_view key) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) {
    return IsQualifiedNamePart(key);
  }
  return IsDnsSubdomain(key.substr(0, slash)) && IsQualifiedNamePart(key.substr(slash + 1));
}

bool IsLabelValue(std::string_view value) { return value.empty() || IsQualifiedNamePart(value); }

[[noreturn]] void FailRequirement(std::string_view part, std::string_view why) {
  throw BadRequest("unable to parse requirement: \"" + std::string(Trim(part)) + "\": " +
                   std::string(why));
}

void CheckKey(std::string_view part, std::string_view key) {
  if (!IsLabelKey(key)) {
    FailRequirement(part, "invalid label key \"" + std::string(key) +
                              "\": name part must consist of alphanumeric characters, '-', '_' "
                              "or '.', and must start and end with an alphanumeric character");
  }
}

void CheckValue(std::string_view part, std::string_view value) {
  if (!IsLabelValue(value)) {
    FailRequirement(part, "invalid label value: \"" + std::string(value) +
                              "\": a valid label must be an empty string or consist of "
                              "alphanumeric characters, '-', '_' or '.', and must start and end "
                              "with an alphanumeric character");
  }
}

// `key in (a, b)` / `key notin (a)`: returns false when `part` is not of that shape.
bool ParseSetRequirement(std::string_view part, std::string& key, bool& negate,
                         std::vector<std::string>& values) {
  size_t open = part.find('(');
  if (open == std::string_view::npos) {
    return false;
  }
  std::string_view head = Trim(part.substr(0, open));
  size_t space = head.find_last_of(" \t");
  if (space == std::string_view::npos) {
    return false;
  }
  std::string_view op = head.substr(space + 1);
  if (op != "in" && op != "notin") {
    return false;
  }
  negate = op == "notin";
  key = std::string(Trim(head.substr(0, space)));
  std::string_view rest = Trim(part.substr(open + 1));
  if (rest.empty() || rest.back() != ')') {
    FailRequirement(part, "found '(' without a closing ')'");
  }
  rest.remove_suffix(1);
  values.clear();
  if (!Trim(rest).empty()) {
    size_t start = 0;
    while (true) {
      size_t comma = rest.find(',', start);
      values.emplace_back(Trim(rest.substr(start, comma - start)));
      if (comma == std::string_view::npos) {
        break;
      }
      start = comma + 1;
    }
  }
  if (values.empty()) {
    FailRequirement(part, "for 'in', 'notin' operators, values set can't be empty");
  }
  return true;
}

// The JSON at a dotted path, as a field selector compares it ("" when missing).
std::string FieldValue(const json& object, const std::vector<std::string>& path) {
  const json* node = &object;
  for (const std::string& segment : path) {
    if (!node->is_object()) {
      return "";
    }
    auto it = node->find(segment);
    if (it == node->end()) {
      return "";
    }
    node = &*it;
  }
  if (node->is_string()) {
    return node->get<std::string>();
  }
  if (node->is_null()) {
    return "";
  }
  return node->dump();
}

}  // namespace

LabelSelector LabelSelector::Parse(std::string_view text) {
  LabelSelector selector;
  if (Trim(text).empty()) {
    return selector;
  }
  for (std::string_view raw : SplitTopLevel(text)) {
    std::string_view part = Trim(raw);
    if (part.empty()) {
      FailRequirement(raw, "found '', expected: identifier");
    }
    Requirement requirement;
    bool negate = false;
    if (ParseSetRequirement(part, requirement.key, negate, requirement.values)) {
      requirement.op = negate ? Op::kNotIn : Op::kIn;
      CheckKey(part, requirement.key);
      for (const std::string& value : requirement.values) {
        CheckValue(part, value);
      }
    } else if (part.front() == '!') {
      std::string_view key = Trim(part.substr(1));
      CheckKey(part, key);
      requirement.key = std::string(key);
      requirement.op = Op::kDoesNotExist;
    } else if (size_t pos = part.find_first_of("!="); pos != std::string_view::npos) {
      std::string_view key = Trim(part.substr(0, pos));
      std::string_view rest = part.substr(pos);
      if (rest.starts_with("!=")) {
        requirement.op = Op::kNotEquals;
        rest.remove_prefix(2);
      } else if (rest.starts_with("==")) {
        requirement.op = Op::kEquals;
        rest.remove_prefix(2);
      } else if (rest.starts_with("=")) {
        requirement.op = Op::kEquals;
        rest.remove_prefix(1);
      } else {
        FailRequirement(part, "found '!', expected: '=', '!=', '==', 'in', notin'");
      }
      std::string_view value = Trim(rest);
      CheckKey(part, key);
      CheckValue(part, value);
      requirement.key = std::string(key);
      requirement.values.emplace_back(value);
    } else {
      if (part.find_first_of(" \t()") != std::string_view::npos) {
        FailRequirement(part, "found '" + std::string(part) +
                                  "', expected: '=', '!=', '==', 'in', notin'");
      }
      CheckKey(part, part);
      requirement.key = std::string(part);
      requirement.op = Op::kExists;
    }
    selector.requirements_.push_back(std::move(requirement));
  }
  return selector;
}

bool LabelSelector::Matches(const json& labels) const {
  for (const Requirement& requirement : requirements_) {
    const json* value = nullptr;
    if (labels.is_object()) {
      auto it = labels.find(requirement.key);
      if (it != labels.end() && !it->is_null()) {
        value = &*it;
      }
    }
    std::string text = value == nullptr ? "" : (value->is_string() ? value->get<std::string>()
                                                                    : value->dump());
    bool in_set = value != nullptr && std::find(requirement.values.begin(),
                                                requirement.values.end(),
                                                text) != requirement.values.end();
    bool ok = false;
    switch (requirement.op) {
      case Op::kEquals:
      case Op::kIn:
        ok = in_set;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        ok = !in_set;
        break;
      case Op::kExists:
        ok = value != nullptr;
        break;
      case Op::kDoesNotExist:
        ok = value == nullptr;
        break;
    }
    if (!ok) {
      return false;
    }
  }
  return true;
}

FieldSelector FieldSelector::Parse(std::string_view text) {
  FieldSelector selector;
  if (Trim(text).empty()) {
    return selector;
  }
  // Split on unescaped commas, unescaping values as we go.
  std::vector<std::string> terms(1);
  std::vector<std::vector<bool>> escaped(1);
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      terms.back() += text[++i];
      escaped.back().push_back(true);
    } else if (c == ',') {
      terms.emplace_back();
      escaped.emplace_back();
    } else {
      terms.back() += c;
      escaped.back().push_back(false);
    }
  }
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string& term = terms[t];
    size_t op = std::string::npos;
    for (size_t i = 0; i < term.size(); ++i) {
      if (!escaped[t][i] && (term[i] == '=' || (term[i] == '!' && i + 1 < term.size() &&
                                                term[i + 1] == '='))) {
        op = i;
        break;
      }
    }
    if (op == std::string::npos || op == 0) {
      throw BadRequest("invalid selector: '" + std::string(text) + "'; can't understand '" + term +
                       "'");
    }
    Term parsed;
    parsed.negate = term[op] == '!';
    size_t value_start = op + 1;
    if (parsed.negate || (value_start < term.size() && term[value_start] == '=')) {
      ++value_start;
    }
    std::string key(Trim(std::string_view(term).substr(0, op)));
    parsed.value = term.substr(value_start);
    size_t start = 0;
    while (true) {
      size_t dot = key.find('.', start);
      parsed.path.push_back(key.substr(start, dot - start));
      if (dot == std::string::npos) {
        break;
      }
      start = dot + 1;
    }
    selector.terms_.push_back(std::move(parsed));
  }
  return selector;
}

bool FieldSelector::Matches(const json& object) const {
  for (const Term& term : terms_) {
    bool equal = FieldValue(object, term.path) == term.value;
    if (equal == term.negate) {
      return false;
    }
  }
  return true;
}

}  // namespace ringleader::devcluster
