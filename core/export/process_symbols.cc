#include "tracepipe/core/export/process_symbols.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace tracepipe {

namespace {

const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = nullptr,
    .debuginfo_path = nullptr,
};

struct Session {
  std::mutex mu;
  Dwfl* dwfl = nullptr;
  ~Session() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
  // (Re)reads the process's mappings. Caller holds mu.
  bool report() {
    if (dwfl != nullptr) dwfl_end(dwfl);
    dwfl = dwfl_begin(&kCallbacks);
    if (dwfl == nullptr) return false;
    if (dwfl_linux_proc_report(dwfl, getpid()) != 0 ||
        dwfl_report_end(dwfl, nullptr, nullptr) != 0) {
      dwfl_end(dwfl);
      dwfl = nullptr;
      return false;
    }
    return true;
  }
};

Session& session() {
  static Session s;
  return s;
}

std::optional<ProcessSymbol> lookup(Dwfl* dwfl, uint64_t addr) {
  Dwfl_Module* mod = dwfl_addrmodule(dwfl, addr);
  if (mod == nullptr) return std::nullopt;
  GElf_Off off = 0;
  GElf_Sym sym{};
  const char* name = dwfl_module_addrinfo(mod, addr, &off, &sym, nullptr, nullptr, nullptr);
  if (name == nullptr) return ProcessSymbol{};  // a module, no symbol: known, unnamed
  std::string n = name;
  if (const size_t at = n.find('@'); at != std::string::npos)
    n.resize(at);  // a symbol version: "memcpy@@GLIBC_2.14"
  return ProcessSymbol{std::move(n), addr - off, sym.st_size};
}

}  // namespace

std::optional<ProcessSymbol> resolve_process_symbol(uint64_t addr) {
  Session& s = session();
  const std::lock_guard lk(s.mu);
  if (s.dwfl == nullptr && !s.report()) return std::nullopt;
  std::optional<ProcessSymbol> r = lookup(s.dwfl, addr);
  if (!r) {  // perhaps an object loaded since the mappings were read
    if (!s.report()) return std::nullopt;
    r = lookup(s.dwfl, addr);
  }
  if (r && r->name.empty()) return std::nullopt;
  return r;
}

std::string process_symbol_text(uint64_t addr) {
  const std::optional<ProcessSymbol> s = resolve_process_symbol(addr);
  if (!s) return fmt::format("0x{:x}", addr);
  std::string name = s->name;
  if (name.starts_with("_Z")) {
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> d(
        abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
    if (status == 0 && d) name = d.get();
  }
  return fmt::format("{}+0x{:x}/0x{:x}", name, addr - s->start, s->size);
}

std::string process_kallsyms(std::span<const uint64_t> addrs) {
  std::map<uint64_t, std::string> syms;
  uint64_t end = 0;
  for (const uint64_t a : addrs)
    if (const auto s = resolve_process_symbol(a)) {
      syms.emplace(s->start, s->name);
      end = std::max(end, s->start + s->size);
    }
  std::string out;
  for (const auto& [start, name] : syms) out += fmt::format("{:016x} t {}\n", start, name);
  // libtraceevent takes a symbol to end where the next one starts, and the
  // last one to end at its start: a last line past every symbol lets an
  // address inside the highest one resolve.
  if (!syms.empty() && end > syms.rbegin()->first)
    out += fmt::format("{:016x} t __tracepipe_symbols_end\n", end);
  return out;
}

}  // namespace tracepipe
