#pragma once
// core/record/net_sink.h — a recording sent to `trace-cmd listen` on another
// host, as `trace-cmd record -N HOST:PORT` sends one: trace-cmd's network
// protocol, version 3, over TCP. Mirrors trace-cmd tracecmd/trace-record.c
// (setup_network, check_protocol_version, setup_connection),
// lib/trace-cmd/trace-msg.c (tracecmd_msg_send_init_data,
// tracecmd_msg_data_send, tracecmd_msg_finish_sending_data,
// tracecmd_msg_send_close_msg) and tracecmd/trace-listen.c (what the
// collector expects); checked against Debian's trace-cmd 3.1.6.
//
//   recorder                                   trace-cmd listen -p PORT
//   ── control connection (TCP PORT) ───────────────────────────────────────
//                                   ◀── "tracecmd"
//   "-1V3\0" ──▶                                      (v1 clients send a CPU count)
//                                   ◀── "V3\0"
//   "766679\0\0" ──▶                                  (V3 magic)
//                                   ◀── "OK"
//   MSG_TINIT {cpus, read size, 1 option} "tcp\0" ──▶
//                                   ◀── MSG_RINIT {cpus} "port0\0port1\0..."
//   MSG_SEND_DATA (the trace.dat headers, ≤ 8180 bytes each) ... ──▶
//   MSG_FIN_DATA ──▶                                  (headers complete)
//   ── one TCP connection per CPU, to port N ───────────────────────────────
//   whole pages, back to back, as the recording goes ──▶ (a temp file per CPU)
//   ── at the end ───────────────────────────────────────────────────────────
//   end the CPU connections (shutdown), wait until the collector's
//   readers close them (all data stored); MSG_CLOSE ──▶ close.
//   The collector then joins its temp files behind the headers into
//   OUTDIR/trace.HOST:PORT.dat (about 2 s later: it waits for its readers).
//   Message: be32 size (all of it), be32 cmd, be32 cmd_size (the fixed part
//   after the 12-byte header), the fixed part, then size - 12 - cmd_size bytes.
//
// MSG_TINIT's "page size" is, to trace-cmd listen, only the size of its
// readers' read(): each reads that many bytes from its data connection into
// a buffer on its stack and writes them to the CPU's temp file
// (trace-listen.c: process_udp_child; trace-msg.c:
// tracecmd_msg_initial_setting checks only that it is positive); the file's
// page size is the one in the headers. trace-cmd record sends
// getpagesize(), which costs the collector a read and a write system call
// per 4 KiB page, more CPU per event than the recorder's own; the sink sends
// read_size(), a multiple of the page size (docs/measurements.md, "To
// trace-cmd listen").
//
// Headers sent: a trace.dat version 6 up to the end of its options, without
// "flyrecord" (the collector writes that, the CPU table and the clock text
// itself, tracecmd_write_cpu_data); or version 7 sections up to the options
// (TraceDatV7 with data_follows; the collector then writes the flyrecord
// section, compressing the pages with the file's algorithm, and the final
// options). Headers are sent once, at the start: names learnt later
// (cmdlines) are not in the collector's file, as with trace-cmd record -N.
//
// Faults never block for long and never signal: the name lookup and every
// socket operation are bounded by `timeout` (the lookup runs on a thread of
// its own that is abandoned at the bound; SO_SNDTIMEO / SO_RCVTIMEO; connect
// polled), sends use
// MSG_NOSIGNAL (a closed peer is EPIPE, not SIGPIPE). Errors are errno
// values; stage() names the step that failed ("connecting to 10.0.0.2:1234").
//
// Thread-safety: none; the recorder thread owns a NetSink.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/record/sink.h"

