// The `.prism` text format: a hand-written lexer, a recursive-descent parser that feeds a
// ProgramBuilder, and the canonical printer (include/prism/ir/text_format.h).
//
// Parsing runs in three steps:
//   1. Syntax: the lexer and parser turn the text into statements; every op application
//      (nested or not) becomes one `Call`, appended in post-order, and comments/blank lines
//      are attached to the statement that follows them. Syntax errors stop here, reporting the
//      first offending token as "LINE:COL: found <what>, expected <what>".
//   2. Names: every reference is resolved against all named statements (forward references
//      are allowed); the first undefined name in the text is reported.
//   3. Order and build: statements are sorted stably into dependency order (a file already in
//      topological order keeps its order), each statement's calls are numbered in post-order,
//      and the nodes go to ProgramBuilder::Build(), whose stable topological sort then keeps
//      exactly this order. The printer emits the same order, so parse→print→parse is a
//      fixpoint and PrintProgram(ParseProgram(t)) == t for canonical text.
//
//   absl::StatusOr<Program> p = ParseProgram("X = input f16[4]\nY = exp(X)\noutput Y\n");
//   std::string text = PrintProgram(*p);   // the same text
#include "prism/ir/text_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <queue>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "prism/base/check.h"
#include "prism/base/status.h"

namespace prism {
namespace {

// Deepest nesting of op applications in one statement. The parser rejects deeper text (its
// recursion is bounded by this) and the printer never nests deeper.
constexpr int kMaxNesting = 256;

// ---- messages --------------------------------------------------------------------------------
std::string LocString(SourceLoc loc) { return absl::StrCat(loc.line, ":", loc.column); }

absl::Status ErrorAt(SourceLoc loc, absl::string_view found, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(LocString(loc), ": found ", found, ", expected ", expected));
}

// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word` if it is plausibly a typo of it, else "".
std::string ClosestMatch(absl::string_view word, const std::vector<absl::string_view>& candidates) {
  if (word.size() > 64) return "";
  absl::string_view best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (absl::string_view c : candidates) {
    if (c.size() > 64) continue;
    const size_t d = EditDistance(absl::AsciiStrToLower(word), absl::AsciiStrToLower(c));
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  const size_t limit = std::max<size_t>(1, std::min<size_t>(2, word.size() / 2));
  return best_distance <= limit ? std::string(best) : "";
}

std::string OpNameList() {
  std::vector<absl::string_view> names;
  for (const OpInfo& info : AllOps()) {
    if (info.kind != OpKind::kInput) names.push_back(info.name);
  }
  return absl::StrJoin(names, ", ");
}

// How an op is called, for arity and attribute messages.
std::string Usage(OpKind op) {
  const OpInfo& info = GetOpInfo(op);
  const std::string name(info.name);
  switch (info.category) {
    case OpCategory::kSource: return "NAME = input DTYPE[DIMS]";
    case OpCategory::kMatMul:
    case OpCategory::kBinary: return name + "(a, b)";
    case OpCategory::kUnary: return info.attr == OpAttr::kScalar ? name + "(x, c)" : name + "(x)";
    case OpCategory::kReduce: return name + "(x, dim)";
    case OpCategory::kNorm:
      return info.attr == OpAttr::kDimEps ? name + "(x, dim) or " + name + "(x, dim, eps=E)"
                                          : name + "(x, dim)";
    case OpCategory::kConcat: return name + "(a, b, ..., dim)";
  }
  PRISM_UNREACHABLE("bad op category");
}

// ---- UTF-8 -----------------------------------------------------------------------------------
// Byte offset of the first byte of the first invalid UTF-8 sequence (or of a NUL byte), or
// npos when `text` is valid UTF-8 without NULs.
size_t FindInvalidUtf8(absl::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i + k < n && s[i + k] >= lo && s[i + k] <= hi;
  };
  while (i < n) {
    const unsigned char c = s[i];
    if (c == 0) return i;
    if (c < 0x80) {
      ++i;
    } else if (c >= 0xC2 && c <= 0xDF) {
      if (!cont(1)) return i;
      i += 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
      const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
      if (!cont(1, lo, hi) || !cont(2)) return i;
      i += 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
      const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
      if (!cont(1, lo, hi) || !cont(2) || !cont(3)) return i;
      i += 4;
    } else {
      return i;
    }
  }
  return absl::string_view::npos;
}

// Line and column (in characters) of byte `pos` of valid-UTF-8 `text` up to `pos`.
SourceLoc LocOfOffset(absl::string_view text, size_t pos) {
  SourceLoc loc{1, 1};
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++loc.line;
      loc.column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++loc.column;
    }
  }
  return loc;
}

// ---- lexer -----------------------------------------------------------------------------------
enum class TokenKind : uint8_t {
  kName,
  kNumber,
  kLParen,
  kRParen,
  kLBracket,
  kRBracket,
  kComma,
  kEquals,
  kComment,
  kNewline,
  kEnd,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  // The token's text; for a comment, from '#' to the end of the line without trailing blanks.
  absl::string_view text;
  SourceLoc loc;
};

bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsKeyword(absl::string_view name) {
  return name == "input" || name == "output" || name == "eps";
}

