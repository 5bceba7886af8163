#include "prism/smt/compiled_term.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace prism::smt {
namespace {

using Int128 = __int128;

Int128 Gcd(Int128 a, Int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b != 0) {
    const Int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

absl::Status Overflow() {
  return absl::InvalidArgumentError("128-bit overflow while evaluating a compiled term");
}

}  // namespace

absl::StatusOr<CompiledTerm::Rational> CompiledTerm::Run(absl::Span<const int64_t> inputs) const {
  if (inputs.size() != inputs_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("compiled term expects ", inputs_.size(),
                                                   " inputs, got ", inputs.size()));
  }
  if (code_.empty()) return absl::InvalidArgumentError("empty compiled term");
  // One buffer per thread, reused: the pruner runs these at every instance it checks.
  thread_local std::vector<Rational> v;
  v.resize(code_.size());
  // A division by zero yields "poison" (den == 0): SMT-LIB leaves its value unspecified, which
  // only matters if it reaches the result. Every operation propagates it, except that ite
  // picks a branch and and/or are decided by a definite false/true operand.
  const auto poisoned = [](const Rational& r) { return r.den == 0; };
  const Rational poison{0, 0};
  const auto normalize = [](Int128 num, Int128 den) -> Rational {
    if (den < 0) {
      num = -num;
      den = -den;
    }
    const Int128 g = Gcd(num, den);
    if (g > 1) {
      num /= g;
      den /= g;
    }
    return Rational{num, den};
  };
  const auto add = [&](const Rational& a, const Rational& b, Rational* out) -> bool {
    if (a.den == 1 && b.den == 1) {
      Int128 r;
      if (__builtin_add_overflow(a.num, b.num, &r)) return false;
      *out = Rational{r, 1};
      return true;
    }
    Int128 x, y, n, d;
    if (__builtin_mul_overflow(a.num, b.den, &x) || __builtin_mul_overflow(b.num, a.den, &y) ||
        __builtin_add_overflow(x, y, &n) || __builtin_mul_overflow(a.den, b.den, &d)) {
      return false;
    }
    *out = normalize(n, d);
    return true;
  };
  const auto mul = [&](const Rational& a, const Rational& b, Rational* out) -> bool {
    Int128 n, d;
    if (__builtin_mul_overflow(a.num, b.num, &n) || __builtin_mul_overflow(a.den, b.den, &d)) {
      return false;
    }
    *out = (a.den == 1 && b.den == 1) ? Rational{n, 1} : normalize(n, d);
    return true;
  };
  // a < b, a == b for rationals (denominators positive).
  const auto cmp = [&](const Rational& a, const Rational& b, int* out) -> bool {
    Int128 x, y;
    if (__builtin_mul_overflow(a.num, b.den, &x) || __builtin_mul_overflow(b.num, a.den, &y)) {
      return false;
    }
    *out = x < y ? -1 : (x > y ? 1 : 0);
    return true;
  };
  const auto truth = [](bool b) { return Rational{b ? 1 : 0, 1}; };

