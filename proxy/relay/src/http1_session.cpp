// The HTTP/1.1 request loop of one client connection, the effects of faults over HTTP/1.1, and
// the reading of the upstream's answer to a forwarded request.
#include "http1_session.hpp"

#include "connection.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>

#include "faultline/net/async.hpp"
#include "faultline/proxy/headers.hpp"
#include "resource_version_probe.hpp"

namespace faultline::proxy {
namespace {

using net::throw_if;
using net::use_tuple;

// Interim (1xx) responses accepted before the final one; servers send one or two (100, 103).
constexpr int kMaxInterimResponses = 100;

// A read of the response header failed because what upstream sent is not a valid HTTP response
// (rather than the connection failing or the proxy cutting it).
bool is_invalid_response(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_version).category() &&
         ec != http::error::end_of_stream;
}

// How a connection the upstream closed before answering ends the read of a response header: a
// clean end, an end without TLS close_notify, or a reset.
bool closed_before_answering(const boost::system::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::ssl::error::stream_truncated ||
         ec == asio::error::connection_reset;
}

}  // namespace

Http1Session::Http1Session(TlsConnection& conn)
    : conn_(conn),
      server_(&conn.server()),
      options_(conn.options()),
      id_(conn.id()),
      client_(conn.stream(), options_.header_limit, options_.relay_buffer),
      upstream_(conn),
      relay_(conn, client_, upstream_) {}

asio::awaitable<void> Http1Session::serve() {
  bool first = true;
  while (!conn_.is_cut() && co_await wait_for_request(first)) {
    first = false;
    if (!co_await serve_request()) break;
    if (conn_.draining()) break;
  }
}

// Waits for the first byte of the next request: the idle (keep-alive) timeout applies here, the
// header timeout only once a request has started.
asio::awaitable<bool> Http1Session::wait_for_request(bool first) {
  client_.phase = Http1Client::Phase::idle;
  if (conn_.draining()) co_return false;
  release_idle_buffers();
  if (client_.buffer.size() == 0) {
    client_.stream.expires_after(first ? options_.header_timeout : options_.idle_timeout);
    auto [ec, n] = co_await client_.stream.async_read_some(client_.buffer.prepare(4096), use_tuple);
    if (ec) co_return false;
    client_.buffer.commit(n);
  }
  client_.phase = Http1Client::Phase::busy;
  co_return !conn_.is_cut();
}

asio::awaitable<bool> Http1Session::serve_request() {
  Exchange ex;
  ex.parser.header_limit(static_cast<std::uint32_t>(options_.header_limit));
  ex.parser.body_limit(boost::none);
  client_.stream.expires_after(options_.header_timeout);
  auto ec = co_await read_header(client_.stream, client_.buffer, ex.parser, options_.relay_buffer);
  if (ec == http::error::header_limit) {
    co_await write_simple_error(431, "request header too large");
    co_return false;
  }
  if (ec) {
    if (ec != beast::error::timeout && ec != http::error::end_of_stream && ec != asio::error::operation_aborted) {
      co_await write_simple_error(400, "malformed HTTP request");
    }
    co_return false;
  }
  auto& req = ex.parser.get();
  // A Transfer-Encoding whose last coding is not chunked leaves the body's length unknown: the
  // request cannot be framed, so it is refused and the connection closed (RFC 9112 section 6.3).
  if (req.count(http::field::transfer_encoding) > 0 && !ex.parser.chunked()) {
    co_await write_simple_error(400, "Transfer-Encoding must end with chunked");
    co_return false;
  }
  single_content_length(ex.parser);
  ex.client_keep_alive = req.keep_alive();
  ex.expects_continue = beast::iequals(req[http::field::expect], "100-continue");
  if (server_->memory_over.load(std::memory_order_relaxed)) {
    // Past --max-memory: no new work; the connection closes after the answer (its buffers go).
    server_->refused(Server::Impl::Refusal::max_memory);
    ex.client_keep_alive = false;
    co_await write_local_response(ex, memory_refused_response(options_, server_->memory_bytes.load()));
    co_return false;
  }
  std::vector<faults::Header> headers;
  for (const auto& field : req.base()) add_matchable_header(headers, field.name_string(), field.value());
  begin_exchange(*server_, ex, id_, conn_.peer(), "h1", req.method_string(), req.target(), std::move(headers));
  bool keep_going = false;
  try {
    keep_going = co_await carry_out(ex);
  } catch (...) {
    finish(ex);
    throw;
  }
  finish(ex);
  co_return (keep_going && ex.client_keep_alive);
}

