#include "tracepipe/core/record/net_sink.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

namespace tracepipe::record {

namespace {

// trace-cmd lib/trace-cmd/trace-msg.c: the commands, and the largest message.
constexpr uint32_t kMsgClose = 0, kMsgTinit = 1, kMsgRinit = 2, kMsgSendData = 3, kMsgFinData = 4;
constexpr uint32_t kMsgMaxLen = 8192, kMsgHdrLen = 12;
// tracecmd/include/trace-msg.h: V3_CPU and V3_MAGIC, sent with their sizeof
// (the string's NULs included).
constexpr char kV3Cpu[] = "-1V3";
constexpr char kV3Magic[] = "766679\0";

void put_be32(std::byte* p, uint32_t v) noexcept {
  v = htonl(v);
  std::memcpy(p, &v, 4);
}
uint32_t get_be32(const std::byte* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return ntohl(v);
}

void set_timeouts(int fd, std::chrono::milliseconds t) noexcept {
  timeval tv{static_cast<time_t>(t.count() / 1000),
             static_cast<suseconds_t>((t.count() % 1000) * 1000)};
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

// getaddrinfo() bounded by `t`. glibc's lookup has no deadline of its own
// (resolv.conf's timeout times attempts times nameservers, easily 30 s when
// the nameserver drops packets), and stop() joins the recorder thread that
// resolves, so an unbounded lookup would hang the application's exit. The
// lookup runs on a detached thread that shares ownership of its state: a
// lookup that outlives its caller frees its own result when it ends.
struct Lookup {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  int status = 0;     // getaddrinfo's
  int sys_errno = 0;  // errno with EAI_SYSTEM (errno is the lookup thread's)
  addrinfo* result = nullptr;
  ~Lookup() {
    if (result != nullptr) ::freeaddrinfo(result);
  }
};

struct Resolved {
  bool timed_out = false;    // no answer within the bound
  int status = 0;            // getaddrinfo's status when it answered
  int sys_errno = 0;         // with EAI_SYSTEM
  addrinfo* list = nullptr;  // status 0: the caller frees it
};

Resolved resolve_bounded(const std::string& host, const std::string& port,
                         std::chrono::milliseconds t) {
  auto l = std::make_shared<Lookup>();
  try {
    std::thread([l, host, port] {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      const int g = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
      const int e = errno;
      std::lock_guard lk(l->m);
      l->status = g;
      l->sys_errno = e;
      l->result = res;
      l->done = true;
      l->cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    return {.status = EAI_SYSTEM, .sys_errno = e.code().value()};  // no thread to resolve on
  }
  std::unique_lock lk(l->m);
  if (!l->cv.wait_for(lk, t, [&] { return l->done; })) return {.timed_out = true};
  return {
      .status = l->status, .sys_errno = l->sys_errno, .list = std::exchange(l->result, nullptr)};
}

// connect() bounded by `t`; 0 or errno.
int connect_bounded(int fd, const sockaddr* a, socklen_t len,
                    std::chrono::milliseconds t) noexcept {
  const int fl = ::fcntl(fd, F_GETFL);
  (void)::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  int err = 0;
  if (::connect(fd, a, len) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int r;
      do r = ::poll(&p, 1, static_cast<int>(t.count()));
      while (r < 0 && errno == EINTR);
      if (r == 0) {
        err = ETIMEDOUT;
      } else if (r < 0) {
        err = errno;
      } else {
        socklen_t l = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0) err = errno;
      }
    }
  }
  (void)::fcntl(fd, F_SETFL, fl);
  return err;
}

}  // namespace

std::string CollectorAddress::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<CollectorAddress> parse_collector(std::string_view spec) {
  CollectorAddress a;
  std::string_view port = spec;
  if (!spec.empty() && spec.front() == '[') {
    const size_t close = spec.find(']');
    if (close == std::string_view::npos || close + 1 >= spec.size() || spec[close + 1] != ':')
      return std::nullopt;
    a.host = std::string(spec.substr(1, close - 1));
    port = spec.substr(close + 2);
  } else if (const size_t colon = spec.rfind(':'); colon != std::string_view::npos) {
    a.host = std::string(spec.substr(0, colon));
    port = spec.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) return std::nullopt;  // IPv6 needs brackets
  } else {
    a.host = "localhost";  // trace-cmd record -N PORT
  }
  if (a.host.empty() || port.empty()) return std::nullopt;
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (ec != std::errc{} || end != port.data() + port.size() || v == 0 || v > 65535)
    return std::nullopt;
  a.port = static_cast<uint16_t>(v);
  return a;
}

NetSink::NetSink(NetSinkOptions options, uint32_t cpus, uint32_t page_size)
    : opt_(std::move(options)), cpus_(cpus), page_size_(page_size), data_(cpus, -1) {}

NetSink::~NetSink() { close_all(); }

void NetSink::close_all() noexcept {
  for (int& fd : data_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  if (ctl_ >= 0) ::close(ctl_);
  ctl_ = -1;
}

int NetSink::send_all(int fd, const void* p, size_t n) noexcept {
  const char* c = static_cast<const char*>(p);
  while (n != 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

int NetSink::recv_exact(void* p, size_t n) noexcept {
  char* c = static_cast<char*>(p);
  while (n != 0) {
    const ssize_t r = ::recv(ctl_, c, n, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
    }
    if (r == 0) return ECONNRESET;  // the collector closed the connection
    c += r;
    n -= static_cast<size_t>(r);
  }
  return 0;
}

int NetSink::send_msg(uint32_t cmd, std::span<const std::byte> fixed,
                      std::span<const std::byte> data) noexcept {
  std::byte msg[kMsgMaxLen];
  const size_t size = kMsgHdrLen + fixed.size() + data.size();
  if (size > kMsgMaxLen) return EMSGSIZE;
  put_be32(msg, static_cast<uint32_t>(size));
  put_be32(msg + 4, cmd);
  put_be32(msg + 8, static_cast<uint32_t>(fixed.size()));
  if (!fixed.empty()) std::memcpy(msg + kMsgHdrLen, fixed.data(), fixed.size());
  if (!data.empty()) std::memcpy(msg + kMsgHdrLen + fixed.size(), data.data(), data.size());
  return send_all(ctl_, msg, size);
}

// A TCP connection to `port` on the control connection's peer (the address
// the name resolved to), bounded by the timeout.
int NetSink::connect_to(uint16_t port, int* fd) noexcept {
  sockaddr_storage ss{};
  std::memcpy(&ss, peer_.data(), std::min(peer_.size(), sizeof ss));
  if (ss.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(port);
  else
    reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(port);
  *fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*fd < 0) return errno;
  const int err = connect_bounded(*fd, reinterpret_cast<const sockaddr*>(&ss),
                                  static_cast<socklen_t>(peer_.size()), opt_.timeout);
  if (err != 0) {
    ::close(*fd);
    *fd = -1;
    return err;
  }
  set_timeouts(*fd, opt_.timeout);
  return 0;
}

// (1) Resolves the name (bounded) and connects the control connection.
int NetSink::connect_control() {
  stage_ = "connecting to " + opt_.address.text();
  const std::string port = std::to_string(opt_.address.port);
  const Resolved r = resolve_bounded(opt_.address.host, port, opt_.timeout);
  if (r.timed_out) {
    stage_ = "resolving " + opt_.address.host;
    cause_ = "no answer within " + std::to_string(opt_.timeout.count()) + " ms";
    return ETIMEDOUT;
  }
  if (r.status != 0) {
    stage_ = "resolving " + opt_.address.host;
    if (r.status == EAI_SYSTEM && r.sys_errno != 0) return r.sys_errno;
    cause_ = ::gai_strerror(r.status);
    return EHOSTUNREACH;
  }
  addrinfo* res = r.list;
  int err = ECONNREFUSED;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    err = connect_bounded(fd, a->ai_addr, a->ai_addrlen, opt_.timeout);
    if (err == 0) {
      ctl_ = fd;
      peer_.assign(reinterpret_cast<const std::byte*>(a->ai_addr),
                   reinterpret_cast<const std::byte*>(a->ai_addr) + a->ai_addrlen);
      break;
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  if (ctl_ < 0) return err;
  set_timeouts(ctl_, opt_.timeout);
  // Every message leaves at once (each is one send): with Nagle's
  // algorithm the small MSG_FIN_DATA after the headers waited for the
  // collector's delayed ACK, and a short recording ended its data
  // connections before it arrived; the collector, still waiting for it,
  // then had its poll interrupted by its readers' exit (SIGCHLD) and
  // logged "reading client -4" and "Message: cmd=4" (trace-msg.c:
  // read_msg_data, tracecmd_msg_wait_for_cmd).
  const int one = 1;
  (void)::setsockopt(ctl_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return 0;
}

// (2) Protocol version 3 (trace-record.c: check_protocol_version).
int NetSink::negotiate() {
  const std::string where = opt_.address.text();
  stage_ = "negotiating with " + where;
  char buf[16] = {};
  int err;
  if ((err = recv_exact(buf, 8)) != 0) return err;
  if (std::memcmp(buf, "tracecmd", 8) != 0) {
    stage_ = where + " is not a trace-cmd collector";
    return EPROTO;
  }
  if ((err = send_all(ctl_, kV3Cpu, sizeof kV3Cpu)) != 0) return err;
  if ((err = recv_exact(buf, 3)) != 0) return err;  // "V3\0"
  if (std::memcmp(buf, "V3", 3) != 0) {
    stage_ = where + " does not speak trace-cmd's protocol version 3";
    return EPROTO;
  }
  if ((err = send_all(ctl_, kV3Magic, sizeof kV3Magic)) != 0) return err;
  if ((err = recv_exact(buf, 2)) != 0) return err;
  if (std::memcmp(buf, "OK", 2) != 0) {
    stage_ = where + " refused the protocol";
    return EPROTO;
  }
  return 0;
}

uint32_t NetSink::read_size() const noexcept {
  if (page_size_ == 0) return kCollectorReadBytes;
  return std::max(page_size_, kCollectorReadBytes / page_size_ * page_size_);
}

// (3) MSG_TINIT {cpus, read size, options} "tcp\0"; MSG_RINIT back with
// one data port per CPU.
int NetSink::init_session() {
  const std::string where = opt_.address.text();
  stage_ = "initialising with " + where;
  std::byte tinit[12];
  put_be32(tinit, cpus_);
  put_be32(tinit + 4, read_size());
  put_be32(tinit + 8, 1);
  static constexpr char kTcp[] = "tcp";
  int err;
  if ((err = send_msg(kMsgTinit, tinit, std::as_bytes(std::span(kTcp, sizeof kTcp)))) != 0)
    return err;
  std::byte hdr[kMsgHdrLen];
  if ((err = recv_exact(hdr, sizeof hdr)) != 0) return err;
  const uint32_t size = get_be32(hdr), cmd = get_be32(hdr + 4), cmd_size = get_be32(hdr + 8);
  if (size < kMsgHdrLen + 4 || size > kMsgMaxLen || cmd_size != 4 || cmd != kMsgRinit) {
    stage_ =
        where + " answered MSG_TINIT with command " + std::to_string(cmd) + " (expected MSG_RINIT)";
    return EPROTO;
  }
  std::vector<char> body(size - kMsgHdrLen);
  if ((err = recv_exact(body.data(), body.size())) != 0) return err;
  uint32_t ncpu;
  std::memcpy(&ncpu, body.data(), 4);
  ncpu = ntohl(ncpu);
  if (ncpu != cpus_ || body.back() != '\0') {
    stage_ = where + " sent a bad port list";
    return EPROTO;
  }
  for (size_t at = 4; ports_.size() < cpus_ && at < body.size();) {
    const char* s = body.data() + at;
    const size_t len = std::strlen(s);
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(s, s + len, v);
    if (ec != std::errc{} || end != s + len || v == 0 || v > 65535) {
      stage_ = where + " sent a bad port list";
      return EPROTO;
    }
    ports_.push_back(static_cast<uint16_t>(v));
    at += len + 1;
  }
  if (ports_.size() != cpus_) {
    stage_ = where + " sent a bad port list";
    return EPROTO;
  }
  return 0;
}

// (4) The headers, then MSG_FIN_DATA.
int NetSink::send_headers(std::span<const std::byte> headers) {
  stage_ = "sending the headers to " + opt_.address.text();
  constexpr size_t kChunk = kMsgMaxLen - kMsgHdrLen;
  for (size_t at = 0; at < headers.size(); at += kChunk)
    if (const int err =
            send_msg(kMsgSendData, {}, headers.subspan(at, std::min(kChunk, headers.size() - at)));
        err != 0)
      return err;
  return send_msg(kMsgFinData, {}, {});
}

// (5) One data connection per CPU. The collector's reader listens on its
// port only once it has forked, so a refusal is retried (bounded).
int NetSink::connect_data() {
  const std::string where = opt_.address.text();
  for (uint32_t cpu = 0; cpu < cpus_; ++cpu) {
    stage_ = "connecting CPU " + std::to_string(cpu) + "'s data port " +
             std::to_string(ports_[cpu]) + " of " + where;
    const auto deadline = std::chrono::steady_clock::now() + opt_.timeout;
    int err;
    for (;;) {
      err = connect_to(ports_[cpu], &data_[cpu]);
      if (err != ECONNREFUSED || std::chrono::steady_clock::now() >= deadline) break;
      const timespec ts{0, 2'000'000};
      (void)::nanosleep(&ts, nullptr);  // retry pacing, not ordering
    }
    if (err != 0) return err;
  }
  stage_ = "sending to " + where;
  return 0;
}

int NetSink::connect(std::span<const std::byte> headers) noexcept {
  try {
    int err = connect_control();
    if (err == 0) err = negotiate();
    if (err == 0) err = init_session();
    if (err == 0) err = send_headers(headers);
    if (err == 0) err = connect_data();
    return err;
  } catch (const std::bad_alloc&) {
    return ENOMEM;
  }
}

int NetSink::append(uint32_t cpu, std::span<const std::byte> pages) noexcept {
  if (cpu >= cpus_ || data_[cpu] < 0) return ENOTCONN;
  if (const int err = send_all(data_[cpu], pages.data(), pages.size()); err != 0) {
    stage_ = "sending CPU " + std::to_string(cpu) + "'s data to " + opt_.address.text();
    return err;
  }
  bytes_ += pages.size();
  return 0;
}

int NetSink::check_present() const noexcept {
  if (ctl_ < 0) return ENOTCONN;
  pollfd p{ctl_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return 0;
  if ((p.revents & (POLLERR | POLLHUP | POLLRDHUP)) != 0) return ECONNRESET;
  char c;
  const ssize_t r = ::recv(ctl_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r == 0) return ECONNRESET;
  if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return errno;
  return 0;  // a message (MSG_NOT_SUPP): the collector is there
}

int NetSink::finalize(const TraceDatWriter&) noexcept {
  int first = 0;
  // The data connections first: the collector's readers see the end of
  // their data. Each reader closes its connection once it has read and
  // stored everything, and only then is MSG_CLOSE sent: trace-cmd listen
  // joins the file about a second after MSG_CLOSE (less when a reader's
  // exit interrupts its sleep) and then interrupts any reader still
  // reading, whose data would be cut short.
  for (int fd : data_)
    if (fd >= 0 && ::shutdown(fd, SHUT_WR) != 0 && first == 0) first = errno;
  // One deadline for all of them: a collector that stopped reading costs
  // the timeout once, not once per CPU.
  const auto deadline = std::chrono::steady_clock::now() + opt_.timeout;
  unacked_ = 0;
  for (int& fd : data_) {
    if (fd < 0) continue;
    bool stored = false;
    char buf[256];
    for (int i = 0; i < 4096; ++i) {  // the reader sends nothing: data here is unexpected, skipped
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      if (n < 0 && errno == EINTR) continue;
      const ssize_t r = n > 0 ? ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) : -1;
      if (r > 0 || (r < 0 && errno == EINTR)) continue;
      if (r == 0 || (n > 0 && errno == ECONNRESET)) {  // the reader closed: all stored
        stored = true;
        break;
      }
      if (first == 0) {
        first = n == 0 ? ETIMEDOUT : errno;
        stage_ = "waiting for " + opt_.address.text() + " to store the data";
      }
      break;
    }
    // What the collector's host has not acknowledged (Linux: SIOCOUTQ,
    // unacknowledged plus unsent), less the FIN that shutdown() queued; a
    // connection the peer reset has an empty queue: what was in it is
    // unknown, not counted.
    int queued = 0;
    if (!stored && ::ioctl(fd, SIOCOUTQ, &queued) == 0 && queued > 1)
      unacked_ += static_cast<uint64_t>(queued - 1);
    ::close(fd);
    fd = -1;
  }
  if (ctl_ >= 0) {
    const int err = send_msg(kMsgClose, {}, {});
    if (err != 0 && first == 0) {
      first = err;
      stage_ = "closing the session with " + opt_.address.text();
    }
  }
  close_all();
  return first;
}

}  // namespace tracepipe::record