// The op spelled `name` that can be applied as op(...): every op but `input`, which is a
// keyword of the input statement.
std::optional<OpKind> CallableOp(absl::string_view name) {
  const std::optional<OpKind> op = ParseOpName(name);
  if (op == OpKind::kInput) return std::nullopt;
  return op;
}

// "found ..." description of a token.
std::string Describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kName:
      if (IsKeyword(t.text)) return absl::StrCat("keyword '", t.text, "'");
      if (ParseOpName(t.text).has_value()) return absl::StrCat("op name '", t.text, "'");
      if (ParseDType(t.text).has_value()) return absl::StrCat("dtype '", t.text, "'");
      return absl::StrCat("'", t.text, "'");
    case TokenKind::kNumber: return absl::StrCat("number ", t.text);
    case TokenKind::kLParen: return "'('";
    case TokenKind::kRParen: return "')'";
    case TokenKind::kLBracket: return "'['";
    case TokenKind::kRBracket: return "']'";
    case TokenKind::kComma: return "','";
    case TokenKind::kEquals: return "'='";
    case TokenKind::kComment: return "a comment";
    case TokenKind::kNewline: return "end of line";
    case TokenKind::kEnd: return "end of input";
  }
  PRISM_UNREACHABLE("bad token kind");
}

// Splits valid UTF-8 text (checked by the caller) into tokens. Tabs and spaces separate
// tokens; "\r\n" is a newline; a lone '\r' is an error.
class Lexer {
 public:
  explicit Lexer(absl::string_view text) : text_(text) {}

  absl::StatusOr<Token> Next() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    Token t;
    t.loc = Loc();
    if (pos_ >= text_.size()) {
      t.kind = TokenKind::kEnd;
      return t;
    }
    const size_t start = pos_;
    const char c = text_[pos_];
    auto single = [&](TokenKind kind) {
      ++pos_;
      t.kind = kind;
      t.text = text_.substr(start, 1);
      return t;
    };
    switch (c) {
      case '\n':
        ++pos_;
        ++line_;
        line_start_ = pos_;
        continuation_bytes_ = 0;
        t.kind = TokenKind::kNewline;
        return t;
      case '\r':
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
          pos_ += 2;
          ++line_;
          line_start_ = pos_;
          continuation_bytes_ = 0;
          t.kind = TokenKind::kNewline;
          return t;
        }
        return ErrorAt(t.loc, "a carriage return (U+000D) not followed by a line feed",
                       "'\\n' or '\\r\\n' line endings");
      case '(': return single(TokenKind::kLParen);
      case ')': return single(TokenKind::kRParen);
      case '[': return single(TokenKind::kLBracket);
      case ']': return single(TokenKind::kRBracket);
      case ',': return single(TokenKind::kComma);
      case '=': return single(TokenKind::kEquals);
      case '#': return LexComment(t);
      default: break;
    }
    if (IsNameStart(c)) {
      while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
      t.kind = TokenKind::kName;
      t.text = text_.substr(start, pos_ - start);
      return t;
    }
    const bool sign = c == '+' || c == '-';
    const size_t after_sign = start + (sign ? 1 : 0);
    if (IsDigit(c) || c == '.' ||
        (sign && after_sign < text_.size() &&
         (IsDigit(text_[after_sign]) || text_[after_sign] == '.'))) {
      return LexNumber(t);
    }
    return ErrorAt(t.loc, DescribeChar(start),
                   "a name, a number, one of ( ) [ ] , = or a # comment");
  }

 private:
  SourceLoc Loc() const {
    // Everything before a token on its line is ASCII (non-ASCII text only occurs in comments,
    // which run to the end of the line), so the byte offset is the character column.
    // The only exception is the end of a line after a comment: continuation bytes in the
    // comment are subtracted.
    return SourceLoc{line_, static_cast<int>(pos_ - line_start_ - continuation_bytes_) + 1};
  }

  absl::StatusOr<Token> LexComment(Token t) {
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      if (text_[pos_] == '\r' && (pos_ + 1 >= text_.size() || text_[pos_ + 1] != '\n')) {
        return ErrorAt(LocOfOffset(text_, pos_),
                       "a carriage return (U+000D) not followed by a line feed",
                       "'\\n' or '\\r\\n' line endings");
      }
      if (text_[pos_] == '\r') break;  // "\r\n": the newline token
      if ((static_cast<unsigned char>(text_[pos_]) & 0xC0) == 0x80) ++continuation_bytes_;
      ++pos_;
    }
    size_t end = pos_;
    // Trailing whitespace (including \f and \v) is not part of the comment, exactly as
    // CanonicalCommentLine() trims it, so printing never changes a parsed comment.
    while (end > start && absl::ascii_isspace(static_cast<unsigned char>(text_[end - 1]))) --end;
    t.kind = TokenKind::kComment;
    t.text = text_.substr(start, end - start);
    return t;
  }

  // NUMBER := [+-]? (DIGITS [. DIGITS?] | . DIGITS) ([eE] [+-]? DIGITS)?
  absl::StatusOr<Token> LexNumber(Token t) {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
      return pos_ - from;
    };
    if (text_[pos_] == '+' || text_[pos_] == '-') ++pos_;
    size_t mantissa_digits = digits();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      mantissa_digits += digits();
    }
    bool ok = mantissa_digits > 0;
    if (ok && pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      ok = digits() > 0;
    }
    if (!ok || (pos_ < text_.size() && (IsNameChar(text_[pos_]) || text_[pos_] == '.'))) {
      while (pos_ < text_.size() && (IsNameChar(text_[pos_]) || text_[pos_] == '.' ||
                                     text_[pos_] == '+' || text_[pos_] == '-')) {
        ++pos_;
      }
      return ErrorAt(t.loc,
                     absl::StrCat("malformed number '", text_.substr(start, pos_ - start), "'"),
                     "a number such as 4096, -1, 0.5 or 1e-06");
    }
    t.kind = TokenKind::kNumber;
    t.text = text_.substr(start, pos_ - start);
    return t;
  }

  std::string DescribeChar(size_t pos) const {
    const unsigned char c = static_cast<unsigned char>(text_[pos]);
    if (c < 0x20 || c == 0x7F) return absl::StrFormat("control character U+%04X", c);
    if (c < 0x80) return absl::StrCat("character '", text_.substr(pos, 1), "'");
    // A valid multi-byte sequence (the text was checked).
    const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (text_[pos + k] & 0x3F);
    return absl::StrFormat("character '%s' (U+%04X)", text_.substr(pos, len), cp);
  }

  absl::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  size_t continuation_bytes_ = 0;  // UTF-8 continuation bytes in a comment on this line
};

