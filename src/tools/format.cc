#include "format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "prism/ir/text_format.h"

namespace prism::cli {

std::string ExprText(const Program& program, TensorId id) {
  const Node& node = program.node(id);
  if (!node.name.empty()) return node.name;
  const OpInfo& info = GetOpInfo(node.op);
  std::vector<std::string> args;
  for (TensorId operand : node.operands) args.push_back(ExprText(program, operand));
  switch (info.attr) {
    case OpAttr::kNone:
      break;
    case OpAttr::kDim:
      args.push_back(absl::StrCat(node.dim));
      break;
    case OpAttr::kScalar:
      args.push_back(FormatNumber(node.scalar));
      break;
    case OpAttr::kDimEps:
      args.push_back(absl::StrCat(node.dim));
      if (node.eps != kDefaultRmsEps) args.push_back(absl::StrCat("eps=", FormatNumber(node.eps)));
      break;
  }
  return absl::StrCat(info.name, "(", absl::StrJoin(args, ", "), ")");
}

std::string SiQuantity(double value, absl::string_view unit) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  double v = value;
  while (std::fabs(v) >= 999.95 && p < 6) {
    v /= 1000.0;
    ++p;
  }
  const std::string suffix = absl::StrCat(kPrefixes[p], unit);
  return suffix.empty() ? Significant(v, 4) : absl::StrCat(Significant(v, 4), " ", suffix);
}

std::string GroupDigits(double value) {
  if (!(std::fabs(value) < 9.0e15) || value != std::floor(value)) {
    return absl::StrFormat("%.6g", value);
  }
  const int64_t v = static_cast<int64_t>(value);
  std::string digits = absl::StrCat(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return v < 0 ? absl::StrCat("-", out) : out;
}

std::string Significant(double value, int significant) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  const double magnitude = std::fabs(value);
  if (magnitude >= 1e-4 && magnitude < 1e15) {
    const int int_digits = static_cast<int>(std::floor(std::log10(magnitude))) + 1;
    const int decimals = std::max(0, significant - int_digits);
    std::string s = absl::StrFormat("%.*f", decimals, value);
    // Drop trailing zeros after the decimal point ("12.10" → "12.1", "4.000" → "4").
    if (s.find('.') != std::string::npos) {
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
    }
    return s;
  }
  return absl::StrFormat("%.*g", significant, value);
}

std::string AlignedTable(const std::vector<std::vector<std::string>>& rows, int indent) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    // Width in code points, so that "µs" counts as two columns.
    for (size_t c = 0; c < row.size(); ++c) {
      size_t cps = 0;
      for (unsigned char ch : row[c]) cps += (ch & 0xC0) != 0x80;
      widths[c] = std::max(widths[c], cps);
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line(indent, ' ');
    for (size_t c = 0; c < row.size(); ++c) {
      absl::StrAppend(&line, row[c]);
      if (c + 1 < row.size()) {
        size_t cps = 0;
        for (unsigned char ch : row[c]) cps += (ch & 0xC0) != 0x80;
        line.append(widths[c] - cps + 2, ' ');
      }
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace prism::cli
