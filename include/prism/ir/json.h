// JSON export/import of a Program: the same information as the text format (names, ops,
// attributes, dtypes, shapes, outputs; comments are not kept), for tools that do not want to
// parse `.prism` text.
//
//   {"format": "prism.program", "version": 1,
//    "tensors": [{"name": "X", "op": "input", "dtype": "f16", "shape": [16, 4096]},
//                {"name": "", "op": "rms_norm", "operands": [0], "dim": -1, "eps": 1e-6},
//                {"name": "Y", "op": "matmul", "operands": [1, 2]}, ...],
//    "outputs": ["Y"]}   (operands index "tensors"; outputs may be names or indices)
//
// ProgramFromJson(ProgramToJson(p)) == p except for comments.
#ifndef PRISM_IR_JSON_H_
#define PRISM_IR_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "prism/ir/program.h"

namespace prism {

nlohmann::json ProgramToJson(const Program& program);
// InvalidArgument naming the JSON path of the problem ("tensors[3].op: found \"expp\",
// expected one of input, matmul, ...") or the builder's validation message.
absl::StatusOr<Program> ProgramFromJson(const nlohmann::json& json);
// Parses text first (InvalidArgument with the parser's position on malformed JSON).
absl::StatusOr<Program> ProgramFromJsonText(absl::string_view text);

}  // namespace prism

#endif  // PRISM_IR_JSON_H_
