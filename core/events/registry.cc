#include "tracepipe/core/events/registry.h"

#include <fnmatch.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace tracepipe {

// ---- EventDesc ----------------------------------------------------------------

EventDesc::EventDesc(const Registry& registry, EventFormat format, uint32_t index,
                     EventOrigin origin, std::atomic<const detail::Subscribers*>* subscribers_word)
    : registry_(&registry),
      format_(std::move(format)),
      index_(index),
      origin_(origin),
      subscribers_word_(subscribers_word != nullptr ? subscribers_word : &subscribers_) {
  full_name_ = format_.system + ":" + format_.name;
  has_dynamic_ = false;
  for (const auto* list : {&format_.common_fields, &format_.fields}) {
    for (const FormatField& f : *list) {
      filter_fields_.push_back(filters::make_field(f.type, f.name, f.offset, f.size, f.is_signed));
      has_dynamic_ = has_dynamic_ || f.is_dynamic();
    }
  }
  fixed_size_ = format_.fixed_size();
}

EventName split_event_name(std::string_view full) noexcept {
  const auto colon = full.find(':');
  if (colon == std::string_view::npos) return {{}, full};
  return {full.substr(0, colon), full.substr(colon + 1)};
}

// ---- Registry -----------------------------------------------------------------

namespace {

std::string key_of(std::string_view system, std::string_view name) {
  std::string k;
  k.reserve(system.size() + 1 + name.size());
  k.append(system).append(":").append(name);
  return k;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  const std::string p(pattern), t(text);
  return fnmatch(p.c_str(), t.c_str(), 0) == 0;
}

void check_schema(const EventFormat& f) {
  const auto bad = [&](const std::string& why) {
    throw RegistryError("event " + f.system + ":" + f.name + ": " + why);
  };
  if (f.system.empty() || f.name.empty()) bad("system and name must be non-empty");
  if (f.system.find(':') != std::string::npos || f.name.find(':') != std::string::npos)
    bad("system and name must not contain ':'");
  // The common header must be the kernel's: the fast path writes it blindly.
  if (f.common_fields != kernel_common_fields())
    bad("common fields differ from the kernel's (common_type, common_flags, common_preempt_count, "
        "common_pid at offsets 0, 2, 3, 4)");
  for (const auto& fld : f.fields) {
    if (fld.offset < 8) bad("field " + fld.name + " overlaps the common header");
    if (static_cast<uint64_t>(fld.offset) + fld.size > 65535)
      bad("field " + fld.name + " lies beyond 64 KiB");
  }
}

}  // namespace

Registry::Registry()
    : by_index_(new std::atomic<const EventDesc*>[kMaxEvents]()),
      by_id_(new std::atomic<std::atomic<const EventDesc*>*>[256]()) {}

Registry::~Registry() {
  for (uint32_t i = 0; i < 256; ++i) delete[] by_id_[i].load(std::memory_order_relaxed);
}

Registry& Registry::global() {
  static Registry* r = new Registry;  // never destroyed: descriptors outlive static destructors
  return *r;
}

const EventDesc& Registry::insert_locked(
    EventFormat format, EventOrigin origin,
    std::atomic<const detail::Subscribers*>* subscribers_word) {
  const std::string key = key_of(format.system, format.name);
  if (auto it = by_name_.find(key); it != by_name_.end()) {
    const EventDesc& old = *it->second;
    EventFormat probe = format;
    if (origin == EventOrigin::declared && probe.id == 0) probe.id = old.format().id;
    if (probe == old.format()) return old;
    throw RegistryError("event " + key + " is already registered with a different format (ID " +
                        std::to_string(old.id()) + ")");
  }
  if (format.id == 0 || format.id > 0xffff)
    throw RegistryError("event " + key + ": ID " + std::to_string(format.id) +
                        " is outside 1..65535");
  if (const EventDesc* other = by_id(static_cast<uint16_t>(format.id)))
    throw RegistryError("event " + key + ": ID " + std::to_string(format.id) +
                        " is already used by " + other->full_name());
  const uint32_t index = count_.load(std::memory_order_relaxed);
  if (index >= kMaxEvents)
    throw RegistryError("event " + key + ": registry is full (" + std::to_string(kMaxEvents) +
                        " events)");
  auto desc =
      std::make_unique<EventDesc>(*this, std::move(format), index, origin, subscribers_word);
  const EventDesc* d = desc.get();
  owned_.push_back(std::move(desc));
  by_name_.emplace(key, d);
  const uint16_t id = d->id();
  auto& chunk = by_id_[id >> 8];
  if (chunk.load(std::memory_order_relaxed) == nullptr)
    chunk.store(new std::atomic<const EventDesc*>[256](), std::memory_order_release);
  chunk.load(std::memory_order_relaxed)[id & 0xff].store(d, std::memory_order_release);
  by_index_[index].store(d, std::memory_order_release);
  count_.store(index + 1, std::memory_order_release);
  return *d;
}

const EventDesc& Registry::add(EventFormat format) {
  check_schema(format);
  std::lock_guard lk(mu_);
  return insert_locked(std::move(format), EventOrigin::kernel_format);
}

const EventDesc& Registry::add_format_text(std::string_view text, std::string_view system) {
  return add(parse_event_format(text, system));
}

std::vector<const EventDesc*> Registry::add_all(std::span<const EventFormat> formats) {
  std::vector<const EventDesc*> out;
  out.reserve(formats.size());
  for (const EventFormat& f : formats) out.push_back(&add(f));
  return out;
}

