#include "motes/particles/layout/builder.hpp"

#include <algorithm>
#include <boost/sort/sort.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>
#include <type_traits>
#include <string>

#include "motes/core/threads.hpp"
#include "motes/particles/layout/radix_sort.hpp"
#include "motes/particles/layout/shallow.hpp"
#include "motes/particles/layout/treelet.hpp"

namespace motes {

namespace {

using namespace shallow;

// Sorts keys on all threads: split around sampled pivots, sort the parts in parallel.
template <class Key>
void sort_keys(BigVector<Key>& keys, unsigned threads) {
  auto sort_range = [&](auto&& self, size_t lo, size_t hi, unsigned t) -> void {
    if (t <= 1 || hi - lo < (1u << 16)) {
      boost::sort::pdqsort(keys.begin() + int64_t(lo), keys.begin() + int64_t(hi));
      return;
    }
    std::vector<Key> sample;
    for (size_t i = 0; i < 1023; ++i) sample.push_back(keys[lo + (hi - lo) * (2 * i + 1) / 2046]);
    std::nth_element(sample.begin(), sample.begin() + 511, sample.end());
    const Key pivot = sample[511];
    size_t mid = size_t(std::partition(keys.begin() + int64_t(lo), keys.begin() + int64_t(hi),
                                       [&](const Key& k) { return k < pivot; }) - keys.begin());
    parallel_for(2, 2, [&](uint64_t part) { part ? self(self, mid, hi, t - t / 2) : self(self, lo, mid, t / 2); });
  };
  sort_range(sort_range, 0, keys.size(), threads);
}

// Bounds of a range of values, and the first non-finite one (UINT64_MAX when none). The
// loops have no branch (a NaN or infinity only marks the range not finite), and contiguous
// values run on 16-byte vector lanes, four vectors side by side (the compiler leaves the
// scalar loop scalar); the first bad row is looked for only when there is one.
template <class T>
void bound_range(const char* base, int64_t stride, uint64_t b, uint64_t e, double& lo, double& hi, uint64_t& bad) {
  constexpr T kInf = std::numeric_limits<T>::infinity();
  T mn = kInf, mx = -kInf;
  bool finite = true;
  auto at = [&](uint64_t i) { return *reinterpret_cast<const T*>(base + int64_t(i) * stride); };
  uint64_t i = b;
  if (stride == int64_t(sizeof(T))) {
    const T* v = reinterpret_cast<const T*>(base);
    constexpr uint64_t kLanes = 16 / sizeof(T);
    typedef T Lanes __attribute__((vector_size(16)));
    typedef decltype(Lanes{} < Lanes{}) Mask;
    Lanes vmn[4], vmx[4];
    for (int k = 0; k < 4; ++k) vmn[k] = Lanes{} + kInf, vmx[k] = Lanes{} - kInf;
    Mask nonfinite = {};
    for (; i + 4 * kLanes <= e; i += 4 * kLanes)
      for (uint64_t k = 0; k < 4; ++k) {
        Lanes x;
        std::memcpy(&x, v + i + k * kLanes, sizeof x);
        nonfinite |= (x - x) != Lanes{};
        vmn[k] = x < vmn[k] ? x : vmn[k];
        vmx[k] = x > vmx[k] ? x : vmx[k];
      }
    for (int k = 0; k < 4; ++k)
      for (uint64_t j = 0; j < kLanes; ++j) {
        finite &= nonfinite[j] == 0;
        mn = vmn[k][j] < mn ? vmn[k][j] : mn;
        mx = vmx[k][j] > mx ? vmx[k][j] : mx;
      }
  }
  for (; i < e; ++i) {
    const T x = at(i);
    finite &= x - x == T(0);
    mn = x < mn ? x : mn;
    mx = x > mx ? x : mx;
  }
  if (!finite) {
    for (i = b; i < e; ++i)
      if (!(at(i) - at(i) == T(0))) return void(bad = i);
  }
  // A zero bound has the sign of the range's first zero, as one scan in row order gives.
  if (mn == T(0) || mx == T(0))
    for (i = b; i < e; ++i)
      if (at(i) == T(0)) {
        mn = mn == T(0) ? at(i) : mn;
        mx = mx == T(0) ? at(i) : mx;
        break;
      }
  lo = double(mn), hi = double(mx);
}

// Adds axis a's bits into the 63-bit Morton codes (axis 0 writes them: the codes' memory is
// not zeroed first).
template <class T>
void add_morton_axis(const ColumnView& c, const MortonCoder& coder, int a, BigVector<uint64_t>& codes, unsigned threads) {
  const char* base = static_cast<const char*>(c.data);
  int64_t stride = c.stride();
  parallel_ranges(codes.size(), threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      const uint64_t bits = coder.axis_bits(a, double(*reinterpret_cast<const T*>(base + int64_t(i) * stride)));
      codes[i] = a == 0 ? bits : codes[i] | bits;
    }
  });
}