// ---- numbers ---------------------------------------------------------------------------------
bool IsIntegerLiteral(absl::string_view text) {
  return text.find_first_of(".eE") == absl::string_view::npos;
}

// An integer literal; nullopt when it does not fit in int64.
std::optional<int64_t> ToInt64(absl::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// A real literal; nullopt when it overflows to infinity or underflows to zero.
std::optional<double> ToDouble(absl::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc() && end == text.data() + text.size()) return v;
  if (ec != std::errc::result_out_of_range) return std::nullopt;
  // Out of range: keep subnormals (which strtod returns), reject overflow and underflow to 0.
  const std::string copy(text);
  const double r = std::strtod(copy.c_str(), nullptr);
  if (!std::isfinite(r) || r == 0.0) return std::nullopt;
  return r;
}

// ---- syntax tree -----------------------------------------------------------------------------
// An operand: a named tensor or a nested op application.
struct CallOperand {
  int call = -1;           // index into Parser::calls_ for a nested application, else -1
  absl::string_view name;  // the referenced name when call < 0
  SourceLoc loc;
};

// One op application (or input declaration) = one Node.
struct Call {
  Node node;  // op, attributes, dtype/shape (inputs), name, loc, comments; operands unresolved
  std::vector<CallOperand> operands;
  int statement = -1;  // index of the statement it belongs to
};

struct Statement {
  int first_call = 0;  // the statement's calls are [first_call, root], in post-order
  int root = 0;
};

struct OutputStatement {
  absl::string_view name;
  SourceLoc loc;
  std::vector<std::string> leading_lines;
  std::string trailing_comment;
};

// One argument inside op(...) before it is checked against the op's signature.
struct Arg {
  enum Kind { kTensor, kNumber, kEps } kind = kTensor;
  CallOperand tensor;  // kTensor
  Token number;    // kNumber, kEps (the number after "eps=")
  SourceLoc loc;   // where the argument starts
};

