// Presentation helpers shared by the `prism` subcommands: expression text for anonymous
// tensors, human-readable quantities, aligned tables.
//
//   ExprText(p, id)              // "rms_norm(X, -1)" for an anonymous tensor, "Y" for a named one
//   SiQuantity(50659328, "B")    // "50.66 MB"
//   GroupDigits(805306368)       // "805,306,368"
#ifndef PRISM_TOOLS_FORMAT_H_
#define PRISM_TOOLS_FORMAT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "prism/block/sgraph.h"
#include "prism/block/sgraph_json.h"      // AssignmentJson
#include "prism/block/sgraph_printer.h"   // AssignmentText
#include "prism/expr/eval.h"
#include "prism/ir/program.h"

namespace prism::cli {

// A named tensor's name; an anonymous one's defining expression in the text format, with its
// anonymous operands nested and named operands by name.
std::string ExprText(const Program& program, TensorId id);

// `value` scaled to k/M/G/T/P with 4 significant digits and the unit appended: "12.09 µs"
// style but SI only ("50.66 MB", "805.3 MFLOP", "4.19 TB/s"); values below 1000 unscaled.
std::string SiQuantity(double value, absl::string_view unit);

// An integer-valued double with thousands separators ("805,306,368"); other values as "%.6g".
std::string GroupDigits(double value);

// A number with `significant` significant digits, no exponent for ordinary magnitudes.
std::string Significant(double value, int significant = 6);

// Renders rows as left-aligned columns separated by two spaces, each line indented by
// `indent` spaces; the last column is not padded.
std::string AlignedTable(const std::vector<std::vector<std::string>>& rows, int indent);

}  // namespace prism::cli

#endif  // PRISM_TOOLS_FORMAT_H_
