#pragma once
// Header rules of the relay, as pure functions over header names and values.

#include <boost/beast/http/field.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace faultline::proxy {

// Hop-by-hop headers (RFC 9110 7.6.1): Connection, Keep-Alive, Proxy-Connection,
// Proxy-Authenticate, Proxy-Authorization, TE, Trailer, Upgrade — plus any header the Connection
// header names. Transfer-Encoding is hop-by-hop too, but the relay keeps the message framing of
// each side (it re-chunks faithfully), so it is not in this list.
bool is_hop_by_hop(boost::beast::http::field field);  // of a parsed field: no string compare
bool is_hop_by_hop(std::string_view name);

// The comma-separated tokens of a Connection header value, lower-cased and trimmed.
std::vector<std::string> connection_tokens(std::string_view connection_value);

// Whether the relay drops a field on its way: hop-by-hop, or named by the message's Connection
// header (`connection_named`, from connection_tokens). An upgrade (`keep_upgrade`) keeps
// Connection and Upgrade: they are the handshake being relayed.
bool drops_field(boost::beast::http::field known, std::string_view name,
                 const std::vector<std::string>& connection_named, bool keep_upgrade);
// The same, for a field of a message whose Connection header names no fields (or not yet read).
bool drops_field(boost::beast::http::field known, bool keep_upgrade);

// An Accept value asking for JSON instead of protobuf, so watch events can be framed: protobuf
// media types are replaced by application/json; a value without protobuf is returned unchanged.
std::string accept_json_instead_of_protobuf(std::string_view accept);

// True for a JSON Content-Type (application/json, optionally with parameters).
bool is_json_content_type(std::string_view content_type);

}  // namespace faultline::proxy
