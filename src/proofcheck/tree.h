// Private to the proof checker: plain term trees, their s-expression reader and printer, and
// exact symbolic sizes. Written independently of equiv/ (term.h, sexpr.h, SymSize): a proof is
// checked by code that did not produce it, so this file reimplements the term syntax of
// docs/rule_format.md §1 from the documentation.
//
//   PRISM_ASSIGN_OR_RETURN(std::vector<Tree> forms, ReadForms("(matmul X {g * F})", "", false));
//   Print(forms[0]);                       // "(matmul X {g * F})"
//   ParseSize("4096/g").ToString();        // "4096/g"
#ifndef PRISM_SRC_PROOFCHECK_TREE_H_
#define PRISM_SRC_PROOFCHECK_TREE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace prism::proofcheck::internal {

// One node of a term, pattern or rule form. Trees are values (copied freely: proofs are small).
struct Tree {
  enum class Kind : uint8_t {
    kApply,  // an operator applied to kids, or a leaf name (input tensor) when kids is empty
    kInt,    // integer literal (i)
    kReal,   // real literal (r)
    kSym,    // symbolic integer {text}; text trimmed
    kAxis,   // @text
    kVar,    // ?text (patterns only)
    kWord,   // any other atom (=>, <=>): only meaningful in rule forms
  };
  Kind kind = Kind::kApply;
  std::string text;
  int64_t i = 0;
  double r = 0.0;
  std::vector<Tree> kids;
  int line = 0, col = 0;  // where the node starts in its source (1-based)
  bool list = false;      // written in parentheses (rule forms distinguish `if` from `(if)`)
};

// Structural equality: kind, name or value (reals by bit pattern), kids. Ignores positions.
bool operator==(const Tree& a, const Tree& b);
inline bool operator!=(const Tree& a, const Tree& b) { return !(a == b); }

// The term syntax: "(op kid ...)", "X", "4", "1e-06", "{g * F}", "@x", "?a".
std::string Print(const Tree& t);
// At most `max_chars` characters of Print(t) ("..." appended when cut).
std::string Abbrev(const Tree& t, size_t max_chars = 160);

// Reads every top-level form of `text`. Errors: InvalidArgument "PREFIX:LINE:COL: found X,
// expected Y" (PREFIX and its colon omitted when empty). With allow_words false, `?var` and
// words such as `=>` are errors (terms); with true they are returned (rule files).
absl::StatusOr<std::vector<Tree>> ReadForms(absl::string_view text, absl::string_view prefix,
                                            bool allow_words);
// Exactly one term (no variables, no words).
absl::StatusOr<Tree> ReadTerm(absl::string_view text);

// The subtree at `path` (child indices from the root), or nullptr.
const Tree* At(const Tree& t, const std::vector<int>& path);
// `t` with the subtree at `path` (which must exist) replaced by `replacement`.
Tree Replace(const Tree& t, const std::vector<int>& path, size_t depth, const Tree& replacement);
// "[]", "[0, 1]".
std::string PathString(const std::vector<int>& path);

// An exact symbolic integer (num/den) · Π atom^exp. Atoms are variable names or, for any
// expression that is not a product, its text: two atoms are equal when their texts are.
struct Size {
  int64_t num = 1;
  int64_t den = 1;  // > 0, coprime with num
  std::vector<std::pair<std::string, int>> atoms;  // sorted by name, exponents != 0

  static Size Const(int64_t v) { return Size{v, 1, {}}; }
  std::optional<int64_t> AsConst() const;
  std::string ToString() const;  // "4096", "4096/g", "F*g", "(a + b)"
  friend bool operator==(const Size& a, const Size& b) {
    return a.num == b.num && a.den == b.den && a.atoms == b.atoms;
  }
  friend bool operator!=(const Size& a, const Size& b) { return !(a == b); }
};
// Arithmetic; nullopt on overflow, division by zero, or (Plus) unlike symbolic terms.
std::optional<Size> Times(const Size& a, const Size& b);
std::optional<Size> Over(const Size& a, const Size& b);
std::optional<Size> Plus(const Size& a, const Size& b);
// Reads a product of integers, names, name^k and parenthesized groups separated by '*' or '/'
// (a leading '-' negates); anything else is one opaque atom. nullopt only for empty text.
std::optional<Size> ParseSize(absl::string_view text);

}  // namespace prism::proofcheck::internal

#endif  // PRISM_SRC_PROOFCHECK_TREE_H_
