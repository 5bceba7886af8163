#include "sexpr.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace prism::smt::internal {
namespace {

class Reader {
 public:
  Reader(absl::string_view text, absl::string_view origin) : text_(text), origin_(origin) {}

  absl::StatusOr<ReadResult> Run() {
    ReadResult result;
    std::vector<std::string> pending;
    while (true) {
      // Skip blanks and comments, collecting the comment block directly above the next form.
      bool at_line_start = true;
      while (pos_ < text_.size()) {
        const char c = text_[pos_];
        if (c == '\n') {
          if (at_line_start) pending.clear();  // a blank line ends a comment block
          at_line_start = true;
          ++line_;
          ++pos_;
        } else if (c == ' ' || c == '\t' || c == '\r') {
          ++pos_;
        } else if (c == ';') {
          const size_t end = text_.find('\n', pos_);
          absl::string_view body = text_.substr(pos_, end == absl::string_view::npos
                                                          ? absl::string_view::npos
                                                          : end - pos_);
          while (!body.empty() && body.front() == ';') body.remove_prefix(1);
          std::string line(absl::StripAsciiWhitespace(body));
          result.all_comments.push_back(line);
          pending.push_back(std::move(line));
          pos_ = end == absl::string_view::npos ? text_.size() : end;
          at_line_start = false;
        } else {
          break;
        }
      }
      if (pos_ >= text_.size()) break;
      if (text_[pos_] != '(') {
        return Error(absl::StrCat("expected '(' at top level, found '", text_.substr(pos_, 1),
                                  "'"));
      }
      TopLevelForm form;
      form.line = line_;
      form.comments = std::move(pending);
      pending.clear();
      const size_t begin = pos_;
      absl::StatusOr<SExpr> e = ReadOne();
      if (!e.ok()) return e.status();
      form.form = *std::move(e);
      form.verbatim = std::string(text_.substr(begin, pos_ - begin));
      result.forms.push_back(std::move(form));
    }
    return result;
  }

 private:
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(origin_, ":", line_, ": ", message));
  }

  void SkipBlanksAndComments() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  absl::StatusOr<SExpr> ReadOne() {
    SkipBlanksAndComments();
    if (pos_ >= text_.size()) return Error("unexpected end of input, expected an expression");
    SExpr e;
    e.line = line_;
    const char c = text_[pos_];
    if (c == '(') {
      e.kind = SExpr::Kind::kList;
      ++pos_;
      while (true) {
        SkipBlanksAndComments();
        if (pos_ >= text_.size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              origin_, ":", e.line, ": unbalanced '(': no matching ')' before end of input"));
        }
        if (text_[pos_] == ')') {
          ++pos_;
          return e;
        }
        absl::StatusOr<SExpr> item = ReadOne();
        if (!item.ok()) return item.status();
        e.items.push_back(*std::move(item));
      }
    }
    if (c == ')') return Error("unbalanced ')'");
    if (c == '"' || c == '|') {
      e.kind = c == '"' ? SExpr::Kind::kString : SExpr::Kind::kAtom;
      ++pos_;
      while (pos_ < text_.size()) {
        const char d = text_[pos_++];
        if (d == '\n') ++line_;
        if (d == c) {
          // SMT-LIB escapes a quote inside a string by doubling it.
          if (c == '"' && pos_ < text_.size() && text_[pos_] == '"') {
            e.text.push_back('"');
            ++pos_;
            continue;
          }
          return e;
        }
        e.text.push_back(d);
      }
      return Error(c == '"' ? "unterminated string" : "unterminated |quoted symbol|");
    }
    while (pos_ < text_.size()) {
      const char d = text_[pos_];
      if (std::isspace(static_cast<unsigned char>(d)) || d == '(' || d == ')' || d == ';' ||
          d == '"' || d == '|') {
        break;
      }
      e.text.push_back(d);
      ++pos_;
    }
    return e;
  }

  absl::string_view text_;
  absl::string_view origin_;
  size_t pos_ = 0;
  int line_ = 1;
};

// True for "word:" at the start of a comment line (a metadata key).
bool StartsWithKey(absl::string_view line) {
  size_t i = 0;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' ||
                             line[i] == '-')) {
    ++i;
  }
  return i > 0 && i < line.size() && line[i] == ':';
}

}  // namespace

absl::StatusOr<ReadResult> ReadForms(absl::string_view text, absl::string_view origin) {
  return Reader(text, origin).Run();
}

std::string CommentField(const std::vector<std::string>& comments, absl::string_view key) {
  std::vector<absl::string_view> parts;
  bool inside = false;
  for (const std::string& line : comments) {
    absl::string_view l = line;
    if (absl::StartsWith(l, key)) {
      inside = true;
      l.remove_prefix(key.size());
    } else if (inside && StartsWithKey(l)) {
      break;
    } else if (!inside) {
      continue;
    }
    l = absl::StripAsciiWhitespace(l);
    if (!l.empty()) parts.push_back(l);
  }
  return absl::StrJoin(parts, " ");
}

}  // namespace prism::smt::internal
