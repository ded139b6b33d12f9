// Replay in a few lines of library code: what `tracepipe replay` does for
// each CPU (docs/replay.md), without the pipeline around it.
//
//   1. open a trace.dat, register its formats (records keep their kernel IDs);
//   2. an Instance with one ring per recorded CPU, every event enabled, a
//      kernel filter on one of them;
//   3. RawEmit::emit() each recorded record on its recorded CPU: stage -> filter ->
//      commit, exactly as a live event would go;
//   4. read the kept records back from the ring.
//
// The input is made here with TraceDatWriter, so the example needs no data.
#include <tracepipe/buffers/readers.h>
#include <tracepipe/core/instance/raw_emit.h>
#include <tracepipe/core/tracedat/tracedat_reader.h>
#include <tracepipe/core/tracedat/tracedat_writer.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

using namespace tracepipe;

namespace {

constexpr const char* kKmalloc =
    "name: kmalloc\nID: 658\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n"
    "\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;\n"
    "\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;\n"
    "\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;\n\n"
    "print fmt: \"bytes_req=%zu\", REC->bytes_req\n";

// A 2-CPU trace of 1000 kmalloc events, bytes_req = 0, 8, 16, ...
std::filesystem::path make_trace() {
  TraceDatWriter w({.cpus = 2});
  w.add_format(parse_event_format(kKmalloc, "kmem"));
  for (uint64_t i = 0; i < 1000; ++i) {
    std::vector<std::byte> rec(56);
    const uint16_t id = 658;
    const uint64_t bytes_req = (i % 64) * 8;
    std::memcpy(rec.data(), &id, 2);
    std::memcpy(rec.data() + 24, &bytes_req, 8);
    w.add_record(static_cast<uint32_t>(i % 2), 1000 + i, rec);
  }
  const auto path = std::filesystem::temp_directory_path() / "tracepipe_example_replay.dat";
  w.write(path);
  return path;
}

}  // namespace

int main() {
  const auto path = make_trace();
  const TraceDatReader reader = TraceDatReader::open(path);

  // 1. The file's events, with their kernel IDs.
  Registry registry;
  for (const EventFormat& f : reader.formats()) registry.add(f);

  // 2. One ring per recorded CPU; the kernel's filter syntax.
  InstanceOptions opts;
  opts.cpus = reader.cpu_count();
  opts.mode = BufferMode::drop_newest;  // we read everything back below
  Instance inst(opts, registry);
  const EventDesc& kmalloc = *registry.find("kmem:kmalloc");
  inst.enable(kmalloc);
  if (FilterStatus st = inst.set_filter(kmalloc, "bytes_req > 256"); !st) {
    std::fputs(st.render().c_str(), stderr);
    return 1;
  }

  // 3. Each CPU's records, in file order, on their recorded CPU.
  uint64_t kept = 0, discarded = 0;
  for (size_t i = 0; i < reader.cpu_data().size(); ++i) {
    auto cursor = reader.cpu_records(i);
    while (auto rec = cursor.next()) {
      switch (tracepipe::RawEmit::emit(inst, kmalloc, rec->payload, rec->cpu)) {
        case EmitResult::kept:
          ++kept;
          break;
        case EmitResult::discarded:
          ++discarded;
          break;
        default:
          break;
      }
    }
  }

  // 4. The kept records are in the rings, byte for byte as recorded.
  uint64_t read = 0;
  for (uint32_t cpu = 0; cpu < inst.cpus(); ++cpu) {
    buffers::ConsumingReader r(inst.ring(), cpu);
    while (auto v = r.next()) {
      uint64_t bytes_req;
      std::memcpy(&bytes_req, v->payload.data() + 24, 8);
      if (bytes_req <= 256) return 1;  // the filter let through what it should not
      ++read;
    }
  }
  std::printf("replayed %llu records: %llu kept, %llu discarded, %llu read back\n",
              static_cast<unsigned long long>(kept + discarded),
              static_cast<unsigned long long>(kept), static_cast<unsigned long long>(discarded),
              static_cast<unsigned long long>(read));
  std::filesystem::remove(path);
  // bytes_req > 256 holds for i % 64 in 33..63: 15 full cycles of 64 (31
  // each) and 33..39 of the last 40.
  return kept == 15 * 31 + 7 && read == kept ? 0 : 1;
}
