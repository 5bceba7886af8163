#include "options.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace prism::cli {
namespace {

const OptionSpec* FindOption(const CommandSpec& spec, absl::string_view name) {
  for (const OptionSpec& o : spec.options) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::string ExpectedValue(const OptionSpec& o) {
  switch (o.kind) {
    case OptionKind::kInt:
      return absl::StrCat("an integer in ", o.min, "..", o.max);
    case OptionKind::kChoice:
      return absl::StrCat("one of ", absl::StrJoin(o.choices, ", "));
    case OptionKind::kString:
      return absl::StrCat("a value (", o.value_name, ")");
    case OptionKind::kFlag:
      break;
  }
  return "no value";
}

absl::Status BadValue(const OptionSpec& o, absl::string_view found) {
  return absl::InvalidArgumentError(
      absl::StrCat(o.name, " expects ", ExpectedValue(o), ", found '", found, "'"));
}

// Checks `value` against the option's kind; returns the normalized value to store.
absl::StatusOr<std::string> CheckValue(const OptionSpec& o, absl::string_view value) {
  switch (o.kind) {
    case OptionKind::kInt: {
      int64_t v = 0;
      // SimpleAtoi accepts surrounding whitespace and a leading '+'; reject those so that
      // only plain decimal integers pass.
      const bool plain = !value.empty() && value.front() != '+' &&
                         value.find_first_of(" \t\n") == absl::string_view::npos;
      if (!plain || !absl::SimpleAtoi(value, &v) || v < o.min || v > o.max) {
        return BadValue(o, value);
      }
      return absl::StrCat(v);
    }
    case OptionKind::kChoice:
      if (std::find(o.choices.begin(), o.choices.end(), value) == o.choices.end()) {
        return BadValue(o, value);
      }
      return std::string(value);
    case OptionKind::kString:
      if (value.empty()) return BadValue(o, value);
      return std::string(value);
    case OptionKind::kFlag:
      break;
  }
  return std::string();
}

std::string CommandName(const CommandSpec& spec) { return absl::StrCat("prism ", spec.path); }

}  // namespace

OptionSpec FlagOption(std::string name, std::string help) {
  OptionSpec o;
  o.name = std::move(name);
  o.kind = OptionKind::kFlag;
  o.help = std::move(help);
  return o;
}

OptionSpec IntOption(std::string name, std::string value_name, std::string help, int64_t min,
                     int64_t max, std::string default_value) {
  OptionSpec o;
  o.name = std::move(name);
  o.kind = OptionKind::kInt;
  o.value_name = std::move(value_name);
  o.help = std::move(help);
  o.min = min;
  o.max = max;
  o.default_value = std::move(default_value);
  return o;
}

OptionSpec StringOption(std::string name, std::string value_name, std::string help,
                        std::string default_value) {
  OptionSpec o;
  o.name = std::move(name);
  o.kind = OptionKind::kString;
  o.value_name = std::move(value_name);
  o.help = std::move(help);
  o.default_value = std::move(default_value);
  return o;
}

OptionSpec ChoiceOption(std::string name, std::string value_name, std::string help,
                        std::vector<std::string> choices, std::string default_value) {
  OptionSpec o;
  o.name = std::move(name);
  o.kind = OptionKind::kChoice;
  o.value_name = std::move(value_name);
  o.help = std::move(help);
  o.choices = std::move(choices);
  o.default_value = std::move(default_value);
  return o;
}

std::optional<int64_t> ParsedArgs::Int(absl::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  int64_t v = 0;
  if (!absl::SimpleAtoi(it->second, &v)) return std::nullopt;
  return v;
}

std::optional<std::string> ParsedArgs::String(absl::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<ParsedArgs> ParseArgs(const CommandSpec& spec, absl::Span<const std::string> args) {
  ParsedArgs parsed;
  // --help wins over every other problem, so that a user can always ask for it.
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") {
      parsed.help_ = true;
      return parsed;
    }
  }
  bool options_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!options_ended && arg == "--") {
      options_ended = true;
      continue;
    }
    const bool looks_like_option = !options_ended && arg.size() > 1 && arg[0] == '-';
    if (!looks_like_option) {
      if (static_cast<int>(parsed.positionals_.size()) >= spec.max_positional) {
        if (spec.max_positional == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("unexpected argument '", arg, "' for '", CommandName(spec), "'"));
        }
        return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "' for '",
                                                       CommandName(spec), "': expected at most ",
                                                       spec.max_positional, " ", spec.positional));
      }
      parsed.positionals_.push_back(arg);
      continue;
    }
    // --name=value or --name [value]
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const OptionSpec* opt = FindOption(spec, name);
    if (opt == nullptr) {
      std::vector<std::string> names = {"--help"};
      for (const OptionSpec& o : spec.options) names.push_back(o.name);
      const std::string guess = ClosestMatch(name, names);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown option '", name, "' for '", CommandName(spec), "'; ",
          guess.empty() ? absl::StrCat("run '", CommandName(spec), " --help' for the options")
                        : absl::StrCat("did you mean '", guess, "'?")));
    }
    if (parsed.values_.count(opt->name) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(opt->name, " given twice"));
    }
    if (opt->kind == OptionKind::kFlag) {
      if (inline_value.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(opt->name, " takes no value, found '", arg, "'"));
      }
      parsed.values_[opt->name] = "";
      continue;
    }
    std::string value;
    if (inline_value.has_value()) {
      value = *inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(opt->name, " expects ", ExpectedValue(*opt), ", found nothing"));
    }
    absl::StatusOr<std::string> checked = CheckValue(*opt, value);
    if (!checked.ok()) return checked.status();
    parsed.values_[opt->name] = *std::move(checked);
  }
  return parsed;
}

