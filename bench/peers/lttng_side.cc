#include "tracepipe/bench/peers/lttng_side.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/core.h>

#ifndef TP_PEERS_PLUGIN_INSTALL_DIR
#define TP_PEERS_PLUGIN_INSTALL_DIR ""
#endif

namespace tracepipe::peers {
namespace fs = std::filesystem;
namespace {

constexpr const char* kPluginFile = "libtracepipe_peer_lttng.so";

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

/// Smallest power of two >= v.
uint64_t pow2_at_least(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

/// Waits until the tracepoint's enabled state is `want` (the daemon pushes a
/// session's events to registered apps while `lttng start` runs; this only
/// guards against a slow push). Returns false after `timeout`.
bool wait_enabled(tp_peer_lttng_enabled_fn enabled, bool want, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while ((enabled() != 0) != want) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

std::string find_lttng_plugin(const std::string& explicit_path) {
  if (!explicit_path.empty()) return is_file(explicit_path) ? explicit_path : "";
  if (const char* env = std::getenv("TRACEPIPE_PEER_LTTNG_PLUGIN"); env != nullptr && *env != '\0')
    return is_file(env) ? std::string(env) : "";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    if (is_file(exe.parent_path() / kPluginFile)) return (exe.parent_path() / kPluginFile).string();
  }
  const fs::path installed = fs::path(TP_PEERS_PLUGIN_INSTALL_DIR) / kPluginFile;
  if (!std::string_view(TP_PEERS_PLUGIN_INSTALL_DIR).empty() && is_file(installed)) return installed.string();
  return "";
}

std::unique_ptr<LttngSide> LttngSide::open(const std::string& plugin_path) {
  const std::string path = find_lttng_plugin(plugin_path);
  if (path.empty())
    throw PeerUnavailable(
        plugin_path.empty()
            ? fmt::format("{} not found (it is built only when pkg-config finds lttng-ust; install "
                          "liblttng-ust-dev and lttng-tools, then rebuild)",
                          kPluginFile)
            : fmt::format("plugin {} does not exist", plugin_path));
  std::unique_ptr<LttngSide> side(new LttngSide());
  side->plugin_path_ = path;
  side->daemon_ = LttngDaemon::start();
  // Never dlclose()d: liblttng-ust keeps threads and must stay mapped.
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) throw PeerUnavailable(fmt::format("cannot load {}: {}", path, ::dlerror()));
  auto abi = reinterpret_cast<tp_peer_lttng_abi_fn>(::dlsym(h, "tp_peer_lttng_abi"));
  side->loop_ = reinterpret_cast<tp_peer_lttng_emit_loop_fn>(::dlsym(h, "tp_peer_lttng_emit_loop"));
  side->enabled_ = reinterpret_cast<tp_peer_lttng_enabled_fn>(::dlsym(h, "tp_peer_lttng_enabled"));
  if (abi == nullptr || side->loop_ == nullptr || side->enabled_ == nullptr)
    throw PeerUnavailable(fmt::format("{} lacks the tp_peer_lttng_* entry points", path));
  if (abi() != TP_PEER_LTTNG_ABI)
    throw PeerUnavailable(fmt::format("{} has ABI {}, this tracepipe needs {} (rebuild it)", path, abi(),
                                      TP_PEER_LTTNG_ABI));
  side->event_ = peer_event();
  return side;
}

LttngSide::~LttngSide() {
  session_.reset();  // destroy the session before stopping the daemon
  daemon_.reset();
}

std::string LttngSide::description() const {
  return fmt::format("LTTng-UST plugin {}; private lttng-sessiond pid {} ({}); per-user per-CPU buffers on tmpfs",
                     plugin_path_, daemon_->pid(), daemon_->isolation());
}

void LttngSide::begin_case(const MicroSetup& setup) {
  setup_ = setup;
  session_.reset();
  if (setup.kase == MicroCase::disabled) {
    if (!wait_enabled(enabled_, false, std::chrono::seconds(5)))
      throw std::runtime_error("tracepipe_peer:sched_switch stays enabled with no session");
    return;
  }
  LttngChannelSpec spec;
  std::string filter;
  if (setup.kase == MicroCase::overwrite) {
    spec.overwrite = true;
    spec.subbuf_bytes = 256 * 1024;
    spec.num_subbuf = static_cast<uint32_t>(std::max<uint64_t>(2, pow2_at_least(setup.overwrite_kb / 256)));
  } else {
    spec.subbuf_bytes = 1 << 20;
    spec.num_subbuf = static_cast<uint32_t>(std::max<uint64_t>(4, pow2_at_least((setup.buffer_kb + 1023) / 1024)));
  }
  switch (setup.kase) {
    case MicroCase::reject_int: filter = "prev_pid < 0"; break;
    case MicroCase::accept_int: filter = "prev_pid >= 0"; break;
    case MicroCase::reject_glob: filter = fmt::format("prev_comm == \"{}\"", setup.glob); break;
    default: break;
  }
  const std::string session = fmt::format("tpp{}-{}-{}t", ++session_seq_, peers::name(setup.kase), setup.threads);
  session_ = std::make_unique<LttngSession>(*daemon_, session, spec, filter);
  if (!wait_enabled(enabled_, true, std::chrono::seconds(5)))
    throw std::runtime_error(fmt::format("session {} started but the tracepoint did not become enabled", session));
}

void LttngSide::emit(uint32_t /*thread*/, uint64_t n) { loop_(&event_, n); }

SideCounts LttngSide::end_case() {
  SideCounts c;
  if (!session_) return c;
  const LttngChannelStats st = session_->stop();
  if (setup_.kase == MicroCase::overwrite) {
    c.overrun = st.lost_packets;
    c.note = "overrun counted in packets";
  } else {
    c.lost = st.discarded_events;
  }
  c.bytes = session_->stream_bytes();
  session_.reset();
  return c;
}

}  // namespace tracepipe::peers
