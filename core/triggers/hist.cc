// Hist triggers: parsing, the lock-free map, the hist file's text.
#include "tracepipe/core/triggers/hist.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include <fmt/format.h>

#include "tracepipe/buffers/current_cpu.h"
#include "tracepipe/buffers/rseq.h"

namespace tracepipe::triggers {

namespace {

constexpr const char* kSyscallNames[] = {
#include "tracepipe/core/triggers/syscall_names_x86_64.inc"
};

// The kernel's errpos(): the first occurrence of `what` in the command, 0 if absent.
int errpos(std::string_view command, std::string_view what) {
  const size_t at = what.empty() ? std::string_view::npos : command.find(what);
  return at == std::string_view::npos ? 0 : static_cast<int>(at);
}

bool hist_error(TriggerError& e, std::string_view msg, int pos) {
  e.err = EINVAL;
  e.message = std::string(msg);
  e.pos = pos;
  return false;
}

// kstrtoull with base 0 (0x.., 0.., decimal), whole string.
std::optional<uint64_t> parse_ull(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, s.remove_prefix(2);
  else if (s.size() > 1 && s[0] == '0') base = 8, s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return std::nullopt;
    if (d >= base) return std::nullopt;
    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  return v;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t k = s.find(sep);
    out.push_back(s.substr(0, k));
    if (k == std::string_view::npos) return out;
    s.remove_prefix(k + 1);
  }
}

// One key or val "name[.modifier]"; `is_key` allows the key-only modifiers.
bool parse_field(std::string_view str, const EventDesc& ev, bool is_key, const std::string& cmd, HistField& f,
                 TriggerError& e) {
  const size_t dot = str.find('.');
  const std::string_view name = str.substr(0, dot);
  f.name = std::string(name);
  if (dot != std::string_view::npos) {
    const std::string_view mod = str.substr(dot + 1);
    if (mod == "hex") f.flags |= kHex;
    else if (mod == "sym" && is_key) f.flags |= kSym;
    else if (mod == "sym-offset" && is_key) f.flags |= kSymOffset;
    else if (mod == "execname" && is_key) f.flags |= kExecname;
    else if (mod == "syscall" && is_key) f.flags |= kSyscall;
    else if (mod == "log2" && is_key) f.flags |= kLog2;
    else if (mod == "usecs") f.flags |= kUsecs;
    else if (mod.starts_with("buckets=") && is_key) {
      const auto n = parse_ull(mod.substr(8));
      if (!n || *n == 0) return hist_error(e, "Invalid field modifier", errpos(cmd, mod));
      f.flags |= kBuckets;
      f.buckets = *n;
    } else {
      return hist_error(e, "Invalid field modifier", errpos(cmd, mod));
    }
  }
  if (name == "common_timestamp") {
    f.source = HistSource::timestamp;
    f.size = 8;
    return true;
  }
  if (name == "common_cpu" || name == "cpu" || name == "CPU") {
    f.source = HistSource::cpu;
    f.size = 4;
    f.name = "common_cpu";
    return true;
  }
  const filters::FieldDesc* fd = nullptr;
  for (const auto& x : ev.filter_fields())
    if (x.name == name) fd = &x;
  if (fd == nullptr) return hist_error(e, "Couldn't find field", errpos(cmd, name));
  f.offset = fd->offset;
  f.size = fd->size;
  f.is_signed = fd->is_signed;
  switch (fd->kind) {
    case filters::FieldKind::integer:
      if (fd->size != 1 && fd->size != 2 && fd->size != 4 && fd->size != 8)
        return hist_error(e, "Couldn't find field", errpos(cmd, name));
      f.source = HistSource::field;
      return true;
    case filters::FieldKind::char_array:
    case filters::FieldKind::data_loc_string:
    case filters::FieldKind::rel_loc_string:
      if (!is_key || f.flags != 0) {  // strings are keys only, without modifiers
        e.err = EINVAL;
        return false;
      }
      f.source = fd->kind == filters::FieldKind::char_array ? HistSource::string_field : HistSource::dyn_string;
      if (fd->kind == filters::FieldKind::rel_loc_string) f.is_signed = true;  // marks __rel_loc
      return true;
    default:
      e.err = EINVAL;
      return false;
  }
}

}  // namespace

