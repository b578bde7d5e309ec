// Proves: SocketWaiter (the server's and the waiting worker's sleep) finds this process's
// sockets, sleeps until one is readable (and not longer than asked when none is), tells a
// listening socket's pending connection apart, and stops watching a socket whose peer hung up
// instead of waking forever.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "asyncps_internal/transport/socket_waiter.h"

using asyncps::detail::SocketWaiter;
using Clock = std::chrono::steady_clock;

TEST_CASE("socket waiter wakes on bytes, times out without, drops hung-up sockets", "[progress]") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  SocketWaiter w;
  w.rescan();
  REQUIRE(w.usable());
  const std::size_t found = w.sockets();
  CHECK(found >= 2);

  // nothing to read: it sleeps about as long as asked, and says so
  auto t0 = Clock::now();
  CHECK_FALSE(w.wait(20000));
  CHECK(Clock::now() - t0 >= std::chrono::milliseconds(15));

  // bytes written from another thread end the sleep early
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    REQUIRE(::write(sv[1], "x", 1) == 1);
  });
  t0 = Clock::now();
  CHECK(w.wait(2000000));
  CHECK(Clock::now() - t0 < std::chrono::milliseconds(1000));
  CHECK_FALSE(w.connection_pending());
  writer.join();
  char c;
  REQUIRE(::read(sv[0], &c, 1) == 1);
  CHECK_FALSE(w.wait(0));  // drained: not readable any more

  // the peer hangs up: reported once, then that socket is no longer watched
  ::close(sv[1]);
  CHECK(w.wait(100000));
  CHECK(w.sockets() < found);
  ::close(sv[0]);
}

TEST_CASE("socket waiter marks a listening socket's pending connection", "[progress]") {
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(ls >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(ls, 1) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  SocketWaiter w;
  w.rescan();
  CHECK_FALSE(w.wait(0));
  const int cs = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(::connect(cs, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  CHECK(w.wait(1000000));
  CHECK(w.connection_pending());
  ::close(cs);
  ::close(ls);
}