std::string HelpText(const CommandSpec& spec) {
  constexpr size_t kWidth = 100;
  std::string text = absl::StrCat("usage: prism ", spec.path);
  if (!spec.usage.empty()) absl::StrAppend(&text, " ", spec.usage);
  absl::StrAppend(&text, "\n");
  if (!spec.summary.empty()) absl::StrAppend(&text, "\n", spec.summary, "\n");
  if (!spec.description.empty()) absl::StrAppend(&text, "\n", spec.description, "\n");
  std::vector<std::pair<std::string, std::string>> rows;
  for (const OptionSpec& o : spec.options) {
    std::string left = o.name;
    if (o.kind != OptionKind::kFlag) absl::StrAppend(&left, " ", o.value_name);
    std::vector<std::string> notes;
    if (o.kind == OptionKind::kChoice) notes.push_back(absl::StrJoin(o.choices, " | "));
    if (o.kind == OptionKind::kInt) notes.push_back(absl::StrCat(o.min, "..", o.max));
    if (!o.default_value.empty()) notes.push_back(absl::StrCat("default ", o.default_value));
    std::string right = o.help;
    if (!notes.empty()) absl::StrAppend(&right, " (", absl::StrJoin(notes, ", "), ")");
    rows.emplace_back(std::move(left), std::move(right));
  }
  rows.emplace_back("--help, -h", "show this help and exit");
  size_t width = 0;
  for (const auto& [left, right] : rows) width = std::max(width, left.size());
  const size_t indent = 2 + width + 2;
  absl::StrAppend(&text, "\noptions:\n");
  for (const auto& [left, right] : rows) {
    std::string line = absl::StrCat("  ", left, std::string(width - left.size() + 2, ' '));
    // Word-wrap the description at kWidth columns, continuation lines aligned under it.
    size_t column = indent;
    bool first_word = true;
    for (absl::string_view word : absl::StrSplit(right, ' ', absl::SkipEmpty())) {
      if (!first_word && column + 1 + word.size() > kWidth) {
        absl::StrAppend(&line, "\n", std::string(indent, ' '));
        column = indent;
        first_word = true;
      }
      if (!first_word) {
        line.push_back(' ');
        ++column;
      }
      absl::StrAppend(&line, word);
      column += word.size();
      first_word = false;
    }
    absl::StrAppend(&text, line, "\n");
  }
  return text;
}

int EditDistance(absl::string_view a, absl::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::string ClosestMatch(absl::string_view word, absl::Span<const std::string> candidates) {
  // Compare without leading dashes so that "--" does not count towards similarity.
  auto strip = [](absl::string_view s) {
    while (!s.empty() && s.front() == '-') s.remove_prefix(1);
    return s;
  };
  const absl::string_view w = strip(word);
  std::string best;
  int best_distance = std::numeric_limits<int>::max();
  for (const std::string& c : candidates) {
    const int dist = EditDistance(w, strip(c));
    if (dist < best_distance) {
      best_distance = dist;
      best = c;
    }
  }
  if (best.empty() || best_distance > 2 || 2 * best_distance >= static_cast<int>(w.size())) {
    return "";
  }
  return best;
}

}  // namespace prism::cli