std::string HistField::print() const {
  std::string s = name;
  if (flags & kHex) s += ".hex";
  else if (flags & kSym) s += ".sym";
  else if (flags & kSymOffset) s += ".sym-offset";
  else if (flags & kExecname) s += ".execname";
  else if (flags & kSyscall) s += ".syscall";
  else if (flags & kLog2) s += ".log2";
  else if (flags & kBuckets) s += ".buckets";
  else if (flags & kUsecs) s += ".usecs";
  if (flags & kBuckets) s += fmt::format("={}", buckets);
  return s;
}

std::string HistSpec::info() const {
  std::string s = "hist:";
  if (!name.empty()) s += name + ":";
  s += "keys=";
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? "," : "") + keys[i].print();
  s += ":vals=hitcount";
  for (const auto& v : vals) s += "," + v.print();
  s += ":sort=";
  for (size_t i = 0; i < sort.size(); ++i) {
    if (i) s += ",";
    const int f = sort[i].field;
    s += f == 0 ? std::string("hitcount") : f > 0 ? vals[f - 1].print() : keys[-1 - f].print();
    if (sort[i].descending) s += ".descending";
  }
  s += fmt::format(":size={}", 1u << map_bits);
  return s;
}

bool HistSpec::same_shape(const HistSpec& o) const {
  auto fields = [](const std::vector<HistField>& v) {
    std::string s;
    for (const auto& f : v) s += f.print() + ",";
    return s;
  };
  if (fields(keys) != fields(o.keys) || fields(vals) != fields(o.vals) || sort.size() != o.sort.size()) return false;
  for (size_t i = 0; i < sort.size(); ++i)
    if (sort[i].field != o.sort[i].field || sort[i].descending != o.sort[i].descending) return false;
  return true;
}

std::optional<HistSpec> parse_hist(std::string_view text, const EventDesc& event, TriggerError& e,
                                   size_t /*text_pos_in_command*/) {
  const std::string& cmd = e.command;
  HistSpec spec;
  std::optional<std::string_view> keys_str, vals_str, sort_str;
  for (std::string_view attr : split(text, ':')) {
    if (attr.starts_with("keys=") || attr.starts_with("key=")) keys_str = attr.substr(attr.find('=') + 1);
    else if (attr.starts_with("vals=") || attr.starts_with("values=") || attr.starts_with("val="))
      vals_str = attr.substr(attr.find('=') + 1);
    else if (attr.starts_with("sort=")) sort_str = attr.substr(5);
    else if (attr.starts_with("name=")) spec.name = std::string(attr.substr(5));
    else if (attr.starts_with("size=")) {
      const auto n = parse_ull(attr.substr(5));
      if (!n || *n == 0 || *n > UINT32_MAX) return e.err = EINVAL, std::nullopt;
      spec.map_bits = ilog2_roundup(*n);
      if (spec.map_bits < kMapBitsMin || spec.map_bits > kMapBitsMax) return e.err = EINVAL, std::nullopt;
    } else if (attr == "pause") spec.pause = true;
    else if (attr == "cont" || attr == "continue") spec.cont = true;
    else if (attr == "clear") spec.clear = true;
    else if (attr.empty()) continue;
    else {
      // Variables, clock=, nohitcount and onmatch/onmax/onchange handlers: a
      // later step (docs/triggers.md); the kernel's EINVAL without a message.
      e.err = EINVAL;
      return std::nullopt;
    }
  }
  if (!keys_str) return e.err = EINVAL, std::nullopt;
  const auto key_list = split(*keys_str, ',');
  if (key_list.size() > kMaxKeys) return e.err = EINVAL, std::nullopt;
  uint32_t off = 0;
  for (std::string_view k : key_list) {
    if (k == "hitcount") return e.err = EINVAL, std::nullopt;
    HistField f;
    if (!parse_field(k, event, true, cmd, f, e)) return std::nullopt;
    f.key_offset = off;
    if (f.source == HistSource::string_field) f.key_size = (std::min(f.size + 1, kMaxStringKey) + 7) & ~7u;
    else if (f.source == HistSource::dyn_string) f.key_size = kMaxStringKey;
    else f.key_size = 8;
    off += f.key_size;
    spec.keys.push_back(std::move(f));
  }
  spec.key_bytes = off;
  if (vals_str) {
    uint32_t n = 0;
    for (std::string_view v : split(*vals_str, ',')) {
      if (++n > kMaxVals) break;  // the kernel reads at most TRACING_MAP_VALS_MAX items
      if (v == "hitcount") continue;
      HistField f;
      if (!parse_field(v, event, false, cmd, f, e)) return std::nullopt;
      spec.vals.push_back(std::move(f));
    }
  }
  if (sort_str) {
    const auto list = split(*sort_str, ',');
    if (list.size() > kMaxSortKeys) return hist_error(e, "Too many sort fields (Max = 2)", errpos(cmd, "sort=")), std::nullopt;
    for (std::string_view s : list) {
      const size_t dot = s.find('.');
      const std::string_view name = s.substr(0, dot);
      if (name.empty()) return hist_error(e, "Empty sort field", errpos(cmd, "sort=")), std::nullopt;
      HistSortKey sk;
      if (dot != std::string_view::npos) {
        const std::string_view mod = s.substr(dot + 1);
        if (mod == "descending") sk.descending = true;
        else if (mod != "ascending") return hist_error(e, "Invalid sort modifier", errpos(cmd, mod)), std::nullopt;
      }
      bool found = name == "hitcount";
      for (size_t i = 0; !found && i < spec.vals.size(); ++i)
        if (spec.vals[i].name == name) sk.field = static_cast<int>(i) + 1, found = true;
      for (size_t i = 0; !found && i < spec.keys.size(); ++i)
        if (spec.keys[i].name == name) sk.field = -1 - static_cast<int>(i), found = true;
      if (!found) return hist_error(e, "Sort field must be a key or a val", errpos(cmd, name)), std::nullopt;
      spec.sort.push_back(sk);
    }
  }
  if (spec.sort.empty()) spec.sort.push_back({0, false});
  return spec;
}

