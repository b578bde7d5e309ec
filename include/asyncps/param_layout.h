// defines: asyncps::TensorInfo, asyncps::ParamLayout, asyncps::TableSpec, asyncps::TableInfo,
//          asyncps::RowOptimizer
// A model's trainable parameters as named tensors packed into one flat float arena (the
// llm.c habit: one allocation, per-tensor views carved from a size table). The arena is what
// the servers expose as an MPI window. Embedding tables (rows x dim, read and updated a few rows
// at a time by key: asyncps::EmbeddingTable) are declared beside it; their rows are never part
// of the arena that pull/push and begin_step move.
//
//   asyncps::ParamLayout layout;
//   layout.add("fc_w", {784, 10});
//   layout.add("fc_b", {10});
//   layout.add_table("user", {.rows = 1 << 22, .dim = 16});
//   layout.size();        // 7850 floats (the dense arena; the table is apart)
//   layout.hash();        // same on every rank that built the same layout
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace asyncps {

struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t offset = 0;  // first float of the tensor in the arena
  std::size_t size = 0;    // number of floats (product of shape)
};

// How a table's rows are updated by EmbeddingTable::push_rows (and what the servers keep per row).
enum class RowOptimizer {
  Sgd,      // row += scale * g
  Adagrad,  // acc += mean(g*g); row += scale * g / (sqrt(acc) + eps): one accumulator per row, kept
            // beside the row in the servers' window (see asyncps/embedding_table.h)
  Ftrl,     // FTRL-Proximal (McMahan et al., KDD 2013), per coordinate, learning rate -scale: z and n
            // (dim each) kept beside the row; ftrl_l1 > 0 makes weights exactly 0
};

// A block of the floats a table's RowOptimizer keeps beside each row: `width` floats per row,
// named as its export file is (<table>.<name>.npy: shape (rows, dim) for a block of one float per
// coordinate, else (rows,) or (rows, width)). Adagrad: {"accumulator", 1}; Ftrl: {"ftrl_z", dim,
// per coordinate}, {"ftrl_n", dim, per coordinate}; Sgd: none.
struct RowStateBlock {
  std::string name;
  int width = 0;
  bool per_coordinate = false;  // one float per coordinate of the row (width == dim)
};

// What add_table() takes.
struct TableSpec {
  std::uint64_t rows = 0;  // keys are hashed into [0, rows)
  int dim = 0;             // floats per row
  RowOptimizer optimizer = RowOptimizer::Sgd;
  // Rows start uniform in [-init_scale, init_scale], the same on any number of servers (a
  // function of seed, the table's name, row and column).
  float init_scale = 0.01f;
  std::uint64_t seed = 0;
  float initial_accumulator = 0.1f;  // Adagrad: every row's accumulator to start with (> 0)
  // Ftrl: the L1 and L2 strengths (>= 0) and beta (> 0) of w = -(z - sign(z) l1) /
  // ((beta + sqrt(n)) / alpha + l2). A field of another optimizer, set away from its default, is
  // refused (it would do nothing).
  float ftrl_l1 = 0.f;
  float ftrl_l2 = 0.f;
  float ftrl_beta = 1.f;
  // The name of an earlier table with the same rows, whose keys this table shares (a wide
  // weight and a deep embedding of one id): row r of both is stored side by side on one server,
  // so that an EmbeddingGroup moves the rows of all of them in one operation per run. Empty: the
  // table's rows are stored alone.
  std::string share_rows_with{};
};

// The TableSpec fields a RowOptimizer takes that the others do not, by name: Sgd none, Adagrad
// {"initial_accumulator"}, Ftrl {"ftrl_l1", "ftrl_l2", "ftrl_beta"}. add_table can only refuse
// another optimizer's field set away from its default; a program that knows which fields its
// user gave (a keyword, a flag) asks here to refuse any of them that the chosen optimizer would
// ignore. An empty list for a value that is no RowOptimizer.
std::vector<std::string> row_optimizer_fields(RowOptimizer optimizer);

struct TableInfo {
  std::string name;
  TableSpec spec;
  // Floats per row of this table: the row's dim values, then what its optimizer keeps beside it
  // (state_blocks(), state_width() floats in all).
  int stride() const noexcept;
  std::vector<RowStateBlock> state_blocks() const;
  int state_width() const noexcept;
  // Its row group (TableSpec::share_rows_with): the index of the group's first table, this
  // table's first float within a group row, and the floats of a group row (the strides of all
  // the group's tables, in the order added). A table stored alone is a group of its own.
  std::size_t group = 0;
  int group_offset = 0;
  int group_stride = 0;
};

class ParamLayout {
 public:
  // Appends a tensor; returns its offset. Throws ConfigError for a name that is not a valid
  // tensor name (limits::tensor_name_problem: 1..251 bytes, no '/', '\\' or control character,
  // not "." or ".."), a duplicate name, more than limits::kMaxTensors tensors or
  // limits::kMaxTensorRank dimensions, a non-positive dimension, or an arena that would exceed
  // limits::kMaxArenaFloats floats (all size arithmetic is overflow-checked). An empty shape is
  // a scalar (one float).
  std::size_t add(const std::string& name, const std::vector<std::int64_t>& shape);

  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(float); }
  const std::vector<TensorInfo>& tensors() const noexcept { return tensors_; }
  const TensorInfo& tensor(const std::string& name) const;  // throws ConfigError if absent

  // The tensor's view into an arena laid out by this layout.
  std::span<float> view(std::span<float> arena, const std::string& name) const;
  std::span<const float> view(std::span<const float> arena, const std::string& name) const;

  // Declares an embedding table. Throws ConfigError for a name that is not a valid tensor name
  // or is already a tensor's or a table's, rows outside [1, limits::kMaxTableRows], dim outside
  // [1, limits::kMaxTableDim], init_scale not finite or negative, an optimizer's field out of
  // its range (Adagrad's initial_accumulator not finite and positive, Ftrl's ftrl_l1 or ftrl_l2
  // negative, ftrl_beta not positive) or set for another optimizer, a share_rows_with that names no earlier table
  // or one of other rows, or more than limits::kMaxTables tables.
  void add_table(const std::string& name, const TableSpec& spec);
  const std::vector<TableInfo>& tables() const noexcept { return tables_; }
  const TableInfo& table(const std::string& name) const;  // throws ConfigError if absent
  std::size_t table_index(const std::string& name) const;  // its place in tables()

  // FNV-1a over names, shapes and order (and the tables, where there are any): stable across
  // runs, compilers and hosts.
  std::uint64_t hash() const noexcept;

 private:
  std::vector<TableInfo> tables_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, std::size_t> by_name_;  // name -> index in tensors_
  std::size_t size_ = 0;
};

}  // namespace asyncps
