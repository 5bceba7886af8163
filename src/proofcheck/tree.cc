#include "tree.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace prism::proofcheck::internal {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}
bool IsName(absl::string_view s) {
  return !s.empty() && IsNameStart(s[0]) && std::all_of(s.begin(), s.end(), IsNameChar);
}

class Reader {
 public:
  Reader(absl::string_view text, absl::string_view prefix, bool allow_words)
      : text_(text), prefix_(prefix), allow_words_(allow_words) {}

  absl::StatusOr<std::vector<Tree>> All() {
    std::vector<Tree> out;
    for (SkipSpace(); pos_ < text_.size(); SkipSpace()) {
      absl::StatusOr<Tree> t = Form();
      if (!t.ok()) return t.status();
      out.push_back(*std::move(t));
    }
    return out;
  }

 private:
  absl::Status Error(int line, int col, absl::string_view msg) const {
    std::string where = absl::StrCat(line, ":", col);
    if (!prefix_.empty()) where = absl::StrCat(prefix_, ":", where);
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", msg));
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
  void SkipSpace() {
    while (pos_ < text_.size()) {
      if (text_[pos_] == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') Advance();
      } else if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        Advance();
      } else {
        return;
      }
    }
  }
  static bool Delimiter(char c) {
    return std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == '{' ||
           c == '}' || c == ';';
  }

  absl::StatusOr<Tree> Form() {
    Tree t;
    t.line = line_;
    t.col = col_;
    const char c = text_[pos_];
    if (c == ')' || c == '}') return Error(line_, col_, absl::StrCat("found '", std::string(1, c), "', expected a term"));
    if (c == '{') {
      Advance();
      const size_t start = pos_;
      while (pos_ < text_.size() && text_[pos_] != '}') Advance();
      if (pos_ == text_.size()) return Error(line_, col_, "found end of input, expected '}'");
      t.kind = Tree::Kind::kSym;
      t.text = std::string(absl::StripAsciiWhitespace(text_.substr(start, pos_ - start)));
      Advance();
      if (t.text.empty()) return Error(t.line, t.col, "found '{}', expected a symbolic size");
      return t;
    }
    if (c != '(') return Atom(t);
    Advance();
    SkipSpace();
    if (pos_ == text_.size()) return Error(line_, col_, "found end of input, expected an operator name");
    const int hl = line_, hc = col_;
    if (text_[pos_] == '(' || text_[pos_] == ')' || text_[pos_] == '{') {
      return Error(hl, hc, absl::StrCat("found '", std::string(1, text_[pos_]), "', expected an operator name"));
    }
    absl::StatusOr<Tree> head = Atom(Tree{});
    if (!head.ok()) return head.status();
    if (head->kind != Tree::Kind::kApply) {
      return Error(hl, hc, absl::StrCat("found '", Print(*head), "', expected an operator name"));
    }
    t.text = head->text;
    t.list = true;
    for (SkipSpace(); pos_ < text_.size() && text_[pos_] != ')'; SkipSpace()) {
      absl::StatusOr<Tree> kid = Form();
      if (!kid.ok()) return kid.status();
      t.kids.push_back(*std::move(kid));
    }
    if (pos_ == text_.size()) return Error(line_, col_, "found end of input, expected ')'");
    Advance();
    return t;
  }

