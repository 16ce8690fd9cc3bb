#pragma once
// The relay's byte buffers (request bodies, tunnels).

#include <memory>
#include <new>
#include <vector>

namespace faultline::proxy {

// A relay buffer: its bytes are always written before they are read, so it is not zero-filled when
// it is made (the 128 KiB memset per request was a sixth of the proxy's instructions on small
// responses under callgrind).
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
};
using RelayBuffer = std::vector<char, UninitializedAllocator<char>>;

}  // namespace faultline::proxy