namespace {

// Per-CPU counter slots: one per possible CPU where rseq sections run and the
// copies stay under kPerCpuBytesMax; otherwise none (the shared row only).
uint32_t per_cpu_slots(uint32_t max_entries, bool wanted) {
  if (!wanted || !buffers::detail::rseq_usable()) return 0;
  const uint32_t n = buffers::possible_cpus();
  if (uint64_t{n} * max_entries * sizeof(std::atomic<uint64_t>) * (1 + kMaxVals) > kPerCpuBytesMax) return 0;
  return n;
}

}  // namespace

// ── the map ──────────────────────────────────────────────────────────────────

HistMap::HistMap(const HistSpec& spec, bool per_cpu_counters)
    : spec_(spec),
      max_entries_(1u << spec.map_bits),
      nbuckets_(2u << spec.map_bits),
      ncpu_(per_cpu_slots(max_entries_, per_cpu_counters)),
      buckets_(new Bucket[nbuckets_]),
      keys_(new std::byte[size_t{max_entries_} * spec.key_bytes]()),
      sums_(new Sums[size_t{max_entries_} * (ncpu_ + 1)]) {
  one_word_ = spec.keys.size() == 1 && spec.key_bytes == 8;
  clear();
}

void HistMap::clear() noexcept {
  for (uint32_t i = 0; i < nbuckets_; ++i) {
    buckets_[i].hash.store(0, std::memory_order_relaxed);
    buckets_[i].entry.store(0, std::memory_order_relaxed);
    buckets_[i].key0.store(0, std::memory_order_relaxed);
  }
  for (size_t i = 0; i < size_t{max_entries_} * (ncpu_ + 1); ++i)
    for (auto& v : sums_[i].v) v.store(0, std::memory_order_relaxed);
  std::memset(keys_.get(), 0, size_t{max_entries_} * spec_.key_bytes);
  next_entry_.store(0, std::memory_order_relaxed);
  drops_.store(0, std::memory_order_release);
}

namespace {
[[gnu::always_inline]] inline uint64_t mix(uint64_t h) noexcept {  // murmur3 finalizer
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}
}  // namespace

