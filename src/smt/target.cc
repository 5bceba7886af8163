#include "prism/smt/target.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "prism/base/paths.h"
#include "prism/base/status.h"
#include "sexpr.h"

namespace prism {
namespace {

using smt::internal::CommentField;
using smt::internal::ReadForms;
using smt::internal::SExpr;

// The constants every target must define, and the Target field each one fills. This table is
// the single list of hardware constants; the rule and cost theories may use any of them.
struct FieldSpec {
  const char* constant;
  int64_t Target::*field;
};
constexpr FieldSpec kFields[] = {
    {"hw_compute_capability", &Target::compute_capability},
    {"hw_sms", &Target::sms},
    {"hw_sm_clock_mhz", &Target::sm_clock_mhz},
    {"hw_warp_size", &Target::warp_size},
    {"hw_smem_per_block", &Target::smem_per_block},
    {"hw_smem_per_block_optin", &Target::smem_per_block_optin},
    {"hw_smem_per_sm", &Target::smem_per_sm},
    {"hw_smem_reserved_per_block", &Target::smem_reserved_per_block},
    {"hw_regs_per_sm", &Target::regs_per_sm},
    {"hw_regs_per_block", &Target::regs_per_block},
    {"hw_regs_per_thread", &Target::regs_per_thread},
    {"hw_reg_alloc_unit", &Target::reg_alloc_unit},
    {"hw_threads_per_block", &Target::threads_per_block},
    {"hw_threads_per_sm", &Target::threads_per_sm},
    {"hw_blocks_per_sm", &Target::blocks_per_sm},
    {"hw_max_grid_x", &Target::max_grid_x},
    {"hw_max_grid_y", &Target::max_grid_y},
    {"hw_max_grid_z", &Target::max_grid_z},
    {"hw_l2_bytes", &Target::l2_bytes},
    {"hw_dram_bytes_per_ns", &Target::dram_bytes_per_ns},
    {"hw_l2_bytes_per_ns", &Target::l2_bytes_per_ns},
    {"hw_sm_bytes_per_ns", &Target::sm_bytes_per_ns},
    {"hw_tensor_flops_per_ns", &Target::tensor_flops_per_ns},
    {"hw_sfu_ops_per_ns", &Target::sfu_ops_per_ns},
    {"hw_launch_overhead_ns", &Target::launch_overhead_ns},
    {"hw_launch_floor_ns", &Target::launch_floor_ns},
};

absl::StatusOr<std::string> HardwareDir() {
  PRISM_ASSIGN_OR_RETURN(std::string root, DataDir());
  return JoinPath(root, "smt_theories/hardware");
}

// Parses an SMT-LIB numeral or decimal ("132", "1.5"); false on anything else.
bool ParseLiteral(absl::string_view text, bool integral, double* value, int64_t* int_value) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && !(c == '.' && !integral)) {
      return false;
    }
  }
  if (integral) {
    if (!absl::SimpleAtoi(text, int_value)) return false;
    *value = static_cast<double>(*int_value);
    return true;
  }
  return absl::SimpleAtod(text, value);
}

}  // namespace

const HardwareConstant* Target::FindConstant(absl::string_view name) const {
  for (const HardwareConstant& c : constants) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

absl::StatusOr<std::vector<std::string>> ListTargets() {
  PRISM_ASSIGN_OR_RETURN(std::string dir, HardwareDir());
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".smt2") {
      names.push_back(entry.path().stem().string());
    }
  }
  if (ec) {
    return absl::NotFoundError(
        absl::StrCat("cannot list hardware targets in '", dir, "': ", ec.message()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<Target> LoadTarget(absl::string_view name) {
  PRISM_ASSIGN_OR_RETURN(std::vector<std::string> names, ListTargets());
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown target '", name,
                                                   "'; known targets: ",
                                                   absl::StrJoin(names, ", ")));
  }
  PRISM_ASSIGN_OR_RETURN(std::string dir, HardwareDir());
  PRISM_ASSIGN_OR_RETURN(std::string text, ReadFile(JoinPath(dir, absl::StrCat(name, ".smt2"))));
  return ParseTarget(name, text);
}

