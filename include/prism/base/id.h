// Strongly typed 32-bit ids: an Id<Tag> cannot be confused with an Id<OtherTag> or a plain
// integer. Used for tensors, nodes, e-classes and expression handles.
//
//   struct TensorTag {};
//   using TensorId = Id<TensorTag>;
//   TensorId t(3);  t.value() == 3;  TensorId::Invalid().valid() == false
#ifndef PRISM_BASE_ID_H_
#define PRISM_BASE_ID_H_

#include <compare>
#include <cstdint>
#include <limits>

namespace prism {

template <typename Tag>
class Id {
 public:
  constexpr Id() = default;
  constexpr explicit Id(uint32_t v) : value_(v) {}
  static constexpr Id Invalid() { return Id(); }

  constexpr uint32_t value() const { return value_; }
  constexpr bool valid() const { return value_ != kInvalid; }

  friend constexpr auto operator<=>(Id, Id) = default;
  template <typename H>
  friend H AbslHashValue(H h, Id id) { return H::combine(std::move(h), id.value_); }

 private:
  static constexpr uint32_t kInvalid = std::numeric_limits<uint32_t>::max();
  uint32_t value_ = kInvalid;
};

}  // namespace prism

#endif  // PRISM_BASE_ID_H_
