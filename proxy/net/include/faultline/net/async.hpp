#pragma once
// The async idiom of faultline's C++20 coroutines (asio::awaitable), shared by the proxy and the
// harness: errors come back as values from co_await, and a step that must succeed throws.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

namespace faultline::net {

// `auto [ec, n] = co_await op(..., use_tuple);`: the error code (and result) as a tuple, no throw.
inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

// Throws `ec` (when set) as a system_error naming the step that failed.
inline void throw_if(const boost::system::error_code& ec, const char* what) {
  if (ec) throw boost::system::system_error(ec, what);
}

}  // namespace faultline::net
