// The network's own limit, for the cross-host benchmark: a TCP round trip and bulk bandwidth
// between two hosts, with the socket options a TCP transport would use (TCP_NODELAY).
//
//   tcp_probe serve PORT                 # on host A: answers one client, then exits
//   tcp_probe probe HOST PORT [MiB]      # on host B: prints "rtt_us <median> bulk_mbps <MB/s>"
//
// Round trip: 20,000 one-byte ping-pongs, the median of 20 batches of 1,000 (µs per round trip).
// Bulk: MiB (default 256) of data written by the client and acknowledged by one byte from the
// server at the end, best of 3 (MB/s = 1e6 B/s).
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "tcp_probe: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

void nodelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) die("setsockopt(TCP_NODELAY)");
}

void read_all(int fd, char* p, std::size_t n) {
  while (n) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0) die("read");
    p += r, n -= static_cast<std::size_t>(r);
  }
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) die("write");
    p += w, n -= static_cast<std::size_t>(w);
  }
}

// Protocol: 8 bytes (count of ping-pongs), the ping-pongs, 8 bytes (bulk bytes), the bulk, 1 ack.
int serve(int port) {
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("bind");
  if (::listen(ls, 1) != 0) die("listen");
  const int fd = ::accept(ls, nullptr, nullptr);
  if (fd < 0) die("accept");
  nodelay(fd);
  std::vector<char> buf(1 << 20);
  for (;;) {
    std::uint64_t n = 0;
    const ssize_t r = ::read(fd, &n, sizeof n);
    if (r == 0) break;
    if (r != sizeof n) die("read header");
    if (n & (1ull << 63)) {  // bulk: n bytes, then one byte back
      std::uint64_t left = n & ~(1ull << 63);
      while (left) {
        const ssize_t got = ::read(fd, buf.data(), std::min<std::uint64_t>(left, buf.size()));
        if (got <= 0) die("read bulk");
        left -= static_cast<std::uint64_t>(got);
      }
      write_all(fd, "k", 1);
    } else {
      char c;
      for (std::uint64_t i = 0; i < n; ++i) read_all(fd, &c, 1), write_all(fd, &c, 1);
    }
  }
  ::close(fd);
  ::close(ls);
  return 0;
}

int probe(const char* host, int port, std::uint64_t mib) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(host, std::to_string(port).c_str(), &hints, &res) != 0) die(std::string("resolve ") + host);
  int fd = -1;
  for (int attempt = 0; attempt < 100; ++attempt) {  // the server may still be starting
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, res->ai_addr, res->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
    ::usleep(50000);
  }
  ::freeaddrinfo(res);
  if (fd < 0) die(std::string("connect ") + host);
  nodelay(fd);
  using Clock = std::chrono::steady_clock;
  std::vector<double> batches;
  for (int b = 0; b < 20; ++b) {
    const std::uint64_t n = 1000;
    write_all(fd, reinterpret_cast<const char*>(&n), sizeof n);
    const auto t0 = Clock::now();
    char c = 'p';
    for (std::uint64_t i = 0; i < n; ++i) write_all(fd, &c, 1), read_all(fd, &c, 1);
    batches.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n);
  }
  std::sort(batches.begin(), batches.end());
  const double rtt = batches[batches.size() / 2];
  std::vector<char> buf(1 << 20, 'x');
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const std::uint64_t bytes = mib << 20, header = bytes | (1ull << 63);
    const auto t0 = Clock::now();
    write_all(fd, reinterpret_cast<const char*>(&header), sizeof header);
    for (std::uint64_t left = bytes; left;) {
      const std::size_t n = std::min<std::uint64_t>(left, buf.size());
      write_all(fd, buf.data(), n);
      left -= n;
    }
    char k;
    read_all(fd, &k, 1);
    best = std::max(best, static_cast<double>(bytes) / std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::close(fd);
  std::printf("rtt_us %.2f bulk_mbps %.0f\n", rtt, best);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "serve") == 0) return serve(std::atoi(argv[2]));
  if (argc >= 4 && std::strcmp(argv[1], "probe") == 0)
    return probe(argv[2], std::atoi(argv[3]), argc >= 5 ? std::strtoull(argv[4], nullptr, 10) : 256);
  std::fprintf(stderr, "usage: tcp_probe serve PORT | tcp_probe probe HOST PORT [MiB]\n");
  return 2;
}
