#include "convert_test_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "tracepipe/core/recover/recover.h"
#include "tracepipe/core/sideband/sideband.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tp_convert_test {
namespace fs = std::filesystem;

using Mixed =
    tracepipe::EventDecl<"app", "mixed", tracepipe::Int<"small", int8_t>,
                         tracepipe::Int<"port", uint16_t>, tracepipe::Int<"delta", int32_t>,
                         tracepipe::Int<"bytes", uint64_t>, tracepipe::Int<"offset", int64_t>,
                         tracepipe::Chars<"name", 16>, tracepipe::Str<"path">>;
using Tick = tracepipe::EventDecl<"app", "tick", tracepipe::Int<"seq", uint32_t>,
                                  tracepipe::Int<"level", int16_t>>;

Scratch::Scratch(const std::string& name)
    : dir(fs::temp_directory_path() / ("tp-convert-" + name + "-" + std::to_string(getpid()))) {
  fs::remove_all(dir);
  fs::create_directories(dir);
}
Scratch::~Scratch() {
  if (std::getenv("TP_CONVERT_KEEP")) return;  // for a look at the outputs
  std::error_code ec;
  fs::remove_all(dir, ec);
}

static void emit_all(tracepipe::Instance& inst, uint32_t count) {
  static const char* const kPaths[] = {"/", "/usr/lib/x86_64-linux-gnu/libc.so.6", "",
                                       "a \"quoted\" path"};
  for (uint32_t i = 0; i < count; ++i) {
    if (i % 3 == 0) {
      Tick::emit(inst, i, static_cast<int16_t>(-static_cast<int>(i % 300)));
    } else {
      Mixed::emit(inst, static_cast<int8_t>(-128 + static_cast<int>(i % 256)),
                  static_cast<uint16_t>(i * 7), -static_cast<int32_t>(i) * 1000,
                  uint64_t{0xfedcba9876543210ull} + i, -static_cast<int64_t>(i) << 33,
                  i % 2 ? "worker" : "a-longer-name-1", kPaths[i % 4]);
    }
  }
}

fs::path record_declared(const Scratch& s, uint32_t count) {
  tracepipe::Instance inst;
  tracepipe::enable_sideband(inst);
  inst.enable(Mixed::desc());
  inst.enable(Tick::desc());
  emit_all(inst, count);
  const fs::path out = s / "declared.dat";
  tracepipe::write_trace_dat(inst, out);
  return out;
}

fs::path recover_flight(const Scratch& s, uint32_t count) {
  const fs::path dir = s / "flight";
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    tracepipe::InstanceOptions o;
    o.flight_recorder = true;
    o.flight_dir = dir;
    auto* inst = new tracepipe::Instance(o);
    inst->enable(Mixed::desc());
    inst->enable(Tick::desc());
    emit_all(*inst, count);
    _exit(0);  // no destructor: the flight file stays, as after a crash
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("flight child failed");
  const auto files = tracepipe::recover::find_flight_files(dir);
  if (files.size() != 1) throw std::runtime_error("expected one flight file");
  const auto trace = tracepipe::recover::recover_file(files.front());
  const fs::path out = s / "recovered.dat";
  tracepipe::recover::write_trace_dat(trace, out);
  return out;
}

uint64_t page_offset(const fs::path& dat, size_t cpu_index, size_t page) {
  const auto r = tracepipe::TraceDatReader::open(dat);
  const auto& d = r.cpu_data()[cpu_index];
  if ((page + 1) * r.page_size() > d.size) throw std::runtime_error("the CPU has fewer pages");
  return d.offset + page * r.page_size();
}

size_t busiest_cpu(const fs::path& dat) {
  const auto r = tracepipe::TraceDatReader::open(dat);
  size_t best = 0;
  for (size_t i = 0; i < r.cpu_data().size(); ++i)
    if (r.cpu_data()[i].size > r.cpu_data()[best].size) best = i;
  return best;
}

void poke_u64(const fs::path& file, uint64_t offset, uint64_t value) {
  std::FILE* f = std::fopen(file.c_str(), "r+b");
  if (!f) throw std::runtime_error("open " + file.string());
  std::fseek(f, static_cast<long>(offset), SEEK_SET);
  std::fwrite(&value, 8, 1, f);
  std::fclose(f);
}

uint64_t peek_u64(const fs::path& file, uint64_t offset) {
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (!f) throw std::runtime_error("open " + file.string());
  std::fseek(f, static_cast<long>(offset), SEEK_SET);
  uint64_t v = 0;
  if (std::fread(&v, 8, 1, f) != 1) v = 0;
  std::fclose(f);
  return v;
}

}  // namespace tp_convert_test