// A leading UTF-8 byte-order mark (written by some editors) is ignored.
absl::string_view WithoutByteOrderMark(absl::string_view text) {
  absl::ConsumePrefix(&text, "\xEF\xBB\xBF");
  return text;
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(WithoutByteOrderMark(text)), lexer_(text_) {}

  absl::StatusOr<Program> Parse() {
    if (const size_t bad = FindInvalidUtf8(text_); bad != absl::string_view::npos) {
      const unsigned char byte = static_cast<unsigned char>(text_[bad]);
      return ErrorAt(LocOfOffset(text_, bad),
                     byte == 0 ? std::string("a NUL byte (0x00)")
                               : absl::StrFormat("byte 0x%02x (not valid UTF-8)", byte),
                     "UTF-8 text");
    }
    PRISM_RETURN_IF_ERROR(ParseFile());
    PRISM_RETURN_IF_ERROR(ResolveNames());
    return BuildProgram();
  }

 private:
  // ---- tokens ----
  absl::Status Advance() {
    if (has_peek_) {
      tok_ = peek_;
      has_peek_ = false;
      return absl::OkStatus();
    }
    PRISM_ASSIGN_OR_RETURN(tok_, lexer_.Next());
    return absl::OkStatus();
  }
  absl::StatusOr<Token> Peek() {
    if (!has_peek_) {
      PRISM_ASSIGN_OR_RETURN(peek_, lexer_.Next());
      has_peek_ = true;
    }
    return peek_;
  }
  absl::Status Expect(TokenKind kind, absl::string_view expected) {
    if (tok_.kind != kind) return ErrorAt(tok_.loc, Describe(tok_), expected);
    return Advance();
  }

  // ---- lines and statements ----
  absl::Status ParseFile() {
    PRISM_RETURN_IF_ERROR(Advance());
    std::vector<std::string> pending;  // comment and blank lines not yet attached
    while (tok_.kind != TokenKind::kEnd) {
      if (tok_.kind == TokenKind::kNewline) {
        pending.emplace_back();
        PRISM_RETURN_IF_ERROR(Advance());
        continue;
      }
      if (tok_.kind == TokenKind::kComment) {
        pending.emplace_back(tok_.text);
        PRISM_RETURN_IF_ERROR(Advance());  // a comment runs to the end of the line
        if (tok_.kind == TokenKind::kNewline) PRISM_RETURN_IF_ERROR(Advance());
        continue;
      }
      std::vector<std::string>* leading = nullptr;
      std::string* trailing = nullptr;
      PRISM_RETURN_IF_ERROR(ParseStatement(&leading, &trailing));
      *leading = std::move(pending);
      pending.clear();
      if (tok_.kind == TokenKind::kComment) {
        *trailing = std::string(tok_.text);
        PRISM_RETURN_IF_ERROR(Advance());
      }
      if (tok_.kind == TokenKind::kNewline) {
        PRISM_RETURN_IF_ERROR(Advance());
      } else if (tok_.kind != TokenKind::kEnd) {
        return ErrorAt(tok_.loc, Describe(tok_), "the end of the line (one statement per line)");
      }
    }
    if (statements_.empty() && outputs_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          LocString(tok_.loc),
          ": the program has no statements; expected at least one `NAME = input ...` and an "
          "`output NAME`"));
    }
    if (outputs_.empty()) {
      return ErrorAt(tok_.loc, "end of input",
                     "an `output NAME` statement (a program needs at least one output)");
    }
    trailing_lines_ = std::move(pending);
    return absl::OkStatus();
  }

  // statement := NAME '=' 'input' DTYPE '[' INT {',' INT} ']' | NAME '=' call | 'output' NAME
  // Sets *leading / *trailing to where the statement's comments belong.
  absl::Status ParseStatement(std::vector<std::string>** leading, std::string** trailing) {
    const Token first = tok_;
    if (first.kind != TokenKind::kName) {
      return ErrorAt(first.loc, Describe(first),
                     "a statement (`NAME = input DTYPE[DIMS]`, `NAME = op(...)` or "
                     "`output NAME`)");
    }
    PRISM_ASSIGN_OR_RETURN(const Token next, Peek());
    if (first.text == "output" && next.kind != TokenKind::kEquals) {
      return ParseOutput(leading, trailing);
    }
    if (ParseOpName(first.text).has_value() || ParseDType(first.text).has_value() ||
        IsKeyword(first.text)) {
      return ErrorAt(first.loc, absl::StrCat(Describe(first), " as a tensor name"),
                     "a name that is not an op name, dtype, `input`, `output` or `eps`");
    }
    PRISM_RETURN_IF_ERROR(Advance());
    PRISM_RETURN_IF_ERROR(
        Expect(TokenKind::kEquals, absl::StrCat("'=' after '", first.text, "' (`NAME = ...`)")));
    if (auto it = definitions_.find(first.text); it != definitions_.end()) {
      return ErrorAt(first.loc, absl::StrCat("a second definition of '", first.text, "'"),
                     absl::StrCat("a new name: tensor '", first.text, "' is already defined at ",
                                  LocString(it->second)));
    }
    definitions_.emplace(first.text, first.loc);

    Statement stmt;
    stmt.first_call = static_cast<int>(calls_.size());
    const int statement_index = static_cast<int>(statements_.size());
    if (tok_.kind == TokenKind::kName && tok_.text == "input") {
      PRISM_ASSIGN_OR_RETURN(stmt.root, ParseInput());
    } else if (tok_.kind == TokenKind::kName) {
      PRISM_ASSIGN_OR_RETURN(const Token after, Peek());
      if (after.kind != TokenKind::kLParen) {
        if (CallableOp(tok_.text).has_value()) {
          return ErrorAt(after.loc, Describe(after),
                         absl::StrCat("'(' after op '", tok_.text,
                                      "' (usage: ", Usage(*ParseOpName(tok_.text)), ")"));
        }
        return ErrorAt(tok_.loc, absl::StrCat(Describe(tok_), " alone"),
                       absl::StrCat("an op application such as exp(", tok_.text,
                                    ") or `input DTYPE[DIMS]` (a statement cannot just rename "
                                    "a tensor)"));
      }
      PRISM_ASSIGN_OR_RETURN(stmt.root, ParseCall(/*depth=*/1));
    } else {
      return ErrorAt(tok_.loc, Describe(tok_),
                     "`input DTYPE[DIMS]` or an op application such as exp(X)");
    }
    for (int i = stmt.first_call; i <= stmt.root; ++i) calls_[i].statement = statement_index;
    Node& root = calls_[stmt.root].node;
    root.name = std::string(first.text);
    named_.emplace(first.text, stmt.root);
    statements_.push_back(stmt);
    *leading = &root.leading_lines;
    *trailing = &root.trailing_comment;
    return absl::OkStatus();
  }

  absl::Status ParseOutput(std::vector<std::string>** leading, std::string** trailing) {
    PRISM_RETURN_IF_ERROR(Advance());  // past `output`
    if (tok_.kind != TokenKind::kName || ParseOpName(tok_.text).has_value() ||
        ParseDType(tok_.text).has_value() || IsKeyword(tok_.text)) {
      return ErrorAt(tok_.loc, Describe(tok_), "a tensor name after `output`");
    }
    if (auto [it, inserted] = output_names_.emplace(tok_.text, tok_.loc); !inserted) {
      return ErrorAt(tok_.loc, absl::StrCat("'", tok_.text, "' output again"),
                     absl::StrCat("each tensor output once (first `output ", tok_.text, "` at ",
                                  LocString(it->second), ")"));
    }
    OutputStatement out;
    out.name = tok_.text;
    out.loc = tok_.loc;
    outputs_.push_back(std::move(out));
    PRISM_RETURN_IF_ERROR(Advance());
    *leading = &outputs_.back().leading_lines;
    *trailing = &outputs_.back().trailing_comment;
    return absl::OkStatus();
  }

  // 'input' DTYPE '[' INT {',' INT} ']' with tok_ at 'input'; returns the call index.
  absl::StatusOr<int> ParseInput() {
    Call call;
    call.node.op = OpKind::kInput;
    call.node.loc = tok_.loc;
    PRISM_RETURN_IF_ERROR(Advance());
    if (tok_.kind != TokenKind::kName) {
      return ErrorAt(tok_.loc, Describe(tok_), "a dtype: one of f16, bf16, f32");
    }
    const std::optional<DType> dtype = ParseDType(tok_.text);
    if (!dtype.has_value()) {
      return ErrorAt(tok_.loc, absl::StrCat("'", tok_.text, "'"), "one of f16, bf16, f32");
    }
    call.node.dtype = *dtype;
    PRISM_RETURN_IF_ERROR(Advance());
    PRISM_RETURN_IF_ERROR(Expect(TokenKind::kLBracket, "'[' and the shape, e.g. f16[16, 4096]"));
    const std::string dim_range = absl::StrCat("a dimension in 1..", kMaxDim);
    while (true) {
      if (tok_.kind != TokenKind::kNumber) return ErrorAt(tok_.loc, Describe(tok_), dim_range);
      if (call.node.shape.size() == kMaxRank) {
        return ErrorAt(
            tok_.loc, absl::StrCat("a dimension at position ", kMaxRank),
            absl::StrCat("at most ", kMaxRank, " dimensions (rank at most ", kMaxRank, ")"));
      }
      const std::optional<int64_t> dim =
          IsIntegerLiteral(tok_.text) ? ToInt64(tok_.text) : std::nullopt;
      if (!dim.has_value() || *dim < 1 || *dim > kMaxDim) {
        return ErrorAt(tok_.loc, tok_.text, dim_range);
      }
      call.node.shape.push_back(*dim);
      PRISM_RETURN_IF_ERROR(Advance());
      if (tok_.kind == TokenKind::kRBracket) break;
      if (tok_.kind != TokenKind::kComma) {
        return ErrorAt(tok_.loc, Describe(tok_), "',' or ']' in the shape");
      }
      PRISM_RETURN_IF_ERROR(Advance());
    }
    PRISM_RETURN_IF_ERROR(Advance());
    calls_.push_back(std::move(call));
    return static_cast<int>(calls_.size() - 1);
  }

  // call := OP '(' arg {',' arg} ')' with tok_ at OP and the next token '('. Appends the call
  // after its nested calls (post-order) and returns its index.
  absl::StatusOr<int> ParseCall(int depth) {
    const Token op_token = tok_;
    const std::optional<OpKind> op = ParseOpName(op_token.text);
    if (!op.has_value()) {
      std::vector<absl::string_view> names;
      for (const OpInfo& info : AllOps()) {
        if (info.kind != OpKind::kInput) names.push_back(info.name);
      }
      const std::string guess = ClosestMatch(op_token.text, names);
      return ErrorAt(
          op_token.loc, absl::StrCat("unknown op '", op_token.text, "'"),
          absl::StrCat("one of ", OpNameList(),
                       guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)")));
    }
    if (*op == OpKind::kInput) {
      return ErrorAt(op_token.loc, "'input('",
                     "`input` only as a whole statement: `NAME = input DTYPE[DIMS]`");
    }
    if (depth > kMaxNesting) {
      return ErrorAt(
          op_token.loc, absl::StrCat("op applications nested more than ", kMaxNesting, " deep"),
          absl::StrCat("at most ", kMaxNesting, " levels (name intermediate tensors instead)"));
    }
    PRISM_RETURN_IF_ERROR(Advance());
    PRISM_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "'('"));
    std::vector<Arg> args;
    if (tok_.kind != TokenKind::kRParen) {
      while (true) {
        PRISM_ASSIGN_OR_RETURN(Arg arg, ParseArg(depth));
        args.push_back(std::move(arg));
        if (tok_.kind == TokenKind::kComma) {
          PRISM_RETURN_IF_ERROR(Advance());
          continue;
        }
        if (tok_.kind == TokenKind::kRParen) break;
        return ErrorAt(tok_.loc, Describe(tok_),
                       absl::StrCat("',' or ')' (usage: ", Usage(*op), ")"));
      }
    }
    const SourceLoc rparen = tok_.loc;
    PRISM_RETURN_IF_ERROR(Advance());
    Call call;
    call.node.op = *op;
    call.node.loc = op_token.loc;
    PRISM_RETURN_IF_ERROR(CheckArgs(*op, args, rparen, call));
    calls_.push_back(std::move(call));
    return static_cast<int>(calls_.size() - 1);
  }

  // arg := NAME | call | NUMBER | 'eps' '=' NUMBER
  absl::StatusOr<Arg> ParseArg(int depth) {
    Arg arg;
    arg.loc = tok_.loc;
    if (tok_.kind == TokenKind::kNumber) {
      arg.kind = Arg::kNumber;
      arg.number = tok_;
      PRISM_RETURN_IF_ERROR(Advance());
      return arg;
    }
    if (tok_.kind != TokenKind::kName) {
      return ErrorAt(tok_.loc, Describe(tok_), "a tensor name, an op application or a number");
    }
    PRISM_ASSIGN_OR_RETURN(const Token next, Peek());
    if (next.kind == TokenKind::kLParen) {
      arg.kind = Arg::kTensor;
      arg.tensor.loc = tok_.loc;
      PRISM_ASSIGN_OR_RETURN(arg.tensor.call, ParseCall(depth + 1));
      return arg;
    }
    if (tok_.text == "eps" && next.kind == TokenKind::kEquals) {
      PRISM_RETURN_IF_ERROR(Advance());
      PRISM_RETURN_IF_ERROR(Advance());
      if (tok_.kind != TokenKind::kNumber) {
        return ErrorAt(tok_.loc, Describe(tok_), "a number after 'eps='");
      }
      arg.kind = Arg::kEps;
      arg.number = tok_;
      PRISM_RETURN_IF_ERROR(Advance());
      return arg;
    }
    if (CallableOp(tok_.text).has_value()) {
      return ErrorAt(next.loc, Describe(next),
                     absl::StrCat("'(' after op '", tok_.text,
                                  "' (usage: ", Usage(*ParseOpName(tok_.text)), ")"));
    }
    if (ParseDType(tok_.text).has_value() || IsKeyword(tok_.text)) {
      return ErrorAt(tok_.loc, Describe(tok_), "a tensor name, an op application or a number");
    }
    arg.kind = Arg::kTensor;
    arg.tensor.name = tok_.text;
    arg.tensor.loc = tok_.loc;
    PRISM_RETURN_IF_ERROR(Advance());
    return arg;
  }

  // Checks `args` against the op's signature (tensor operands first, then its attributes) and
  // fills `call`.
  absl::Status CheckArgs(OpKind op, std::vector<Arg>& args, SourceLoc rparen, Call& call) {
    const OpInfo& info = GetOpInfo(op);
    const std::string usage = absl::StrCat(" (usage: ", Usage(op), ")");
    auto describe_arg = [](const Arg& a) -> std::string {
      switch (a.kind) {
        case Arg::kNumber: return absl::StrCat("number ", a.number.text);
        case Arg::kEps: return absl::StrCat("eps=", a.number.text);
        case Arg::kTensor:
          return a.tensor.call >= 0 ? "an op application" : absl::StrCat("'", a.tensor.name, "'");
      }
      PRISM_UNREACHABLE("bad arg kind");
    };
    auto at = [&](size_t i) { return i < args.size() ? args[i].loc : rparen; };
    auto found = [&](size_t i) {
      return i < args.size() ? describe_arg(args[i]) : std::string("')'");
    };

    // Tensor operands.
    size_t i = 0;
    const size_t fixed = info.arity >= 0 ? static_cast<size_t>(info.arity) : 0;
    while (i < args.size() && args[i].kind == Arg::kTensor && (info.arity < 0 || i < fixed)) {
      call.operands.push_back(args[i].tensor);
      ++i;
    }
    const size_t min_tensors = info.arity >= 0 ? fixed : 2;
    if (i < min_tensors) {
      return ErrorAt(at(i), found(i),
                     absl::StrCat("tensor operand ", i + 1, " of ", info.name, usage));
    }
    // Attributes.
    auto integer_dim = [&](size_t k) -> absl::StatusOr<int64_t> {
      if (k >= args.size() || args[k].kind != Arg::kNumber) {
        return ErrorAt(at(k), found(k), absl::StrCat("the dim of ", info.name, usage));
      }
      const Token& t = args[k].number;
      if (!IsIntegerLiteral(t.text)) {
        return ErrorAt(t.loc, t.text, absl::StrCat("an integer dim", usage));
      }
      const std::optional<int64_t> v = ToInt64(t.text);
      if (!v.has_value()) {
        return ErrorAt(t.loc, absl::StrCat(t.text, " (out of the 64-bit integer range)"),
                       absl::StrCat("a dim", usage));
      }
      return *v;
    };
    auto real = [&](const Token& t) -> absl::StatusOr<double> {
      const std::optional<double> v = ToDouble(t.text);
      if (!v.has_value()) {
        return ErrorAt(t.loc, absl::StrCat(t.text, " (out of the range of a double)"),
                       "a finite number");
      }
      return *v;
    };
    switch (info.attr) {
      case OpAttr::kNone: break;
      case OpAttr::kScalar: {
        if (i >= args.size() || args[i].kind != Arg::kNumber) {
          return ErrorAt(at(i), found(i), absl::StrCat("the constant of ", info.name, usage));
        }
        PRISM_ASSIGN_OR_RETURN(call.node.scalar, real(args[i].number));
        ++i;
        break;
      }
      case OpAttr::kDim: {
        PRISM_ASSIGN_OR_RETURN(call.node.dim, integer_dim(i));
        ++i;
        break;
      }
      case OpAttr::kDimEps: {
        PRISM_ASSIGN_OR_RETURN(call.node.dim, integer_dim(i));
        ++i;
        if (i < args.size() && args[i].kind == Arg::kEps) {
          PRISM_ASSIGN_OR_RETURN(call.node.eps, real(args[i].number));
          ++i;
        }
        break;
      }
    }
    if (i < args.size()) {
      return ErrorAt(at(i), found(i), absl::StrCat("')'", usage));
    }
    return absl::OkStatus();
  }

  // ---- names ----
  absl::Status ResolveNames() {
    // Report the undefined name that comes first in the text.
    struct Undefined {
      SourceLoc loc;
      absl::string_view name;
      absl::string_view where;
    };
    std::optional<Undefined> first;
    auto note = [&](SourceLoc loc, absl::string_view name, absl::string_view where) {
      if (!first.has_value() ||
          std::pair(loc.line, loc.column) < std::pair(first->loc.line, first->loc.column)) {
        first = Undefined{loc, name, where};
      }
    };
    for (Call& call : calls_) {
      for (CallOperand& operand : call.operands) {
        if (operand.call >= 0) continue;
        if (auto it = named_.find(operand.name); it != named_.end()) {
          operand.call = it->second;
        } else {
          note(operand.loc, operand.name, "");
        }
      }
    }
    for (const OutputStatement& out : outputs_) {
      if (!named_.contains(out.name)) note(out.loc, out.name, " in `output`");
    }
    if (!first.has_value()) return absl::OkStatus();
    std::vector<absl::string_view> defined;
    defined.reserve(named_.size());
    for (const auto& entry : named_) defined.push_back(entry.first);
    std::sort(defined.begin(), defined.end());
    const std::string guess = ClosestMatch(first->name, defined);
    return ErrorAt(
        first->loc, absl::StrCat("undefined tensor '", first->name, "'", first->where),
        absl::StrCat("a tensor defined in this file",
                     guess.empty() ? "" : absl::StrCat(" (did you mean '", guess, "'?)")));
  }

  // ---- order and build ----
  // Statements in dependency order; among the ready ones, the one that comes first in the text
  // (so a topologically ordered file keeps its order). With a cycle, the text order is kept and
  // Build() reports the cycle.
  std::vector<int> StatementOrder() const {
    const int n = static_cast<int>(statements_.size());
    std::vector<int> pending(n, 0);
    std::vector<std::vector<int>> users(n);
    for (const Call& call : calls_) {
      for (const CallOperand& operand : call.operands) {
        const int dep = calls_[operand.call].statement;
        if (dep == call.statement) continue;  // nested in the same statement
        ++pending[call.statement];
        users[dep].push_back(call.statement);
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int s = 0; s < n; ++s) {
      if (pending[s] == 0) ready.push(s);
    }
    std::vector<int> order;
    order.reserve(n);
    while (!ready.empty()) {
      const int s = ready.top();
      ready.pop();
      order.push_back(s);
      for (int u : users[s]) {
        if (--pending[u] == 0) ready.push(u);
      }
    }
    if (static_cast<int>(order.size()) != n) {
      order.clear();
      for (int s = 0; s < n; ++s) order.push_back(s);
    }
    return order;
  }

  absl::StatusOr<Program> BuildProgram() {
    // Builder ids: statements in dependency order, each statement's calls in post-order.
    std::vector<uint32_t> id_of(calls_.size());
    std::vector<int> call_order;
    call_order.reserve(calls_.size());
    for (int s : StatementOrder()) {
      for (int c = statements_[s].first_call; c <= statements_[s].root; ++c) {
        id_of[c] = static_cast<uint32_t>(call_order.size());
        call_order.push_back(c);
      }
    }
    ProgramBuilder builder;
    for (int c : call_order) {
      Call& call = calls_[c];
      for (const CallOperand& operand : call.operands) {
        call.node.operands.push_back(TensorId(id_of[operand.call]));
      }
      const TensorId id = builder.AddNode(std::move(call.node));
      PRISM_CHECK(id.value() == id_of[c], "builder ids out of step");
    }
    for (OutputStatement& out : outputs_) {
      builder.Output(TensorId(id_of[named_.at(out.name)]), out.loc);
      OutputDecl& decl = builder.mutable_last_output();
      decl.leading_lines = std::move(out.leading_lines);
      decl.trailing_comment = std::move(out.trailing_comment);
    }
    builder.SetTrailingLines(std::move(trailing_lines_));
    return std::move(builder).Build();
  }

  absl::string_view text_;
  Lexer lexer_;
  Token tok_;
  Token peek_;
  bool has_peek_ = false;

  std::vector<Call> calls_;            // all op applications, post-order per statement
  std::vector<Statement> statements_;  // named statements in text order
  std::vector<OutputStatement> outputs_;
  std::vector<std::string> trailing_lines_;
  absl::flat_hash_map<absl::string_view, SourceLoc> definitions_;   // name -> where defined
  absl::flat_hash_map<absl::string_view, int> named_;               // name -> root call
  absl::flat_hash_map<absl::string_view, SourceLoc> output_names_;  // name -> `output` loc
};

