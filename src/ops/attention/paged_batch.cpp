#include "ops/attention/paged_batch.h"

#include "fk/element.h"
#include "fk/status.h"

namespace fk::ops::attn {

namespace {
std::vector<int32_t> read_i32(const TensorView& v) {
  std::vector<int32_t> out(static_cast<size_t>(v.shape[0]));
  for (int64_t i = 0; i < v.shape[0]; ++i) out[i] = static_cast<int32_t>(get_index(v, i));
  return out;
}

void expect_indptr(const char* op, const char* name, const std::vector<int32_t>& p) {
  FK_CHECK(p[0] == 0, op, ": ", name, "[0] must be 0, got ", p[0]);
  for (size_t i = 1; i < p.size(); ++i)
    FK_CHECK(p[i] >= p[i - 1], op, ": ", name, " must not decrease, but ", name, "[", i, "] = ", p[i], " < ", name,
             "[", i - 1, "] = ", p[i - 1]);
}
}  // namespace

PagedBatch read_paged_batch(const char* op, const TensorView* qo_indptr, const TensorView& kv_indptr,
                            const TensorView& kv_last_page_len, int64_t num_q_tokens, int64_t num_page_entries,
                            int64_t page_size) {
  PagedBatch pb;
  pb.page_size = page_size;
  pb.kv_indptr = read_i32(kv_indptr);
  pb.kv_last_page_len = read_i32(kv_last_page_len);
  const int64_t B = static_cast<int64_t>(pb.kv_indptr.size()) - 1;
  if (qo_indptr) {
    pb.qo_indptr = read_i32(*qo_indptr);
    expect_indptr(op, "qo_indptr", pb.qo_indptr);
    FK_CHECK(pb.qo_indptr[B] == num_q_tokens, op, ": qo_indptr[B] = ", pb.qo_indptr[B],
             " must equal the number of query tokens ", num_q_tokens);
  } else {
    pb.qo_indptr.resize(B + 1);
    for (int64_t b = 0; b <= B; ++b) pb.qo_indptr[b] = static_cast<int32_t>(b);
  }
  expect_indptr(op, "kv_indptr", pb.kv_indptr);
  FK_CHECK(pb.kv_indptr[B] <= num_page_entries, op, ": kv_indptr[B] = ", pb.kv_indptr[B],
           " exceeds the length of kv_indices (", num_page_entries, ")");
  pb.kv_len.resize(B);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t pages = pb.num_pages(b);
    int64_t kv_len = 0;
    if (pages > 0) {
      const int64_t last = pb.kv_last_page_len[b];
      FK_CHECK(last >= 1 && last <= page_size, op, ": kv_last_page_len[", b, "] = ", last, " must be in [1, ",
               page_size, "] (page_size)");
      kv_len = (pages - 1) * page_size + last;
      FK_CHECK(kv_len <= INT32_MAX, op, ": sequence ", b, " has ", kv_len, " KV tokens, more than 2^31 - 1");
    }
    pb.kv_len[b] = static_cast<int32_t>(kv_len);
    if (!qo_indptr) FK_CHECK(kv_len >= 1, op, ": sequence ", b, " has no KV tokens; decode needs kv_len >= 1");
    FK_CHECK(pb.qo_len(b) <= kv_len, op, ": sequence ", b, " has ", pb.qo_len(b), " query tokens but only ", kv_len,
             " KV tokens; the queries must be the last tokens of the KV (write their K/V first)");
  }
  return pb;
}

void expect_same_values(const char* op, const char* mirror, const TensorView& host, const char* of,
                        const TensorView& metadata) {
  for (int64_t i = 0; i < host.shape[0]; ++i) {
    const int64_t h = get_index(host, i), m = get_index(metadata, i);
    FK_CHECK(h == m, op, ": ", mirror, " must equal ", of, ", but ", mirror, "[", i, "] = ", h, " and ", of, "[", i,
             "] = ", m);
  }
}

}  // namespace fk::ops::attn