uint32_t HistMap::insert(Bucket& b, const std::byte* key, uint64_t key0, uint32_t hash) noexcept {
  uint32_t h = 0;
  if (!b.hash.compare_exchange_strong(h, hash, std::memory_order_acq_rel)) return kLost;
  const uint32_t n = next_entry_.fetch_add(1, std::memory_order_relaxed);
  if (n >= max_entries_) {
    b.hash.store(0, std::memory_order_release);
    return kFull;
  }
  std::memcpy(key_at(n), key, spec_.key_bytes);
  b.key0.store(key0, std::memory_order_relaxed);
  b.entry.store(n + 1, std::memory_order_release);
  return n;
}

uint64_t HistMap::sum(uint32_t ent, uint32_t word) const noexcept {
  uint64_t v = 0;
  for (uint32_t s = 0; s <= ncpu_; ++s) v += sums_[size_t{s} * max_entries_ + ent].v[word].load(std::memory_order_relaxed);
  return v;
}

void HistMap::update_compound(const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu, uint64_t ts) noexcept {
  alignas(8) std::byte key[kMaxKeys * kMaxStringKey];
  std::memset(key, 0, spec_.key_bytes);
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const HistField& f : fields.keys) {
    std::byte* k = key + f.key_offset;
    if (f.source == HistSource::string_field || f.source == HistSource::dyn_string) {
      const std::byte* s = nullptr;
      size_t len = 0;
      if (f.source == HistSource::string_field) {
        if (f.offset + f.size <= rec.size()) s = rec.data() + f.offset, len = f.size;
      } else if (f.offset + 4 <= rec.size()) {
        uint32_t loc;
        std::memcpy(&loc, rec.data() + f.offset, 4);
        size_t start = loc & 0xffff;
        len = loc >> 16;
        if (f.is_signed) start += f.offset + 4;  // __rel_loc: from the end of the field
        if (start + len <= rec.size()) s = rec.data() + start;
        else len = 0;
      }
      len = std::min(len, size_t{f.key_size - 1});
      for (size_t i = 0; i < len && s[i] != std::byte{0}; ++i) k[i] = s[i];
    } else {
      const uint64_t v = read_value(f, rec, cpu, ts);
      std::memcpy(k, &v, 8);
    }
  }
  for (uint32_t o = 0; o < spec_.key_bytes; o += 8) {
    uint64_t w;
    std::memcpy(&w, key + o, 8);
    h = mix(h ^ w);
  }
  const uint32_t hash = static_cast<uint32_t>(h) | 1u;
  uint64_t key0;
  std::memcpy(&key0, key, 8);
  const uint32_t ent = find_or_insert<false>(key, key0, hash);
  if (ent != UINT32_MAX) [[likely]]
    add(ent, fields, rec, cpu, ts);
}

std::vector<HistMap::Row> HistMap::rows() const {
  std::vector<Row> out;
  for (uint32_t i = 0; i < nbuckets_; ++i) {
    const uint32_t ent = buckets_[i].entry.load(std::memory_order_acquire);
    if (ent == 0) continue;
    Row r{};
    r.key = keys_.get() + size_t{ent - 1} * spec_.key_bytes;
    r.hitcount = sum(ent - 1, 0);
    for (size_t v = 0; v < spec_.vals.size(); ++v) r.vals[v] = sum(ent - 1, static_cast<uint32_t>(1 + v));
    out.push_back(r);
  }
  return out;
}

// ── the hist file ────────────────────────────────────────────────────────────

namespace {

uint64_t key_u64(const std::byte* key, const HistField& f) {
  uint64_t v;
  std::memcpy(&v, key + f.key_offset, 8);
  return v;
}

// <0, 0, >0 as the kernel's tracing_map_cmp_* of the field.
int cmp_key(const std::byte* a, const std::byte* b, const HistField& f) {
  if (f.source == HistSource::string_field || f.source == HistSource::dyn_string)
    return std::strncmp(reinterpret_cast<const char*>(a + f.key_offset), reinterpret_cast<const char*>(b + f.key_offset),
                        f.key_size);
  const uint64_t x = key_u64(a, f), y = key_u64(b, f);
  if (f.is_signed && (f.flags & (kLog2 | kBuckets)) == 0) {
    const auto sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
    return sx < sy ? -1 : sx > sy ? 1 : 0;
  }
  return x < y ? -1 : x > y ? 1 : 0;
}

}  // namespace

