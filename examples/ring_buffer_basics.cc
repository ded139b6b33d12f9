// The ring buffer in a nutshell: reserve, fill, commit (or discard), read
// back with a consuming reader, and check the per-CPU accounting.
// Built and run as a test: exit 0 = pass.
#include <tracepipe/buffers/readers.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <cstring>

using namespace tracepipe::buffers;

int main() {
  // Two CPU buffers of 64 KiB in 4 KiB sub-buffers; drop the newest when full.
  DropNewestRingBuffer rb(
      RingBufferConfig{.cpus = 2, .size_per_cpu = 64 * 1024, .subbuf_size = 4096});

  // reserve -> fill -> commit: the record becomes visible at commit.
  Reservation r = rb.reserve(/*cpu=*/0, /*payload_len=*/12);
  if (!r) return 1;
  std::memcpy(r.payload().data(), "hello, ring!", 12);
  rb.commit(r);

  // A record the caller decides not to keep: discard gives its space back.
  Reservation unwanted = rb.reserve(0, 100);
  rb.discard(unwanted);

  // write() = reserve + copy + commit.
  const char msg[] = "second";
  rb.write(0, std::as_bytes(std::span(msg, 6)));

  // Too big for a sub-buffer: refused, and counted.
  Reservation big = rb.reserve(0, rb.max_payload() + 1);
  std::printf("too big: %s\n", std::string(to_string(big.error())).c_str());

  ConsumingReader reader(rb, 0);
  int n = 0;
  while (auto v = reader.next()) {
    std::printf("cpu %u ts %llu: %.*s\n", v->cpu, static_cast<unsigned long long>(v->ts),
                static_cast<int>(v->payload.size()),
                reinterpret_cast<const char*>(v->payload.data()));
    ++n;
  }

  const CpuStats s = rb.stats(0);
  std::printf("read %llu discarded %llu (reclaimed %llu) lost_too_big %llu entries %llu\n",
              static_cast<unsigned long long>(s.read), static_cast<unsigned long long>(s.discarded),
              static_cast<unsigned long long>(s.reclaimed),
              static_cast<unsigned long long>(s.lost_too_big),
              static_cast<unsigned long long>(s.entries));
  // Four write attempts on CPU 0: every one is accounted for.
  return n == 2 && s.conserved(4) ? 0 : 1;
}