// ---- printer ---------------------------------------------------------------------------------
// A comment line as the printer emits it: "" for a blank line, else "# ..." on one line.
std::string CanonicalCommentLine(absl::string_view line) {
  std::string s(line);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  absl::string_view trimmed = absl::StripAsciiWhitespace(s);
  if (trimmed.empty()) return "";
  if (trimmed[0] != '#') return absl::StrCat("# ", trimmed);
  return std::string(trimmed);
}

class Printer {
 public:
  explicit Printer(const Program& p) : p_(p) {}

  std::string Print() {
    const size_t n = p_.num_tensors();
    std::vector<bool> is_output(n, false);
    for (const OutputDecl& out : p_.outputs()) is_output[out.tensor.value()] = true;
    // Nest an anonymous, non-output tensor used exactly once, unless that would nest deeper
    // than the parser accepts.
    inline_.assign(n, false);
    std::vector<int> height(n, 1);
    for (size_t i = 0; i < n; ++i) {
      const Node& node = p_.nodes()[i];
      for (TensorId o : node.operands) {
        if (inline_[o.value()]) height[i] = std::max(height[i], height[o.value()] + 1);
      }
      inline_[i] = node.name.empty() && node.op != OpKind::kInput && !is_output[i] &&
                   p_.use_counts()[i] == 1 && height[i] < kMaxNesting;
    }
    // Names: the tensor's own, else t<id> (suffixed until it is unique).
    absl::flat_hash_set<std::string> taken;
    for (const Node& node : p_.nodes()) {
      if (!node.name.empty()) taken.insert(node.name);
    }
    names_.assign(n, "");
    for (size_t i = 0; i < n; ++i) {
      if (inline_[i]) continue;
      const Node& node = p_.nodes()[i];
      if (!node.name.empty()) {
        names_[i] = node.name;
        continue;
      }
      std::string name = absl::StrCat("t", i);
      for (int k = 1; taken.contains(name); ++k) name = absl::StrCat("t", i, "_", k);
      taken.insert(name);
      names_[i] = std::move(name);
    }

    std::string out;
    for (size_t i = 0; i < n; ++i) {
      if (inline_[i]) continue;
      const Node& node = p_.nodes()[i];
      AppendLines(node.leading_lines, out);
      absl::StrAppend(&out, names_[i], " = ");
      if (node.op == OpKind::kInput) {
        absl::StrAppend(&out, "input ", DTypeName(node.dtype), ShapeToString(node.shape));
      } else {
        AppendCall(i, out);
      }
      AppendTrailing(node.trailing_comment, out);
    }
    for (const OutputDecl& decl : p_.outputs()) {
      AppendLines(decl.leading_lines, out);
      absl::StrAppend(&out, "output ", names_[decl.tensor.value()]);
      AppendTrailing(decl.trailing_comment, out);
    }
    for (const std::string& line : p_.trailing_lines()) {
      absl::StrAppend(&out, CanonicalCommentLine(line), "\n");
    }
    return out;
  }

