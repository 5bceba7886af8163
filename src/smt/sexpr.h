// A small SMT-LIB2 s-expression reader for prism's theory files (hardware constants, rule
// metadata). It keeps what Z3's parser drops: the comment block directly above each top-level
// form and the form's verbatim text, so that sources and soundness arguments can be shown and
// copied into dumped queries.
//
//   PRISM_ASSIGN_OR_RETURN(std::vector<TopLevelForm> forms, ReadForms(text, "h200.smt2"));
//   forms[0].form.items[1].text;   // "hw_compute_capability"
//   forms[0].comments;             // {"source: CUDA C++ Programming Guide, ..."}
#ifndef PRISM_SRC_SMT_SEXPR_H_
#define PRISM_SRC_SMT_SEXPR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism::smt::internal {

struct SExpr {
  enum class Kind { kAtom, kString, kList };
  Kind kind = Kind::kAtom;
  std::string text;          // atom or string contents (quotes and |bars| removed)
  std::vector<SExpr> items;  // kList only
  int line = 0;              // 1-based line of the first character

  bool is_atom(absl::string_view t) const { return kind == Kind::kAtom && text == t; }
  bool is_list() const { return kind == Kind::kList; }
};

struct TopLevelForm {
  SExpr form;
  // The comment lines directly above the form (no blank line in between), without the leading
  // semicolons and surrounding blanks, in order.
  std::vector<std::string> comments;
  std::string verbatim;  // the form's text exactly as written
  int line = 0;
};

struct ReadResult {
  std::vector<TopLevelForm> forms;
  // Every comment line of the file (same normalisation), in order.
  std::vector<std::string> all_comments;
};

// Reads every top-level form. InvalidArgument "<origin>:<line>: ..." on unbalanced
// parentheses, an unterminated string or quoted symbol, or a top-level atom.
absl::StatusOr<ReadResult> ReadForms(absl::string_view text, absl::string_view origin);

// The text of `comments` from the line that starts with `key` (e.g. "source:") to the end of
// the block or the next line that starts with another "word:" key, joined with single spaces,
// without the key; empty if no line starts with `key`.
std::string CommentField(const std::vector<std::string>& comments, absl::string_view key);

}  // namespace prism::smt::internal

#endif  // PRISM_SRC_SMT_SEXPR_H_