namespace tracepipe::record {

/// A collector address as trace-cmd record -N spells it: "HOST:PORT", or
/// "PORT" alone for localhost; an IPv6 host in brackets ("[::1]:PORT").
struct CollectorAddress {
  std::string host;
  uint16_t port = 0;
  std::string text() const;
};
/// nullopt when `spec` is not HOST:PORT with a port in 1..65535.
std::optional<CollectorAddress> parse_collector(std::string_view spec);

struct NetSinkOptions {
  CollectorAddress address;
  /// The longest the name lookup, one connect, send or receive may take (a collector that
  /// stops reading fails the sink after this, it never blocks the recorder
  /// longer).
  std::chrono::milliseconds timeout{2000};
};

class NetSink final : public TraceSink {
 public:
  /// No I/O here: connect() does the handshake (on the recorder thread).
  NetSink(NetSinkOptions options, uint32_t cpus, uint32_t page_size);
  ~NetSink() override;
  NetSink(const NetSink&) = delete;
  NetSink& operator=(const NetSink&) = delete;

  /// Connects, negotiates protocol version 3, sends `headers` (see above)
  /// and opens one data connection per CPU. Returns 0 or an errno
  /// (ECONNREFUSED, ETIMEDOUT, EPROTO when the peer is not a v3 trace-cmd
  /// collector, ...); stage() then says which step failed.
  int connect(std::span<const std::byte> headers) noexcept;
  /// Sends whole pages on `cpu`'s data connection.
  int append(uint32_t cpu, std::span<const std::byte> pages) noexcept override;
  /// 0: headers went out at connect().
  int rewrite_headers(const TraceDatWriter&) noexcept override { return 0; }
  /// ECONNRESET once the collector closed the control connection (killed).
  int check_present() const noexcept override;
  /// Ends the data connections, waits (bounded by the timeout) until the
  /// collector has stored their data, sends MSG_CLOSE and closes.
  int finalize(const TraceDatWriter&) noexcept override;
  /// Bytes handed to the data connections (whole appends; what the sockets
  /// took, not what the collector received).
  uint64_t total_bytes() const noexcept override { return bytes_; }
  /// After finalize(): the bytes of data connections whose reader did not
  /// close them (the collector did not store everything) that its host had
  /// not acknowledged when they were closed (the socket's send queue): sent,
  /// but they may not have arrived. 0 when every reader stored its data.
  uint64_t unacked_bytes() const noexcept { return unacked_; }
  std::string describe() const override { return "collector " + opt_.address.text(); }

  const std::string& stage() const noexcept { return stage_; }
  /// The cause of the last failure in the sink's own words when no errno
  /// says it (the resolver's: "Name or service not known"); empty otherwise.
  const std::string& cause() const noexcept { return cause_; }
  /// The collector's data port of each CPU (after connect()).
  const std::vector<uint16_t>& data_ports() const noexcept { return ports_; }
  /// The size MSG_TINIT announces as its page size: what the collector's
  /// readers read at a time (see above); kCollectorReadBytes rounded down to
  /// whole pages, at least one page.
  uint32_t read_size() const noexcept;
  static constexpr uint32_t kCollectorReadBytes = 64 * 1024;

 private:
  // The steps of connect(), in order; each returns 0 or an errno and sets
  // stage_ (may throw std::bad_alloc).
  int connect_control();
  int negotiate();
  int init_session();
  int send_headers(std::span<const std::byte> headers);
  int connect_data();
  int connect_to(uint16_t port, int* fd) noexcept;
  int send_all(int fd, const void* p, size_t n) noexcept;
  int recv_exact(void* p, size_t n) noexcept;
  int send_msg(uint32_t cmd, std::span<const std::byte> fixed,
               std::span<const std::byte> data) noexcept;
  void close_all() noexcept;

  NetSinkOptions opt_;
  uint32_t cpus_, page_size_;
  int ctl_ = -1;
  std::vector<int> data_;
  std::vector<uint16_t> ports_;
  std::vector<std::byte> peer_;  // sockaddr of the control connection's peer
  uint64_t bytes_ = 0;
  uint64_t unacked_ = 0;
  std::string stage_;
  std::string cause_;
};

}  // namespace tracepipe::record