  absl::StatusOr<Tree> Atom(Tree t) {
    const int line = line_, col = col_;
    const size_t start = pos_;
    while (pos_ < text_.size() && !Delimiter(text_[pos_])) Advance();
    const absl::string_view a = text_.substr(start, pos_ - start);
    t.line = line;
    t.col = col;
    if (a[0] == '?' && IsName(a.substr(1))) {
      if (!allow_words_) {
        return Error(line, col, absl::StrCat("found pattern variable '", a, "', expected a term"));
      }
      t.kind = Tree::Kind::kVar;
      t.text = std::string(a.substr(1));
      return t;
    }
    if (a[0] == '@' && IsName(a.substr(1))) {
      t.kind = Tree::Kind::kAxis;
      t.text = std::string(a.substr(1));
      return t;
    }
    if (IsName(a)) {
      t.text = std::string(a);
      return t;
    }
    absl::string_view digits = a;
    if (digits[0] == '-' || digits[0] == '+') digits.remove_prefix(1);
    if (!digits.empty() && std::all_of(digits.begin(), digits.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
      t.kind = Tree::Kind::kInt;
      if (!absl::SimpleAtoi(a, &t.i)) {
        return Error(line, col, absl::StrCat("integer literal ", a, " does not fit in 64 bits"));
      }
      return t;
    }
    if (!digits.empty() && (std::isdigit(static_cast<unsigned char>(digits[0])) || digits[0] == '.') &&
        a.find_first_of(".eE") != absl::string_view::npos) {
      const std::string s(a);
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (end == s.c_str() + s.size()) {
        if (!std::isfinite(v)) return Error(line, col, absl::StrCat("real literal ", a, " is not finite"));
        t.kind = Tree::Kind::kReal;
        t.r = v;
        return t;
      }
    }
    if (allow_words_) {
      t.kind = Tree::Kind::kWord;
      t.text = std::string(a);
      return t;
    }
    return Error(line, col, absl::StrCat("found '", a, "', expected an operator name, a number, {size} or @axis"));
  }

  absl::string_view text_, prefix_;
  bool allow_words_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
};

std::string RealString(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, end);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

bool MulOk(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// Reduces the fraction, sorts and merges the atoms; false on overflow.
bool Normalize(Size& s) {
  if (s.den < 0) {
    if (s.num == INT64_MIN || s.den == INT64_MIN) return false;
    s.num = -s.num;
    s.den = -s.den;
  }
  if (s.num == 0) {
    s.den = 1;
    s.atoms.clear();
    return true;
  }
  const int64_t g = std::gcd(s.num, s.den);
  s.num /= g;
  s.den /= g;
  std::sort(s.atoms.begin(), s.atoms.end());
  std::vector<std::pair<std::string, int>> merged;
  for (auto& [name, e] : s.atoms) {
    if (!merged.empty() && merged.back().first == name) {
      merged.back().second += e;
    } else {
      merged.push_back({name, e});
    }
  }
  s.atoms.clear();
  for (auto& a : merged) {
    if (a.second != 0) s.atoms.push_back(std::move(a));
  }
  return true;
}

bool IsKeyword(absl::string_view s) {
  for (absl::string_view k : {"floordiv", "mod", "min", "max", "and", "or", "not", "true", "false"}) {
    if (s == k) return true;
  }
  return false;
}

// The monomial grammar of ParseSize; nullopt when `text` is not a product.
class SizeParser {
 public:
  explicit SizeParser(absl::string_view text) : s_(text) {}
  std::optional<Size> Product() {
    Space();
    bool negate = false;
    if (Peek() == '-') {
      negate = true;
      ++p_;
    }
    std::optional<Size> acc = Factor();
    if (!acc.has_value()) return std::nullopt;
    if (negate && !(acc = Times(*acc, Size::Const(-1))).has_value()) return std::nullopt;
    for (Space(); p_ < s_.size(); Space()) {
      const char op = s_[p_];
      if (op != '*' && op != '/') return std::nullopt;
      ++p_;
      std::optional<Size> f = Factor();
      if (!f.has_value()) return std::nullopt;
      acc = op == '*' ? Times(*acc, *f) : Over(*acc, *f);
      if (!acc.has_value()) return std::nullopt;
    }
    return acc;
  }

 private:
  char Peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }
  void Space() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  std::optional<Size> Factor() {
    Space();
    std::optional<Size> base;
    const size_t start = p_;
    if (std::isdigit(static_cast<unsigned char>(Peek()))) {
      while (std::isdigit(static_cast<unsigned char>(Peek()))) ++p_;
      int64_t v = 0;
      if (!absl::SimpleAtoi(s_.substr(start, p_ - start), &v)) return std::nullopt;
      base = Size::Const(v);
    } else if (IsNameStart(Peek())) {
      while (std::isalnum(static_cast<unsigned char>(Peek())) || Peek() == '_') ++p_;
      const absl::string_view name = s_.substr(start, p_ - start);
      if (IsKeyword(name)) return std::nullopt;
      base = Size{1, 1, {{std::string(name), 1}}};
    } else if (Peek() == '(') {
      int depth = 0;
      do {
        if (s_[p_] == '(') ++depth;
        if (s_[p_] == ')') --depth;
        ++p_;
      } while (p_ < s_.size() && depth > 0);
      if (depth != 0) return std::nullopt;
      base = ParseSize(s_.substr(start + 1, p_ - start - 2));
    }
    if (!base.has_value()) return std::nullopt;
    Space();
    if (Peek() != '^') return base;
    ++p_;
    Space();
    const size_t e0 = p_;
    while (std::isdigit(static_cast<unsigned char>(Peek()))) ++p_;
    int k = 0;
    if (!absl::SimpleAtoi(s_.substr(e0, p_ - e0), &k) || k < 1 || k > 64) return std::nullopt;
    Size r = Size::Const(1);
    for (int i = 0; i < k; ++i) {
      std::optional<Size> n = Times(r, *base);
      if (!n.has_value()) return std::nullopt;
      r = *n;
    }
    return r;
  }

  absl::string_view s_;
  size_t p_ = 0;
};

}  // namespace

bool operator==(const Tree& a, const Tree& b) {
  if (a.kind != b.kind || a.kids.size() != b.kids.size()) return false;
  switch (a.kind) {
    case Tree::Kind::kInt:
      return a.i == b.i;
    case Tree::Kind::kReal:
      return std::bit_cast<uint64_t>(a.r) == std::bit_cast<uint64_t>(b.r);
    default:
      if (a.text != b.text) return false;
  }
  for (size_t k = 0; k < a.kids.size(); ++k) {
    if (a.kids[k] != b.kids[k]) return false;
  }
  return true;
}

