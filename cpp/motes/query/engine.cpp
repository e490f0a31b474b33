#include "motes/query/engine.hpp"

#include "motes/query/derive.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "motes/core/threads.hpp"
#include "motes/particles/layout/tree.hpp"
#include "motes/query/evaluate.hpp"
#include "motes/query/indexed.hpp"

namespace motes {

namespace {

using K = Expr::Kind;

void push_segment(std::vector<Segment>& out, uint64_t start, uint64_t count) {
  if (!count) return;
  if (!out.empty() && out.back().start + out.back().count == start) out.back().count += count;
  else out.push_back({start, count});
}

ExprPtr box_expression(const Box& b) {
  ExprPtr all;
  for (int a = 0; a < 3; ++a) {
    if (!(b.lo[a] <= b.hi[a]))
      throw UsageError(std::string("box is empty or invalid on ") + kPositionColumns[a] + ": [" + number_text(b.lo[a]) + ", " +
                       number_text(b.hi[a]) + "]");
    for (int side = 0; side < 2; ++side) {
      auto cmp = std::make_unique<Expr>();
      cmp->kind = side == 0 ? K::ge : K::le;
      auto col = std::make_unique<Expr>();
      col->kind = K::column;
      col->name = kPositionColumns[a];
      auto num = std::make_unique<Expr>();
      num->kind = K::number;
      num->value = side == 0 ? b.lo[a] : b.hi[a];
      num->exact = num->value;
      cmp->args.push_back(std::move(col));
      cmp->args.push_back(std::move(num));
      if (!all) {
        all = std::move(cmp);
      } else {
        auto both = std::make_unique<Expr>();
        both->kind = K::and_;
        both->args.push_back(std::move(all));
        both->args.push_back(std::move(cmp));
        all = std::move(both);
      }
    }
  }
  return all;
}

}  // namespace

void check_query_spec(const QuerySpec& spec) {
  check_quality(spec.quality_from);
  check_quality(spec.quality_to);
  if (spec.quality_from > spec.quality_to)
    throw UsageError("quality range is reversed: from " + number_text(spec.quality_from) + " to " +
                     number_text(spec.quality_to));
  if (spec.fraction) {
    if (!(*spec.fraction >= 0.0 && *spec.fraction <= 1.0))
      throw UsageError("fraction must be a number in [0, 1], got " + number_text(*spec.fraction));
    if (spec.quality_from != 0.0 || spec.quality_to != 1.0)
      throw UsageError("pass either a fraction or a quality, not both");
  }
}

Query::Query(std::shared_ptr<const ParticleFile> file, const QuerySpec& spec) : Query(Collection::of(std::move(file)), spec) {}

Query::Query(std::shared_ptr<const Collection> collection, const QuerySpec& spec)
    : collection_(std::move(collection)),
      quality_from_(spec.quality_from),
      quality_to_(spec.quality_to),
      fraction_(spec.fraction),
      cancel_(spec.cancel, spec.deadline),
      prefetch_(spec.prefetch) {
  check_query_spec(spec);
  if (fraction_) quality_from_ = 0.0, quality_to_ = *fraction_ > 0.0 ? 1.0 : 0.0;
  threads_ = spec.threads ? spec.threads : default_threads();
  std::vector<std::string> names;
  for (const ColumnSpec& c : collection_->schema()) names.push_back(c.name);
  if (!spec.where.empty()) predicate_ = parse_expression(spec.where);
  if (spec.box) {
    ExprPtr b = box_expression(*spec.box);
    if (predicate_) {
      auto both = std::make_unique<Expr>();
      both->kind = K::and_;
      both->args.push_back(std::move(b));  // box first: cheap and usually most selective
      both->args.push_back(std::move(predicate_));
      predicate_ = std::move(both);
    } else {
      predicate_ = std::move(b);
    }
  }
  if (predicate_) {
    expand_derived(*predicate_, *collection_);  // a derived quantity's name: its expression
    bind_columns(*predicate_, names);
    bind_fields(*predicate_, spec.fields);
  }
}

size_t Query::run(const Sink& sink, Schedule schedule, uint64_t* counted) {
  CancelScope scope(&cancel_);  // reads that wait on a store stop with the query
  counters_ = {};
  covered_.assign(collection_->part_count(), nullptr);
  size_t chunks = 0;
  cancel_.check();
  const Parts parts = parts_to_read();
  counters_.parts_pruned = parts.pruned;
  for (uint32_t part : parts.read) {
    cancel_.check();
    std::shared_ptr<const ParticleFile> file = collection_->part(part);
    file->check_unchanged();  // a file truncated under us is an error here, not SIGBUS below
    if (counted)
      if (std::optional<uint64_t> n = indexed_count(*file, counters_)) {
        *counted += *n;
        continue;
      }
    QueryCounters c;
    std::vector<Task> tasks = plan(*file, c, covered_[part]);
    ++counters_.parts_read;
    counters_.nodes_visited += c.nodes_visited, counters_.nodes_pruned += c.nodes_pruned, counters_.nodes_all += c.nodes_all;
    counters_.points_tested += c.points_tested, counters_.points_taken_whole += c.points_taken_whole;
    counters_.scanned |= c.scanned;
    counters_.id_index_parts += c.id_index_parts, counters_.tail_index_parts += c.tail_index_parts;
    counters_.index_rows += c.index_rows;
    counters_.covered_parts += covered_[part] != nullptr;
    if (prefetch_) prefetch(*file, tasks, counters_);
    chunks += run_part(*file, part, tasks, chunks, sink, schedule);
  }
  return chunks;
}

std::optional<uint64_t> Query::indexed_count(const ParticleFile& file, QueryCounters& counters) const {
  if (!predicate_ || !full_detail(file)) return std::nullopt;
  const std::optional<IndexedCount> n = motes::indexed_count(file, *predicate_);
  if (!n) return std::nullopt;
  // As the plan taking the index's rows whole counts them (query/part_planner.cpp, by_index).
  ++counters.parts_read;
  counters.points_taken_whole += n->count;
  counters.index_rows += n->count;
  ++(n->index == IndexedRows::Index::id ? counters.id_index_parts : counters.tail_index_parts);
  return n->count;
}

void Query::prefetch(const ParticleFile& file, const std::vector<Task>& tasks, QueryCounters& counters) const {
  if (!predicate_) return;
  // The predicate's columns over the runs to test, as few large reads issued together.
  std::vector<ByteRange> ranges;
  std::vector<uint64_t> blocks;
  for (int c : referenced_columns(*predicate_)) {
    // With quantile codes only some runs need values; which is known only once the codes are
    // read, so the values are left to the reads of the evaluation.
    const BlockStream* codes = file.codes(size_t(c));
    const BlockStream& s = codes ? *codes : file.values(size_t(c));
    blocks.clear();
    for (const Task& t : tasks)
      if (!t.all) s.blocks_of(t.start, t.count, blocks);
    if (s.in_place()) {
      for (uint64_t b : blocks) s.byte_ranges(b * s.per_block(), s.per_block(), ranges);
    } else {
      s.block_ranges(blocks, ranges);
    }
  }
  const ReadCount sent = file.source().will_need(ranges);  // coalesced by the source (io/)
  counters.read_requests += sent.requests;
  counters.read_bytes += sent.bytes;
}

size_t Query::run_part(const ParticleFile& file, uint32_t part, const std::vector<Task>& tasks, size_t first_chunk,
                       const Sink& sink, Schedule schedule) {
  // Chunks of about equal work; whole runs cost little per point (at most as much as 64
  // tested ones, so that an index's thousands of single rows make one chunk, not a
  // round of the thread pool).
  std::vector<size_t> chunk_begin{0};
  uint64_t work = 0;
  const uint64_t target = 1 << 15;
  for (size_t k = 0; k < tasks.size(); ++k) {
    work += tasks[k].all ? std::min<uint64_t>(tasks[k].count, 64) : tasks[k].count;
    if (work >= target) {
      chunk_begin.push_back(k + 1);
      work = 0;
    }
  }
  if (chunk_begin.back() != tasks.size()) chunk_begin.push_back(tasks.size());
  size_t chunks = chunk_begin.size() - 1;
  uint32_t max_run = 1;
  for (const Task& t : tasks)
    if (!t.all) max_run = std::max<uint32_t>(max_run, uint32_t(t.count));
  const Expr* pred = predicate_.get();
  auto process = [&](unsigned worker, uint64_t c) {
    cancel_.check();
    std::vector<Segment> segs;
    segs.reserve(chunk_begin[c + 1] - chunk_begin[c]);  // most tasks give one segment or none
    std::vector<uint8_t> mask;
    std::unique_ptr<Evaluator> ev;  // made for the first task to test (a chunk of whole runs needs none)
    for (size_t k = chunk_begin[c]; k < chunk_begin[c + 1]; ++k) {
      const Task& t = tasks[k];
      if (t.all) {
        push_segment(segs, t.start, t.count);
        continue;
      }
      if (mask.empty()) {
        mask.resize(max_run);
        if (pred) ev = std::make_unique<Evaluator>(file, *pred);
      }
      uint32_t m = uint32_t(t.count);
      if (ev) ev->eval(t.start, m, mask.data());
      else std::fill(mask.begin(), mask.begin() + m, uint8_t(1));
      sample_.apply(t.start, m, mask.data());  // rows of a partly taken level: only the sampled ones
      for (uint32_t i = 0; i < m;) {
        uint64_t word;
        if (i + 8 <= m && (std::memcpy(&word, mask.data() + i, 8), word == 0)) {
          i += 8;
          continue;
        }
        if (!mask[i]) {
          ++i;
          continue;
        }
        uint32_t j = i + 1;
        while (j < m && mask[j]) ++j;
        push_segment(segs, t.start + i, j - i);
        i = j;
      }
    }
    sink(worker, first_chunk + size_t(c), part, segs);
  };
  if (schedule == Schedule::fixed) {
    // Worker w takes chunks w, w + t, w + 2t, ... in order: per-worker partial sums
    // come out the same on every run with the same thread count.
    const uint64_t t = std::max<uint64_t>(1, std::min<uint64_t>(threads_, chunks));
    parallel_for_worker(t, unsigned(t), [&](unsigned, uint64_t w) {
      for (uint64_t c = w; c < chunks; c += t) process(unsigned(w), c);
    });
  } else {
    parallel_for_worker(chunks, threads_, process);
  }
  return chunks;
}

}  // namespace motes
