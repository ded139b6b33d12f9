#pragma once
/// tracepipe's version, as "MAJOR.MINOR.PATCH". Thread-safe, constant.
namespace tracepipe {
const char* version() noexcept;
}  // namespace tracepipe
