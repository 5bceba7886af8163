// Private: the s-expression reader shared by terms, patterns and rule files. It only splits
// text into atoms, lists and brace groups with positions; the meaning of atoms is decided by
// the callers (term.cc, pattern.cc, rules.cc).
//
//   PRISM_ASSIGN_OR_RETURN(std::vector<SExpr> forms, ReadSExprs(text, "algebra.rules"));
//   forms[0].items[1].text;   // e.g. "div-as-mul"
#ifndef PRISM_SRC_EQUIV_SEXPR_H_
#define PRISM_SRC_EQUIV_SEXPR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prism/equiv/term.h"
#include "prism/expr/expr.h"

namespace prism::equiv::internal {

struct SExpr {
  enum class Kind { kAtom, kList, kBrace };
  Kind kind = Kind::kAtom;
  std::string text;          // kAtom: the atom; kBrace: the text between the braces
  int line = 0, column = 0;  // 1-based position of the first character
  std::vector<SExpr> items;  // kList
  // For top-level forms: the `;` comment lines directly above (text after "; "), in order.
  std::vector<std::string> comments;

  bool is_atom() const { return kind == Kind::kAtom; }
  bool is_list() const { return kind == Kind::kList; }
};

// Reads every top-level form. Errors: InvalidArgument "PREFIX:LINE:COL: ...", where PREFIX is
// `filename` (omitted with its colon when empty).
absl::StatusOr<std::vector<SExpr>> ReadSExprs(absl::string_view text, absl::string_view filename);

// "file:line:col" (or "line:col" without a file name).
std::string Where(absl::string_view filename, int line, int column);
std::string Where(absl::string_view filename, const SExpr& e);

// A short rendering of `e` for error messages (atoms as is, lists abbreviated).
std::string Describe(const SExpr& e);

// Classification of atoms.
enum class AtomKind { kInt, kReal, kAxis, kVar, kName, kBad };
AtomKind ClassifyAtom(absl::string_view atom);
// The literal payload of an int/real atom, or the error text ("integer literal ... does not
// fit in 64 bits", "real literal ... is not finite").
absl::StatusOr<Payload> LiteralPayload(absl::string_view atom);
// The symbolic payload of a brace group (declares unknown variables, see term.h).
absl::StatusOr<Payload> SymPayload(ExprContext& ctx, absl::string_view text);
// True for operator/leaf names: [A-Za-z_][A-Za-z0-9_.-]*.
bool IsName(absl::string_view atom);

}  // namespace prism::equiv::internal

#endif  // PRISM_SRC_EQUIV_SEXPR_H_
