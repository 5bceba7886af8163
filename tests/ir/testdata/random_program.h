// Seeded random valid Programs for round-trip tests (text format, JSON) and fuzz seeds.
//
//   Program p = prism::testing::RandomProgram(/*seed=*/7, {.canonical = true});
//
// Each statement is planned top-down from a target shape, so every op application is valid
// by construction (broadcast-compatible operands, matching matmul inner dims, concat parts
// that add up, reductions that keep a dim of 1). With `canonical`, the builder sees nodes in
// exactly the order the printer emits them (new inputs first, then each statement's nested
// nodes in post-order, every multi-use or output tensor named), so
// ParseProgram(PrintProgram(p)) == p holds exactly. Without it, inputs appear mid-statement,
// statement roots may stay anonymous, and anonymous tensors may be reused: the printer has to
// invent names and the order changes, so only structure is preserved.
#ifndef PRISM_TESTS_IR_TESTDATA_RANDOM_PROGRAM_H_
#define PRISM_TESTS_IR_TESTDATA_RANDOM_PROGRAM_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prism/base/check.h"
#include "prism/base/rng.h"
#include "prism/ir/program.h"

namespace prism::testing {

struct RandomProgramOptions {
  bool canonical = true;
  bool comments = true;
  int max_statements = 8;
  int max_depth = 3;
};

namespace random_program_internal {

class Generator {
 public:
  Generator(uint64_t seed, const RandomProgramOptions& options) : rng_(seed), options_(options) {
    const DType dtypes[] = {DType::kF16, DType::kBF16, DType::kF32};
    dtype_ = dtypes[rng_.UniformInt(0, 2)];
  }

  Program Generate() {
    const int statements = static_cast<int>(rng_.UniformInt(1, options_.max_statements));
    for (int s = 0; s < statements; ++s) Statement();
    // Outputs: the last root, then every tensor nobody uses, in random order.
    std::vector<size_t> outs;
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (pool_[i].uses == 0) outs.push_back(i);
    }
    for (size_t i = outs.size(); i > 1; --i) {
      std::swap(outs[i - 1], outs[rng_.UniformInt(0, static_cast<int64_t>(i) - 1)]);
    }
    for (size_t i : outs) {
      builder_.Output(pool_[i].id);
      if (options_.comments) {
        OutputDecl& d = builder_.mutable_last_output();
        d.leading_lines = Lines();
        d.trailing_comment = Trailing();
      }
    }
    if (options_.comments) builder_.SetTrailingLines(Lines());
    absl::StatusOr<Program> p = std::move(builder_).Build();
    PRISM_CHECK(p.ok(), "random program is invalid: ", p.status().ToString());
    return *std::move(p);
  }

 private:
  struct Pooled {
    TensorId id;
    Shape shape;
    int uses = 0;
  };
  // A planned op application (or leaf) producing `shape`.
  struct Plan {
    OpKind op = OpKind::kInput;
    Shape shape;
    int pool_index = -1;     // leaf: an existing tensor
    bool new_input = false;  // leaf: a new input of `shape`
    std::vector<std::unique_ptr<Plan>> children;
    int64_t dim = 0;
    double scalar = 0;
    double eps = kDefaultRmsEps;
  };

  std::vector<std::string> Lines() {
    static const char* const kLines[] = {"", "# note", "#", "# x = exp(y)  # not code",
                                         "# ünïcödé ✓"};
    std::vector<std::string> out;
    if (rng_.Uniform() < 0.25) {
      const int n = static_cast<int>(rng_.UniformInt(1, 2));
      for (int i = 0; i < n; ++i) out.emplace_back(kLines[rng_.UniformInt(0, 4)]);
    }
    return out;
  }
  std::string Trailing() { return rng_.Uniform() < 0.2 ? "# why" : ""; }

  std::string NewName() {
    static const char* const kStems[] = {"X", "h", "Tmp_", "_w", "attn", "t"};
    return absl::StrCat(kStems[rng_.UniformInt(0, 5)], next_name_++);
  }

  Shape RandomShape() {
    static const int64_t kDims[] = {1, 2, 3, 4, 6, 8};
    Shape s(rng_.UniformInt(1, kMaxRank));
    for (int64_t& d : s) d = kDims[rng_.UniformInt(0, 5)];
    return s;
  }