asio::awaitable<bool> Http1Session::carry_out(Exchange& ex) {
  // A client waiting for "100 Continue" sends no body unless forwarded: do not wait for it.
  if (ex.expects_continue && !forwards(ex.effects)) ex.client_keep_alive = false;
  for (auto& effect : ex.effects) {
    const Next next = co_await std::visit([this, &ex](auto& e) { return apply(ex, e); }, effect);
    if (next) co_return *next;
  }
  if (ex.forwarded) {
    conn_.cut_now(Cut::close);  // the answer was lost and no effect said what then
    co_return false;
  }
  if (!co_await upstream_.send_request(ex, client_)) {
    co_await answer_upstream_unreachable(ex);
    co_return true;
  }
  co_return co_await relay_response(ex);
}

// The effects over HTTP/1.1, one request at a time: what holds the request holds the connection.
// A request not forwarded has its body read and dropped before the connection is held or closed
// (unless its client waits for "100 Continue": then it sends none).

asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::Answer& e) {
  if (!ex.expects_continue) co_await discard_request_body(ex);
  co_await write_local_response(ex, e.response);
  co_return true;
}

asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::CutOff& e) {
  if (e.how == Cut::close && !ex.forwarded && !ex.expects_continue) co_await discard_request_body(ex);
  conn_.cut_now(e.how == Cut::none ? Cut::close : e.how);
  co_return false;
}

asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange&, effect::Wait& e) {
  if (e.duration.count() > 0) co_await conn_.sleep(e.duration);
  co_return std::nullopt;
}

asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::Hold& e) {
  if (!ex.forwarded && !ex.expects_continue) co_await discard_request_body(ex);
  co_await hang(e.limit);
  co_return false;
}

asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::DiscardResponse&) {
  if (!co_await upstream_.send_request(ex, client_)) {
    co_await answer_upstream_unreachable(ex);
    co_return true;
  }
  ResponseParser parser(response_head_);
  co_await upstream_.discard_response(parser, ex);
  ex.forwarded = true;
  co_return std::nullopt;
}

asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::FilterWatch& e) {
  ex.watch_filter = std::move(e.filter);
  ex.json_upstream = e.json_upstream;
  co_return std::nullopt;
}

asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange&, effect::EnforceOutage&) {
  server_->enforce_outage();
  co_return std::nullopt;
}

// Graceful: the answer carries Connection: close. Abrupt: a close, this request unanswered.
asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::EndConnection& e) {
  if (e.graceful) {
    ex.client_keep_alive = false;
    co_return std::nullopt;
  }
  if (!ex.forwarded && !ex.expects_continue) co_await discard_request_body(ex);
  conn_.cut_now(Cut::close);
  co_return false;
}

// One request at a time: while this one waits, the connection sends and reads nothing.
asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange&, effect::StallConnection& e) {
  co_await conn_.sleep(e.duration);
  co_return std::nullopt;
}

// Held in the rule's batch (gate.hpp) until it is released. Meanwhile the client's bytes are read
// into the request's buffer (at most relay_buffer of them, then no more until the release), so
// that a client that goes away is seen at once: it leaves the batch and its request is never sent.
asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::Gate& e) {
  using namespace asio::experimental::awaitable_operators;
  std::shared_ptr<GateTicket> ticket = server_->gates.join(e, conn_.executor());
  if (!ticket) {
    ex.record.held = audit::Held{"not-held", 0, {}};
    spdlog::debug("conn {}: rule '{}': {} requests are held already; {} {} goes on", id_, ex.plan.rule, Gates::kMaxHeld,
                  ex.request.method, path_only(ex.request.target));
    co_return std::nullopt;
  }
  GateHold hold(server_->gates, ticket);
  client_.stream.expires_never();
  std::size_t batch = 0;
  bool gave_up = false;
  for (;;) {
    batch = server_->gates.wake(*ticket);
    if (batch > 0) break;
    if (client_.buffer.size() >= options_.relay_buffer) {
      co_await ticket->timer.async_wait(use_tuple);
      continue;
    }
    auto first = co_await (ticket->timer.async_wait(use_tuple) ||
                           client_.stream.async_read_some(client_.buffer.prepare(4096), use_tuple));
    if (first.index() == 0) continue;
    auto [ec, n] = std::get<1>(first);
    if (ec) {
      gave_up = true;
      break;
    }
    client_.buffer.commit(n);
  }
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - ticket->since);
  if (gave_up) {
    hold.leave();
    ex.record.held = audit::Held{"gave-up", 0, waited};
    spdlog::info("conn {}: rule '{}': the client of {} {} went away while it was held ({} ms)", id_, ex.plan.rule,
                 ex.request.method, path_only(ex.request.target), waited.count());
    conn_.cut_now(Cut::close);
    co_return false;
  }
  hold.done();
  using Then = faults::actions::Hold::Then;
  ex.record.held = audit::Held{e.then == Then::forward ? "forwarded"
                               : e.then == Then::reset ? "reset"
                                                       : "answered",
                               batch, waited};
  if (e.then == Then::forward) co_return std::nullopt;
  if (e.then == Then::reset) {
    conn_.cut_now(Cut::reset);
    co_return false;
  }
  if (!ex.expects_continue) co_await discard_request_body(ex);
  co_await write_local_response(ex, *e.response);
  co_return true;
}

