// A syntax-only reimplementation of client-go's JSONPath parser: same tokens, same recursion,
// same error texts; it builds no tree because devcluster only needs to know whether a CRD's
// printer column would parse.
#include "tests/devcluster/machinery/jsonpath.h"

#include <cstdio>
#include <optional>
#include <vector>

namespace ringleader::devcluster {
namespace {

constexpr int kEof = -1;

// Decodes the rune at `pos` (width 0 at the end, 1 for an invalid byte).
std::pair<int, std::size_t> RuneAt(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) {
    return {kEof, 0};
  }
  auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) {
    return {lead, 1};
  }
  std::size_t width = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (width == 1 || pos + width > text.size()) {
    return {0xfffd, 1};
  }
  int rune = lead & (0x7f >> width);
  for (std::size_t k = 1; k < width; ++k) {
    rune = (rune << 6) | (static_cast<unsigned char>(text[pos + k]) & 0x3f);
  }
  return {rune, width};
}

bool IsDigit(int rune) { return rune >= '0' && rune <= '9'; }
bool IsLetter(int rune) {
  return (rune >= 'a' && rune <= 'z') || (rune >= 'A' && rune <= 'Z') || rune >= 0xaa;
}
bool IsAlphaNumeric(int rune) { return rune == '_' || IsLetter(rune) || IsDigit(rune); }
bool IsEndOfLine(int rune) { return rune == '\r' || rune == '\n'; }
bool IsTerminator(int rune) {
  switch (rune) {
    case kEof:
    case '.':
    case ',':
    case '[':
    case ']':
    case '$':
    case '@':
    case '{':
    case '}':
    case ' ':
    case '\t':
    case '\r':
    case '\n':
      return true;
    default:
      return false;
  }
}

// Go's %#U: "U+0021 '!'".
std::string GoRune(int rune) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "U+%04X", static_cast<unsigned>(rune < 0 ? 0xfffd : rune));
  std::string out = buffer;
  if (rune >= 0x20 && rune < 0x7f) {
    out += " '" + std::string(1, static_cast<char>(rune)) + "'";
  }
  return out;
}

// strconv.UnquoteChar's escapes, as UnquoteExtend uses them; false on a bad escape.
bool UnquoteOk(std::string_view quoted) {
  if (quoted.size() < 2 || quoted.front() != quoted.back() ||
      (quoted.front() != '"' && quoted.front() != '\'')) {
    return false;
  }
  char quote = quoted.front();
  std::string_view body = quoted.substr(1, quoted.size() - 2);
  for (std::size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c == quote) {
      return false;  // an unescaped quote inside
    }
    if (c != '\\') {
      continue;
    }
    if (++i >= body.size()) {
      return false;
    }
    switch (body[i]) {
      case 'a':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
      case 'v':
      case '\\':
        break;
      case '\'':
      case '"':
        if (body[i] != quote) {
          return false;
        }
        break;
      case 'x':
        i += 2;
        break;
      case 'u':
        i += 4;
        break;
      case 'U':
        i += 8;
        break;
      default:
        if (body[i] >= '0' && body[i] <= '7') {
          i += 2;
        } else {
          return false;
        }
    }
    if (i >= body.size() + 1) {
      return false;
    }
  }
  return true;
}

class Parser {
 public:
  explicit Parser(std::string_view input) : input_(input) {}

  std::string Parse() { return ParseText(); }

 private:
  int Next() {
    auto [rune, width] = RuneAt(input_, pos_);
    width_ = width;
    pos_ += width;
    return rune;
  }
  int Peek() {
    int rune = Next();
    Backup();
    return rune;
  }
  void Backup() { pos_ -= width_; }
  std::string_view ConsumeText() {
    std::string_view value = input_.substr(start_, pos_ - start_);
    start_ = pos_;
    return value;
  }
  bool HasPrefix(std::string_view prefix) const { return input_.substr(pos_).starts_with(prefix); }

  std::string ParseText() {
    while (true) {
      if (HasPrefix("{")) {
        return ParseLeftDelim();
      }
      if (Next() == kEof) {
        return "";
      }
    }
  }

  std::string ParseLeftDelim() {
    pos_ += 1;
    ConsumeText();
    return ParseInsideAction();
  }

  std::string ParseInsideAction() {
    while (true) {
      if (HasPrefix("}")) {
        pos_ += 1;
        ConsumeText();
        return ParseText();
      }
      if (HasPrefix("[?(")) {
        if (std::string error = ParseFilter(); !error.empty()) {
          return error;
        }
        continue;
      }
      if (HasPrefix("..")) {
        if (last_recursive_) {
          return "invalid multiple recursive descent";
        }
        pos_ += 2;
        ConsumeText();
        last_recursive_ = true;
        if (IsAlphaNumeric(Peek())) {
          ParseField();
        }
        continue;
      }
      int rune = Next();
      if (rune == kEof || IsEndOfLine(rune)) {
        return "unclosed action";
      }
      if (rune == ' ' || rune == '@' || rune == '$') {
        ConsumeText();
        continue;
      }
      last_recursive_ = false;
      std::string error;
      if (rune == '[') {
        error = ParseArray();
      } else if (rune == '"' || rune == '\'') {
        error = ParseQuote(rune);
      } else if (rune == '.') {
        ParseField();
      } else if (rune == '+' || rune == '-' || IsDigit(rune)) {
        Backup();
        error = ParseNumber();
      } else if (IsAlphaNumeric(rune)) {
        Backup();
        ParseIdentifier();
      } else {
        return "unrecognized character in action: " + GoRune(rune);
      }
      if (!error.empty()) {
        return error;
      }
    }
  }

