// defines: net_counters::NetBytes, net_counters::read
// Bytes this network namespace's interfaces other than lo have received and sent
// (/proc/self/net/dev): the bytes on the wire, where each simulated host is a namespace of its
// own (scripts/netns-mpirun.sh). On one host (everything over lo or shared memory) both are ~0.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

namespace net_counters {

struct NetBytes {
  double rx = 0, tx = 0;
};

inline NetBytes read() {
  std::ifstream in("/proc/self/net/dev");
  std::string line;
  NetBytes b;
  for (int n = 0; std::getline(in, line); ++n) {
    if (n < 2) continue;  // two header lines
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    std::istringstream fields(line.substr(colon + 1));
    double v[9] = {};
    for (double& x : v) fields >> x;  // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes
    b.rx += v[0];
    b.tx += v[8];
  }
  return b;
}

}  // namespace net_counters