std::string Print(const Tree& t) {
  switch (t.kind) {
    case Tree::Kind::kInt: return absl::StrCat(t.i);
    case Tree::Kind::kReal: return RealString(t.r);
    case Tree::Kind::kSym: return absl::StrCat("{", t.text, "}");
    case Tree::Kind::kAxis: return absl::StrCat("@", t.text);
    case Tree::Kind::kVar: return absl::StrCat("?", t.text);
    case Tree::Kind::kWord: return t.text;
    case Tree::Kind::kApply: break;
  }
  if (t.kids.empty()) return t.text;
  std::string s = absl::StrCat("(", t.text);
  for (const Tree& k : t.kids) absl::StrAppend(&s, " ", Print(k));
  return s + ")";
}

std::string Abbrev(const Tree& t, size_t max_chars) {
  std::string s = Print(t);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

absl::StatusOr<std::vector<Tree>> ReadForms(absl::string_view text, absl::string_view prefix,
                                            bool allow_words) {
  return Reader(text, prefix, allow_words).All();
}

absl::StatusOr<Tree> ReadTerm(absl::string_view text) {
  absl::StatusOr<std::vector<Tree>> forms = ReadForms(text, "", false);
  if (!forms.ok()) return forms.status();
  if (forms->size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("found ", forms->size(), " terms, expected one"));
  }
  return std::move(forms->front());
}

const Tree* At(const Tree& t, const std::vector<int>& path) {
  const Tree* cur = &t;
  for (int k : path) {
    if (k < 0 || static_cast<size_t>(k) >= cur->kids.size()) return nullptr;
    cur = &cur->kids[k];
  }
  return cur;
}

Tree Replace(const Tree& t, const std::vector<int>& path, size_t depth, const Tree& replacement) {
  if (depth == path.size()) return replacement;
  Tree out = t;
  out.kids[path[depth]] = Replace(t.kids[path[depth]], path, depth + 1, replacement);
  return out;
}

std::string PathString(const std::vector<int>& path) {
  return absl::StrCat("[", absl::StrJoin(path, ", "), "]");
}

std::optional<int64_t> Size::AsConst() const {
  if (!atoms.empty() || den != 1) return std::nullopt;
  return num;
}

std::string Size::ToString() const {
  std::vector<std::string> up, down;
  if (num != 1 || atoms.empty()) up.push_back(absl::StrCat(num));
  if (den != 1) down.push_back(absl::StrCat(den));
  for (const auto& [name, e] : atoms) {
    const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    std::string a = plain ? name : absl::StrCat("(", name, ")");
    if (std::abs(e) != 1) absl::StrAppend(&a, "^", std::abs(e));
    (e > 0 ? up : down).push_back(a);
  }
  std::string s = up.empty() ? "1" : absl::StrJoin(up, "*");
  if (!down.empty()) absl::StrAppend(&s, "/", absl::StrJoin(down, "/"));
  return s;
}

std::optional<Size> Times(const Size& a, const Size& b) {
  int64_t g1 = std::gcd(a.num, b.den), g2 = std::gcd(b.num, a.den);
  if (g1 == 0) g1 = 1;
  if (g2 == 0) g2 = 1;
  Size r;
  if (!MulOk(a.num / g1, b.num / g2, &r.num) || !MulOk(a.den / g2, b.den / g1, &r.den)) {
    return std::nullopt;
  }
  r.atoms = a.atoms;
  r.atoms.insert(r.atoms.end(), b.atoms.begin(), b.atoms.end());
  if (!Normalize(r)) return std::nullopt;
  return r;
}

std::optional<Size> Over(const Size& a, const Size& b) {
  if (b.num == 0) return std::nullopt;
  Size inv{b.den, b.num, {}};
  for (const auto& [name, e] : b.atoms) inv.atoms.push_back({name, -e});
  if (!Normalize(inv)) return std::nullopt;
  return Times(a, inv);
}

std::optional<Size> Plus(const Size& a, const Size& b) {
  if (a.num == 0) return b;
  if (b.num == 0) return a;
  if (a.atoms != b.atoms) return std::nullopt;
  int64_t ad, cb, bd, sum;
  if (!MulOk(a.num, b.den, &ad) || !MulOk(b.num, a.den, &cb) || !MulOk(a.den, b.den, &bd) ||
      __builtin_add_overflow(ad, cb, &sum)) {
    return std::nullopt;
  }
  Size r{sum, bd, a.atoms};
  if (!Normalize(r)) return std::nullopt;
  return r;
}

std::optional<Size> ParseSize(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return std::nullopt;
  if (std::optional<Size> s = SizeParser(text).Product(); s.has_value()) return s;
  return Size{1, 1, {{std::string(text), 1}}};
}

}  // namespace prism::proofcheck::internal
