#include "prism/expr/domain.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/base/hash.h"
#include "prism/base/status.h"

namespace prism {
namespace {

constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

// Smallest power of two >= max(v, 1), or 0 if it does not fit.
int64_t CeilPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) {
    if (p > kMax64 / 2) return 0;
    p *= 2;
  }
  return p;
}

std::vector<int64_t> DivisorsIn(int64_t n, int64_t lo, int64_t hi) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  std::vector<int64_t> out;
  for (int64_t d : small) if (d >= lo && d <= hi) out.push_back(d);
  for (auto it = large.rbegin(); it != large.rend(); ++it)
    if (*it >= lo && *it <= hi) out.push_back(*it);
  return out;
}

// A tiny scanner for Domain::Parse.
class DomainScanner {
 public:
  explicit DomainScanner(absl::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool AtEnd() { SkipSpace(); return pos_ >= text_.size(); }
  size_t pos() const { return pos_; }

  absl::Status Error(absl::string_view expected) {
    SkipSpace();
    std::string found = pos_ >= text_.size()
                            ? std::string("end of input")
                            : absl::StrCat("'", text_.substr(pos_, 1), "'");
    return absl::InvalidArgumentError(absl::StrCat("domain '", text_, "': at offset ", pos_,
                                                   ": found ", found, ", expected ", expected));
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) { ++pos_; return true; }
    return false;
  }
  absl::Status Expect(char c) {
    if (Consume(c)) return absl::OkStatus();
    return Error(absl::StrCat("'", std::string(1, c), "'"));
  }
  std::string Word() {
    SkipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  absl::StatusOr<int64_t> Integer() {
    SkipSpace();
    size_t start = pos_;
    bool negative = false;
    if (pos_ < text_.size() && text_[pos_] == '-') { negative = true; ++pos_; }
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      pos_ = start;
      return Error("an integer");
    }
    // Accumulate negatively so that INT64_MIN parses.
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int digit = text_[pos_] - '0';
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_sub_overflow(v, digit, &v)) {
        return absl::InvalidArgumentError(absl::StrCat("domain '", text_, "': at offset ", start,
                                                       ": integer does not fit in 64 bits"));
      }
      ++pos_;
    }
    if (!negative) {
      if (v == std::numeric_limits<int64_t>::min()) {
        return absl::InvalidArgumentError(absl::StrCat("domain '", text_, "': at offset ", start,
                                                       ": integer does not fit in 64 bits"));
      }
      v = -v;
    }
    return v;
  }
  // Comma-separated integers up to `close`.
  absl::StatusOr<std::vector<int64_t>> IntegerList(char close) {
    std::vector<int64_t> out;
    if (Consume(close)) return out;
    while (true) {
      PRISM_ASSIGN_OR_RETURN(int64_t v, Integer());
      out.push_back(v);
      if (Consume(close)) return out;
      if (!Consume(',')) return Error(absl::StrCat("',' or '", std::string(1, close), "'"));
    }
  }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<Domain> Domain::Range(int64_t lo, int64_t hi) {
  if (lo > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty range domain: lo ", lo, " is greater than hi ", hi));
  }
  Domain d;
  d.kind_ = Kind::kRange;
  d.lo_ = lo;
  d.hi_ = hi;
  d.values_.clear();
  return d;
}

absl::StatusOr<Domain> Domain::PowerOfTwo(int64_t lo, int64_t hi) {
  if (lo > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty pow2 domain: lo ", lo, " is greater than hi ", hi));
  }
  const int64_t first = CeilPow2(lo);
  if (first == 0 || first > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty pow2 domain: no power of two in [", lo, ", ", hi, "]"));
  }
  Domain d;
  d.kind_ = Kind::kPowerOfTwo;
  d.lo_ = lo;
  d.hi_ = hi;
  d.values_.clear();
  return d;
}

absl::StatusOr<Domain> Domain::DivisorsOf(int64_t n) {
  if (n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("divisors domain: n must be at least 1, found ", n));
  }
  return DivisorsOf(n, 1, n);
}

absl::StatusOr<Domain> Domain::DivisorsOf(int64_t n, int64_t lo, int64_t hi) {
  if (n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("divisors domain: n must be at least 1, found ", n));
  }
  std::vector<int64_t> values = DivisorsIn(n, lo, hi);
  if (values.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty divisors domain: no divisor of ", n, " in [", lo, ", ", hi, "]"));
  }
  Domain d;
  d.kind_ = Kind::kDivisorsOf;
  d.n_ = n;
  d.lo_ = lo;
  d.hi_ = hi;
  d.values_ = std::move(values);  // cached members, for Contains/Enumerate
  return d;
}

absl::StatusOr<Domain> Domain::Set(std::vector<int64_t> values) {
  if (values.empty()) return absl::InvalidArgumentError("empty set domain: give at least one value");
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  Domain d;
  d.kind_ = Kind::kSet;
  d.lo_ = values.front();
  d.hi_ = values.back();
  d.values_ = std::move(values);
  return d;
}