  std::unique_ptr<Plan> Leaf(const Shape& shape) {
    auto plan = std::make_unique<Plan>();
    plan->shape = shape;
    std::vector<int> candidates;
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (pool_[i].shape == shape) candidates.push_back(static_cast<int>(i));
    }
    if (!candidates.empty() && rng_.Uniform() < 0.8) {
      plan->pool_index =
          candidates[rng_.UniformInt(0, static_cast<int64_t>(candidates.size()) - 1)];
    } else {
      plan->new_input = true;
    }
    return plan;
  }

  // A plan producing `shape`; `depth` levels of ops at most (0 = a leaf).
  std::unique_ptr<Plan> PlanFor(const Shape& shape, int depth, bool force_op) {
    if (depth == 0 || (!force_op && rng_.Uniform() < 0.3)) return Leaf(shape);
    auto plan = std::make_unique<Plan>();
    plan->shape = shape;
    const int rank = static_cast<int>(shape.size());
    auto random_dim = [&](int d) { return rng_.Uniform() < 0.5 ? int64_t{d} : int64_t{d} - rank; };
    switch (rng_.UniformInt(0, 7)) {
      case 0: {  // unary
        static const OpKind kUnary[] = {OpKind::kExp,    OpKind::kSilu, OpKind::kGelu,
                                        OpKind::kRelu,   OpKind::kSqrt, OpKind::kRsqrt,
                                        OpKind::kSquare, OpKind::kNeg,  OpKind::kRecip};
        plan->op = kUnary[rng_.UniformInt(0, 8)];
        plan->children.push_back(PlanFor(shape, depth - 1, false));
        break;
      }
      case 1: {  // scale
        static const double kScalars[] = {0.5, -2, 1.0 / 3, 1e-3, 0.1, 7, -0.0, 1e10, 0.125};
        plan->op = OpKind::kScale;
        plan->scalar = kScalars[rng_.UniformInt(0, 8)];
        plan->children.push_back(PlanFor(shape, depth - 1, false));
        break;
      }
      case 2: {  // binary with a broadcast operand
        static const OpKind kBinary[] = {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv};
        plan->op = kBinary[rng_.UniformInt(0, 3)];
        Shape other(shape.begin() + rng_.UniformInt(0, rank - 1), shape.end());
        for (int64_t& d : other) {
          if (rng_.Uniform() < 0.3) d = 1;
        }
        auto a = PlanFor(shape, depth - 1, false);
        auto b = PlanFor(other, depth - 1, false);
        if (rng_.Uniform() < 0.5) std::swap(a, b);
        plan->children.push_back(std::move(a));
        plan->children.push_back(std::move(b));
        break;
      }
      case 3: {  // sum / max / mean over a dim that is 1 in the result
        std::vector<int> ones;
        for (int d = 0; d < rank; ++d) {
          if (shape[d] == 1) ones.push_back(d);
        }
        if (ones.empty()) return PlanFor(shape, depth, force_op);
        static const OpKind kReduce[] = {OpKind::kSum, OpKind::kMax, OpKind::kMean};
        plan->op = kReduce[rng_.UniformInt(0, 2)];
        const int d = ones[rng_.UniformInt(0, static_cast<int64_t>(ones.size()) - 1)];
        plan->dim = random_dim(d);
        Shape in = shape;
        in[d] = rng_.UniformInt(1, 8);
        plan->children.push_back(PlanFor(in, depth - 1, false));
        break;
      }
      case 4: {  // rms_norm / softmax
        plan->op = rng_.Uniform() < 0.5 ? OpKind::kRmsNorm : OpKind::kSoftmax;
        plan->dim = random_dim(static_cast<int>(rng_.UniformInt(0, rank - 1)));
        if (plan->op == OpKind::kRmsNorm && rng_.Uniform() < 0.4) {
          static const double kEps[] = {1e-5, 0.25, 0, 1e-12};
          plan->eps = kEps[rng_.UniformInt(0, 3)];
        }
        plan->children.push_back(PlanFor(shape, depth - 1, false));
        break;
      }
      case 5: {  // matmul
        if (rank < 2) return PlanFor(shape, depth, force_op);
        plan->op = OpKind::kMatMul;
        const int64_t k = rng_.UniformInt(1, 8);
        Shape a = shape, b = shape;
        a[rank - 1] = k;
        b[rank - 2] = k;
        if (rng_.Uniform() < 0.5) b.erase(b.begin(), b.end() - 2);  // unbatched weight
        plan->children.push_back(PlanFor(a, depth - 1, false));
        plan->children.push_back(PlanFor(b, depth - 1, false));
        break;
      }
      default: {  // concat of 2..3 parts along a dim of size >= 2
        std::vector<int> dims;
        for (int d = 0; d < rank; ++d) {
          if (shape[d] >= 2) dims.push_back(d);
        }
        if (dims.empty()) return PlanFor(shape, depth, force_op);
        plan->op = OpKind::kConcat;
        const int d = dims[rng_.UniformInt(0, static_cast<int64_t>(dims.size()) - 1)];
        plan->dim = random_dim(d);
        int64_t left = shape[d];
        const int parts = static_cast<int>(std::min<int64_t>(left, rng_.UniformInt(2, 3)));
        for (int p = 0; p < parts; ++p) {
          const int64_t size = p + 1 == parts ? left : rng_.UniformInt(1, left - (parts - p - 1));
          left -= size;
          Shape part = shape;
          part[d] = size;
          plan->children.push_back(PlanFor(part, depth - 1, false));
        }
        break;
      }
    }
    return plan;
  }

