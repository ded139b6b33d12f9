#pragma once
// The write path's lanes with a test's Hooks: ordering tests raise a signal
// or migrate between two steps of an emit (detail::EmitStep). Not installed;
// the lanes call NoEmitHooks, compiled away, everywhere else.
#include <cstdint>
#include <span>
#include <utility>

#include "tracepipe/core/instance/instance.h"

namespace tracepipe::detail {

struct InstanceTesting {
  template <class Fill, class Hooks>
  static EmitResult emit_fill(Instance& instance, const EventDesc& event, uint32_t size, Fill& fill,
                              Hooks& hooks) noexcept {
    return instance.emit_fill_with(event, size, fill, hooks);
  }
  template <class Hooks>
  static EmitResult emit_raw(Instance& instance, std::span<const std::byte> record, uint32_t cpu,
                             Hooks& hooks) noexcept {
    return instance.emit_raw(record, cpu, hooks);
  }
};

}  // namespace tracepipe::detail

namespace tracepipe::testing {

using detail::EmitStep;

/// Instance::emit_fill, with `hooks(EmitStep)` called at each step of the lane.
template <class Fill, class Hooks>
EmitResult emit_fill(Instance& instance, const EventDesc& event, uint32_t size, Fill&& fill,
                     Hooks hooks) noexcept {
  return detail::InstanceTesting::emit_fill(instance, event, size, fill, hooks);
}
/// RawEmit::emit, with `hooks(EmitStep)` called at each step of the lane.
template <class Hooks>
EmitResult emit_raw(Instance& instance, std::span<const std::byte> record, uint32_t cpu,
                    Hooks hooks) noexcept {
  return detail::InstanceTesting::emit_raw(instance, record, cpu, hooks);
}

}  // namespace tracepipe::testing
