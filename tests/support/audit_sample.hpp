#pragma once
// Sample audit records the tests share (header only: include it from a test that links
// faultline::audit).

#include <chrono>

#include "faultline/audit/record.hpp"

namespace faultline::testing {

// 2026-11-30T14:48:19.123456Z
inline std::chrono::system_clock::time_point sample_time() {
  using namespace std::chrono;
  return sys_days{year{2026} / November / 30} + hours{14} + minutes{48} + seconds{19} + microseconds{123456};
}

// The record of the "Audit record" example in docs/proxy.md: a bind that the outage rule answered itself
// (status 0: the connection was cut, so no upstream status and no bytes out).
inline audit::Record sample_bind_record() {
  audit::Record r;
  r.seq = 42;
  r.ts = sample_time();
  r.conn = 7;
  r.client = "127.0.0.1:40312";
  r.user_agent = "yunikorn/v1.9.0 (linux/amd64) kubernetes/$Format";
  r.proto = "h1";
  r.method = "POST";
  r.path = "/api/v1/namespaces/faultline/pods/burst-1-17/binding";
  r.verb = "create";
  r.resource = "pods";
  r.subresource = "binding";
  r.namespace_ = "faultline";
  r.name = "burst-1-17";
  r.watch = false;
  r.rule = "outage-mid-bind";
  r.action = "outage";
  r.status = 0;
  r.upstream_status = std::nullopt;
  r.bytes_in = 312;
  r.bytes_out = 0;
  r.duration = std::chrono::microseconds{1234};
  return r;
}

// The same record with every field away from its default (a watch, with an upstream status and
// bytes out), for tests that must see each field travel.
inline audit::Record every_field_set() {
  audit::Record r = sample_bind_record();
  r.watch = true;
  r.status = 503;
  r.upstream_status = 201;
  r.bytes_out = 42;
  r.held = audit::Held{"forwarded", 3, std::chrono::milliseconds(2004)};
  r.events_delayed = 7;
  r.events_withheld = 3;
  r.stale_read = audit::StaleRead{"41", "17", false};
  return r;
}

}  // namespace faultline::testing
