#include <vector>

#include "link_comdat_emit.h"

namespace tp_link_test {

void emit_from_other_tu(tracepipe::Instance& inst, uint32_t count) {
  for (uint32_t i = 0; i < count; i += 2) {
    (void)emit_ev(inst, 2, i);
    // The same record built by hand: CommonHeader (type, flags, preempt, pid), then the fields.
    std::vector<std::byte> rec(Ev::fixed_size);
    const uint16_t type = Ev::desc().id();
    std::memcpy(rec.data(), &type, 2);
    const uint32_t tu = 2, n = i + 1;
    std::memcpy(rec.data() + 8, &tu, 4);
    std::memcpy(rec.data() + 12, &n, 4);
    (void)emit_raw_ev(inst, rec);
  }
}

}  // namespace tp_link_test