// Builds the shallow tree over the sorted items and the treelets (in parallel) and splices
// them into one preorder tree: node i's own rows are own[own_offset[i]...]. `own` (n words)
// takes every node's own rows in node order: the shallow tree fixes where each treelet's
// rows go before the treelets are built, so they write them in place, side by side, and
// nothing is copied after. fill(shallow,
// shallow node, rows, points): a treelet's rows and their points
// (treelet::TreeletBuilder::build). The items may be overwritten once the treelets are built.
template <class P, class Key, class Codes, class Fill>
void build_tree(const Key* items, uint64_t n, const LayoutOptions& options, unsigned threads, Codes codes, Fill&& fill,
                Layout& out, uint64_t* own, std::vector<uint64_t>& own_offset) {
  ShallowBuilder<Key, Codes> shallow(items, options, codes);
  int root = shallow.build(0, n, 63);
  out.phases.lap("shallow tree");
  // Where each shallow node's own rows go (inner nodes' LOD rows, treelets' own rows), in
  // preorder.
  std::vector<uint64_t> own_at(shallow.nodes.size());
  uint64_t own_size = 0;
  auto place = [&](auto&& self, int s) -> void {
    const ShallowNode& sn = shallow.nodes[size_t(s)];
    own_at[size_t(s)] = own_size;
    if (sn.treelet) return void(own_size += shallow.treelet_count(sn));
    own_size += sn.lod_rows.size();
    self(self, sn.left);
    self(self, sn.right);
  };
  place(place, root);
  std::vector<treelet::TreeletBuilder<P>> treelets;
  treelets.reserve(shallow.tasks.size());
  for (size_t t = 0; t < shallow.tasks.size(); ++t) treelets.emplace_back(options);
  parallel_for(shallow.tasks.size(), threads, [&](uint64_t t) {
    const ShallowNode& s = shallow.nodes[shallow.tasks[t]];
    treelets[t].build([&](BigVector<uint64_t>& rows, BigVector<treelet::Point<P>>& points) { fill(shallow, s, rows, points); },
                      own + own_at[shallow.tasks[t]]);
  });
  out.phases.lap("treelets");
  auto emit = [&](auto&& self, int s) -> void {
    const ShallowNode& sn = shallow.nodes[size_t(s)];
    uint64_t own_pos = own_at[size_t(s)];
    if (sn.treelet) {
      treelet::TreeletBuilder<P>& t = treelets[sn.task];
      uint32_t base = uint32_t(out.nodes.size());
      for (const TreeNode& tn : t.nodes) {
        out.nodes.push_back(TreeNode{tn.right ? tn.right + base : 0, tn.own_count});
        own_offset.push_back(own_pos);
        own_pos += tn.own_count;
      }
      treelet::TreeletBuilder<P>::release(t.nodes);  // free its memory early
      return;
    }
    uint32_t id = uint32_t(out.nodes.size());
    out.nodes.push_back(TreeNode{0, uint32_t(sn.lod_rows.size())});
    own_offset.push_back(own_pos);
    std::copy(sn.lod_rows.begin(), sn.lod_rows.end(), own + own_pos);
    self(self, sn.left);
    out.nodes[id].right = uint32_t(out.nodes.size());
    self(self, sn.right);
  };
  emit(emit, root);
  out.phases.lap("splice");
}

