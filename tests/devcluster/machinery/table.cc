// Table responses: printer columns evaluated per object, with kubectl's age formatting.
#include "tests/devcluster/machinery/table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "tests/devcluster/machinery/status.h"

namespace ringleader::devcluster {
namespace {

using nlohmann::json;

// One step of a parsed JSONPath.
struct Step {
  enum class Kind { kField, kIndex, kSlice, kWildcard, kFilter };
  Kind kind = Kind::kField;
  std::string field;
  long index = 0;
  std::optional<long> slice_start, slice_end;
  // Filter: @<filter_path> <op> <literal>; an empty op tests that the path exists.
  std::vector<std::string> filter_path;
  std::string op;
  json literal;
};

[[noreturn]] void FailPath(std::string_view path, std::string_view why) {
  throw BadRequest("invalid JSONPath " + std::string(path) + ": " + std::string(why));
}

std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<long> ParseLong(std::string_view text) {
  text = TrimSpaces(text);
  if (text.empty()) {
    return std::nullopt;
  }
  std::string copy(text);
  char* end = nullptr;
  long value = std::strtol(copy.c_str(), &end, 10);
  if (end != copy.c_str() + copy.size()) {
    return std::nullopt;
  }
  return value;
}

// `.a.b` (after the @) as field names.
std::vector<std::string> DottedFields(std::string_view text) {
  std::vector<std::string> fields;
  while (!text.empty()) {
    if (text.front() != '.') {
      return {};
    }
    text.remove_prefix(1);
    size_t end = text.find('.');
    fields.emplace_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end);
  }
  return fields;
}

json ParseLiteral(std::string_view path, std::string_view text) {
  text = TrimSpaces(text);
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') &&
      text.back() == text.front()) {
    return std::string(text.substr(1, text.size() - 2));
  }
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded()) {
    FailPath(path, "bad literal " + std::string(text));
  }
  return value;
}

Step ParseBracket(std::string_view path, std::string_view inside) {
  Step step;
  inside = TrimSpaces(inside);
  if (inside == "*") {
    step.kind = Step::Kind::kWildcard;
  } else if (inside.starts_with("?(") && inside.ends_with(")")) {
    step.kind = Step::Kind::kFilter;
    std::string_view expression = TrimSpaces(inside.substr(2, inside.size() - 3));
    if (!expression.starts_with("@")) {
      FailPath(path, "filter must start with @");
    }
    expression.remove_prefix(1);
    size_t op = expression.find_first_of("=!<>");
    std::string_view lhs = TrimSpaces(expression.substr(0, op));
    step.filter_path = DottedFields(lhs);
    if (op != std::string_view::npos) {
      size_t op_end = op + 1;
      while (op_end < expression.size() && (expression[op_end] == '=')) {
        ++op_end;
      }
      step.op = std::string(expression.substr(op, op_end - op));
      if (step.op != "==" && step.op != "!=") {
        FailPath(path, "unsupported filter operator " + step.op);
      }
      step.literal = ParseLiteral(path, expression.substr(op_end));
    }
  } else if ((inside.front() == '\'' || inside.front() == '"') && inside.size() >= 2 &&
             inside.back() == inside.front()) {
    step.field = std::string(inside.substr(1, inside.size() - 2));
  } else if (size_t colon = inside.find(':'); colon != std::string_view::npos) {
    step.kind = Step::Kind::kSlice;
    std::string_view start = TrimSpaces(inside.substr(0, colon));
    std::string_view end = TrimSpaces(inside.substr(colon + 1));
    if (!start.empty()) {
      step.slice_start = ParseLong(start);
      if (!step.slice_start) {
        FailPath(path, "bad slice start");
      }
    }
    if (!end.empty()) {
      step.slice_end = ParseLong(end);
      if (!step.slice_end) {
        FailPath(path, "bad slice end");
      }
    }
  } else if (std::optional<long> index = ParseLong(inside)) {
    step.kind = Step::Kind::kIndex;
    step.index = *index;
  } else {
    FailPath(path, "cannot parse [" + std::string(inside) + "]");
  }
  return step;
}