std::string format_hist(const HistMap& map, const std::string& info, const HistNames& names) {
  const HistSpec& spec = map.spec();
  std::vector<HistMap::Row> rows = map.rows();
  auto value_of = [&](const HistMap::Row& r, int field) { return field == 0 ? r.hitcount : r.vals[field - 1]; };
  // Sort keys in order; ties by the keys in order, so the output is stable
  // (the kernel's sort leaves ties in map order).
  auto less = [&](const HistMap::Row& a, const HistMap::Row& b) {
    for (const HistSortKey& sk : spec.sort) {
      int c;
      if (sk.field >= 0) {
        const uint64_t x = value_of(a, sk.field), y = value_of(b, sk.field);
        c = x < y ? -1 : x > y ? 1 : 0;
      } else {
        c = cmp_key(a.key, b.key, spec.keys[static_cast<size_t>(-1 - sk.field)]);
      }
      if (c != 0) return sk.descending ? c > 0 : c < 0;
    }
    for (const HistField& f : spec.keys)
      if (const int c = cmp_key(a.key, b.key, f); c != 0) return c < 0;
    return false;
  };
  std::sort(rows.begin(), rows.end(), less);

  std::string out = "# event histogram\n#\n# trigger info: " + info + "\n#\n\n";
  uint64_t hits = 0;
  for (const HistMap::Row& r : rows) {
    hits += r.hitcount;
    out += "{ ";
    for (size_t i = 0; i < spec.keys.size(); ++i) {
      const HistField& f = spec.keys[i];
      if (i) out += ", ";
      const std::string& n = f.name;
      if (f.source == HistSource::string_field || f.source == HistSource::dyn_string) {
        const char* s = reinterpret_cast<const char*>(r.key + f.key_offset);
        out += fmt::format("{}: {:<50}", n, std::string_view(s, strnlen(s, f.key_size)));
        continue;
      }
      const uint64_t v = key_u64(r.key, f);
      if (f.flags & kHex) {
        out += fmt::format("{}: {:x}", n, v);
      } else if (f.flags & (kSym | kSymOffset)) {
        const bool off = (f.flags & kSymOffset) != 0;
        std::optional<std::string> s = names.sym ? names.sym(v, off) : std::nullopt;
        const std::string text = s ? *s : fmt::format("0x{:x}", v);
        out += off ? fmt::format("{}: [{:x}] {:<55}", n, v, text) : fmt::format("{}: [{:x}] {:<45}", n, v, text);
      } else if (f.flags & kExecname) {
        const std::string comm = names.comm ? names.comm(static_cast<int32_t>(v)) : std::string("<...>");
        out += fmt::format("{}: {:<16}[{:>10}]", n, comm, v);
      } else if (f.flags & kSyscall) {
        const char* sc = v < std::size(kSyscallNames) && kSyscallNames[v][0] != '\0' ? kSyscallNames[v] : nullptr;
        const std::string text = sc ? fmt::format("sys_{}", sc) : std::string("unknown_syscall");
        out += fmt::format("{}: {:<30}[{:>3}]", n, text, v);
      } else if (f.flags & kLog2) {
        out += fmt::format("{}: ~ 2^{:<2}", n, v);
      } else if (f.flags & kBuckets) {
        out += fmt::format("{}: ~ {}-{}", n, v, v + f.buckets - 1);
      } else {
        out += fmt::format("{}: {:>10}", n, v);
      }
    }
    out += " }";
    out += fmt::format(" hitcount: {:>10}", r.hitcount);
    for (size_t v = 0; v < spec.vals.size(); ++v) {
      const HistField& f = spec.vals[v];
      out += (f.flags & kHex) ? fmt::format("  {}: {:>10x}", f.name, r.vals[v])
                              : fmt::format("  {}: {:>10}", f.name, r.vals[v]);
    }
    out += '\n';
  }
  out += fmt::format("\nTotals:\n    Hits: {}\n    Entries: {}\n    Dropped: {}\n", hits, rows.size(), map.dropped());
  return out;
}

}  // namespace tracepipe::triggers
