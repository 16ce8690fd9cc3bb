#pragma once
// Whether this test binary (and so the faultline-proxy of its tree) is built with AddressSanitizer
// or ThreadSanitizer: GCC defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang (the ASan
// tree's compiler) answers __has_feature(address_sanitizer).

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

#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

}  // namespace faultline::testing