// Below 2^32 rows: every row's point (coordinates and row) is moved once into the bucket
// of its code's top bits and sorted there, in cache (radix_sort.hpp): the treelets then read
// their points in order, not at random from the whole input. The sort's memory, returned
// in `order_pages`: the points (at least two words a row), then a word a row that takes
// every node's own rows (build_tree; `own` points there); the points' first n words then
// take the file order.
template <class P>
void build_bucketed(const ColumnView* const* axes, const LayoutOptions& options, unsigned threads, Layout& out,
                    uint64_t*& own, std::vector<uint64_t>& own_offset, BigVector<uint64_t>& order_pages) {
  using Point = treelet::Point<P>;
  static_assert(sizeof(Point) % 8 == 0 && sizeof(Point) >= 16 && alignof(Point) <= 8);
  const uint64_t n = axes[0]->count;
  const Coordinate coords[3] = {Coordinate(*axes[0]), Coordinate(*axes[1]), Coordinate(*axes[2])};
  const PointCodes<P> codes{MortonCoder(out.bounds)};
  auto code_of = [&](const Point& pt) { return codes.coder.top(pt.c); };
  // The points, then a word a row for the own rows.
  const uint64_t point_words = n * (sizeof(Point) / 8);
  order_pages.resize(point_words + n);
  Point* const points = reinterpret_cast<Point*>(order_pages.data());
  // read(i, point) sets row i's coordinates.
  auto sort = [&](auto&& read) {
    auto visit = [&](uint64_t i, Point& pt) {
      read(i, pt);
      pt.index = uint32_t(i);
      return code_of(pt);
    };
    bucket_sort(n, threads, visit, code_of, [&] { out.phases.lap("morton codes"); }, points);
  };
  if constexpr (std::is_same_v<P, float>) {  // every axis f32: read as such, no test of the type per value
    if (coords[0].stride == 4 && coords[1].stride == 4 && coords[2].stride == 4) {
      const float* c[3] = {reinterpret_cast<const float*>(coords[0].base), reinterpret_cast<const float*>(coords[1].base),
                           reinterpret_cast<const float*>(coords[2].base)};
      sort([&](uint64_t i, Point& pt) { pt.c[0] = c[0][i], pt.c[1] = c[1][i], pt.c[2] = c[2][i]; });
    } else {
      sort([&](uint64_t i, Point& pt) {
        for (int a = 0; a < 3; ++a) pt.c[a] = *reinterpret_cast<const float*>(coords[a].base + int64_t(i) * coords[a].stride);
      });
    }
  } else {
    sort([&](uint64_t i, Point& pt) {
      for (int a = 0; a < 3; ++a) pt.c[a] = P(coords[a][i]);  // exact: P holds every axis' values
    });
  }
  out.phases.lap("sort");
  // A treelet's points are its records, as they are (their index is their row), but those
  // the shallow tree took.
  auto fill = [&](const auto& shallow, const ShallowNode& s, BigVector<uint64_t>&, BigVector<Point>& pts) {
    pts.resize(shallow.treelet_count(s));
    Point* to = pts.data();
    shallow.treelet_runs(s, [&](const Point* from, uint64_t count) { to = std::copy_n(from, count, to); });
  };
  own = order_pages.data() + point_words;
  build_tree<P>(points, n, options, threads, codes, fill, out, own, own_offset);
}

// From 2^32 rows on: keys of the whole code and the row, sorted by comparison; the
// treelets gather their points from the position columns.
template <class P>
void build_keyed(const ColumnView* const* axes, const LayoutOptions& options, unsigned threads, Layout& out,
                 uint64_t*& own, std::vector<uint64_t>& own_offset, BigVector<uint64_t>& order_pages) {
  const uint64_t n = axes[0]->count;
  BigVector<uint64_t> codes(n);
  const MortonCoder coder(out.bounds);
  for (int a = 0; a < 3; ++a) {
    if (axes[a]->spec.dtype == DType::f32)
      add_morton_axis<float>(*axes[a], coder, a, codes, threads);
    else
      add_morton_axis<double>(*axes[a], coder, a, codes, threads);
  }
  out.phases.lap("morton codes");
  BigVector<KeyedRow> keys(n);
  for (uint64_t i = 0; i < n; ++i) keys[i] = KeyedRow{codes[i], i};
  codes = {};
  sort_keys(keys, threads);
  out.phases.lap("sort");
  const Coordinate coords[3] = {Coordinate(*axes[0]), Coordinate(*axes[1]), Coordinate(*axes[2])};
  auto fill = [&](const auto& shallow, const ShallowNode& s, BigVector<uint64_t>& rows,
                  BigVector<treelet::Point<P>>& points) {
    rows.clear();
    rows.reserve(shallow.treelet_count(s));
    shallow.treelet_items(s, [&](const KeyedRow& k) { rows.push_back(k.row); });
    points.resize(rows.size());
    treelet::gather_points(coords, rows.data(), rows.size(), points.data());
  };
  order_pages.resize(2 * n);  // the file order, then the own rows
  own = order_pages.data() + n;
  build_tree<P>(keys.data(), n, options, threads, KeyedRowCodes{}, fill, out, own, own_offset);
}

}  // namespace

void position_bounds(const ColumnView& c, const char* axis, unsigned threads, double& lo, double& hi) {
  if (c.spec.dtype != DType::f32 && c.spec.dtype != DType::f64)
    throw UsageError(std::string("position column '") + axis + "' must be f32 or f64");
  const char* base = static_cast<const char*>(c.data);
  const int64_t stride = c.stride();
  std::mutex m;
  uint64_t first_bad = UINT64_MAX;
  lo = INFINITY, hi = -INFINITY;
  parallel_ranges(c.count, threads, 1 << 16, [&](uint64_t b, uint64_t e) {
    double l = INFINITY, h = -INFINITY;
    uint64_t bad = UINT64_MAX;
    if (c.spec.dtype == DType::f32) bound_range<float>(base, stride, b, e, l, h, bad);
    else bound_range<double>(base, stride, b, e, l, h, bad);
    std::lock_guard lock(m);
    first_bad = std::min(first_bad, bad);
    lo = std::min(lo, l), hi = std::max(hi, h);
  });
  if (first_bad != UINT64_MAX)
    throw UsageError(std::string("position column '") + axis + "' has a NaN or infinite value at row " +
                     std::to_string(first_bad));
}