// stale-read: the request waits while the proxy learns the current resourceVersion upstream.
asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::RecordResourceVersion& e) {
  std::optional<std::string> authorization;
  const auto& req = ex.parser.get();
  if (auto it = req.find(http::field::authorization); it != req.end()) authorization = std::string(it->value());
  const asio::any_io_executor executor = conn_.executor();
  const std::vector<int> rules = e.rules;
  co_await record_resource_version(*server_, executor, rules, authorization, id_);
  co_return std::nullopt;
}

asio::awaitable<Http1Session::Next> Http1Session::apply(Exchange& ex, effect::ReadAsOf& e) {
  note_stale_read(ex, e);
  if (!e.target.empty()) ex.parser.get().target(e.target);
  co_return std::nullopt;
}

asio::awaitable<void> Http1Session::write_local_response(Exchange& ex, const faults::HttpResponse& requested) {
  const faults::HttpResponse response = final_local_response(ex, requested, id_);
  http::response<http::string_body> res{static_cast<http::status>(response.code), 11};
  for (const auto& header : response.headers) res.set(header.name, header.value);
  res.keep_alive(ex.client_keep_alive && !conn_.draining());
  // 204 and 304 never have a body (nor a length); the answer to HEAD has the length of the body
  // a GET would get, without the body.
  bool bodiless_status = response.code == 204 || response.code == 304;
  bool head = ex.parser.get().method() == http::verb::head;
  if (bodiless_status) {
    res.erase(http::field::content_length);
  } else {
    res.content_length(response.body.size());
    if (!head) res.body() = response.body;
  }
  client_.stream.expires_after(options_.io_timeout);
  co_await http::async_write(client_.stream, res, asio::use_awaitable);
  ex.record.status = response.code;
  ex.record.bytes_out += res.body().size();
}

