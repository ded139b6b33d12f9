#pragma once
// Helpers of the recorder's output tests; the network sink's tests record to
// a real `trace-cmd listen` (record::LocalCollector).
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../instance/test_events.h"
#include "../tracedat/tracedat_test_util.h"
#include "tracepipe/core/record/local_collector.h"

namespace tp_record_test {

// The collector the tests record to: a real trace-cmd listen on loopback.
using Collector = tracepipe::record::LocalCollector;

inline uint16_t free_port() { return tracepipe::record::free_tcp_port(); }

inline void pause_ms(long ms) {  // retry pacing inside bounded waits
  const timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  (void)::nanosleep(&ts, nullptr);
}

// Shared by the network and version-7 tests.

// Emits seq = from..to-1 from a thread pinned to CPU `cpu`; returns how many were kept.
inline uint64_t emit_range(tracepipe::Instance& inst, uint32_t from, uint32_t to, int cpu = 0) {
  uint64_t kept = 0;
  std::thread t([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % static_cast<int>(std::thread::hardware_concurrency()), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    for (uint32_t i = from; i < to; ++i)
      kept += tp_core_test::emit_sample(inst, 7, i, "net") == tracepipe::EmitResult::kept;
  });
  t.join();
  return kept;
}

// trace-cmd report's sample lines without the time stamp and the comm:
// "[CPU] sample: FIELDS" (the same records, in the same order).
inline std::vector<std::string> report_records(const std::filesystem::path& p) {
  const std::string rep = tp_tracedat_test::run(fmt::format("trace-cmd report -i {}", p.string()));
  std::vector<std::string> out;
  std::istringstream in(rep);
  std::string line;
  while (std::getline(in, line)) {
    const size_t ev = line.find("sample:");
    const size_t cpu = line.find('[');
    if (ev == std::string::npos || cpu == std::string::npos) continue;
    std::string fields = line.substr(ev + 7);
    fields.erase(0, fields.find_first_not_of(' '));
    out.push_back(line.substr(cpu, 5) + " " + fields);
  }
  return out;
}

inline tracepipe::InstanceOptions big_options() {
  tracepipe::InstanceOptions o = tp_core_test::small_options(tracepipe::Staging::per_thread);
  o.buffer_size_kb = 4096;  // holds every event of a test: nothing drops however slow the recorder
  return o;
}

}  // namespace tp_record_test
