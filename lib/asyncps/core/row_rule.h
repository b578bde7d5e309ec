// defines: asyncps::detail::RowRule, RowUpdate, row_rule, row_rules
// A table's row optimizer (RowOptimizer) as one part: what it keeps beside each row on the
// servers, how those floats start, which TableSpec fields it takes, and how a worker turns one
// row's summed gradient into the floats it adds there. The table code (worker/embedding_table.cpp),
// the layout, the servers' first values and the checkpoints ask the rule and never branch on which
// it is. Adding a rule: one file defining it (core/row_rule_*.cpp) and its row in row_rules.cpp.
//
// Every update is a sum the servers apply with MPI_Accumulate: a rule that needs what the row
// holds (Adagrad's accumulator, FTRL's weights and sums) reads it, as the worker last saw it, from
// `seen` (the worker's last pull of the row, or a read at the push), so that concurrent workers'
// updates add up Hogwild-style.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "asyncps/param_layout.h"

namespace asyncps::detail {

// One row's update. row: in, [0, dim) the sum of the row's gradients; out, [0, stride) the
// floats to add to the stored row. seen: the stored floats the rule reads ([seen_first,
// seen_first + seen_count) of the row), as this worker last saw them.
// A TableSpec field a rule takes: its name, and whether a spec leaves it at its default. The
// layout refuses a field of another rule set away from its default (it would do nothing).
struct SpecField {
  const char* name;
  bool (*is_default)(const TableSpec& spec);
};

struct RowUpdate {
  std::span<float> row;
  std::span<const float> seen;
  float scale = 0;   // the push's scale (SGD: row += scale * g)
  float eps = 0;     // EmbeddingTable::epsilon()
};

class RowRule {
 public:
  virtual ~RowRule() = default;
  virtual RowOptimizer id() const noexcept = 0;
  virtual const char* name() const noexcept = 0;  // as parse_choice spells it
  virtual const char* label() const noexcept = 0;  // as messages name it ("Adagrad")
  // The floats kept beside each row, after its dim values, as named blocks (export file names).
  virtual std::vector<RowStateBlock> state(int dim) const = 0;
  // The TableSpec fields this rule takes (no other rule's), and the problem with one of them out
  // of range ("Adagrad's initial_accumulator must be ..."), else "".
  virtual std::span<const SpecField> fields() const noexcept { return {}; }
  virtual std::string spec_problem(const TableSpec& spec) const { (void)spec; return {}; }
  // State float k (0 <= k < state width) of every row as the table starts.
  virtual float initial_state(const TableSpec& spec, int k) const = 0;
  // The stored floats an update reads: [seen_first, seen_first + seen_count) of the row's stride.
  virtual int seen_first(int dim) const noexcept = 0;
  virtual int seen_count(int dim) const noexcept = 0;
  // A scale the rule cannot use: the problem, else "". (check_scale has refused non-finite ones.)
  virtual std::string scale_problem(float scale) const { (void)scale; return {}; }
  // Whether an update reads RowUpdate::eps (EmbeddingTable::set_epsilon has no effect otherwise).
  virtual bool uses_eps() const noexcept { return false; }
  // Turns one row's summed gradient into the floats to add (see RowUpdate).
  virtual void update(const RowUpdate& u, const TableSpec& spec) const = 0;
  // The rule's own TableSpec fields as bits the layout hash mixes in (none: layouts hash as before).
  virtual std::vector<float> hashed_fields(const TableSpec& spec) const { (void)spec; return {}; }
};

// The registered rules, one per RowOptimizer value (the default, Sgd, first).
std::span<const RowRule* const> row_rules();
// The rule of `id`; nullptr for a value that is none (a cast integer).
const RowRule* find_row_rule(RowOptimizer id) noexcept;
// The rule of `id`; throws ConfigError for a value that is none.
const RowRule& row_rule(RowOptimizer id);
// Floats kept beside each row (the sum of state(dim)'s widths).
int state_width(const RowRule& rule, int dim);
// What is wrong with `spec` for its rule: a field of another rule set away from its default
// ("ftrl_l1 is FTRL's: it does nothing for Adagrad rows"), or the rule's own spec_problem; else "".
std::string spec_problem(const RowRule& rule, const TableSpec& spec);

}  // namespace asyncps::detail