std::vector<Step> ParseJsonPath(std::string_view path) {
  std::string_view text = TrimSpaces(path);
  if (text.starts_with("{") && text.ends_with("}")) {
    text = TrimSpaces(text.substr(1, text.size() - 2));
  }
  if (text.starts_with("$")) {
    text.remove_prefix(1);
  }
  std::vector<Step> steps;
  size_t i = 0;
  if (!text.empty() && text[0] == '.') {
    i = 1;  // otherwise a leading bare field name, as in "status.phase"
  }
  while (i < text.size()) {
    if (text[i] == '[') {
      size_t close = std::string_view::npos;
      char quote = 0;
      int depth = 0;
      for (size_t j = i + 1; j < text.size(); ++j) {
        char c = text[j];
        if (quote != 0) {
          quote = c == quote ? 0 : quote;
        } else if (c == '\'' || c == '"') {
          quote = c;
        } else if (c == '(') {
          ++depth;
        } else if (c == ')') {
          --depth;
        } else if (c == ']' && depth == 0) {
          close = j;
          break;
        }
      }
      if (close == std::string_view::npos) {
        FailPath(path, "unclosed [");
      }
      steps.push_back(ParseBracket(path, text.substr(i + 1, close - i - 1)));
      i = close + 1;
      if (i < text.size() && text[i] == '.') {
        ++i;
      }
      continue;
    }
    if (text[i] == '.') {
      FailPath(path, "recursive descent (..) is not supported");
    }
    std::string field;
    while (i < text.size() && text[i] != '.' && text[i] != '[') {
      if (text[i] == '\\' && i + 1 < text.size()) {
        ++i;
      }
      field += text[i++];
    }
    Step step;
    if (field == "*") {
      step.kind = Step::Kind::kWildcard;
    } else {
      step.field = std::move(field);
    }
    steps.push_back(std::move(step));
    if (i < text.size() && text[i] == '.') {
      ++i;
    }
  }
  return steps;
}

const json* Descend(const json& node, const std::vector<std::string>& fields) {
  const json* current = &node;
  for (const std::string& field : fields) {
    if (!current->is_object()) {
      return nullptr;
    }
    auto it = current->find(field);
    if (it == current->end()) {
      return nullptr;
    }
    current = &*it;
  }
  return current;
}

bool FilterMatches(const Step& step, const json& element) {
  const json* value = Descend(element, step.filter_path);
  if (step.op.empty()) {
    return value != nullptr;
  }
  bool equal = value != nullptr && *value == step.literal;
  if (value != nullptr && value->is_number() && step.literal.is_number()) {
    equal = value->get<double>() == step.literal.get<double>();
  }
  return step.op == "==" ? equal : !equal;
}

void ApplyStep(const Step& step, const json& node, std::vector<json>& out) {
  switch (step.kind) {
    case Step::Kind::kField:
      if (node.is_object()) {
        if (auto it = node.find(step.field); it != node.end()) {
          out.push_back(*it);
        }
      }
      break;
    case Step::Kind::kIndex:
      if (node.is_array()) {
        long size = static_cast<long>(node.size());
        long index = step.index < 0 ? size + step.index : step.index;
        if (index >= 0 && index < size) {
          out.push_back(node[static_cast<size_t>(index)]);
        }
      }
      break;
    case Step::Kind::kSlice:
      if (node.is_array()) {
        long size = static_cast<long>(node.size());
        auto clamp = [size](long value) {
          value = value < 0 ? size + value : value;
          return std::max(0L, std::min(size, value));
        };
        long start = clamp(step.slice_start.value_or(0));
        long end = clamp(step.slice_end.value_or(size));
        for (long i = start; i < end; ++i) {
          out.push_back(node[static_cast<size_t>(i)]);
        }
      }
      break;
    case Step::Kind::kWildcard:
      if (node.is_array() || node.is_object()) {
        for (const json& child : node) {
          out.push_back(child);
        }
      }
      break;
    case Step::Kind::kFilter:
      if (node.is_array()) {
        for (const json& child : node) {
          if (FilterMatches(step, child)) {
            out.push_back(child);
          }
        }
      }
      break;
  }
}