  void CreateInputs(Plan& plan) {
    if (plan.new_input) {
      plan.pool_index = AddInput(plan.shape);
      plan.new_input = false;
    }
    for (auto& c : plan.children) CreateInputs(*c);
  }

  int AddInput(const Shape& shape) {
    const TensorId id = builder_.Input(NewName(), dtype_, shape);
    if (options_.comments) {
      builder_.mutable_node(id).leading_lines = Lines();
      builder_.mutable_node(id).trailing_comment = Trailing();
    }
    pool_.push_back({id, shape, 0});
    return static_cast<int>(pool_.size() - 1);
  }

  // Creates the nodes of `plan` in post-order; returns the tensor.
  TensorId Materialize(Plan& plan) {
    if (plan.new_input) plan.pool_index = AddInput(plan.shape);  // non-canonical: mid-statement
    if (plan.pool_index >= 0) {
      ++pool_[plan.pool_index].uses;
      return pool_[plan.pool_index].id;
    }
    Node node;
    node.op = plan.op;
    node.dim = plan.dim;
    node.scalar = plan.scalar;
    node.eps = plan.eps;
    for (auto& c : plan.children) node.operands.push_back(Materialize(*c));
    const TensorId id = builder_.AddNode(std::move(node));
    // Non-canonical: an anonymous nested tensor may be reused by later statements.
    if (!options_.canonical && rng_.Uniform() < 0.15) {
      pool_.push_back({id, plan.shape, 1});
    }
    return id;
  }

  void Statement() {
    Shape target = RandomShape();
    if (!pool_.empty() && rng_.Uniform() < 0.5) {
      target = pool_[rng_.UniformInt(0, static_cast<int64_t>(pool_.size()) - 1)].shape;
    }
    std::unique_ptr<Plan> plan =
        PlanFor(target, static_cast<int>(rng_.UniformInt(1, options_.max_depth)), true);
    if (options_.canonical) CreateInputs(*plan);
    const TensorId root = Materialize(*plan);
    const bool named = options_.canonical || rng_.Uniform() < 0.7;
    if (named) {
      builder_.SetName(root, NewName());
      if (options_.comments) {
        builder_.mutable_node(root).leading_lines = Lines();
        builder_.mutable_node(root).trailing_comment = Trailing();
      }
    }
    pool_.push_back({root, target, 0});
  }

  Rng rng_;
  RandomProgramOptions options_;
  DType dtype_;
  ProgramBuilder builder_;
  std::vector<Pooled> pool_;
  int next_name_ = 0;
};

}  // namespace random_program_internal

inline Program RandomProgram(uint64_t seed, const RandomProgramOptions& options = {}) {
  return random_program_internal::Generator(seed, options).Generate();
}

}  // namespace prism::testing

#endif  // PRISM_TESTS_IR_TESTDATA_RANDOM_PROGRAM_H_
