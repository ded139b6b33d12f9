// Events declared at run time: the spec checked, laid out as EventDecl lays
// out a C++ declaration (core/instance/event_decl.h: natural alignment, the
// fixed part tail-padded, __data_loc strings after it), registered in
// Registry::global() with the tracepoint's word as the descriptor's
// subscriber word, so that Instance::enable() publishes into the caller's
// static word and TRACEPIPE_TRACEPOINT_ENABLED is one load.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "tracepipe/core/capi/capi_internal.h"
#include "tracepipe/core/events/registry.h"

namespace tracepipe::capi {
namespace {

constexpr size_t kMaxFields = 64;
constexpr uint32_t kMaxChars = 4096;
constexpr uint32_t kMaxArray = 4096;

/// Stands in a tracepoint's word when the descriptor publishes into another
/// one (the same schema declared before without this tracepoint): non-null
/// for good, so the enabled check always passes and tracepipe_trace() reads
/// the descriptor's own word. EventDecl's (D2).
const detail::Subscribers kUseDescriptorWord{};

struct Declared {
  std::mutex mu;
  std::map<const EventDesc*, tracepipe_event*> by_desc;           // (C1): never freed
  std::map<const tracepipe_tracepoint*, tracepipe_event*> by_tp;  // one event per tracepoint
};
Declared& declared() {
  static Declared* d = new Declared;  // never destroyed: late emits may still read handles
  return *d;
}

bool is_ident(const char* s) {
  if (s == nullptr || *s == '\0') return false;
  if (!(std::isalpha(static_cast<unsigned char>(*s)) || *s == '_')) return false;
  for (const char* p = s; *p != '\0'; ++p)
    if (!(std::isalnum(static_cast<unsigned char>(*p)) || *p == '_')) return false;
  return std::strlen(s) <= 255;
}

std::string int_type(uint32_t size, bool is_signed) {
  return std::string(is_signed ? "s" : "u") + std::to_string(size * 8);
}

uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

/// The spec's own checks (names, field count, struct size); returns the
/// stride between its fields. Throws std::invalid_argument.
size_t check_spec(const tracepipe_event_spec& spec) {
  if (!is_ident(spec.system)) throw std::invalid_argument("event system: not a C identifier");
  if (!is_ident(spec.name)) throw std::invalid_argument("event name: not a C identifier");
  if (spec.field_count > kMaxFields) throw std::invalid_argument("more than 64 fields");
  if (spec.field_count != 0 && spec.fields == nullptr)
    throw std::invalid_argument("fields is NULL");
  const size_t stride =
      spec.field_struct_size != 0 ? spec.field_struct_size : sizeof(tracepipe_field);
  if (stride < offsetof(tracepipe_field, type))
    throw std::invalid_argument("field_struct_size too small");
  return stride;
}

/// One field as declared: its layout (offset not yet set), its format
/// line, and its conversion and argument in the generated print_fmt.
struct DeclaredField {
  FieldLayout layout{};
  FormatField format;
  std::string conv, arg;
};

/// An integer field or array of integers.
void declare_int(const tracepipe_field& fd, const std::string& what, DeclaredField& d) {
  if (fd.size != 1 && fd.size != 2 && fd.size != 4 && fd.size != 8)
    throw std::invalid_argument(what + ": integer size must be 1, 2, 4 or 8");
  if (fd.array_len > kMaxArray) throw std::invalid_argument(what + ": array longer than 4096");
  d.layout.elem = fd.size;
  d.layout.count = fd.array_len == 0 ? 1 : fd.array_len;
  d.layout.array = fd.array_len != 0;
  const std::string base = fd.type != nullptr && *fd.type != '\0'
                               ? std::string(fd.type)
                               : int_type(fd.size, fd.is_signed != 0);
  if (base.find_first_of("[];\n\t") != std::string::npos)
    throw std::invalid_argument(what + ": type must not hold [ ] ; or control characters");
  d.format.type = fd.array_len == 0 ? base : base + "[" + std::to_string(fd.array_len) + "]";
  d.format.is_signed = fd.is_signed != 0;
  if (fd.array_len != 0) {
    d.conv = "%s";
    d.arg = "__print_array(REC->" + d.format.name + ", " + std::to_string(fd.array_len) + ", " +
            std::to_string(fd.size) + ")";
  } else if (fd.size == 8) {
    d.conv = fd.is_signed ? "%lld" : "%llu";
  } else {
    d.conv = fd.is_signed ? "%d" : "%u";
  }
}

/// Field `i` of the spec, whose name is new in `names` (which it joins).
/// Throws std::invalid_argument naming the field.
DeclaredField declare_field(const tracepipe_field& fd, size_t i,
                            std::set<std::string, std::less<>>& names) {
  const std::string where = "field " + std::to_string(i);
  if (!is_ident(fd.name)) throw std::invalid_argument(where + ": name is not a C identifier");
  const std::string name = fd.name;
  const std::string what = where + " '" + name + "'";
  if (name.starts_with("common_"))
    throw std::invalid_argument(what + ": common_ names are the header's");
  if (!names.insert(name).second) throw std::invalid_argument(what + ": declared twice");
  DeclaredField d;
  d.layout.kind = fd.kind;
  d.format.name = name;
  d.arg = "REC->" + name;
  switch (fd.kind) {
    case TRACEPIPE_FIELD_INT:
      declare_int(fd, what, d);
      break;
    case TRACEPIPE_FIELD_CHARS:
      if (fd.array_len == 0 || fd.array_len > kMaxChars)
        throw std::invalid_argument(what + ": char array length must be 1..4096");
      d.layout.elem = 1;
      d.layout.count = fd.array_len;
      d.format.type = "char[" + std::to_string(fd.array_len) + "]";
      d.conv = "%s";
      break;
    case TRACEPIPE_FIELD_STRING:
      d.layout.elem = 4;
      d.layout.count = 1;
      d.format.type = "__data_loc char[]";
      d.conv = "%s";
      d.arg = "__get_str(" + name + ")";
      break;
    default:
      throw std::invalid_argument(what + ": unknown kind");
  }
  d.layout.size = d.layout.elem * d.layout.count;
  return d;
}

/// The format and the layout of a checked spec; throws std::invalid_argument.
EventFormat make_format(const tracepipe_event_spec& spec, std::vector<FieldLayout>& layout,
                        uint32_t& fixed, bool& dynamic) {
  const size_t stride = check_spec(spec);
  EventFormat f;
  f.system = spec.system;
  f.name = spec.name;
  f.common_fields = kernel_common_fields();
  std::set<std::string, std::less<>> names;
  std::string fmt = "\"", args;
  uint32_t off = sizeof(CommonHeader), max_align = alignof(CommonHeader);
  dynamic = false;
  for (size_t i = 0; i < spec.field_count; ++i) {
    tracepipe_field fd{};
    std::memcpy(&fd, reinterpret_cast<const char*>(spec.fields) + i * stride,
                std::min(stride, sizeof fd));
    DeclaredField d = declare_field(fd, i, names);
    dynamic |= fd.kind == TRACEPIPE_FIELD_STRING;
    off = align_up(off, d.layout.elem);
    d.layout.offset = off;
    off += d.layout.size;
    max_align = std::max(max_align, d.layout.elem);
    d.format.offset = d.layout.offset;
    d.format.size = d.layout.size;
    if (i != 0) fmt += ' ';
    fmt += d.format.name + "=" + d.conv;
    args += ", " + d.arg;
    f.fields.push_back(std::move(d.format));
    layout.push_back(d.layout);
  }
  fixed = align_up(off, max_align);
  if (fixed > 32768) throw std::invalid_argument("the record's fixed part is over 32 KiB");
  if (spec.print_fmt != nullptr) {
    if (std::strchr(spec.print_fmt, '\n') != nullptr)
      throw std::invalid_argument("print_fmt must be one line");
    f.print_fmt = spec.print_fmt;
  } else {
    f.print_fmt = fmt + "\"" + args;
  }
  return f;
}

}  // namespace
}  // namespace tracepipe::capi