  void ParseIdentifier() {
    while (!IsTerminator(Next())) {
    }
    Backup();
    ConsumeText();
  }

  void ParseField() {
    ConsumeText();
    while (true) {
      int rune = Next();
      if (rune == '\\') {
        Next();
      } else if (IsTerminator(rune)) {
        Backup();
        break;
      }
    }
    ConsumeText();
  }

  std::string ParseNumber() {
    int rune = Peek();
    if (rune == '+' || rune == '-') {
      Next();
    }
    while (true) {
      rune = Next();
      if (rune != '.' && !IsDigit(rune)) {
        Backup();
        break;
      }
    }
    std::string_view value = ConsumeText();
    std::string_view digits = value;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
      digits.remove_prefix(1);
    }
    std::size_t dots = 0;
    for (char c : digits) {
      dots += c == '.' ? 1 : 0;
    }
    bool has_digit = digits.find_first_of("0123456789") != std::string_view::npos;
    if (!has_digit || dots > 1) {
      return "cannot parse number " + std::string(value);
    }
    return "";
  }

  std::string ParseArray() {
    while (true) {
      int rune = Next();
      if (rune == kEof || rune == '\n') {
        return "unterminated array";
      }
      if (rune == ']') {
        break;
      }
    }
    std::string_view text = ConsumeText();
    std::string inside(text.substr(1, text.size() - 2));
    return CheckArrayInside(inside == "*" ? ":" : inside);
  }

  static std::string Trim(const std::string& text) {
    std::size_t start = text.find_first_not_of(' ');
    std::size_t end = text.find_last_not_of(' ');
    return start == std::string::npos ? "" : text.substr(start, end - start + 1);
  }

  static std::string ParseActionText(const std::string& text) {
    // The parser keeps a view of its input, so the braced text must outlive it.
    const std::string action = "{" + text + "}";
    Parser parser(action);
    return parser.Parse();
  }

  static std::string CheckArrayInside(const std::string& text) {
    if (text.find(',') != std::string::npos) {
      std::size_t start = 0;
      while (true) {
        std::size_t comma = text.find(',', start);
        std::string part =
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (std::string error = ParseActionText("[" + Trim(part) + "]"); !error.empty()) {
          return error;
        }
        if (comma == std::string::npos) {
          return "";
        }
        start = comma + 1;
      }
    }
    if (text.size() >= 2 && text.front() == '\'' && text.back() == '\'' &&
        text.find('\'', 1) == text.size() - 1) {
      return ParseActionText("." + text.substr(1, text.size() - 2));
    }
    // ^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$
    std::size_t i = 0;
    auto number = [&]() {
      if (i < text.size() && text[i] == '-') {
        ++i;
      }
      while (i < text.size() && IsDigit(static_cast<unsigned char>(text[i]))) {
        ++i;
      }
    };
    number();
    for (int part = 0; part < 2 && i < text.size() && text[i] == ':'; ++part) {
      ++i;
      number();
    }
    if (i != text.size()) {
      return "invalid array index " + text;
    }
    // Atoi of "-" alone fails.
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t colon = text.find(':', start);
      std::string part =
          text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (part == "-") {
        return "array index " + part + " is not a number";
      }
      if (colon == std::string::npos) {
        break;
      }
      start = colon + 1;
    }
    return "";
  }

  std::string ParseFilter() {
    pos_ += 3;
    ConsumeText();
    bool begin = false;
    bool end = false;
    int pair = 0;
    while (true) {
      int rune = Next();
      if (rune == kEof || rune == '\n') {
        return "unterminated filter";
      }
      if (rune == '"' || rune == '\'') {
        if (!begin) {
          begin = true;
          pair = rune;
          continue;
        }
        if (input_[pos_ - 2] != '\\' && rune == pair) {
          end = true;
        }
      } else if (rune == ')' && begin == end) {
        break;
      }
    }
    if (Next() != ']') {
      return "unclosed array expect ]";
    }
    std::string_view text = ConsumeText();
    std::string expression(text.substr(0, text.size() - 2));
    // ^([^!<>=]+)([!<>=]+)(.+?)$
    std::size_t op = expression.find_first_of("!<>=");
    if (op == std::string::npos || op == 0) {
      return ParseActionText(expression);
    }
    std::size_t op_end = expression.find_first_not_of("!<>=", op);
    if (op_end == std::string::npos) {
      return ParseActionText(expression);
    }
    if (std::string error = ParseActionText(expression.substr(0, op)); !error.empty()) {
      return error;
    }
    return ParseActionText(expression.substr(op_end));
  }

  std::string ParseQuote(int quote) {
    while (true) {
      int rune = Next();
      if (rune == kEof || rune == '\n') {
        return "unterminated quoted string";
      }
      if (rune == quote && input_[pos_ - 2] != '\\') {
        break;
      }
    }
    std::string_view value = ConsumeText();
    if (!UnquoteOk(value)) {
      return "unquote string " + std::string(value) + " error invalid syntax";
    }
    return "";
  }

  std::string_view input_;
  std::size_t pos_ = 0;
  std::size_t start_ = 0;
  std::size_t width_ = 0;
  bool last_recursive_ = false;
};

}  // namespace

std::string JsonPathParseError(std::string_view text) {
  Parser parser(text);
  return parser.Parse();
}

}  // namespace ringleader::devcluster