int64_t Domain::Min() const {
  switch (kind_) {
    case Kind::kRange: return lo_;
    case Kind::kPowerOfTwo: return CeilPow2(lo_);
    case Kind::kDivisorsOf:
    case Kind::kSet: return values_.front();
  }
  PRISM_UNREACHABLE();
}

int64_t Domain::Max() const {
  switch (kind_) {
    case Kind::kRange: return hi_;
    case Kind::kPowerOfTwo: {
      int64_t p = CeilPow2(lo_);
      while (p <= hi_ / 2) p *= 2;
      return p;
    }
    case Kind::kDivisorsOf:
    case Kind::kSet: return values_.back();
  }
  PRISM_UNREACHABLE();
}

bool Domain::Contains(int64_t v) const {
  switch (kind_) {
    case Kind::kRange: return v >= lo_ && v <= hi_;
    case Kind::kPowerOfTwo: return v >= lo_ && v <= hi_ && v > 0 && (v & (v - 1)) == 0;
    case Kind::kDivisorsOf:
    case Kind::kSet: return std::binary_search(values_.begin(), values_.end(), v);
  }
  PRISM_UNREACHABLE();
}

int64_t Domain::Size() const {
  switch (kind_) {
    case Kind::kRange: {
      int64_t diff;
      if (__builtin_sub_overflow(hi_, lo_, &diff) || diff == kMax64) return kMax64;
      return diff + 1;
    }
    case Kind::kPowerOfTwo: {
      int64_t count = 0;
      for (int64_t p = Min(); p <= hi_; p *= 2) {
        ++count;
        if (p > kMax64 / 2) break;
      }
      return count;
    }
    case Kind::kDivisorsOf:
    case Kind::kSet: return static_cast<int64_t>(values_.size());
  }
  PRISM_UNREACHABLE();
}

absl::StatusOr<std::vector<int64_t>> Domain::Enumerate(int64_t max_count) const {
  const int64_t size = Size();
  if (size > max_count) {
    return absl::InvalidArgumentError(absl::StrCat("domain ", ToString(), " has ", size,
                                                   " values, more than the limit ", max_count));
  }
  switch (kind_) {
    case Kind::kRange: {
      std::vector<int64_t> out;
      out.reserve(size);
      for (int64_t v = lo_;; ++v) {
        out.push_back(v);
        if (v == hi_) break;
      }
      return out;
    }
    case Kind::kPowerOfTwo: {
      std::vector<int64_t> out;
      for (int64_t p = Min(); p <= hi_; p *= 2) {
        out.push_back(p);
        if (p > kMax64 / 2) break;
      }
      return out;
    }
    case Kind::kDivisorsOf:
    case Kind::kSet: return values_;
  }
  PRISM_UNREACHABLE();
}

std::string Domain::ToString() const {
  switch (kind_) {
    case Kind::kRange: return absl::StrCat("range(", lo_, ", ", hi_, ")");
    case Kind::kPowerOfTwo: return absl::StrCat("pow2(", lo_, ", ", hi_, ")");
    case Kind::kDivisorsOf:
      if (lo_ == 1 && hi_ == n_) return absl::StrCat("divisors(", n_, ")");
      return absl::StrCat("divisors(", n_, ", ", lo_, ", ", hi_, ")");
    case Kind::kSet: return absl::StrCat("{", absl::StrJoin(values_, ", "), "}");
  }
  PRISM_UNREACHABLE();
}

absl::StatusOr<Domain> Domain::Parse(absl::string_view text) {
  DomainScanner s(text);
  absl::StatusOr<Domain> result;
  if (s.Consume('{')) {
    PRISM_ASSIGN_OR_RETURN(std::vector<int64_t> values, s.IntegerList('}'));
    result = Set(std::move(values));
  } else {
    const size_t word_pos = (s.SkipSpace(), s.pos());
    const std::string word = s.Word();
    if (word != "range" && word != "pow2" && word != "divisors") {
      return absl::InvalidArgumentError(absl::StrCat(
          "domain '", text, "': at offset ", word_pos, ": found ",
          word.empty() ? std::string("no domain name") : absl::StrCat("'", word, "'"),
          ", expected range(lo, hi), pow2(lo, hi), divisors(n[, lo, hi]) or {v, ...}"));
    }
    PRISM_RETURN_IF_ERROR(s.Expect('('));
    PRISM_ASSIGN_OR_RETURN(std::vector<int64_t> args, s.IntegerList(')'));
    if (word == "divisors") {
      if (args.size() == 1) {
        result = DivisorsOf(args[0]);
      } else if (args.size() == 3) {
        result = DivisorsOf(args[0], args[1], args[2]);
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "domain '", text, "': divisors takes 1 or 3 integers, found ", args.size()));
      }
    } else {
      if (args.size() != 2) {
        return absl::InvalidArgumentError(absl::StrCat("domain '", text, "': ", word,
                                                       " takes 2 integers, found ", args.size()));
      }
      result = word == "range" ? Range(args[0], args[1]) : PowerOfTwo(args[0], args[1]);
    }
  }
  if (!s.AtEnd()) return s.Error("end of input");
  return result;
}