asio::awaitable<void> Http1Session::write_simple_error(int code, const char* message) {
  http::response<http::string_body> res{static_cast<http::status>(code), 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::string(message) + "\n";
  res.keep_alive(false);
  res.prepare_payload();
  client_.stream.expires_after(options_.io_timeout);
  co_await http::async_write(client_.stream, res, use_tuple);
}

// Reads and drops the rest of the request body, so the connection can carry the next request
// (or be closed without a RST caused by unread data).
asio::awaitable<void> Http1Session::discard_request_body(Exchange& ex) {
  auto& body = ex.parser.get().body();
  if (ex.parser.is_done()) co_return;
  auto& chunk = client_.up_chunk();
  client_.reserve_reads();
  while (!ex.parser.is_done()) {
    body.data = chunk.data();
    body.size = chunk.size();
    client_.stream.expires_after(options_.io_timeout);
    auto [ec, n] = co_await http::async_read(client_.stream, client_.buffer, ex.parser, use_tuple);
    if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
    ex.record.bytes_in += chunk.size() - body.size;
  }
}

// Upstream could not be reached (DNS, connect, TLS handshake): the client gets what an apiserver
// behind a load balancer would answer, a 503 with a Kubernetes Status, instead of a dropped
// connection. The message names the upstream and the failed step; no credentials are involved.
asio::awaitable<void> Http1Session::answer_upstream_unreachable(Exchange& ex) {
  spdlog::warn("conn {}: upstream {} unreachable ({}); answering 503 to {} {}", id_,
               options_.upstream.endpoint.to_string(), ex.upstream_failure, ex.request.method,
               path_only(ex.request.target));
  if (ex.expects_continue) ex.client_keep_alive = false;  // its body was never asked for
  else co_await discard_request_body(ex);
  const faults::HttpResponse answer = upstream_unreachable_response(options_, ex.upstream_failure);
  co_await write_local_response(ex, answer);
}

// Upstream answered with something that is not a valid HTTP response (a bad status line, an
// oversized header, conflicting framing, endless interim responses), and nothing of it reached
// the client yet: the client gets a 502 with a Kubernetes Status, as from a gateway, instead of a
// dropped connection. The upstream connection is in an unknown state and is closed; the client's
// request was read completely, so its connection can carry the next request.
asio::awaitable<void> Http1Session::answer_bad_gateway(Exchange& ex, const std::string& why) {
  close_upstream();
  spdlog::warn("conn {}: upstream {} sent an invalid response ({}); answering 502 to {} {}", id_,
               options_.upstream.endpoint.to_string(), why, ex.request.method, path_only(ex.request.target));
  const faults::HttpResponse answer = bad_gateway_response(options_, why);
  co_await write_local_response(ex, answer);
}

// Holds the connection without answering: reads (and drops) whatever the client sends until it
// gives up, or until `limit` has passed (then the connection is closed).
asio::awaitable<void> Http1Session::hang(std::optional<std::chrono::milliseconds> limit) {
  client_.phase = Http1Client::Phase::streaming;
  if (limit) client_.stream.expires_after(*limit);
  else client_.stream.expires_never();
  char sink[4096];
  for (;;) {
    auto [ec, n] = co_await client_.stream.async_read_some(asio::buffer(sink), use_tuple);
    if (ec) break;
  }
  if (!conn_.is_cut()) conn_.cut_now(Cut::close);
}

void Http1Session::release_idle_buffers() {
  client_.release_idle_buffers();
  // The serialized header is reused from request to request, but one made large by a long header
  // is not kept by an idle connection.
  constexpr std::size_t kKeptHead = 4096;
  if (response_head_.capacity() > kKeptHead) std::string().swap(response_head_);
  upstream_.release_idle_buffers();
}

void Http1Session::cut() { upstream_.cut(); }

void Http1Session::close_upstream() { upstream_.close(); }

asio::awaitable<bool> Http1Session::relay_response(Exchange& ex) {
  auto sent = std::chrono::steady_clock::now();
  upstream_.reserve_reads();
  std::optional<ResponseParser> final_response;
  for (int interim = 0;; ++interim) {
    // Interim responses (100, 103) are read and dropped: the client does not need them, the final
    // one follows. Each needs a parser of its own.
    final_response.emplace(response_head_);
    auto& parser = *final_response;
    auto ec = co_await upstream_.read_header(parser, ex);
    if (ec && interim == 0 && ex.resendable && !parser.got_some() && closed_before_answering(ec)) {
      // The apiserver closed the kept-alive connection (its idle timeout, a restart) before it
      // read the request. Without the proxy the client's own connection would have been the
      // closed one, and Go's http.Transport would have sent the request again: so does the proxy,
      // once, on a new connection, and the client never sees it.
      spdlog::debug("conn {}: upstream closed a kept-alive connection before answering ({}); sending {} {} again", id_,
                    ec.message(), ex.request.method, path_only(ex.request.target));
      close_upstream();
      ex.resendable = false;
      ex.resent = true;
      if (!co_await upstream_.send_request(ex, client_)) {
        co_await answer_upstream_unreachable(ex);
        co_return true;
      }
      upstream_.reserve_reads();
      sent = std::chrono::steady_clock::now();
      interim = -1;  // the new connection's first response
      continue;
    }
    if (is_invalid_response(ec)) {
      // (A named string: GCC destroys temporaries of a conditional expression in a co_await twice.)
      std::string why = ec.message();
      if (ec == http::error::header_limit) {
        why = "response header larger than " + std::to_string(Http1Upstream::kResponseHeaderLimit) + " bytes";
      }
      co_await answer_bad_gateway(ex, why);
      co_return true;
    }
    throw_if(ec, "reading the upstream response header");
    bool is_interim = parser.status() / 100 == 1 && !parser.upgrade();
    if (!is_interim) break;
    if (interim + 1 >= kMaxInterimResponses) {
      std::string why = "more than " + std::to_string(kMaxInterimResponses) + " interim responses";
      co_await answer_bad_gateway(ex, why);
      co_return true;
    }
  }
  auto& parser = *final_response;
  ex.upstream_latency = std::chrono::steady_clock::now() - sent;
  ex.record.upstream_status = parser.status();
  bool upstream_keep_alive = parser.keep_alive();
  bool upgrade = parser.upgrade();
  // A body that ends when upstream closes (no length, not chunked) also ends the client connection:
  // the client has no other way to see where it ends.
  bool until_eof = !upgrade && !parser.is_done() && parser.need_eof();
  if (until_eof) ex.client_keep_alive = false;

  WatchFilter* filter = ex.watch_filter.get();
  if (filter && ex.json_upstream && (!parser.chunked() || !is_json_content_type(parser.content_type()))) {
    spdlog::error("conn {}: rule '{}' ({}) cannot act: the watch response is not chunked JSON (Content-Type '{}')", id_,
                  ex.plan.rule, ex.record.action.value_or(""), parser.content_type());
    filter = nullptr;
  }
  bool keep_going = co_await relay_.stream_body(parser, ex, filter);
  if (upgrade) {
    co_await relay_.tunnel();
    co_return false;
  }
  if (!upstream_keep_alive) upstream_.close();
  co_return keep_going;
}

void Http1Session::finish(Exchange& ex) { finish_exchange(*server_, ex, id_); }

}  // namespace faultline::proxy
