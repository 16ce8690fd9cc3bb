// HTTP/1.1 messages on the wire: the upstream response's parser and the framing of a forwarded
// message.
#include "http1_message.hpp"

#include <algorithm>
#include <vector>

#include "faultline/proxy/headers.hpp"

namespace faultline::proxy {

void ResponseParser::on_response_impl(int code, beast::string_view reason, int, boost::system::error_code&) {
  status_ = code;
  // Always HTTP/1.1 towards the client, whatever the upstream spoke; a missing reason phrase
  // gets the usual one, as Beast's serializer did.
  if (reason.empty()) reason = http::obsolete_reason(static_cast<http::status>(code));
  char digits[4];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, code);
  head_.append("HTTP/1.1 ", 9)
      .append(digits, end)
      .append(" ", 1)
      .append(reason.data(), reason.size())
      .append("\r\n", 2);
}

void ResponseParser::on_field_impl(http::field name, beast::string_view name_string, beast::string_view value,
                                   boost::system::error_code&) {
  if (name == http::field::connection) {
    if (!connection_.empty()) connection_ += ',';
    connection_.append(value.data(), value.size());
  } else if (name == http::field::content_type) {
    content_type_.assign(value.data(), value.size());
  } else if (name == http::field::content_length) {
    // Repeated ones are identical (the parser refuses differing ones): forwarded once.
    if (content_length_seen_) return;
    content_length_seen_ = true;
  }
  // Named by Connection or not, an upgrade keeps its Connection and Upgrade; every other
  // hop-by-hop field is dropped here, the ones Connection names once the header is complete.
  if (drops_field(name, upgrade())) return;
  // The views point into the parsed buffer: a field written "Name: value" is copied as it is, in
  // one piece (a folded value was assembled elsewhere by the parser, and other spacing is redone).
  const char* end = value.data() + value.size();
  if (value.data() == name_string.data() + name_string.size() + 2 && name_string.data()[name_string.size()] == ':' &&
      name_string.data()[name_string.size() + 1] == ' ') {
    head_.append(name_string.data(), static_cast<std::size_t>(end - name_string.data())).append("\r\n", 2);
    return;
  }
  head_.append(name_string.data(), name_string.size())
      .append(": ", 2)
      .append(value.data(), value.size())
      .append("\r\n", 2);
}

void ResponseParser::on_header_impl(boost::system::error_code&) {
  std::vector<std::string> named = connection_tokens(connection_);
  // "keep-alive" (nginx sends it on every response) names a field dropped already.
  std::erase_if(named, [](const std::string& token) { return is_hop_by_hop(token); });
  if (named.empty()) return;
  // Rare (kube-apiserver names no fields in Connection): the fields it names leave the header.
  std::string_view all = head_;
  std::size_t status_line = all.find("\r\n") + 2;
  std::string kept(all.substr(0, status_line));
  for (std::size_t at = status_line; at < all.size();) {
    std::size_t eol = all.find("\r\n", at);
    std::string_view line = all.substr(at, eol - at);
    std::string_view field_name = line.substr(0, line.find(':'));
    if (!drops_field(http::string_to_field(field_name), field_name, named, upgrade())) kept.append(line).append("\r\n");
    at = eol + 2;
  }
  head_ = std::move(kept);
}

}  // namespace faultline::proxy
