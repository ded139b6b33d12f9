// Status codes, the per-thread error text, version, and the struct and
// string helpers every entry point shares.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <system_error>

#include "tracepipe/core/capi/capi_internal.h"
#include "tracepipe/core/config/config.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/instance/version.h"
#include "tracepipe/core/recover/recover.h"

namespace tracepipe::capi {

namespace {
// The last failure's text on this thread. On the heap, not in a fixed
// thread-local array: the library's thread-local block is static TLS (the
// write path's initial-exec context word), which a dlopen() must find room
// for, so it stays small.
thread_local std::string tl_error;
}  // namespace

const char* last_error() noexcept { return tl_error.c_str(); }

tracepipe_status fail(tracepipe_status status, std::string_view message) noexcept {
  try {
    tl_error.assign(message);
  } catch (...) {
    tl_error.clear();  // out of memory: no text rather than a stale one
  }
  return status;
}

tracepipe_status fail_current() noexcept {
  try {
    throw;
  } catch (const ConfigError& e) {
    return fail(TRACEPIPE_ECONFIG, e.what());
  } catch (const RegistryError& e) {
    return fail(TRACEPIPE_EEXIST, e.what());
  } catch (const recover::RecoverError& e) {
    return fail(TRACEPIPE_ERECOVER, e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    return fail(TRACEPIPE_EIO, e.what());
  } catch (const std::system_error& e) {
    return fail(e.code() == std::errc::not_enough_memory ? TRACEPIPE_ENOMEM : TRACEPIPE_EIO,
                e.what());
  } catch (const std::bad_alloc&) {
    return fail(TRACEPIPE_ENOMEM, "out of memory");
  } catch (const std::invalid_argument& e) {
    return fail(TRACEPIPE_EINVAL, e.what());
  } catch (const std::out_of_range& e) {
    return fail(TRACEPIPE_EINVAL, e.what());
  } catch (const std::exception& e) {
    // buffers::ConfigError (bad buffer geometry) and the like: an argument.
    return fail(TRACEPIPE_EINVAL, e.what());
  } catch (...) {
    return fail(TRACEPIPE_EINTERNAL, "unknown error");
  }
}

size_t copy_out(std::string_view text, char* buf, size_t cap) noexcept {
  if (buf != nullptr && cap > 0) {
    const size_t n = text.size() < cap - 1 ? text.size() : cap - 1;
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return text.size();
}

bool copy_struct_in(void* out, size_t our_size, const void* user, size_t user_size) noexcept {
  std::memset(out, 0, our_size);
  const auto* u = static_cast<const unsigned char*>(user);
  if (user_size > our_size)
    for (size_t i = our_size; i < user_size; ++i)
      if (u[i] != 0) return false;
  std::memcpy(out, user, user_size < our_size ? user_size : our_size);
  return true;
}

void copy_struct_out(void* user, size_t user_size, const void* ours, size_t our_size) noexcept {
  const size_t word = sizeof(size_t);  // struct_size, first in every struct
  const size_t n = user_size < our_size ? user_size : our_size;
  if (n > word)
    std::memcpy(static_cast<unsigned char*>(user) + word,
                static_cast<const unsigned char*>(ours) + word, n - word);
}

}  // namespace tracepipe::capi

using tracepipe::capi::fail;

extern "C" {

const char* tracepipe_last_error(void) { return tracepipe::capi::last_error(); }

const char* tracepipe_status_name(tracepipe_status status) {
  switch (status) {
    case TRACEPIPE_OK:
      return "TRACEPIPE_OK";
    case TRACEPIPE_EINVAL:
      return "TRACEPIPE_EINVAL";
    case TRACEPIPE_EFILTER:
      return "TRACEPIPE_EFILTER";
    case TRACEPIPE_ETRIGGER:
      return "TRACEPIPE_ETRIGGER";
    case TRACEPIPE_ECONFIG:
      return "TRACEPIPE_ECONFIG";
    case TRACEPIPE_EEXIST:
      return "TRACEPIPE_EEXIST";
    case TRACEPIPE_ENOENT:
      return "TRACEPIPE_ENOENT";
    case TRACEPIPE_EIO:
      return "TRACEPIPE_EIO";
    case TRACEPIPE_ERECOVER:
      return "TRACEPIPE_ERECOVER";
    case TRACEPIPE_ENOMEM:
      return "TRACEPIPE_ENOMEM";
    case TRACEPIPE_EINTERNAL:
      return "TRACEPIPE_EINTERNAL";
  }
  return "?";
}

const char* tracepipe_version(void) { return tracepipe::version(); }

int tracepipe_abi_version(void) { return TRACEPIPE_C_ABI_VERSION; }

tracepipe_status tracepipe_thread_prepare(void) {
  return tracepipe::capi::guarded([] {
    tracepipe::prepare_thread();
    return TRACEPIPE_OK;
  });
}

}  // extern "C"
