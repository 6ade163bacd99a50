// Label and field selectors as list and watch requests carry them (`labelSelector=`,
// `fieldSelector=`), parsed once and matched against each object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::devcluster {

// A label selector: comma-separated requirements, all of which must hold: `a=b`, `a==b`, `a!=b`,
// `a in (x,y)`, `a notin (x)`, `a` (exists), `!a` (does not exist). As in Kubernetes, `!=` and
// `notin` also match objects without the label.
class LabelSelector {
 public:
  // Throws ApiError BadRequest naming the requirement it cannot parse. "" selects everything.
  static LabelSelector Parse(std::string_view text);

  // `labels` is metadata.labels (an object of strings; null or absent means no labels).
  bool Matches(const nlohmann::json& labels) const;
  bool Empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

// A field selector: comma-separated `path=value`, `path==value` or `path!=value` terms, all of
// which must hold. `path` is any dotted path into the object (metadata.name, involvedObject.uid,
// spec.nodeName, status.phase); a missing field compares as "". Values may escape `\,` `\=` `\\`.
class FieldSelector {
 public:
  // Throws ApiError BadRequest for a term without an operator.
  static FieldSelector Parse(std::string_view text);

  bool Matches(const nlohmann::json& object) const;
  bool Empty() const { return terms_.empty(); }

 private:
  struct Term {
    std::vector<std::string> path;
    bool negate;
    std::string value;
  };
  std::vector<Term> terms_;
};

}  // namespace ringleader::devcluster
