// Sideband event schemas (see core/sideband/sideband_events.h).
#include "tracepipe/core/sideband/sideband_events.h"

#include <mutex>

#include "tracepipe/core/sideband/sideband_hooks.h"

namespace tracepipe {

std::string_view to_string(CommReason r) noexcept {
  switch (r) {
    case CommReason::first_write:
      return "first_write";
    case CommReason::rename:
      return "rename";
    case CommReason::announce:
      return "announce";
  }
  return "?";
}

namespace {

// The EventDecl layout with kernel-like types: thread and process ids are
// pid_t, as in task_newtask / sched_process_exec.
template <class Decl>
EventFormat kernel_like(std::string print_fmt) {
  EventFormat f = Decl::make_format();
  for (FormatField& fld : f.fields) {
    if (fld.type == "s32" &&
        (fld.name == "pid" || fld.name == "tid" || fld.name == "ptid" || fld.name == "old_pid"))
      fld.type = "pid_t";
  }
  f.print_fmt = std::move(print_fmt);
  return f;
}

}  // namespace

std::vector<EventFormat> sideband_formats() {
  using namespace sideband;
  std::vector<EventFormat> v;
  v.reserve(kSidebandKinds);
  v.push_back(kernel_like<TaskComm>(
      R"("pid=%d tid=%d comm=%s oldcomm=%s reason=%s", REC->pid, REC->tid, REC->comm, REC->oldcomm, )"
      R"(__print_symbolic(REC->reason, { 0, "first_write" }, { 1, "rename" }, { 2, "announce" }))"));
  v.push_back(kernel_like<TaskNewtask>(
      R"("pid=%d tid=%d ptid=%d synth=%u comm=%s clone_flags=%llx", REC->pid, REC->tid, REC->ptid, REC->synth, )"
      R"(REC->comm, REC->clone_flags)"));
  v.push_back(kernel_like<TaskExit>(R"("pid=%d tid=%d comm=%s", REC->pid, REC->tid, REC->comm)"));
  v.push_back(kernel_like<ProcessExec>(
      R"("filename=%s pid=%d old_pid=%d synth=%u", __get_str(filename), REC->pid, REC->old_pid, REC->synth)"));
  v.push_back(kernel_like<Mmap>(
      R"("pid=%d tid=%d synth=%u addr=0x%llx len=0x%llx pgoff=0x%llx prot=%s%s%s%s dev=%02x:%02x ino=%llu )"
      R"(filename=%s", REC->pid, REC->tid, REC->synth, REC->addr, REC->len, REC->pgoff, )"
      R"((REC->prot & 1) ? "r" : "-", (REC->prot & 2) ? "w" : "-", (REC->prot & 4) ? "x" : "-", )"
      R"((REC->flags & 1) ? "s" : "p", REC->maj, REC->min, REC->ino, __get_str(filename))"));
  v.push_back(kernel_like<SynthDone>(
      R"("synth=%u threads=%u mappings=%u lost=%u records=%llu", REC->synth, REC->threads, REC->mappings, )"
      R"(REC->lost, REC->records)"));
  return v;
}

SidebandEvents SidebandEvents::register_in(Registry& registry) {
  SidebandEvents e;
  std::vector<EventFormat> formats = sideband_formats();
  for (size_t i = 0; i < formats.size(); ++i)
    e.by_kind[i] = &registry.add_declared(std::move(formats[i]));
  return e;
}

const SidebandEvents& SidebandEvents::global() {
  static const SidebandEvents e = [] {
    install_sideband_thread_observer();  // first-write and exit records
    return register_in(Registry::global());
  }();
  return e;
}

namespace {
// Registered during static initialisation, so configuration files applied in
// main() can name tracepipe:* events (as EventDecl events do).
[[maybe_unused]] const SidebandEvents& g_registered_at_startup = SidebandEvents::global();
}  // namespace

}  // namespace tracepipe