void check_layout_options(const LayoutOptions& o) {
  if (o.lod_count < 1 || o.lod_count > treelet::kMaxLod) throw UsageError("lod_count must be in [1, " + std::to_string(treelet::kMaxLod) + "]");
  if (o.leaf_size < 2 * o.lod_count || o.leaf_size < 4)
    throw UsageError("leaf_size (" + std::to_string(o.leaf_size) + ") must be at least 4 and at least 2 x lod_count (" +
                     std::to_string(o.lod_count) + ")");
  if (!(o.prefix_share > 0.0 && o.prefix_share <= 1.0))
    throw UsageError("prefix_share must be in (0, 1], got " + number_text(o.prefix_share));
  if (o.region_points == 0) throw UsageError("region_points must be at least 1");
  if (o.treelet_size < o.leaf_size)
    throw UsageError("treelet_size (" + std::to_string(o.treelet_size) + ") must be at least leaf_size (" +
                     std::to_string(o.leaf_size) + ")");
}

Layout build_layout(const ColumnView& x, const ColumnView& y, const ColumnView& z, const LayoutOptions& options) {
  check_layout_options(options);
  const ColumnView* axes[3] = {&x, &y, &z};
  for (int a = 0; a < 3; ++a) {
    if (axes[a]->spec.dtype != DType::f32 && axes[a]->spec.dtype != DType::f64)
      throw UsageError(std::string("position column '") + kPositionColumns[a] + "' must be f32 or f64, got " +
                       dtype_name(axes[a]->spec.dtype));
    if (axes[a]->count != x.count)
      throw UsageError("position columns have different lengths (x: " + std::to_string(x.count) + ", " + kPositionColumns[a] +
                       ": " + std::to_string(axes[a]->count) + ")");
  }
  unsigned threads = options.threads ? options.threads : default_threads();
  uint64_t n = x.count;
  Layout out;
  out.phases.restart();
  for (int a = 0; a < 3; ++a) {
    double lo = 0, hi = 0;
    position_bounds(*axes[a], kPositionColumns[a], threads, lo, hi);
    out.bounds.lo[a] = n ? lo : 0.0;
    out.bounds.hi[a] = n ? hi : 0.0;
  }
  out.phases.lap("bounds");

  const bool f32 = x.spec.dtype == DType::f32 && y.spec.dtype == DType::f32 && z.spec.dtype == DType::f32;
  // The sort's memory, pages touched already: words [0, n) become the file order; `own`
  // points to the own rows of every node, in node order, further on in it.
  BigVector<uint64_t> pages;
  uint64_t* own = nullptr;
  std::vector<uint64_t> own_offset;
  if (n < (uint64_t(1) << 32))
    f32 ? build_bucketed<float>(axes, options, threads, out, own, own_offset, pages)
        : build_bucketed<double>(axes, options, threads, out, own, own_offset, pages);
  else
    f32 ? build_keyed<float>(axes, options, threads, out, own, own_offset, pages)
        : build_keyed<double>(axes, options, threads, out, own, own_offset, pages);

  out.levels = compute_levels(out.nodes, options.lod_count, n);
  // One region (depth 0) would be the level-major order: such a file stays without regions.
  if (const uint32_t s = choose_detail_level(out.levels, options.prefix_share))
    if (const uint32_t r = choose_region_depth(out.levels, s, options.region_points))
      out.levels = compute_levels(out.nodes, options.lod_count, n, s, r);
  const uint64_t* own_rows = own;
  uint64_t* order = pages.data();
  const LevelRuns& lv = out.levels.runs(out.nodes);
  parallel_ranges(out.nodes.size(), threads, 1024, [&](uint64_t b, uint64_t e) {
    for (uint64_t i = b; i < e; ++i) {
      uint64_t src = own_offset[i];
      for (uint32_t r = lv.run_begin[i]; r < lv.run_begin[i + 1]; ++r) {
        const Run& run = lv.runs[r];
        std::copy_n(own_rows + src, run.count, order + run.start);
        src += run.count;
      }
    }
  });
  out.order.swap(pages);
  out.order.resize(n);
  release_unused_pages(out.order);  // the own rows, and what the points took beyond
  out.phases.lap("file order");
  return out;
}

}  // namespace motes