const EventDesc& Registry::add_declared(EventFormat format,
                                        std::atomic<const detail::Subscribers*>* subscribers_word) {
  check_schema(format);
  std::lock_guard lk(mu_);
  if (format.id == 0) {
    if (auto it = by_name_.find(key_of(format.system, format.name)); it != by_name_.end())
      return insert_locked(std::move(format), EventOrigin::declared);  // same schema -> existing
    while (next_declared_id_ <= kLastDeclaredId &&
           by_id(static_cast<uint16_t>(next_declared_id_)) != nullptr)
      ++next_declared_id_;
    if (next_declared_id_ > kLastDeclaredId)
      throw RegistryError("event " + format.system + ":" + format.name +
                          ": no free event ID left in " + std::to_string(kFirstDeclaredId) + ".." +
                          std::to_string(kLastDeclaredId));
    format.id = next_declared_id_++;
  }
  return insert_locked(std::move(format), EventOrigin::declared, subscribers_word);
}

FormatDirLoad Registry::add_format_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    throw RegistryError("format directory " + dir.string() + " does not exist");
  struct Item {
    fs::path file;
    std::string system;
  };
  std::vector<Item> items;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const fs::path& p = entry.path();
    const std::string fname = p.filename().string();
    if (fname == "format") {
      // <dir>/<system>/<event>/format
      const fs::path rel = fs::relative(p, dir);
      auto it = rel.begin();
      if (std::distance(rel.begin(), rel.end()) != 3) continue;
      items.push_back({p, it->string()});
    } else if (p.extension() == ".format") {
      const std::string stem = p.stem().string();
      const auto sep = stem.find("__");
      if (sep == std::string::npos || sep == 0) continue;
      items.push_back({p, stem.substr(0, sep)});
    }
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.file < b.file; });
  FormatDirLoad load;
  auto& out = load.events;
  for (const Item& it : items) {
    std::ifstream in(it.file, std::ios::binary);
    if (!in) throw RegistryError("cannot read " + it.file.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in.good() && !in.eof()) throw RegistryError("cannot read " + it.file.string());
    // The event name for the skip list: the directory (tracefs layout) or
    // the part after "__" (flat layout), so it is known even when the
    // text's own "name:" line is what fails.
    const std::string fname = it.file.filename().string();
    const std::string event = fname == "format"
                                  ? it.file.parent_path().filename().string()
                                  : it.file.stem().string().substr(it.system.size() + 2);
    EventFormat format;
    try {
      format = parse_event_format(ss.str(), it.system);
      check_schema(format);
    } catch (const FormatError& e) {
      // what() starts with "<system>/<name from the text>: "; say it once.
      std::string_view why = e.what();
      if (const auto colon = why.find(": ");
          why.starts_with(it.system + "/") && colon != std::string_view::npos)
        why.remove_prefix(colon + 2);
      load.skipped.push_back(it.system + "/" + event + ": " + std::string(why));
      continue;
    } catch (const RegistryError& e) {
      load.skipped.push_back(it.system + "/" + event + ": " + e.what());
      continue;
    }
    try {
      std::lock_guard lk(mu_);
      out.push_back(&insert_locked(std::move(format), EventOrigin::kernel_format));
    } catch (const RegistryError& e) {
      throw RegistryError(it.file.string() + ": " + e.what());
    }
  }
  std::sort(out.begin(), out.end(),
            [](const EventDesc* a, const EventDesc* b) { return a->full_name() < b->full_name(); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return load;
}

const EventDesc* Registry::find(std::string_view full_name) const {
  const EventName n = split_event_name(full_name);
  if (!n.system.empty()) return find(n.system, n.name);
  std::lock_guard lk(mu_);
  const EventDesc* found = nullptr;
  for (const auto& [key, d] : by_name_) {
    if (d->name() != n.name) continue;
    if (found != nullptr) return nullptr;  // ambiguous
    found = d;
  }
  return found;
}

const EventDesc* Registry::find(std::string_view system, std::string_view name) const {
  std::lock_guard lk(mu_);
  auto it = by_name_.find(key_of(system, name));
  return it == by_name_.end() ? nullptr : it->second;
}

const EventDesc* Registry::by_id(uint16_t id) const noexcept {
  const auto* chunk = by_id_[id >> 8].load(std::memory_order_acquire);
  return chunk == nullptr ? nullptr : chunk[id & 0xff].load(std::memory_order_acquire);
}

const EventDesc* Registry::by_index(uint32_t index) const noexcept {
  return index < kMaxEvents ? by_index_[index].load(std::memory_order_acquire) : nullptr;
}

std::vector<const EventDesc*> Registry::events() const {
  std::lock_guard lk(mu_);
  std::vector<const EventDesc*> out;
  out.reserve(by_name_.size());
  for (const auto& [key, d] : by_name_) out.push_back(d);
  return out;
}

std::vector<const EventDesc*> Registry::system_events(std::string_view system) const {
  std::vector<const EventDesc*> out;
  for (const EventDesc* d : events())
    if (d->system() == system) out.push_back(d);
  return out;
}

std::vector<const EventDesc*> Registry::match(std::string_view pattern) const {
  EventName n = split_event_name(pattern);
  if (pattern == "*") n = {"*", "*"};
  std::vector<const EventDesc*> out;
  for (const EventDesc* d : events()) {
    if (n.system.empty()) {
      // A bare word matches an event name or a system name (kernel set_event).
      if (glob_match(n.name, d->name()) || glob_match(n.name, d->system())) out.push_back(d);
    } else if (glob_match(n.system, d->system()) &&
               glob_match(n.name.empty() ? "*" : n.name, d->name())) {
      out.push_back(d);
    }
  }
  return out;
}

}  // namespace tracepipe
