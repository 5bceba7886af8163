// Recursive-descent parser for the printed expression syntax (expr.h). One function per
// precedence level, loosest first: or, and, not, comparison, additive, multiplicative, unary,
// primary.
#include "prism/expr/parse.h"

#include <cctype>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prism/base/status.h"

namespace prism {
namespace {

enum class Tok { kEnd, kInt, kIdent, kLParen, kRParen, kComma, kPlus, kMinus, kStar,
                 kEq, kNe, kLt, kLe, kGt, kGe, kBad };

struct Token {
  Tok kind = Tok::kEnd;
  size_t pos = 0;
  size_t len = 0;
};

// The result of parsing a sub-expression: the node, where its text starts and ends, and
// whether it came from a parenthesized group or an unparenthesized chain (needed to rebuild
// "a - t" exactly, see expr.h).
struct Parsed {
  Expr e;
  size_t begin = 0;
  size_t end = 0;
  bool parenthesized = false;
};

class Parser {
 public:
  Parser(ExprContext& ctx, absl::string_view text, const ParseOptions& options)
      : ctx_(ctx), text_(text), options_(options) {
    Advance();
  }

  absl::StatusOr<Expr> ParseAll() {
    PRISM_ASSIGN_OR_RETURN(Parsed p, ParseOr());
    if (tok_.kind != Tok::kEnd) return Unexpected("an operator or end of input");
    return p.e;
  }

  absl::Status SortError(const Parsed& p, Sort wanted) {
    return absl::InvalidArgumentError(absl::StrCat(
        "at offset ", p.begin, ": found '", text_.substr(p.begin, p.end - p.begin),
        wanted == Sort::kInt ? "', expected an integer expression, not a boolean"
                             : "', expected a boolean expression, not an integer"));
  }

