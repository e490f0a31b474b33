// Writing one column of a particle file (column_writer.hpp), block by block in file order:
// its values gathered from the caller's arrays, the running per-node index, the quantile
// codes, and the stored blocks. Planning the column is column_plan.cpp's.
#include "motes/particles/column_writer.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>

#include "motes/particles/column_values.hpp"
#include "motes/particles/spec.hpp"

namespace motes {

namespace {

using namespace column_values;

// Stores one block of a stream: raw streams in place, coded ones into the window.
void store_block(StreamOut& s, codec::ValueType type, const void* data, uint64_t first, uint64_t len, uint64_t b,
                 const codec::Context& ctx, RawWriter& out) {
  if (s.by_index) return;
  const size_t bytes = len * type.size;
  if (s.plan.raw()) {
    out.write_at(data, bytes, s.offset + first * type.size);
    s.sums.push_back(spec::checksum(data, bytes));
    return;
  }
  std::string& window = s.window[s.slot];
  const size_t at = window.size();
  codec::encode_append(s.plan, type, data, len, ctx, window);
  s.blocks[b] = StoredBlock{at, uint32_t(window.size() - at), spec::checksum(window.data() + at, window.size() - at)};
  s.window_blocks[s.slot].push_back(b);
}

template <class T>
void write_typed(ColumnPlan& p, const Layout& layout, const std::vector<Run>& runs_by_start, uint32_t block_values,
                 uint64_t b0, uint64_t b1, RawWriter& out) {
  const uint64_t n = p.view->count;
  T* own_min = reinterpret_cast<T*>(p.node_min.data());
  T* own_max = reinterpret_cast<T*>(p.node_max.data());
  unsigned char* own_any = p.node_any.data();
  uint32_t* own_bits = p.node_bits.data();
  thread_local std::vector<T> buf;
  thread_local std::vector<uint8_t> codes;
  if (!p.staged && buf.size() < block_values) buf.resize(block_values);
  const bool quantile = p.index == IndexKind::quantile;
  std::unique_ptr<CodeLookup> code_of;
  if (quantile) codes.resize(block_values), code_of = std::make_unique<CodeLookup>(p.edges, p.gmin, p.gmax);
  const codec::ValueType type = codec::value_type(uint8_t(p.view->spec.dtype));
  const codec::ValueType code_type = codec::value_type(uint8_t(DType::u8));
  const spec::BitmapBins bin_of(p.gmin, p.gmax);
  for (uint64_t b = b0; b < b1; ++b) {
    const uint64_t cb = b * block_values, ce = std::min(n, cb + block_values), len = ce - cb;
    const T* values = p.staged ? reinterpret_cast<const T*>(p.staged) + (cb - p.staged_first) : buf.data();
    if (!p.staged) gather<T>(*p.view, layout, cb, len, buf.data());
    if (p.tail) p.tail->add(values, cb, len);
    // Runs are disjoint and sorted by start: walk those overlapping [cb, ce).
    while (p.run_cursor < runs_by_start.size()) {
      const Run& r = runs_by_start[p.run_cursor];
      if (r.start >= ce) break;
      uint64_t rb = std::max<uint64_t>(r.start, cb), re = std::min<uint64_t>(r.start + r.count, ce);
      const uint32_t node = r.node;
      const bool any = own_any[node];
      T mn = any ? own_min[node] : kAbove<T>, mx = any ? own_max[node] : kBelow<T>;
      const T* v = values + (rb - cb);
      const uint64_t count = re - rb;
      running_range(v, count, mn, mx);
      uint32_t bits = own_bits[node];
      if (!(mx < mn)) {  // else the node so far, this run too, holds only NaN: in no bin
        // Every value lies between mn and mx, so in a bin from bin(mn) to bin(mx) (bins are monotone).
        const uint32_t first = bin_of(double(mn)), last = bin_of(double(mx));
        const uint32_t all = uint32_t((uint64_t(2) << last) - (uint64_t(1) << first));
        bits |= first == last ? all : bin_of.mask(v, count, bits, all);
      }
      if (any || !(mx < mn)) own_min[node] = mn, own_max[node] = mx, own_any[node] = 1;  // a value that is not NaN: both ends set
      own_bits[node] = bits;
      if (r.start + r.count <= ce) ++p.run_cursor; else break;
    }
    codec::Context ctx;
    ctx.grid_origin = p.grid.origin, ctx.grid_step = p.grid.step;
    if (quantile) ctx.edges = p.edges.data();
    if (quantile) {
      for (uint64_t i = 0; i < len; ++i) codes[i] = (*code_of)(double(values[i]));
      ctx.codes = codes.data();
      ctx.bases = p.bases.data();
      // Codes blocks cover the same points as value blocks.
      store_block(p.codes, code_type, codes.data(), cb, len, b, {}, out);
    }
    store_block(p.values, type, values, cb, len, b, ctx, out);
  }
}

template <class T>
void finish_typed(ColumnPlan& p, const Layout& layout) {
  const size_t nodes = layout.nodes.size();
  T* own_min = reinterpret_cast<T*>(p.node_min.data());
  T* own_max = reinterpret_cast<T*>(p.node_max.data());
  unsigned char* own_any = p.node_any.data();
  // Subtree stats, children before parents (reverse preorder).
  for (size_t k = nodes; k-- > 0;) {
    const TreeNode& tn = layout.nodes[k];
    if (tn.is_leaf()) continue;
    for (size_t child : {k + 1, size_t(tn.right)}) {
      if (!own_any[child]) continue;
      if (!own_any[k]) own_min[k] = own_min[child], own_max[k] = own_max[child], own_any[k] = 1;
      own_min[k] = std::min(own_min[k], own_min[child]);
      own_max[k] = std::max(own_max[k], own_max[child]);
      p.node_bits[k] |= p.node_bits[child];
    }
  }
}

}  // namespace

namespace {
// The per-node statistics, zero for every node, on the column's first use (a column of no
// values has its node index finished without a block written).
void start_node_index(ColumnPlan& p, const Layout& layout) {
  if (!p.node_min.empty()) return;
  const size_t nodes = layout.nodes.size();
  p.node_min.assign(nodes * p.size, 0);
  p.node_max.assign(nodes * p.size, 0);
  p.node_any.assign(nodes, 0);
  p.node_bits.assign(nodes, 0);
}
}  // namespace

void write_blocks(ColumnPlan& p, const Layout& layout, const std::vector<Run>& runs_by_start, uint32_t block_values,
                  uint64_t b0, uint64_t b1, RawWriter& out) {
  start_node_index(p, layout);
  dispatch_dtype(p.view->spec.dtype, [&](auto v) { write_typed<decltype(v)>(p, layout, runs_by_start, block_values, b0, b1, out); });
}

void finish_node_index(ColumnPlan& p, const Layout& layout) {
  start_node_index(p, layout);
  dispatch_dtype(p.view->spec.dtype, [&](auto v) { finish_typed<decltype(v)>(p, layout); });
}

}  // namespace motes