absl::StatusOr<Target> ParseTarget(absl::string_view name, absl::string_view smtlib) {
  const std::string origin = absl::StrCat(name, ".smt2");
  PRISM_ASSIGN_OR_RETURN(smt::internal::ReadResult read, ReadForms(smtlib, origin));
  Target target;
  target.name = std::string(name);
  target.smtlib = std::string(smtlib);
  for (const std::string& comment : read.all_comments) {
    if (absl::StartsWith(comment, "target:")) {
      target.display_name = std::string(absl::StripAsciiWhitespace(comment.substr(7)));
      break;
    }
  }
  if (target.display_name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": missing the '; target: <display name>' header comment"));
  }
  for (const smt::internal::TopLevelForm& f : read.forms) {
    const SExpr& e = f.form;
    const auto where = [&] { return absl::StrCat(origin, ":", f.line, ": "); };
    if (!(e.is_list() && e.items.size() == 5 && e.items[0].is_atom("define-fun") &&
          e.items[1].kind == SExpr::Kind::kAtom && e.items[2].is_list() &&
          e.items[2].items.empty() && e.items[3].kind == SExpr::Kind::kAtom &&
          e.items[4].kind == SExpr::Kind::kAtom)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), "expected (define-fun hw_<name> () Int|Real <literal>), found '",
          f.verbatim.substr(0, 60), "'"));
    }
    HardwareConstant c;
    c.name = e.items[1].text;
    c.sort = e.items[3].text;
    c.value_text = e.items[4].text;
    if (!absl::StartsWith(c.name, "hw_")) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "constant '", c.name, "' must be named hw_<something>"));
    }
    if (c.sort != "Int" && c.sort != "Real") {
      return absl::InvalidArgumentError(absl::StrCat(where(), "constant '", c.name,
                                                     "' has sort '", c.sort,
                                                     "', expected Int or Real"));
    }
    int64_t int_value = 0;
    if (!ParseLiteral(c.value_text, c.sort == "Int", &c.value, &int_value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), "constant '", c.name, "' has value '", c.value_text, "', expected a ",
          c.sort == "Int" ? "non-negative integer literal" : "non-negative decimal literal"));
    }
    c.source = CommentField(f.comments, "source:");
    if (c.source.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where(), "constant '", c.name,
                                                     "' has no '; source:' comment above it"));
    }
    if (target.FindConstant(c.name) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "constant '", c.name, "' is defined twice"));
    }
    for (const FieldSpec& spec : kFields) {
      if (c.name == spec.constant) {
        if (c.sort != "Int") {
          return absl::InvalidArgumentError(
              absl::StrCat(where(), "constant '", c.name, "' must have sort Int"));
        }
        target.*spec.field = int_value;
      }
    }
    target.constants.push_back(std::move(c));
  }
  for (const FieldSpec& spec : kFields) {
    if (target.FindConstant(spec.constant) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": missing constant '", spec.constant, "'"));
    }
  }
  return target;
}

std::string TargetListText(const std::vector<Target>& targets) {
  std::string out;
  for (const Target& t : targets) {
    absl::StrAppendFormat(&out, "%-10s %-28s sm_%d  %3d SMs  %3d KiB smem/block  %5d GB/s DRAM\n",
                          t.name, t.display_name, t.compute_capability, t.sms,
                          t.smem_per_block_optin / 1024, t.dram_bytes_per_ns);
  }
  return out;
}

std::string TargetText(const Target& target) {
  std::string out = absl::StrCat(target.name, ": ", target.display_name, "\n");
  size_t width = 0;
  for (const HardwareConstant& c : target.constants) width = std::max(width, c.name.size());
  for (const HardwareConstant& c : target.constants) {
    absl::StrAppendFormat(&out, "  %-*s %12s  ; %s\n", static_cast<int>(width), c.name,
                          c.value_text, c.source);
  }
  return out;
}

nlohmann::json TargetToJson(const Target& target) {
  nlohmann::json j;
  j["name"] = target.name;
  j["display_name"] = target.display_name;
  for (const FieldSpec& spec : kFields) {
    j[std::string(absl::string_view(spec.constant).substr(3))] = target.*spec.field;
  }
  nlohmann::json constants = nlohmann::json::array();
  for (const HardwareConstant& c : target.constants) {
    nlohmann::json jc;
    jc["name"] = c.name;
    jc["sort"] = c.sort;
    jc["value"] = c.value_text;
    jc["source"] = c.source;
    constants.push_back(std::move(jc));
  }
  j["constants"] = std::move(constants);
  return j;
}

nlohmann::json TargetListToJson(const std::vector<Target>& targets) {
  nlohmann::json j = nlohmann::json::array();
  for (const Target& t : targets) j.push_back(TargetToJson(t));
  return j;
}

}  // namespace prism
