// Source bookkeeping and cel-go's issue rendering (ERROR: <input>:line:col: message, the source
// line and a caret under the column; wide characters get full-width dots and caret).
#include "tests/support/cel/ast.h"

#include <algorithm>

namespace ringleader::cel {

std::u32string DecodeUtf8(const std::string& text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    char32_t cp = 0xFFFD;
    size_t len = 1;
    if (c < 0x80) {
      cp = c;
    } else if ((c >> 5) == 0x6 && i + 1 < text.size()) {
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
      len = 2;
    } else if ((c >> 4) == 0xE && i + 2 < text.size()) {
      cp = ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(text[i + 2]) & 0x3Fu);
      len = 3;
    } else if ((c >> 3) == 0x1E && i + 3 < text.size()) {
      cp = ((c & 0x07u) << 18) | ((static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 12) |
           ((static_cast<unsigned char>(text[i + 2]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(text[i + 3]) & 0x3Fu);
      len = 4;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string EncodeUtf8(const std::u32string& text) {
  std::string out;
  for (char32_t cp : text) {
    AppendUtf8(out, cp);
  }
  return out;
}

size_t CodePointCount(const std::string& text) {
  size_t count = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++count;
    }
  }
  return count;
}

Source::Source(std::string text) : text_(std::move(text)), code_points_(DecodeUtf8(text_)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < code_points_.size(); ++i) {
    if (code_points_[i] == U'\n') {
      line_starts_.push_back(static_cast<int32_t>(i + 1));
    }
  }
}

std::pair<int, int> Source::LineColumn(int32_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  auto line = static_cast<int>(it - line_starts_.begin());
  return {line, offset - line_starts_[static_cast<size_t>(line - 1)]};
}

std::string Source::Line(int line) const {
  if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) {
    return "";
  }
  auto start = static_cast<size_t>(line_starts_[static_cast<size_t>(line - 1)]);
  size_t end = static_cast<size_t>(line) < line_starts_.size()
                   ? static_cast<size_t>(line_starts_[static_cast<size_t>(line)]) - 1
                   : code_points_.size();
  return EncodeUtf8(code_points_.substr(start, end - start));
}

std::string FormatIssues(const Source& source, std::vector<Issue> issues) {
  // cel-go sorts by location (unknown locations first) and keeps equal ones in report order.
  std::stable_sort(issues.begin(), issues.end(),
                   [](const Issue& a, const Issue& b) { return a.offset < b.offset; });
  std::string out;
  for (const Issue& issue : issues) {
    if (!out.empty()) {
      out += "\n";
    }
    if (issue.offset < 0) {
      out += "ERROR: <input>:-1:0: " + issue.message;
      continue;
    }
    auto [line, column] = source.LineColumn(issue.offset);
    out += "ERROR: <input>:" + std::to_string(line) + ":" + std::to_string(column + 1) + ": " +
           issue.message;
    std::u32string snippet = DecodeUtf8(source.Line(line));
    std::replace(snippet.begin(), snippet.end(), U'\t', U' ');
    out += "\n | " + EncodeUtf8(snippet) + "\n | ";
    size_t i = 0;
    for (; i < static_cast<size_t>(column) && i < snippet.size(); ++i) {
      out += snippet[i] >= 0x80 ? "\uff0e" : ".";
    }
    out += (i < snippet.size() && snippet[i] >= 0x80) ? "\uff3e" : "^";
  }
  return out;
}

}  // namespace ringleader::cel
