#pragma once
// Names for code addresses of the running process (the stacktrace
// trigger's ftrace:kernel_stack records hold return addresses): each loaded
// object's ELF symbol table (.symtab, else .dynsym), read through elfutils'
// libdwfl from the process's own mappings. Used when an instance's records
// are printed (trace_text) or written (write_trace_dat: a kallsyms section
// with the symbols the stacks need, which `trace-cmd report` resolves
// through, as it does the kernel's /proc/kallsyms).
//
// Thread-safety: any thread (one mutex); never on the write path.
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tracepipe {

/// A function symbol of the running process.
struct ProcessSymbol {
  std::string name;    ///< as in the symbol table (C++ names mangled)
  uint64_t start = 0;  ///< address of its first byte
  uint64_t size = 0;   ///< bytes (0 if the table gives none)
};

/// The symbol containing `addr`, or nullopt (no object mapped there, or no
/// symbol covers it). The mappings are read on first use and again when an
/// address falls outside every object known (one loaded since).
std::optional<ProcessSymbol> resolve_process_symbol(uint64_t addr);

/// `symbol+0xoff/0xsize` as the kernel's %pS prints it (demangled for C++
/// names), or `0x<addr>` when unresolved.
std::string process_symbol_text(uint64_t addr);

/// /proc/kallsyms-style lines ("start t name\n", sorted, one per symbol)
/// for the symbols that contain `addrs`, and a last line
/// "__tracepipe_symbols_end" where the highest of them ends (readers take a
/// symbol to end where the next one starts).
std::string process_kallsyms(std::span<const uint64_t> addrs);

}  // namespace tracepipe