  for (size_t pc = 0; pc < code_.size(); ++pc) {
    const Instr& in = code_[pc];
    const uint32_t* ops = operand_list_.data() + in.first;
    const auto arg = [&](uint32_t i) -> const Rational& { return v[ops[i]]; };
    Rational& r = v[pc];
    if (in.op != Op::kConst && in.op != Op::kInput && in.op != Op::kIte && in.op != Op::kAnd &&
        in.op != Op::kOr && in.op != Op::kImplies) {
      bool any = false;
      for (uint32_t i = 0; i < in.count; ++i) any = any || poisoned(arg(i));
      if (any) {
        r = poison;
        continue;
      }
    }
    switch (in.op) {
      case Op::kConst:
        r = constants_[in.first];
        break;
      case Op::kInput:
        r = Rational{inputs[in.first], 1};
        break;
      case Op::kAdd:
        r = arg(0);
        for (uint32_t i = 1; i < in.count; ++i) {
          if (!add(r, arg(i), &r)) return Overflow();
        }
        break;
      case Op::kSub:
        r = arg(0);
        for (uint32_t i = 1; i < in.count; ++i) {
          if (!add(r, Rational{-arg(i).num, arg(i).den}, &r)) return Overflow();
        }
        break;
      case Op::kNeg:
        r = Rational{-arg(0).num, arg(0).den};
        break;
      case Op::kMul:
        r = arg(0);
        for (uint32_t i = 1; i < in.count; ++i) {
          if (!mul(r, arg(i), &r)) return Overflow();
        }
        break;
      case Op::kIntDiv:
      case Op::kIntMod: {
        // SMT-LIB div/mod (Euclidean): a = b * q + m with 0 <= m < |b|.
        const Int128 a = arg(0).num, b = arg(1).num;
        if (b == 0) {
          r = poison;
          break;
        }
        Int128 q = a / b, m = a % b;
        if (m < 0) {
          if (b > 0) {
            q -= 1;
            m += b;
          } else {
            q += 1;
            m -= b;
          }
        }
        r = Rational{in.op == Op::kIntDiv ? q : m, 1};
        break;
      }
      case Op::kRealDiv: {
        const Rational& a = arg(0);
        const Rational& b = arg(1);
        if (b.num == 0) {
          r = poison;
          break;
        }
        if (!mul(a, Rational{b.num < 0 ? -b.den : b.den, b.num < 0 ? -b.num : b.num}, &r)) {
          return Overflow();
        }
        break;
      }
      case Op::kToReal:
        r = arg(0);
        break;
      case Op::kToInt: {
        const Rational& a = arg(0);
        Int128 q = a.num / a.den;
        if (a.num % a.den != 0 && a.num < 0) q -= 1;  // floor
        r = Rational{q, 1};
        break;
      }
      case Op::kIte:
        r = poisoned(arg(0)) ? poison : (arg(0).num != 0 ? arg(1) : arg(2));
        break;
      case Op::kEq:
      case Op::kLe:
      case Op::kLt:
      case Op::kGe:
      case Op::kGt: {
        bool all = true;
        for (uint32_t i = 0; i + 1 < in.count; ++i) {
          int c = 0;
          if (!cmp(arg(i), arg(i + 1), &c)) return Overflow();
          const bool ok = in.op == Op::kEq   ? c == 0
                          : in.op == Op::kLe ? c <= 0
                          : in.op == Op::kLt ? c < 0
                          : in.op == Op::kGe ? c >= 0
                                             : c > 0;
          all = all && ok;
        }
        r = truth(all);
        break;
      }
      case Op::kDistinct: {
        bool distinct = true;
        for (uint32_t i = 0; i < in.count; ++i) {
          for (uint32_t j = i + 1; j < in.count; ++j) {
            int c = 0;
            if (!cmp(arg(i), arg(j), &c)) return Overflow();
            distinct = distinct && c != 0;
          }
        }
        r = truth(distinct);
        break;
      }
      case Op::kAnd:
      case Op::kOr: {
        // The absorbing value (false for and, true for or) decides even next to poison.
        const bool absorbing = in.op == Op::kOr;
        bool decided = false, unknown = false;
        for (uint32_t i = 0; i < in.count; ++i) {
          if (poisoned(arg(i))) {
            unknown = true;
          } else if ((arg(i).num != 0) == absorbing) {
            decided = true;
          }
        }
        r = decided ? truth(absorbing) : (unknown ? poison : truth(!absorbing));
        break;
      }
      case Op::kNot:
        r = truth(arg(0).num == 0);  // poison was propagated above
        break;
      case Op::kImplies:
        if ((!poisoned(arg(0)) && arg(0).num == 0) || (!poisoned(arg(1)) && arg(1).num != 0)) {
          r = truth(true);
        } else if (poisoned(arg(0)) || poisoned(arg(1))) {
          r = poison;
        } else {
          r = truth(false);
        }
        break;
      case Op::kXor: {
        bool x = false;
        for (uint32_t i = 0; i < in.count; ++i) x = x != (arg(i).num != 0);
        r = truth(x);
        break;
      }
    }
  }
  if (poisoned(v.back())) {
    return absl::InvalidArgumentError("division by zero in a compiled term");
  }
  return v.back();
}

absl::StatusOr<bool> CompiledTerm::EvaluateBool(absl::Span<const int64_t> inputs) const {
  if (!is_bool_) return absl::InvalidArgumentError("compiled term is not Bool");
  absl::StatusOr<Rational> r = Run(inputs);
  if (!r.ok()) return r.status();
  return r->num != 0;
}

absl::StatusOr<double> CompiledTerm::EvaluateNumber(absl::Span<const int64_t> inputs) const {
  if (is_bool_) return absl::InvalidArgumentError("compiled term is Bool, not a number");
  absl::StatusOr<Rational> r = Run(inputs);
  if (!r.ok()) return r.status();
  return static_cast<double>(static_cast<long double>(r->num) / static_cast<long double>(r->den));
}

absl::StatusOr<int64_t> CompiledTerm::EvaluateInt(absl::Span<const int64_t> inputs) const {
  if (is_bool_ || is_real_) return absl::InvalidArgumentError("compiled term is not Int");
  absl::StatusOr<Rational> r = Run(inputs);
  if (!r.ok()) return r.status();
  if (r->num > std::numeric_limits<int64_t>::max() || r->num < std::numeric_limits<int64_t>::min()) {
    return absl::InvalidArgumentError("compiled term value does not fit int64");
  }
  return static_cast<int64_t>(r->num);
}

}  // namespace prism::smt