std::string CellText(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

json Cell(const PrinterColumn& column, const json& object, Time now) {
  if (column.compute) {
    return column.compute(object, now);
  }
  std::vector<json> results = EvaluateJsonPath(object, column.json_path);
  if (results.empty() || (results.size() == 1 && results[0].is_null())) {
    return nullptr;
  }
  if (results.size() > 1) {
    std::string joined;
    for (size_t i = 0; i < results.size(); ++i) {
      joined += (i == 0 ? "" : " ") + CellText(results[i]);
    }
    return joined;
  }
  const json& value = results[0];
  if (column.type == "date" && value.is_string()) {
    std::optional<Time> when = ParseTime(value.get<std::string>());
    if (when) {
      return HumanDuration(now - *when);
    }
    return value;
  }
  if (column.type == "string") {
    return CellText(value);
  }
  return value;
}

}  // namespace

std::string HumanDuration(std::chrono::nanoseconds duration) {
  using std::chrono::duration_cast;
  long long seconds = duration_cast<std::chrono::seconds>(duration).count();
  if (seconds < -1) {
    return "<invalid>";
  }
  if (seconds < 0) {
    return "0s";
  }
  if (seconds < 60 * 2) {
    return std::to_string(seconds) + "s";
  }
  long long minutes = seconds / 60;
  if (minutes < 10) {
    long long rest = seconds % 60;
    return std::to_string(minutes) + "m" + (rest == 0 ? "" : std::to_string(rest) + "s");
  }
  if (minutes < 60 * 3) {
    return std::to_string(minutes) + "m";
  }
  long long hours = minutes / 60;
  if (hours < 8) {
    long long rest = minutes % 60;
    return std::to_string(hours) + "h" + (rest == 0 ? "" : std::to_string(rest) + "m");
  }
  if (hours < 48) {
    return std::to_string(hours) + "h";
  }
  if (hours < 24 * 8) {
    long long rest = hours % 24;
    return std::to_string(hours / 24) + "d" + (rest == 0 ? "" : std::to_string(rest) + "h");
  }
  if (hours < 24 * 365 * 2) {
    return std::to_string(hours / 24) + "d";
  }
  if (hours < 24 * 365 * 8) {
    long long rest = (hours / 24) % 365;
    return std::to_string(hours / 24 / 365) + "y" + (rest == 0 ? "" : std::to_string(rest) + "d");
  }
  return std::to_string(hours / 24 / 365) + "y";
}

std::vector<json> EvaluateJsonPath(const json& object, std::string_view path) {
  std::vector<json> nodes = {object};
  for (const Step& step : ParseJsonPath(path)) {
    std::vector<json> next;
    for (const json& node : nodes) {
      ApplyStep(step, node, next);
    }
    nodes = std::move(next);
  }
  return nodes;
}

json BuildTable(const ResourceInfo& info, const std::vector<json>& objects, Time now,
                const std::string& list_resource_version, bool include_object_metadata) {
  json definitions = json::array();
  definitions.push_back({{"name", "Name"},
                         {"type", "string"},
                         {"format", "name"},
                         {"description", "Name must be unique within a namespace. More info: "
                                         "https://kubernetes.io/docs/concepts/overview/"
                                         "working-with-objects/names#names"},
                         {"priority", 0}});
  for (const PrinterColumn& column : info.columns) {
    definitions.push_back({{"name", column.name},
                           {"type", column.type},
                           {"format", column.format},
                           {"description", column.description},
                           {"priority", column.priority}});
  }
  json rows = json::array();
  for (const json& object : objects) {
    json cells = json::array();
    json metadata = object.is_object() ? object.value("metadata", json::object()) : json::object();
    cells.push_back(metadata.value("name", ""));
    for (const PrinterColumn& column : info.columns) {
      cells.push_back(Cell(column, object, now));
    }
    json row = {{"cells", std::move(cells)}};
    if (include_object_metadata) {
      row["object"] = {{"kind", "PartialObjectMetadata"},
                       {"apiVersion", "meta.k8s.io/v1"},
                       {"metadata", std::move(metadata)}};
    }
    rows.push_back(std::move(row));
  }
  json table = {{"kind", "Table"},
                {"apiVersion", "meta.k8s.io/v1"},
                {"metadata", json::object()},
                {"columnDefinitions", std::move(definitions)},
                {"rows", std::move(rows)}};
  if (!list_resource_version.empty()) {
    table["metadata"]["resourceVersion"] = list_resource_version;
  }
  return table;
}

}  // namespace ringleader::devcluster
