#pragma once
// Whether this test binary is built with AddressSanitizer: GCC defines __SANITIZE_ADDRESS__, clang
// (the ASan tree's compiler) answers __has_feature(address_sanitizer).

namespace faultline::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

}  // namespace faultline::testing