using namespace tracepipe;
using namespace tracepipe::capi;

extern "C" {

tracepipe_status tracepipe_event_declare(const tracepipe_event_spec* user_spec,
                                         tracepipe_tracepoint* tp, tracepipe_event** out) {
  return guarded([&] {
    if (user_spec == nullptr || out == nullptr)
      return fail(TRACEPIPE_EINVAL, "spec and out must not be NULL");
    tracepipe_event_spec spec;
    if (user_spec->struct_size < offsetof(tracepipe_event_spec, fields) ||
        !copy_struct_in(&spec, sizeof spec, user_spec, user_spec->struct_size))
      return fail(TRACEPIPE_EINVAL, "tracepipe_event_spec: struct_size unknown to this library");
    std::vector<FieldLayout> layout;
    uint32_t fixed = 0;
    bool dynamic = false;
    EventFormat format = make_format(spec, layout, fixed, dynamic);

    Declared& d = declared();
    std::lock_guard lk(d.mu);
    std::atomic<const detail::Subscribers*>* tp_word = nullptr;
    if (tp != nullptr) {
      const auto it = d.by_tp.find(tp);
      if (it == d.by_tp.end()) {
        if (__atomic_load_n(&tp->state_, __ATOMIC_RELAXED) != nullptr)
          return fail(TRACEPIPE_EINVAL, "tracepoint: not zero-initialised");
        static_assert(sizeof(std::atomic<const detail::Subscribers*>) == sizeof(void*) &&
                      alignof(std::atomic<const detail::Subscribers*>) == alignof(void*));
        tp_word = reinterpret_cast<std::atomic<const detail::Subscribers*>*>(&tp->state_);
      } else if (it->second->desc->full_name() != format.system + ":" + format.name) {
        return fail(TRACEPIPE_EINVAL,
                    "tracepoint: already bound to " + it->second->desc->full_name());
      }
    }
    const EventDesc& desc = Registry::global().add_declared(std::move(format), tp_word);
    auto& word = desc.subscribers_for_fast_path();
    tracepipe_event* ev;
    if (const auto it = d.by_desc.find(&desc); it != d.by_desc.end()) {
      ev = it->second;
    } else {
      auto h = std::make_unique<tracepipe_event>();
      h->desc = &desc;
      h->word = &word;
      h->fixed_size = fixed;
      h->body_fixed = fixed - static_cast<uint32_t>(sizeof(CommonHeader));
      h->dynamic = dynamic;
      h->stack_lane = !dynamic && fixed <= kStackLaneMax;
      h->fields = std::move(layout);
      ev = h.release();  // (C1)
      d.by_desc.emplace(&desc, ev);
    }
    if (tp != nullptr && d.by_tp.emplace(tp, ev).second && tp_word != &word)
      tp_word->store(&kUseDescriptorWord, std::memory_order_relaxed);  // (D2)
    *out = ev;
    return TRACEPIPE_OK;
  });
}

tracepipe_event* tracepipe_event_find(const char* system, const char* name) {
  try {
    if (system == nullptr) return nullptr;
    const EventDesc* desc =
        name != nullptr ? Registry::global().find(system, name) : Registry::global().find(system);
    if (desc == nullptr) return nullptr;
    Declared& d = declared();
    std::lock_guard lk(d.mu);
    const auto it = d.by_desc.find(desc);
    return it == d.by_desc.end() ? nullptr : it->second;
  } catch (...) {
    return nullptr;
  }
}

uint16_t tracepipe_event_id(const tracepipe_event* event) {
  return event != nullptr ? event->desc->id() : 0;
}

uint32_t tracepipe_event_fixed_size(const tracepipe_event* event) {
  return event != nullptr ? event->fixed_size : 0;
}

uint32_t tracepipe_event_field_count(const tracepipe_event* event) {
  return event != nullptr ? static_cast<uint32_t>(event->fields.size()) : 0;
}

uint32_t tracepipe_event_field_offset(const tracepipe_event* event, uint32_t index) {
  if (event == nullptr || index >= event->fields.size()) return UINT32_MAX;
  return event->fields[index].offset;
}

size_t tracepipe_event_format(const tracepipe_event* event, char* buf, size_t cap) {
  if (event == nullptr) return copy_out("", buf, cap);
  try {
    return copy_out(event->desc->format_text(), buf, cap);
  } catch (...) {
    return copy_out("", buf, cap);
  }
}

}  // extern "C"
