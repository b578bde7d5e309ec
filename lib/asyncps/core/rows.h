// defines: asyncps::detail::mix64, row_of_key, initial_row_value, init_server_rows
// The embedding tables' arithmetic shared by the servers (their rows' first values) and the
// workers (which row a key is): pure functions, the same on every rank and host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "asyncps/param_layout.h"
#include "asyncps/roles.h"

namespace asyncps::detail {

// splitmix64's finaliser: a bijection on 64-bit values whose output bits each depend on every
// input bit (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014).
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// The row a key is hashed into: mix64(key) mod rows.
constexpr std::uint64_t row_of_key(std::uint64_t key, std::uint64_t rows) noexcept { return mix64(key) % rows; }

// Row `row`'s float `col` as the table starts (col >= dim: what its optimizer keeps beside the row).
float initial_row_value(const TableInfo& table, std::uint64_t row, int col) noexcept;

// Fills server `server`'s row window (RowPlan::server_floats floats) with every table's first values.
void init_server_rows(const ParamLayout& layout, const RowPlan& plan, int server, float* window);

}  // namespace asyncps::detail
