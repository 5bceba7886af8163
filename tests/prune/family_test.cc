// prune::Family: loading the example families, JSON round trip, evaluation, brute-force
// enumeration, the building API, and a table of malformed inputs with their exact messages.
#include <functional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "prism/base/check.h"
#include "prism/base/paths.h"
#include "prism/expr/parse.h"
#include "prism/prune/family.h"
#include "testing/status_matchers.h"

namespace prism::prune {
namespace {
using ::prism::testing::StatusIs;

nlohmann::json LoadFamilyJson(absl::string_view file) {
  absl::StatusOr<std::string> text =
      ReadFile(JoinPath(PRISM_SOURCE_DIR "/tests/prune/families", file));
  PRISM_CHECK(text.ok(), text.status().message());
  return nlohmann::json::parse(*text);
}

const std::vector<const char*> kFamilyFiles = {"rmsnorm_linear.json", "gqa_split_kv.json",
                                               "vector_copy.json"};

TEST(FamilyTest, ExampleFilesRoundTrip) {
  for (const char* file : kFamilyFiles) {
    SCOPED_TRACE(file);
    const nlohmann::json j = LoadFamilyJson(file);
    ExprContext ctx;
    ASSERT_OK_AND_ASSIGN(Family f, Family::FromJson(j, ctx));
    EXPECT_EQ(f.name(), j["name"].get<std::string>());
    EXPECT_EQ(f.parameters().size(), j["parameters"].size());
    EXPECT_EQ(f.constraints().size(), j["constraints"].size());
    EXPECT_EQ(f.metrics().size(), j["metrics"].size());
    // ToJson → FromJson, in the same context (same handles) and in a fresh one (same hash).
    const nlohmann::json out = f.ToJson();
    ASSERT_OK_AND_ASSIGN(Family same_ctx, Family::FromJson(out, ctx));
    EXPECT_EQ(same_ctx.metrics(), f.metrics());
    for (size_t i = 0; i < f.constraints().size(); ++i) {
      EXPECT_EQ(same_ctx.constraints()[i].condition, f.constraints()[i].condition);
      EXPECT_EQ(same_ctx.constraints()[i].why, f.constraints()[i].why);
    }
    ExprContext fresh;
    ASSERT_OK_AND_ASSIGN(Family again, Family::FromJson(out, fresh));
    EXPECT_EQ(again.StableHash(), f.StableHash());
    EXPECT_EQ(again.ToJson(), out);
    EXPECT_EQ(again.constants(), f.constants());
  }
}

TEST(FamilyTest, ConstantsAreSubstituted) {
  ExprContext ctx;
  ASSERT_OK_AND_ASSIGN(Family f, Family::FromJson(LoadFamilyJson("rmsnorm_linear.json"), ctx));
  EXPECT_EQ(ctx.ToString(f.metrics().at("smem_bytes")),
            "S * (16 * (4096 floordiv F) + (4096 floordiv F) * (6144 floordiv g)) * 2");
  EXPECT_EQ(f.ToJson()["metrics"]["dram_bytes"], "(16 * 4096 + 4096 * 6144 + 16 * 6144) * 2");
  EXPECT_FALSE(ctx.FindVar("K").has_value());  // constants never become variables
  EXPECT_EQ(f.FindParameter("g")->domain.ToString(), "divisors(6144)");
  EXPECT_EQ(f.FindParameter("g")->doc, "blocks along x; each block computes N/g output columns");
  EXPECT_EQ(f.FindParameter("K"), nullptr);
  EXPECT_EQ(f.SpaceSize(), 24 * 13 * 4 * 4);
}

TEST(FamilyTest, EvaluateRmsnormLinear) {
  ExprContext ctx;
  ASSERT_OK_AND_ASSIGN(Family f, Family::FromJson(LoadFamilyJson("rmsnorm_linear.json"), ctx));
  struct Row {
    Assignment a;
    std::vector<std::string> domain_violations;
    std::vector<std::string> violated;
    int64_t smem, regs, grid_blocks, l2;
  };
  const std::vector<Row> rows = {
      // The instance chosen in WALKTHROUGH.md §7.
      {{{"g", 192}, {"F", 32}, {"T", 128}, {"S", 3}}, {}, {}, 36864, 36, 192,
       192 * 16 * 4096 * 2 + 4096 * 6144 * 2 + 16 * 6144 * 2},
      // The smem_capacity example of §6: 1.2 MB.
      {{{"g", 48}, {"F", 4}, {"T", 256}, {"S", 4}}, {}, {}, 1179648, 40, 48,
       48 * 16 * 4096 * 2 + 4096 * 6144 * 2 + 16 * 6144 * 2},
      // K/F = 1 and N/g = 1 break both mma constraints.
      {{{"g", 6144}, {"F", 4096}, {"T", 64}, {"S", 1}}, {}, {"k_tile_mma", "n_tile_mma"}, 34, 33,
       6144, 6144 * 16 * 4096 * 2 + 4096 * 6144 * 2 + 16 * 6144 * 2},
      // Outside the domains: reported, nothing evaluated.
      {{{"g", 5}, {"F", 32}, {"T", 100}, {"S", 3}},
       {"g = 5 is not in divisors(6144)", "T = 100 is not in {64, 128, 256, 512}"}, {}, -1, -1, -1, -1},
  };
  for (const Row& r : rows) {
    ASSERT_OK_AND_ASSIGN(Family::Evaluation ev, f.Evaluate(r.a));
    EXPECT_EQ(ev.domain_violations, r.domain_violations);
    EXPECT_EQ(ev.violated_constraints, r.violated);
    EXPECT_EQ(ev.feasible(), r.domain_violations.empty() && r.violated.empty());
    if (!r.domain_violations.empty()) {
      EXPECT_TRUE(ev.metrics.empty());
      continue;
    }
    EXPECT_EQ(ev.metrics.size(), StandardMetrics().size());
    EXPECT_EQ(ev.metrics.at("smem_bytes"), r.smem);
    EXPECT_EQ(ev.metrics.at("regs_per_thread"), r.regs);
    EXPECT_EQ(ev.metrics.at("grid_blocks"), r.grid_blocks);  // default: grid_x * grid_y * grid_z
    EXPECT_EQ(ev.metrics.at("grid_y"), 1);                    // default
    EXPECT_EQ(ev.metrics.at("l2_bytes"), r.l2);
    EXPECT_EQ(ev.metrics.at("kernels"), 1);
  }
  EXPECT_THAT(f.Evaluate({{"g", 192}, {"F", 32}, {"T", 128}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "parameter 'S' is not assigned"));
  EXPECT_THAT(f.Evaluate({{"g", 192}, {"F", 32}, {"T", 128}, {"S", 1}, {"K", 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "assignment names 'K', which is not a parameter of family "
                       "rmsnorm_linear.one_kernel"));
}

TEST(FamilyTest, DefaultsAndBruteForce) {
  ExprContext ctx;
  ASSERT_OK_AND_ASSIGN(Family f, Family::FromJson(LoadFamilyJson("vector_copy.json"), ctx));
  EXPECT_FALSE(f.HasMetric(kSmemBytes));
  EXPECT_TRUE(f.HasMetric(kGridX));
  EXPECT_EQ(ctx.ToString(f.MetricOrDefault(kSmemBytes)), "0");
  EXPECT_EQ(ctx.ToString(f.MetricOrDefault(kGridBlocks)), "(1048576 floordiv (B * V)) * 1 * 1");
  EXPECT_EQ(ctx.ToString(f.MetricOrDefault(kL2Bytes)), "1048576 * 2 * 2");
  EXPECT_EQ(f.SpaceSize(), 6 * 5);
  int count = 0, feasible = 0;
  ASSERT_OK(f.ForEachAssignment([&](const Assignment& a) {
    ++count;
    absl::StatusOr<Family::Evaluation> ev = f.Evaluate(a);
    EXPECT_TRUE(ev.ok()) << ev.status();
    if (ev.ok() && ev->feasible()) {
      ++feasible;
      EXPECT_EQ(ev->metrics.at("grid_blocks") * a.at("B") * a.at("V"), 1048576);
    }
    return true;
  }));
  EXPECT_EQ(count, 30);
  EXPECT_EQ(feasible, 6 * 4);  // V = 16 breaks vector_load_width
  int seen = 0;
  ASSERT_OK(f.ForEachAssignment([&](const Assignment&) { return ++seen < 7; }));
  EXPECT_EQ(seen, 7);
  EXPECT_THAT(f.ForEachAssignment([](const Assignment&) { return true; }, 10),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "family scale.vectorized has 30 assignments, more than the limit 10"));
}

TEST(FamilyTest, BuildingApi) {
  ExprContext ctx;
  Family f("toy", ctx);
  ASSERT_OK(f.AddConstant("K", 4096));
  ASSERT_OK_AND_ASSIGN(Expr t, f.AddParameter("t", *Domain::PowerOfTwo(16, 256), "tile"));
  ASSERT_OK(f.AddConstraintText("divides", "K mod t == 0", "no tail"));
  ASSERT_OK(f.SetMetricText("smem_bytes", "t * K * 2"));
  ASSERT_OK(f.SetMetric("grid_x", ctx.FloorDiv(ctx.Const(4096), t)));
  EXPECT_EQ(ctx.ToString(f.metrics().at("smem_bytes")), "t * 4096 * 2");
  ASSERT_OK(f.SetMetricText("smem_bytes", "t * 2"));  // replaces
  EXPECT_EQ(ctx.ToString(f.MetricOrDefault(kSmemBytes)), "t * 2");
  Expr stranger = *ctx.Var("z", *Domain::Range(0, 1));

  struct Row { std::function<absl::Status()> call; const char* message; };
  const std::vector<Row> rows = {
      {[&] { return f.AddParameter("t", *Domain::Range(1, 2)).status(); }, "duplicate parameter 't'"},
      {[&] { return f.AddParameter("K", *Domain::Range(1, 2)).status(); },
       "parameter 'K' has the name of a constant"},
      {[&] { return f.AddParameter("z", *Domain::Range(5, 6)).status(); },
       "variable 'z' is already declared with domain range(0, 1), not range(5, 6)"},
      {[&] { return f.AddConstant("t", 1); }, "constant 't' has the name of a parameter"},
      {[&] { return f.AddConstant("K", 1); }, "duplicate constant 'K'"},
      {[&] { return f.AddConstant("2K", 1); }, "constant name '2K' is not an identifier or is a keyword"},
      {[&] { return f.AddConstraintText("divides", "t < 9", ""); }, "duplicate constraint 'divides'"},
      {[&] { return f.AddConstraintText("bad name", "t < 9", ""); },
       "constraint name 'bad name' is not a name (letters, digits, '_', '.')"},
      {[&] { return f.AddConstraintText("c", "t + 1", ""); },
       "constraint c: 't + 1' is an integer, expected a condition"},
      {[&] { return f.AddConstraintText("c", "u < 1", ""); },
       "constraint c: at offset 0: unknown variable 'u': not a parameter or constant (known: t, K)"},
      {[&] { return f.AddConstraint("c", ctx.Lt(stranger, t), ""); },
       "constraint c: variable 'z' is not a parameter of the family"},
      {[&] { return f.SetMetric("flops", ctx.Mul(stranger, t)); },
       "metric flops: variable 'z' is not a parameter of the family"},
      {[&] { return f.SetMetric("flop", t); },
       "metric 'flop' is unknown, expected one of smem_bytes, regs_per_thread, threads_per_block, "
       "grid_x, grid_y, grid_z, grid_blocks, dram_bytes, l2_bytes, flops, sfu_ops, kernels"},
      {[&] { return f.SetMetricText("flops", "t < 2"); },
       "metric flops: 't < 2' is a condition, expected an integer"},
      {[&] { return f.SetMetricText("flops", "t *"); },
       "metric flops: at offset 3: found end of input, expected an expression"},
  };
  for (const Row& r : rows) {
    EXPECT_THAT(r.call(), StatusIs(absl::StatusCode::kInvalidArgument, std::string(r.message)));
  }
  EXPECT_EQ(f.parameters().size(), 1u);
  EXPECT_EQ(f.constraints().size(), 1u);
}

// EvaluateNumbers against Evaluate at every assignment of the example families' spaces, and
// at points outside the domains and with evaluation errors (same messages).
TEST(FamilyTest, EvaluateNumbersMatchesEvaluate) {
  for (const char* file : kFamilyFiles) {
    SCOPED_TRACE(file);
    ExprContext ctx;
    ASSERT_OK_AND_ASSIGN(Family f, Family::FromJson(LoadFamilyJson(file), ctx));
    Family::Numbers numbers;
    int compared = 0;
    ASSERT_OK(f.ForEachAssignment(
        [&](const Assignment& a) {
          std::vector<int64_t> values;
          for (const Parameter& p : f.parameters()) values.push_back(a.at(p.name));
          const absl::StatusOr<Family::Evaluation> ev = f.Evaluate(a);
          const absl::StatusOr<bool> in = f.EvaluateNumbers(values, numbers);
          EXPECT_EQ(in.status(), ev.status());
          if (!ev.ok() || !in.ok()) return true;
          EXPECT_TRUE(*in);
          std::vector<std::string> violated;
          for (size_t i = 0; i < f.constraints().size(); ++i) {
            if (numbers.holds[i] == 0) violated.push_back(f.constraints()[i].name);
          }
          EXPECT_EQ(violated, ev->violated_constraints);
          for (size_t j = 0; j < StandardMetrics().size(); ++j) {
            EXPECT_EQ(numbers.metrics[j], ev->metrics.at(std::string(StandardMetrics()[j].name)));
          }
          ++compared;
          return true;
        },
        int64_t{1} << 16));
    EXPECT_GT(compared, 0);
  }
  // Outside a domain: false (Evaluate lists the violation); an evaluation error: Evaluate's.
  ExprContext ctx;
  Family f("toy", ctx);
  ASSERT_OK(f.AddParameter("t", *Domain::Range(0, 64)).status());
  ASSERT_OK(f.AddConstraintText("fits", "4096 floordiv t <= 512", ""));
  Family::Numbers numbers;
  ASSERT_OK_AND_ASSIGN(bool in, f.EvaluateNumbers({65}, numbers));
  EXPECT_FALSE(in);
  ASSERT_OK_AND_ASSIGN(Family::Evaluation ev, f.Evaluate({{"t", 65}}));
  EXPECT_THAT(ev.domain_violations, ::testing::ElementsAre("t = 65 is not in range(0, 64)"));
  const char* kMessage =
      "constraint fits: division by zero in '4096 floordiv t': the divisor 't' is 0";
  EXPECT_THAT(f.EvaluateNumbers({0}, numbers),
              StatusIs(absl::StatusCode::kInvalidArgument, kMessage));
  EXPECT_THAT(f.Evaluate({{"t", 0}}), StatusIs(absl::StatusCode::kInvalidArgument, kMessage));
  ASSERT_OK_AND_ASSIGN(in, f.EvaluateNumbers({4}, numbers));
  EXPECT_TRUE(in);
  EXPECT_THAT(numbers.holds, ::testing::ElementsAre(0));
}

// Evaluate's compiled plan is rebuilt after every change (regression guard for the cache):
// a constraint or metric added after an evaluation counts in the next one, and a copy taken
// before the change keeps evaluating the family as it was.
TEST(FamilyTest, EvaluationFollowsChanges) {
  ExprContext ctx;
  Family f("toy", ctx);
  ASSERT_OK(f.AddParameter("t", *Domain::Range(1, 64)).status());
  ASSERT_OK(f.SetMetricText("smem_bytes", "t * 2"));
  ASSERT_OK_AND_ASSIGN(Family::Evaluation before, f.Evaluate({{"t", 8}}));
  EXPECT_TRUE(before.violated_constraints.empty());
  EXPECT_EQ(before.metrics.at("smem_bytes"), 16);
  const Family copy = f;
  ASSERT_OK(f.AddConstraintText("small", "t < 4", ""));
  ASSERT_OK(f.SetMetricText("smem_bytes", "t * 3"));
  ASSERT_OK_AND_ASSIGN(Family::Evaluation after, f.Evaluate({{"t", 8}}));
  EXPECT_THAT(after.violated_constraints, ::testing::ElementsAre("small"));
  EXPECT_EQ(after.metrics.at("smem_bytes"), 24);
  ASSERT_OK_AND_ASSIGN(Family::Evaluation of_copy, copy.Evaluate({{"t", 8}}));
  EXPECT_TRUE(of_copy.violated_constraints.empty());
  EXPECT_EQ(of_copy.metrics.at("smem_bytes"), 16);
  // A parameter added later is required from then on.
  ASSERT_OK(f.AddParameter("u", *Domain::Range(1, 2)).status());
  EXPECT_THAT(f.Evaluate({{"t", 8}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "parameter 'u' is not assigned"));
  Family::Numbers numbers;
  ASSERT_OK_AND_ASSIGN(bool in, f.EvaluateNumbers({8, 2}, numbers));
  EXPECT_TRUE(in);
}

TEST(FamilyTest, MalformedJson) {
  const nlohmann::json base = LoadFamilyJson("vector_copy.json");
  using Mutation = std::function<void(nlohmann::json&)>;
  struct Row { Mutation mutate; const char* message; };
  const std::string p = "family scale.vectorized: ";
  const std::vector<Row> rows = {
      {[](nlohmann::json& j) { j = 3; }, "family: expected a JSON object, found number"},
      {[](nlohmann::json& j) { j.erase("name"); }, "family: missing \"name\" (a non-empty string)"},
      {[](nlohmann::json& j) { j["name"] = ""; }, "family: missing \"name\" (a non-empty string)"},
      {[](nlohmann::json& j) { j["metric"] = nlohmann::json::object(); },
       "metric: unknown key, expected one of name, description, constants, parameters, "
       "constraints, metrics"},
      {[](nlohmann::json& j) { j["description"] = 3; }, "description: expected a string, found 3"},
      {[](nlohmann::json& j) { j["constants"] = {1}; },
       "constants: expected an object of name: integer, found [1]"},
      {[](nlohmann::json& j) { j["constants"]["N"] = "big"; },
       "constants.N: expected a 64-bit integer, found \"big\""},
      {[](nlohmann::json& j) { j["constants"]["mod"] = 3; },
       "constants.mod: constant name 'mod' is not an identifier or is a keyword"},
      {[](nlohmann::json& j) { j.erase("parameters"); }, "parameters: missing or not an array"},
      {[](nlohmann::json& j) { j["parameters"][0] = "B"; },
       "parameters[0]: expected an object, found \"B\""},
      {[](nlohmann::json& j) { j["parameters"][0]["name"] = 5; },
       "parameters[0].name: expected a string, found 5"},
      {[](nlohmann::json& j) { j["parameters"][0].erase("name"); },
       "parameters[0].name: missing (a string is required)"},
      {[](nlohmann::json& j) { j["parameters"][0]["range"] = 1; },
       "parameters[0].range: unknown key, expected one of name, domain, doc"},
      {[](nlohmann::json& j) { j["parameters"][0].erase("domain"); }, "parameters[0].domain: missing"},
      {[](nlohmann::json& j) { j["parameters"][0]["domain"] = "pow2(33, 63)"; },
       "parameters[0].domain: empty pow2 domain: no power of two in [33, 63]"},
      {[](nlohmann::json& j) { j["parameters"][1]["domain"] = {{"kind", "set"}}; },
       "parameters[1].domain: domain: key \"values\" must be an array of integers"},
      {[](nlohmann::json& j) { j["parameters"][1]["name"] = "B"; },
       "parameters[1]: duplicate parameter 'B'"},
      {[](nlohmann::json& j) { j["parameters"][0]["name"] = "N"; },
       "parameters[0]: parameter 'N' has the name of a constant"},
      {[](nlohmann::json& j) { j["parameters"][0]["name"] = "mod"; },
       "parameters[0]: variable name 'mod' is a keyword of the expression syntax"},
      {[](nlohmann::json& j) { j["constraints"] = nlohmann::json::object(); },
       "constraints: expected an array"},
      {[](nlohmann::json& j) { j["constraints"][0].erase("condition"); },
       "constraints[0].condition: missing (a string is required)"},
      {[](nlohmann::json& j) { j["constraints"][0]["condition"] = "N mod (B * W) == 0"; },
       "constraints[0].condition: 'N mod (B * W) == 0': at offset 11: unknown variable 'W': not "
       "a parameter or constant (known: B, V, N)"},
      {[](nlohmann::json& j) { j["constraints"][0]["condition"] = "N mod (B * V) == "; },
       "constraints[0].condition: 'N mod (B * V) == ': at offset 17: found end of input, "
       "expected an expression"},
      {[](nlohmann::json& j) { j["constraints"][0]["condition"] = "B * V"; },
       "constraints[0]: constraint grid_covers_n: 'B * V' is an integer, expected a condition"},
      {[](nlohmann::json& j) { j["constraints"][1]["name"] = "grid_covers_n"; },
       "constraints[1]: duplicate constraint 'grid_covers_n'"},
      {[](nlohmann::json& j) { j["constraints"][1]["because"] = "x"; },
       "constraints[1].because: unknown key, expected one of name, condition, why"},
      {[](nlohmann::json& j) { j["metrics"] = {1}; },
       "metrics: expected an object of name: expression"},
      {[](nlohmann::json& j) { j["metrics"]["smem_byte"] = "B"; },
       "metrics.smem_byte: unknown metric, expected one of smem_bytes, regs_per_thread, "
       "threads_per_block, grid_x, grid_y, grid_z, grid_blocks, dram_bytes, l2_bytes, flops, "
       "sfu_ops, kernels"},
      {[](nlohmann::json& j) { j["metrics"]["flops"] = "N < B"; },
       "metrics.flops: metric flops: '1048576 < B' is a condition, expected an integer"},
      {[](nlohmann::json& j) { j["metrics"]["flops"] = {1}; },
       "metrics.flops: expected a string (expression) or an integer, found array [1]"},
      {[](nlohmann::json& j) { j["metrics"]["grid_x"] = "N floordiv (B * V"; },
       "metrics.grid_x: 'N floordiv (B * V': at offset 17: found end of input, expected ')'"},
  };
  for (const Row& r : rows) {
    nlohmann::json j = base;
    r.mutate(j);
    const std::string message = std::string(r.message).rfind("family", 0) == 0
                                    ? std::string(r.message)
                                    : p + r.message;
    ExprContext ctx;
    EXPECT_THAT(Family::FromJson(j, ctx), StatusIs(absl::StatusCode::kInvalidArgument, message))
        << j.dump();
  }
}

}  // namespace
}  // namespace prism::prune
