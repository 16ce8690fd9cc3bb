#pragma once
// stale-read's recording: the proxy's own request upstream that learns the cluster's current
// resourceVersion at the moment a rule's window opened.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <vector>

#include "server_impl.hpp"

namespace faultline::proxy {

// The largest answer the probe reads (a list of one namespace is about 1 KiB).
inline constexpr std::size_t kProbeBodyLimit = 1 << 20;

// GET /api/v1/namespaces?limit=1 on a connection of its own: the list's metadata.resourceVersion is
// etcd's revision when kube-apiserver answered (resourceVersions are one counter for every
// resource). Identity as a forwarded request has: the proxy's own upstream identity, else
// `authorization` (the header of the request that opened the window). Returns the resourceVersion,
// or sets `failure` to what went wrong.
boost::asio::awaitable<std::string> current_resource_version(Server::Impl& server,
                                                             const boost::asio::any_io_executor& executor,
                                                             const std::optional<std::string>& authorization,
                                                             std::string& failure);

// Learns the current resourceVersion and records it for `rules` in the engine; logs the outcome.
boost::asio::awaitable<void> record_resource_version(Server::Impl& server, boost::asio::any_io_executor executor,
                                                     std::vector<int> rules, std::optional<std::string> authorization,
                                                     std::uint64_t conn);

}  // namespace faultline::proxy
