#include "tracepipe/bench/peers/lttng_probe.h"

#include <dlfcn.h>
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <thread>

#include "tracepipe/bench/peers/lttng_session.h"
#include "tracepipe/bench/peers/micro.h"

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
  if (!std::string_view(TP_PEERS_PLUGIN_INSTALL_DIR).empty() && is_file(installed))
    return installed.string();
  return "";
}

LttngProbe LttngProbe::load(const std::string& explicit_path) {
  const std::string path = find_lttng_plugin(explicit_path);
  if (path.empty())
    throw PeerUnavailable(
        explicit_path.empty()
            ? fmt::format("{} not found (it is built only when pkg-config finds lttng-ust; install "
                          "liblttng-ust-dev and lttng-tools, then rebuild)",
                          kPluginFile)
            : fmt::format("plugin {} does not exist", explicit_path));
  LttngProbe p;
  p.path = path;
  // Never dlclose()d: liblttng-ust keeps threads and must stay mapped.
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) throw PeerUnavailable(fmt::format("cannot load {}: {}", path, ::dlerror()));
  auto abi = reinterpret_cast<tp_peer_lttng_abi_fn>(::dlsym(h, "tp_peer_lttng_abi"));
  p.loop = reinterpret_cast<tp_peer_lttng_emit_loop_fn>(::dlsym(h, "tp_peer_lttng_emit_loop"));
  p.enabled = reinterpret_cast<tp_peer_lttng_enabled_fn>(::dlsym(h, "tp_peer_lttng_enabled"));
  if (abi == nullptr || p.loop == nullptr || p.enabled == nullptr)
    throw PeerUnavailable(fmt::format("{} lacks the tp_peer_lttng_* entry points", path));
  if (abi() != TP_PEER_LTTNG_ABI)
    throw PeerUnavailable(fmt::format("{} has ABI {}, this tracepipe needs {} (rebuild it)", path,
                                      abi(), TP_PEER_LTTNG_ABI));
  p.event = peer_event();
  return p;
}

bool LttngProbe::wait_enabled(bool want, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while ((enabled() != 0) != want) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace tracepipe::peers