 private:
  static void AppendLines(const std::vector<std::string>& lines, std::string& out) {
    for (const std::string& line : lines) absl::StrAppend(&out, CanonicalCommentLine(line), "\n");
  }
  static void AppendTrailing(const std::string& comment, std::string& out) {
    const std::string c = CanonicalCommentLine(comment);
    if (!c.empty()) absl::StrAppend(&out, " ", c);
    out.push_back('\n');
  }

  // op(operands, attributes); recursion depth is bounded by kMaxNesting.
  void AppendCall(size_t i, std::string& out) const {
    const Node& node = p_.nodes()[i];
    const OpInfo& info = GetOpInfo(node.op);
    absl::StrAppend(&out, info.name, "(");
    for (size_t k = 0; k < node.operands.size(); ++k) {
      if (k > 0) out += ", ";
      const uint32_t o = node.operands[k].value();
      if (inline_[o]) {
        AppendCall(o, out);
      } else {
        out += names_[o];
      }
    }
    switch (info.attr) {
      case OpAttr::kNone: break;
      case OpAttr::kScalar: absl::StrAppend(&out, ", ", FormatNumber(node.scalar)); break;
      case OpAttr::kDim: absl::StrAppend(&out, ", ", node.dim); break;
      case OpAttr::kDimEps:
        absl::StrAppend(&out, ", ", node.dim);
        if (node.eps != kDefaultRmsEps) absl::StrAppend(&out, ", eps=", FormatNumber(node.eps));
        break;
    }
    out += ")";
  }

  const Program& p_;
  std::vector<bool> inline_;
  std::vector<std::string> names_;
};

}  // namespace

absl::StatusOr<Program> ParseProgram(absl::string_view text, absl::string_view filename) {
  absl::StatusOr<Program> result = Parser(text).Parse();
  if (result.ok() || filename.empty()) return result;
  const absl::string_view message = result.status().message();
  // Messages with a position ("3:5: ...") become "FILE:3:5: ..."; others "FILE: ...".
  const size_t colon = message.find(':');
  const bool positioned = colon != absl::string_view::npos && colon > 0 && IsDigit(message[0]) &&
                          colon + 1 < message.size() && IsDigit(message[colon + 1]);
  return absl::Status(result.status().code(),
                      absl::StrCat(filename, positioned ? ":" : ": ", message));
}

std::string PrintProgram(const Program& program) { return Printer(program).Print(); }

std::string FormatNumber(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  PRISM_CHECK(ec == std::errc(), "to_chars failed");
  return std::string(buf, end);
}

}  // namespace prism
