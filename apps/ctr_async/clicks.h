// defines: ctr_async::ClickLog, Example
// Synthetic click logs in Criteo's layout (26 categorical fields, 13 dense), generated
// deterministically from a seed, with a planted logistic model so that the best achievable AUC
// is known. Ids per field are Zipf-distributed over a vocabulary; the label of an example is
// drawn from sigmoid(planted logit). No data set is downloaded: example j of stream s is a pure
// function of (seed, s, j).
#pragma once
#include <cstdint>
#include <vector>

namespace ctr_async {

struct ClickConfig {
  int fields = 26;             // categorical fields
  int dense = 13;              // dense features, standard normal
  std::uint64_t vocab = 100000;   // ids per field
  double zipf = 1.1;           // P(id = k) ~ (k + 1)^-zipf
  double id_weight_sd = 0.35;  // planted weight of each (field, id): normal(0, sd)
  double dense_weight_sd = 0.3;
  double bias = -1.6;          // about 25% clicks
  std::uint64_t seed = 1;
};

struct Example {
  std::vector<std::uint32_t> ids;  // one per field
  std::vector<float> dense;
  float label = 0;        // 0 or 1
  float planted = 0;      // the planted model's logit
};

class ClickLog {
 public:
  explicit ClickLog(const ClickConfig& config);
  const ClickConfig& config() const noexcept { return c_; }
  // Example `index` of stream `stream` (stream 0: the held-out test set; 1 + w: worker w's).
  void example(std::uint64_t stream, std::uint64_t index, Example& out) const;
  // The key a (field, id) pair is looked up by in the tables.
  static std::uint64_t key(int field, std::uint32_t id) noexcept {
    return (static_cast<std::uint64_t>(field) << 40) | id;
  }
  double planted_id_weight(int field, std::uint32_t id) const noexcept;

 private:
  ClickConfig c_;
  std::vector<double> dense_w_;
  double zipf_norm_ = 0;  // (vocab + 1)^(1 - zipf) - 1
};

}  // namespace ctr_async