nlohmann::json Domain::ToJson() const {
  switch (kind_) {
    case Kind::kRange: return {{"kind", "range"}, {"lo", lo_}, {"hi", hi_}};
    case Kind::kPowerOfTwo: return {{"kind", "pow2"}, {"lo", lo_}, {"hi", hi_}};
    case Kind::kDivisorsOf:
      if (lo_ == 1 && hi_ == n_) return {{"kind", "divisors"}, {"of", n_}};
      return {{"kind", "divisors"}, {"of", n_}, {"lo", lo_}, {"hi", hi_}};
    case Kind::kSet: return {{"kind", "set"}, {"values", values_}};
  }
  PRISM_UNREACHABLE();
}

namespace {

absl::StatusOr<int64_t> JsonInt(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) {
    return absl::InvalidArgumentError(absl::StrCat("domain: missing key \"", key, "\""));
  }
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat("domain: key \"", key,
                                                   "\" must be an integer, found ", it->dump()));
  }
  if (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(kMax64)) {
    return absl::InvalidArgumentError(
        absl::StrCat("domain: key \"", key, "\" does not fit in 64 bits: ", it->dump()));
  }
  return it->get<int64_t>();
}

absl::Status CheckKeys(const nlohmann::json& j, std::initializer_list<const char*> allowed) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      std::vector<std::string> names;
      for (const char* a : allowed) names.push_back(absl::StrCat("\"", a, "\""));
      return absl::InvalidArgumentError(absl::StrCat("domain: unknown key \"", it.key(),
                                                     "\", expected one of ",
                                                     absl::StrJoin(names, ", ")));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Domain> Domain::FromJson(const nlohmann::json& j) {
  if (j.is_string()) return Parse(j.get<std::string>());
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "domain: expected an object such as {\"kind\": \"range\", \"lo\": 1, \"hi\": 4} or a "
        "string such as \"pow2(1, 256)\", found ",
        j.dump()));
  }
  auto kind_it = j.find("kind");
  if (kind_it == j.end() || !kind_it->is_string()) {
    return absl::InvalidArgumentError(
        "domain: missing string key \"kind\" (range, pow2, divisors or set)");
  }
  const std::string kind = kind_it->get<std::string>();
  if (kind == "range" || kind == "pow2") {
    PRISM_RETURN_IF_ERROR(CheckKeys(j, {"kind", "lo", "hi"}));
    PRISM_ASSIGN_OR_RETURN(int64_t lo, JsonInt(j, "lo"));
    PRISM_ASSIGN_OR_RETURN(int64_t hi, JsonInt(j, "hi"));
    return kind == "range" ? Range(lo, hi) : PowerOfTwo(lo, hi);
  }
  if (kind == "divisors") {
    PRISM_RETURN_IF_ERROR(CheckKeys(j, {"kind", "of", "lo", "hi"}));
    PRISM_ASSIGN_OR_RETURN(int64_t n, JsonInt(j, "of"));
    if (!j.contains("lo") && !j.contains("hi")) return DivisorsOf(n);
    PRISM_ASSIGN_OR_RETURN(int64_t lo, JsonInt(j, "lo"));
    PRISM_ASSIGN_OR_RETURN(int64_t hi, JsonInt(j, "hi"));
    return DivisorsOf(n, lo, hi);
  }
  if (kind == "set") {
    PRISM_RETURN_IF_ERROR(CheckKeys(j, {"kind", "values"}));
    auto it = j.find("values");
    if (it == j.end() || !it->is_array()) {
      return absl::InvalidArgumentError("domain: key \"values\" must be an array of integers");
    }
    std::vector<int64_t> values;
    for (const nlohmann::json& v : *it) {
      if (!v.is_number_integer() ||
          (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(kMax64))) {
        return absl::InvalidArgumentError(
            absl::StrCat("domain: key \"values\" must hold 64-bit integers, found ", v.dump()));
      }
      values.push_back(v.get<int64_t>());
    }
    return Set(std::move(values));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "domain: unknown kind \"", kind, "\", expected range, pow2, divisors or set"));
}

bool operator==(const Domain& a, const Domain& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case Domain::Kind::kRange:
    case Domain::Kind::kPowerOfTwo: return a.lo_ == b.lo_ && a.hi_ == b.hi_;
    case Domain::Kind::kDivisorsOf: return a.n_ == b.n_ && a.lo_ == b.lo_ && a.hi_ == b.hi_;
    case Domain::Kind::kSet: return a.values_ == b.values_;
  }
  PRISM_UNREACHABLE();
}

uint64_t Domain::StableHash() const {
  StableHasher h;
  h.Add(static_cast<int>(kind_)).Add(lo_).Add(hi_).Add(n_);
  if (kind_ == Kind::kSet) {
    h.Add(static_cast<uint64_t>(values_.size()));
    for (int64_t v : values_) h.Add(v);
  }
  return h.Finish();
}

}  // namespace prism
