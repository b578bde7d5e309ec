// defines: ClickLog
#include "clicks.h"

#include <cmath>

namespace ctr_async {

namespace {
std::uint64_t mix64(std::uint64_t x) noexcept {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
// A splitmix64 stream: uniform doubles in (0, 1) and standard normals.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() noexcept { return mix64(s += 0x9e3779b97f4a7c15ull); }
  double uniform() noexcept { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  double normal() noexcept { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
};
}  // namespace

ClickLog::ClickLog(const ClickConfig& config) : c_(config) {
  Rng r{mix64(c_.seed ^ 0xd15ea5e)};
  for (int d = 0; d < c_.dense; ++d) dense_w_.push_back(c_.dense_weight_sd * r.normal());
  zipf_norm_ = std::pow(static_cast<double>(c_.vocab) + 1, 1 - c_.zipf) - 1;
}

double ClickLog::planted_id_weight(int field, std::uint32_t id) const noexcept {
  Rng r{mix64(c_.seed * 0x100000001b3ull ^ key(field, id))};
  return c_.id_weight_sd * r.normal();
}

void ClickLog::example(std::uint64_t stream, std::uint64_t index, Example& out) const {
  Rng r{mix64(c_.seed ^ mix64((stream << 44) ^ index))};
  out.ids.resize(static_cast<std::size_t>(c_.fields));
  out.dense.resize(static_cast<std::size_t>(c_.dense));
  double logit = c_.bias;
  for (int f = 0; f < c_.fields; ++f) {
    // bounded continuous Pareto by inversion, floored: P(id >= k) ~ (k + 1)^(1 - zipf)
    const double u = r.uniform();
    const double k = std::pow(1 + u * zipf_norm_, 1 / (1 - c_.zipf)) - 1;
    const auto id = static_cast<std::uint32_t>(std::min(static_cast<double>(c_.vocab - 1), std::floor(k)));
    out.ids[static_cast<std::size_t>(f)] = id;
    logit += planted_id_weight(f, id);
  }
  for (int d = 0; d < c_.dense; ++d) {
    const double x = r.normal();
    out.dense[static_cast<std::size_t>(d)] = static_cast<float>(x);
    logit += dense_w_[static_cast<std::size_t>(d)] * x;
  }
  out.planted = static_cast<float>(logit);
  out.label = r.uniform() < 1 / (1 + std::exp(-logit)) ? 1.f : 0.f;
}

}  // namespace ctr_async
