// JSON serialization of sGraphs (round trip: SGraphFromJson(SGraphToJson(g)) == g).
// Hand-written fixtures and search results use the same format:
//
//   {"format": "prism.sgraph", "version": 1, "name": "rmsnorm_linear",
//    "params":  [{"name": "g", "role": "grid", "domain": "divisors(6144)"}, ...],
//    "tensors": [{"name": "X", "dtype": "f16", "shape": [16, 4096]},
//                {"name": "N", "dtype": "f32", "shape": [4, 32, "16 * gz"]}, ...],
//    "inputs": ["X", "W"], "outputs": ["Y"],
//    "kernels": [
//      {"name": "k0", "kind": "block", "grid": ["g", 1, 1], "threads": "T", "forloop": "F",
//       "stages": "S",
//       "ops": [{"name": "Xt", "op": "input", "tensor": "X", "imap": [-1, -1, -1], "fmap": 1},
//               {"name": "P", "op": "matmul", "operands": ["Xt", "Wt"]},
//               {"name": "Q", "op": "square", "operands": ["Xt"]},
//               {"name": "R", "op": "acc_sumsq_last", "operands": ["Xt"]},
//               {"name": "r", "op": "inv_rms", "operands": ["R"], "count": 4096, "eps": 1e-06},
//               {"op": "output", "operands": ["Yt"], "tensor": "Y", "omap": [1, -1, -1]}]},
//      {"name": "k1", "kind": "library", "op": "sum", "operands": ["D"], "result": "Ds",
//       "dim": 2}]}
//
// Expressions (shapes, grid, maps, counts) are JSON integers or strings in the printed
// expression syntax of expr/expr.h, over the declared parameters. Domains use the printed form
// of expr/domain.h. Block ops are spelled by block_ops.def names, except unary, binary and
// reduce ops, which are spelled by their function ("exp", "scale" with "scalar", "add",
// "sum"/"max" with "dim"). Operands name earlier ops of the kernel (or give their index);
// tensors are named. Optional keys: "name" (ops, kernels), "eps" (default 1e-6), "dim" (library
// ops, default 0), "scalar".
//
//   nlohmann::json j = SGraphToJson(g);
//   PRISM_ASSIGN_OR_RETURN(SGraph h, SGraphFromJson(j));      // h == g
#ifndef PRISM_BLOCK_SGRAPH_JSON_H_
#define PRISM_BLOCK_SGRAPH_JSON_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "prism/block/sgraph.h"
#include "prism/expr/eval.h"

namespace prism {

nlohmann::json SGraphToJson(const SGraph& graph);
// InvalidArgument naming the JSON path of the problem, e.g.
// "kernels[0].ops[3].op: found \"expp\", expected a block op or a unary/binary/reduce function".
// Only the format is checked here; Validate() checks the graph.
absl::StatusOr<SGraph> SGraphFromJson(const nlohmann::json& json);
// Parses text first (InvalidArgument with the parser's message on malformed JSON).
absl::StatusOr<SGraph> SGraphFromJsonText(absl::string_view text);

// AssignmentText (sgraph_printer.h) as a JSON object whose keys keep the declaration order.
nlohmann::ordered_json AssignmentJson(const SGraph& graph, const Assignment& a);

}  // namespace prism

#endif  // PRISM_BLOCK_SGRAPH_JSON_H_