 private:
  // ---- lexer ------------------------------------------------------------------------------
  void Advance() {
    prev_end_ = tok_.pos + tok_.len;
    size_t i = tok_.pos + tok_.len;
    while (i < text_.size() && std::isspace(static_cast<unsigned char>(text_[i]))) ++i;
    tok_ = Token{Tok::kEnd, i, 0};
    if (i >= text_.size()) return;
    const char c = text_[i];
    auto two = [&](char next) { return i + 1 < text_.size() && text_[i + 1] == next; };
    auto set = [&](Tok k, size_t len) { tok_.kind = k; tok_.len = len; };
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
      set(Tok::kInt, j - i);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[j])) || text_[j] == '_')) {
        ++j;
      }
      set(Tok::kIdent, j - i);
    } else if (c == '(') { set(Tok::kLParen, 1);
    } else if (c == ')') { set(Tok::kRParen, 1);
    } else if (c == ',') { set(Tok::kComma, 1);
    } else if (c == '+') { set(Tok::kPlus, 1);
    } else if (c == '-') { set(Tok::kMinus, 1);
    } else if (c == '*') { set(Tok::kStar, 1);
    } else if (c == '=' && two('=')) { set(Tok::kEq, 2);
    } else if (c == '!' && two('=')) { set(Tok::kNe, 2);
    } else if (c == '<') { two('=') ? set(Tok::kLe, 2) : set(Tok::kLt, 1);
    } else if (c == '>') { two('=') ? set(Tok::kGe, 2) : set(Tok::kGt, 1);
    } else { set(Tok::kBad, 1);
    }
  }

  absl::string_view TokText() const { return text_.substr(tok_.pos, tok_.len); }
  bool IsWord(absl::string_view w) const { return tok_.kind == Tok::kIdent && TokText() == w; }

  absl::Status Unexpected(absl::string_view expected) const {
    const std::string found =
        tok_.kind == Tok::kEnd ? std::string("end of input") : absl::StrCat("'", TokText(), "'");
    return absl::InvalidArgumentError(
        absl::StrCat("at offset ", tok_.pos, ": found ", found, ", expected ", expected));
  }

  absl::Status RequireSort(const Parsed& p, Sort wanted) {
    if (ctx_.sort(p.e) == wanted) return absl::OkStatus();
    return SortError(p, wanted);
  }

  Parsed Make(Expr e, size_t begin) const { return Parsed{e, begin, prev_end_, false}; }

  // ---- grammar ----------------------------------------------------------------------------
  // Flat n-ary chain of `word` at one level.
  template <typename Sub>
  absl::StatusOr<Parsed> ParseChain(absl::string_view word, ExprKind kind, Sub sub) {
    PRISM_ASSIGN_OR_RETURN(Parsed first, (this->*sub)());
    if (!IsWord(word)) return first;
    PRISM_RETURN_IF_ERROR(RequireSort(first, Sort::kBool));
    std::vector<Expr> ops = {first.e};
    while (IsWord(word)) {
      Advance();
      PRISM_ASSIGN_OR_RETURN(Parsed next, (this->*sub)());
      PRISM_RETURN_IF_ERROR(RequireSort(next, Sort::kBool));
      ops.push_back(next.e);
    }
    return Make(ctx_.Make(kind, ops), first.begin);
  }

  absl::StatusOr<Parsed> ParseOr() { return ParseChain("or", ExprKind::kOr, &Parser::ParseAnd); }
  absl::StatusOr<Parsed> ParseAnd() {
    return ParseChain("and", ExprKind::kAnd, &Parser::ParseNot);
  }

  absl::StatusOr<Parsed> ParseNot() {
    if (!IsWord("not")) return ParseComparison();
    const size_t begin = tok_.pos;
    Advance();
    PRISM_ASSIGN_OR_RETURN(Parsed operand, ParseNot());
    PRISM_RETURN_IF_ERROR(RequireSort(operand, Sort::kBool));
    return Make(ctx_.Not(operand.e), begin);
  }

  static bool IsComparison(Tok t) {
    return t == Tok::kEq || t == Tok::kNe || t == Tok::kLt || t == Tok::kLe || t == Tok::kGt ||
           t == Tok::kGe;
  }

  absl::StatusOr<Parsed> ParseComparison() {
    PRISM_ASSIGN_OR_RETURN(Parsed lhs, ParseAdditive());
    if (!IsComparison(tok_.kind)) return lhs;
    const Tok op = tok_.kind;
    PRISM_RETURN_IF_ERROR(RequireSort(lhs, Sort::kInt));
    Advance();
    PRISM_ASSIGN_OR_RETURN(Parsed rhs, ParseAdditive());
    PRISM_RETURN_IF_ERROR(RequireSort(rhs, Sort::kInt));
    if (IsComparison(tok_.kind)) {
      return Unexpected("'and' between comparisons (comparisons do not chain)");
    }
    Expr e;
    switch (op) {
      case Tok::kEq: e = ctx_.Eq(lhs.e, rhs.e); break;
      case Tok::kNe: e = ctx_.Ne(lhs.e, rhs.e); break;
      case Tok::kLt: e = ctx_.Lt(lhs.e, rhs.e); break;
      case Tok::kLe: e = ctx_.Le(lhs.e, rhs.e); break;
      case Tok::kGt: e = ctx_.Gt(lhs.e, rhs.e); break;
      default: e = ctx_.Ge(lhs.e, rhs.e); break;
    }
    return Make(e, lhs.begin);
  }

  // The operand "t" of "a - t" as the printer writes it (see expr.h).
  Expr Negated(const Parsed& t) {
    const int64_t kMin = std::numeric_limits<int64_t>::min();
    if (!t.parenthesized && ctx_.is_const(t.e) && ctx_.const_value(t.e) != kMin) {
      return ctx_.Const(-ctx_.const_value(t.e));
    }
    if (!t.parenthesized && ctx_.kind(t.e) == ExprKind::kMul) {
      std::vector<Expr> ops(ctx_.operands(t.e).begin(), ctx_.operands(t.e).end());
      if (ctx_.is_const(ops[0]) && ctx_.const_value(ops[0]) != kMin) {
        ops[0] = ctx_.Const(-ctx_.const_value(ops[0]));
      } else {
        ops.insert(ops.begin(), ctx_.Const(-1));
      }
      return ctx_.Mul(ops);
    }
    return ctx_.Neg(t.e);
  }

  absl::StatusOr<Parsed> ParseAdditive() {
    PRISM_ASSIGN_OR_RETURN(Parsed first, ParseMultiplicative());
    if (tok_.kind != Tok::kPlus && tok_.kind != Tok::kMinus) return first;
    PRISM_RETURN_IF_ERROR(RequireSort(first, Sort::kInt));
    std::vector<Expr> ops = {first.e};
    while (tok_.kind == Tok::kPlus || tok_.kind == Tok::kMinus) {
      const bool minus = tok_.kind == Tok::kMinus;
      Advance();
      PRISM_ASSIGN_OR_RETURN(Parsed next, ParseMultiplicative());
      PRISM_RETURN_IF_ERROR(RequireSort(next, Sort::kInt));
      ops.push_back(minus ? Negated(next) : next.e);
    }
    return Make(ctx_.Add(ops), first.begin);
  }

  absl::StatusOr<Parsed> ParseMultiplicative() {
    PRISM_ASSIGN_OR_RETURN(Parsed first, ParseUnary());
    bool chained = false;
    std::vector<Expr> factors = {first.e};
    while (tok_.kind == Tok::kStar || IsWord("floordiv") || IsWord("mod")) {
      if (!chained) PRISM_RETURN_IF_ERROR(RequireSort(first, Sort::kInt));
      chained = true;
      const bool star = tok_.kind == Tok::kStar;
      const bool div = IsWord("floordiv");
      Advance();
      PRISM_ASSIGN_OR_RETURN(Parsed next, ParseUnary());
      PRISM_RETURN_IF_ERROR(RequireSort(next, Sort::kInt));
      if (star) {
        factors.push_back(next.e);
        continue;
      }
      Expr left = ctx_.Mul(factors);
      factors = {div ? ctx_.FloorDiv(left, next.e) : ctx_.Mod(left, next.e)};
    }
    if (!chained) return first;
    return Make(ctx_.Mul(factors), first.begin);
  }

  absl::StatusOr<Parsed> ParseUnary() {
    if (tok_.kind != Tok::kMinus) return ParsePrimary();
    const size_t begin = tok_.pos;
    Advance();
    if (tok_.kind == Tok::kInt) {
      PRISM_ASSIGN_OR_RETURN(int64_t v, Literal(/*negative=*/true));
      return Make(ctx_.Const(v), begin);
    }
    PRISM_ASSIGN_OR_RETURN(Parsed operand, ParseUnary());
    PRISM_RETURN_IF_ERROR(RequireSort(operand, Sort::kInt));
    return Make(ctx_.Neg(operand.e), begin);
  }

  // The integer token, negated if `negative` (so that -9223372036854775808 parses).
  absl::StatusOr<int64_t> Literal(bool negative) {
    int64_t v = 0;
    for (char c : TokText()) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_sub_overflow(v, c - '0', &v)) {
        return absl::InvalidArgumentError(absl::StrCat("at offset ", tok_.pos, ": integer literal ",
                                                       TokText(), " does not fit in 64 bits"));
      }
    }
    if (!negative) {
      if (v == std::numeric_limits<int64_t>::min()) {
        return absl::InvalidArgumentError(absl::StrCat("at offset ", tok_.pos, ": integer literal ",
                                                       TokText(), " does not fit in 64 bits"));
      }
      v = -v;
    }
    Advance();
    return v;
  }

  absl::StatusOr<Parsed> ParsePrimary() {
    const size_t begin = tok_.pos;
    switch (tok_.kind) {
      case Tok::kInt: {
        PRISM_ASSIGN_OR_RETURN(int64_t v, Literal(/*negative=*/false));
        return Make(ctx_.Const(v), begin);
      }
      case Tok::kLParen: {
        Advance();
        PRISM_ASSIGN_OR_RETURN(Parsed inner, ParseOr());
        if (tok_.kind != Tok::kRParen) return Unexpected("')'");
        Advance();
        Parsed p = Make(inner.e, begin);
        p.parenthesized = true;
        return p;
      }
      case Tok::kIdent: break;
      default: return Unexpected("an expression");
    }
    const std::string word(TokText());
    if (word == "true" || word == "false") {
      Advance();
      return Make(ctx_.Bool(word == "true"), begin);
    }
    if (word == "min" || word == "max") {
      Advance();
      if (tok_.kind != Tok::kLParen) return Unexpected(absl::StrCat("'(' after '", word, "'"));
      Advance();
      PRISM_ASSIGN_OR_RETURN(Parsed a, ParseOr());
      PRISM_RETURN_IF_ERROR(RequireSort(a, Sort::kInt));
      if (tok_.kind != Tok::kComma) return Unexpected(absl::StrCat("',' (", word, " takes 2 arguments)"));
      Advance();
      PRISM_ASSIGN_OR_RETURN(Parsed b, ParseOr());
      PRISM_RETURN_IF_ERROR(RequireSort(b, Sort::kInt));
      if (tok_.kind != Tok::kRParen) return Unexpected(absl::StrCat("')' (", word, " takes 2 arguments)"));
      Advance();
      return Make(word == "min" ? ctx_.Min(a.e, b.e) : ctx_.Max(a.e, b.e), begin);
    }
    if (word == "floordiv" || word == "mod" || word == "and" || word == "or" || word == "not") {
      return Unexpected("an expression");
    }
    std::optional<Expr> var = ctx_.FindVar(word);
    if (!var.has_value()) {
      if (!options_.declare_unknown.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "at offset ", begin, ": unknown variable '", word, "' (declare it as a parameter)"));
      }
      PRISM_ASSIGN_OR_RETURN(var, ctx_.Var(word, *options_.declare_unknown));
    }
    Advance();
    return Make(*var, begin);
  }

  ExprContext& ctx_;
  absl::string_view text_;
  const ParseOptions& options_;
  Token tok_;
  size_t prev_end_ = 0;
};

}  // namespace

absl::StatusOr<Expr> ParseExpr(ExprContext& ctx, absl::string_view text,
                               const ParseOptions& options) {
  return Parser(ctx, text, options).ParseAll();
}

namespace {
absl::StatusOr<Expr> ParseSorted(ExprContext& ctx, absl::string_view text,
                                 const ParseOptions& options, Sort sort) {
  Parser parser(ctx, text, options);
  PRISM_ASSIGN_OR_RETURN(Expr e, parser.ParseAll());
  if (ctx.sort(e) != sort) {
    size_t begin = 0, end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
    return parser.SortError(Parsed{e, begin, end, false}, sort);
  }
  return e;
}
}  // namespace

absl::StatusOr<Expr> ParseIntExpr(ExprContext& ctx, absl::string_view text,
                                  const ParseOptions& options) {
  return ParseSorted(ctx, text, options, Sort::kInt);
}

absl::StatusOr<Expr> ParseBoolExpr(ExprContext& ctx, absl::string_view text,
                                   const ParseOptions& options) {
  return ParseSorted(ctx, text, options, Sort::kBool);
}

}  // namespace prism
