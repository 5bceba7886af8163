#include "sexpr.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prism/base/status.h"
#include "prism/expr/domain.h"
#include "prism/expr/parse.h"

namespace prism::equiv::internal {
namespace {

class Reader {
 public:
  Reader(absl::string_view text, absl::string_view filename) : text_(text), file_(filename) {}

  absl::StatusOr<std::vector<SExpr>> ReadAll() {
    std::vector<SExpr> out;
    while (true) {
      std::vector<std::string> comments = SkipSpace(/*collect=*/true);
      if (pos_ >= text_.size()) break;
      PRISM_ASSIGN_OR_RETURN(SExpr e, ReadOne());
      e.comments = std::move(comments);
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  // Skips blanks and comments; with `collect`, returns the comment lines that directly precede
  // the next form (a blank line resets the collection).
  std::vector<std::string> SkipSpace(bool collect) {
    std::vector<std::string> comments;
    int newlines_since_comment = 0;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') {
        Advance();
        if (++newlines_since_comment >= 2) comments.clear();
      } else if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
        Advance();
      } else if (c == ';') {
        size_t start = pos_;
        while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
        if (collect) {
          absl::string_view line = text_.substr(start, pos_ - start);
          while (!line.empty() && line.front() == ';') line.remove_prefix(1);
          comments.emplace_back(absl::StripAsciiWhitespace(line));
        }
        newlines_since_comment = 0;
      } else {
        break;
      }
    }
    return comments;
  }

  void Advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  absl::Status Error(int line, int col, absl::string_view msg) {
    return absl::InvalidArgumentError(absl::StrCat(Where(file_, line, col), ": ", msg));
  }

  absl::StatusOr<SExpr> ReadOne() {
    SExpr e;
    e.line = line_;
    e.column = col_;
    char c = text_[pos_];
    if (c == ')') return Error(line_, col_, "found ')', expected a term or '('");
    if (c == '}') return Error(line_, col_, "found '}', expected a term or '('");
    if (c == '(') {
      e.kind = SExpr::Kind::kList;
      Advance();
      while (true) {
        SkipSpace(/*collect=*/false);
        if (pos_ >= text_.size()) {
          return Error(line_, col_,
                       absl::StrCat("found end of input, expected ')' to close the '(' at ",
                                    e.line, ":", e.column));
        }
        if (text_[pos_] == ')') {
          Advance();
          return e;
        }
        PRISM_ASSIGN_OR_RETURN(SExpr item, ReadOne());
        e.items.push_back(std::move(item));
      }
    }
    if (c == '{') {
      e.kind = SExpr::Kind::kBrace;
      Advance();
      size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] != '}') {
        if (text_[pos_] == '{' || text_[pos_] == '\n') {
          return Error(line_, col_, absl::StrCat("found '", text_[pos_] == '\n' ? "end of line" : "{",
                                                 "' inside '{...}', expected '}'"));
        }
        Advance();
      }
      if (pos_ >= text_.size()) {
        return Error(line_, col_,
                     absl::StrCat("found end of input, expected '}' to close the '{' at ", e.line,
                                  ":", e.column));
      }
      e.text = std::string(text_.substr(start, pos_ - start));
      Advance();
      return e;
    }
    size_t start = pos_;
    while (pos_ < text_.size()) {
      char d = text_[pos_];
      if (absl::ascii_isspace(static_cast<unsigned char>(d)) || d == '(' || d == ')' || d == '{' ||
          d == '}' || d == ';') {
        break;
      }
      Advance();
    }
    e.text = std::string(text_.substr(start, pos_ - start));
    return e;
  }

  absl::string_view text_;
  absl::string_view file_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

bool IsNameStart(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

}  // namespace

absl::StatusOr<std::vector<SExpr>> ReadSExprs(absl::string_view text, absl::string_view filename) {
  return Reader(text, filename).ReadAll();
}

std::string Where(absl::string_view filename, int line, int column) {
  if (filename.empty()) return absl::StrCat(line, ":", column);
  return absl::StrCat(filename, ":", line, ":", column);
}
std::string Where(absl::string_view filename, const SExpr& e) {
  return Where(filename, e.line, e.column);
}

std::string Describe(const SExpr& e) {
  switch (e.kind) {
    case SExpr::Kind::kAtom:
      return e.text;
    case SExpr::Kind::kBrace:
      return absl::StrCat("{", e.text, "}");
    case SExpr::Kind::kList:
      if (e.items.empty()) return "()";
      return absl::StrCat("(", Describe(e.items[0]), e.items.size() > 1 ? " ...)" : ")");
  }
  return "";
}

bool IsName(absl::string_view atom) {
  if (atom.empty() || !IsNameStart(atom[0])) return false;
  for (char c : atom) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

AtomKind ClassifyAtom(absl::string_view atom) {
  if (atom.empty()) return AtomKind::kBad;
  if (atom[0] == '?') return IsName(atom.substr(1)) ? AtomKind::kVar : AtomKind::kBad;
  if (atom[0] == '@') return IsName(atom.substr(1)) ? AtomKind::kAxis : AtomKind::kBad;
  if (IsName(atom)) return AtomKind::kName;
  absl::string_view digits = atom;
  if (digits[0] == '-' || digits[0] == '+') digits.remove_prefix(1);
  if (!digits.empty() && absl::c_all_of(digits, [](char c) { return absl::ascii_isdigit(c); })) {
    return AtomKind::kInt;
  }
  if (!digits.empty() && (absl::ascii_isdigit(digits[0]) || digits[0] == '.')) {
    bool has_mark = atom.find_first_of(".eE") != absl::string_view::npos;
    std::string s(atom);
    char* end = nullptr;
    errno = 0;
    std::strtod(s.c_str(), &end);
    if (has_mark && end == s.c_str() + s.size()) return AtomKind::kReal;
  }
  return AtomKind::kBad;
}

absl::StatusOr<Payload> LiteralPayload(absl::string_view atom) {
  switch (ClassifyAtom(atom)) {
    case AtomKind::kInt: {
      int64_t v = 0;
      if (!absl::SimpleAtoi(atom, &v)) {
        return absl::InvalidArgumentError(
            absl::StrCat("integer literal ", atom, " does not fit in 64 bits"));
      }
      return Payload::Int(v);
    }
    case AtomKind::kReal: {
      std::string s(atom);
      double v = std::strtod(s.c_str(), nullptr);
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(absl::StrCat("real literal ", atom, " is not finite"));
      }
      return Payload::Real(v);
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("'", atom, "' is not a number"));
  }
}

absl::StatusOr<Payload> SymPayload(ExprContext& ctx, absl::string_view text) {
  ParseOptions options;
  PRISM_ASSIGN_OR_RETURN(Domain positive, Domain::Range(1, (int64_t{1} << 31) - 1));
  options.declare_unknown = positive;
  absl::StatusOr<Expr> e = ParseIntExpr(ctx, text, options);
  if (!e.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("in symbolic size '{", text, "}': ", e.status().message()));
  }
  return Payload::Sym(*e);
}

}  // namespace prism::equiv::internal
