#include "models/encoder/torch_state_dict.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "fk/status.h"

namespace fk::models::encoder {
namespace {

uint64_t le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A pickle value: only the kinds a state dict of tensors holds.
struct Value {
  enum Kind { none, boolean, integer, string, tuple, list, dict, global, storage, tensor, mark } kind = none;
  int64_t i = 0;
  std::string s;              // string; global "module.name"; storage key
  std::string s2;             // storage: the storage class ("FloatStorage")
  std::vector<Value> items;   // tuple, list; dict: key, value, key, value, ...
};

DType storage_dtype(const std::string& cls, const std::string& source) {
  if (cls == "torch.FloatStorage") return DType::f32;
  if (cls == "torch.HalfStorage") return DType::f16;
  if (cls == "torch.BFloat16Storage") return DType::bf16;
  if (cls == "torch.DoubleStorage") return DType::f64;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": tensor storage ", cls,
          " is not supported (Float, Half, BFloat16 or Double storages)");
}

}  // namespace

TorchStateDict TorchStateDict::open(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  FK_CHECK(f.good(), "cannot read ", path.string());
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return from_bytes(std::move(bytes), path.string());
}

TorchStateDict TorchStateDict::from_bytes(std::vector<uint8_t> bytes, std::string source) {
  TorchStateDict d;
  d.bytes_ = std::move(bytes);
  d.source_ = std::move(source);
  d.read_zip();
  return d;
}

void TorchStateDict::read_zip() {
  const auto& b = bytes_;
  FK_CHECK(b.size() >= 22 && le(b.data(), 4) == 0x04034b50, source_,
           ": not a zip archive (torch.save's format since PyTorch 1.6; the legacy format is not read)");
  // The end-of-central-directory record: the last 22 bytes plus a comment of up to 64 KiB.
  size_t eocd = b.size() - 22;
  while (le(b.data() + eocd, 4) != 0x06054b50) {
    FK_CHECK(eocd > 0 && b.size() - eocd < 22 + 65536, source_, ": zip archive without an end-of-central-directory record");
    --eocd;
  }
  const uint64_t count = le(b.data() + eocd + 10, 2), cd_offset = le(b.data() + eocd + 16, 4);
  FK_CHECK(cd_offset != 0xffffffffu && count != 0xffffu, source_, ": zip64 archives are not supported");
  size_t p = cd_offset;
  for (uint64_t e = 0; e < count; ++e) {
    FK_CHECK(p + 46 <= b.size() && le(b.data() + p, 4) == 0x02014b50, source_, ": corrupt zip central directory");
    const uint64_t method = le(b.data() + p + 10, 2), csize = le(b.data() + p + 20, 4), size = le(b.data() + p + 24, 4);
    const uint64_t name_len = le(b.data() + p + 28, 2), extra_len = le(b.data() + p + 30, 2);
    const uint64_t comment_len = le(b.data() + p + 32, 2), local = le(b.data() + p + 42, 4);
    FK_CHECK(p + 46 + name_len <= b.size(), source_, ": corrupt zip central directory");
    const std::string name(reinterpret_cast<const char*>(b.data() + p + 46), name_len);
    FK_CHECK(method == 0 && csize == size, source_, ": zip entry ", name,
             " is compressed; torch.save writes stored entries only");
    FK_CHECK(local + 30 <= b.size() && le(b.data() + local, 4) == 0x04034b50, source_, ": corrupt zip entry ", name);
    const uint64_t data = local + 30 + le(b.data() + local + 26, 2) + le(b.data() + local + 28, 2);
    FK_CHECK(data + size <= b.size(), source_, ": zip entry ", name, " runs past the end of the file");
    entries_[name] = Entry{data, size};
    p += 46 + name_len + extra_len + comment_len;
  }
  const Entry* pkl = nullptr;
  for (const auto& [name, entry] : entries_)
    if (name.size() >= 9 && name.compare(name.size() - 9, 9, "/data.pkl") == 0) {
      prefix_ = name.substr(0, name.size() - 8);
      pkl = &entry;
    }
  FK_CHECK(pkl != nullptr, source_, ": no <name>/data.pkl in the archive: not a torch.save file");
  if (entries_.count(prefix_ + "byteorder")) {
    const Entry& e = entries_[prefix_ + "byteorder"];
    const std::string order(reinterpret_cast<const char*>(b.data() + e.offset), e.size);
    FK_CHECK(order == "little", source_, ": byte order '", order, "' is not supported");
  }
  unpickle(*pkl);
}

void TorchStateDict::unpickle(const Entry& pkl) {
  const uint8_t* p = bytes_.data() + pkl.offset;
  const uint8_t* end = p + pkl.size;
  std::vector<Value> stack;
  std::vector<size_t> marks;
  std::map<uint64_t, Value> memo;
  auto need = [&](size_t n) {
    FK_CHECK(static_cast<size_t>(end - p) >= n, source_, ": data.pkl ends inside an opcode");
  };
  auto pop = [&]() {
    FK_CHECK(!stack.empty(), source_, ": data.pkl pops an empty stack");
    Value v = std::move(stack.back());
    stack.pop_back();
    return v;
  };
  auto pop_mark = [&]() {
    FK_CHECK(!marks.empty(), source_, ": data.pkl has no mark to pop to");
    const size_t m = marks.back();
    marks.pop_back();
    std::vector<Value> items(std::make_move_iterator(stack.begin() + static_cast<std::ptrdiff_t>(m)),
                             std::make_move_iterator(stack.end()));
    stack.resize(m);
    return items;
  };
  auto tuple_of = [](std::vector<Value> items) {
    Value t;
    t.kind = Value::tuple;
    t.items = std::move(items);
    return t;
  };
  auto str = [&](size_t n) {
    need(n);
    Value v;
    v.kind = Value::string;
    v.s.assign(reinterpret_cast<const char*>(p), n);
    p += n;
    return v;
  };
  auto line = [&]() {
    const uint8_t* nl = static_cast<const uint8_t*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    FK_CHECK(nl != nullptr, source_, ": data.pkl: unterminated GLOBAL");
    std::string s(reinterpret_cast<const char*>(p), static_cast<size_t>(nl - p));
    p = nl + 1;
    return s;
  };
  auto integer = [](int64_t i) {
    Value v;
    v.kind = Value::integer;
    v.i = i;
    return v;
  };
  auto ints_of = [&](const Value& t, const char* what) {
    FK_CHECK(t.kind == Value::tuple, source_, ": tensor ", what, " is not a tuple");
    std::vector<int64_t> out;
    for (const Value& x : t.items) {
      FK_CHECK(x.kind == Value::integer, source_, ": tensor ", what, " holds a non-integer");
      out.push_back(x.i);
    }
    return out;
  };
  Value result;
  bool stopped = false;
  while (!stopped) {
    need(1);
    const uint8_t op = *p++;
    switch (op) {
      case 0x80: need(1), ++p; break;               // PROTO
      case 0x95: need(8), p += 8; break;            // FRAME
      case '(': marks.push_back(stack.size()); break;  // MARK
      case ')': stack.push_back(tuple_of({})); break;  // EMPTY_TUPLE
      case 't': stack.push_back(tuple_of(pop_mark())); break;
      case 0x85: case 0x86: case 0x87: {               // TUPLE1..3
        const size_t n = op - 0x84u;
        FK_CHECK(stack.size() >= n, source_, ": data.pkl: TUPLE", n, " on a short stack");
        std::vector<Value> items(std::make_move_iterator(stack.end() - static_cast<std::ptrdiff_t>(n)),
                                 std::make_move_iterator(stack.end()));
        stack.resize(stack.size() - n);
        stack.push_back(tuple_of(std::move(items)));
        break;
      }
      case '}': { Value d; d.kind = Value::dict; stack.push_back(d); break; }  // EMPTY_DICT
      case ']': { Value l; l.kind = Value::list; stack.push_back(l); break; }  // EMPTY_LIST
      case 's': {                                                                // SETITEM
        Value v = pop(), k = pop();
        FK_CHECK(!stack.empty() && stack.back().kind == Value::dict, source_, ": data.pkl: SETITEM on a non-dict");
        stack.back().items.push_back(std::move(k));
        stack.back().items.push_back(std::move(v));
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<Value> kv = pop_mark();
        FK_CHECK(!stack.empty() && stack.back().kind == Value::dict && kv.size() % 2 == 0, source_,
                 ": data.pkl: SETITEMS on a non-dict");
        for (Value& x : kv) stack.back().items.push_back(std::move(x));
        break;
      }
      case 'a': { Value v = pop(); FK_CHECK(!stack.empty() && stack.back().kind == Value::list, source_, ": data.pkl: APPEND on a non-list"); stack.back().items.push_back(std::move(v)); break; }
      case 'e': { std::vector<Value> xs = pop_mark(); FK_CHECK(!stack.empty() && stack.back().kind == Value::list, source_, ": data.pkl: APPENDS on a non-list"); for (Value& x : xs) stack.back().items.push_back(std::move(x)); break; }
      case 'X': need(4); { const size_t n = le(p, 4); p += 4; stack.push_back(str(n)); } break;  // BINUNICODE
      case 0x8c: need(1); { const size_t n = *p++; stack.push_back(str(n)); } break;            // SHORT_BINUNICODE
      case 'K': need(1), stack.push_back(integer(*p)), p += 1; break;                          // BININT1
      case 'M': need(2), stack.push_back(integer(static_cast<int64_t>(le(p, 2)))), p += 2; break;  // BININT2
      case 'J': need(4), stack.push_back(integer(static_cast<int32_t>(le(p, 4)))), p += 4; break;  // BININT
      case 0x8a: {  // LONG1
        need(1);
        const size_t n = *p++;
        need(n);
        FK_CHECK(n <= 8, source_, ": data.pkl: integer of ", n, " bytes");
        uint64_t v = n ? le(p, static_cast<int>(n)) : 0;
        if (n && n < 8 && (p[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        stack.push_back(integer(static_cast<int64_t>(v)));
        p += n;
        break;
      }
      case 'N': stack.push_back(Value{}); break;
      case 0x88: case 0x89: { Value v; v.kind = Value::boolean; v.i = op == 0x88; stack.push_back(v); break; }
      case 'c': { Value g; g.kind = Value::global; g.s = line(); g.s += "." + line(); stack.push_back(g); break; }
      case 'q': need(1), memo[*p] = stack.back(), p += 1; break;                  // BINPUT
      case 'r': need(4), memo[le(p, 4)] = stack.back(), p += 4; break;           // LONG_BINPUT
      case 0x94: memo[memo.size()] = stack.back(); break;                        // MEMOIZE
      case 'h': need(1), stack.push_back(memo.at(*p)), p += 1; break;            // BINGET
      case 'j': need(4), stack.push_back(memo.at(le(p, 4))), p += 4; break;      // LONG_BINGET
      case 'Q': {  // BINPERSID: ('storage', storage class, key, location, numel)
        const Value pid = pop();
        FK_CHECK(pid.kind == Value::tuple && pid.items.size() >= 5 && pid.items[0].s == "storage" &&
                     pid.items[1].kind == Value::global && pid.items[2].kind == Value::string,
                 source_, ": data.pkl: a persistent id that is not a tensor storage");
        Value st;
        st.kind = Value::storage;
        st.s2 = pid.items[1].s;
        st.s = pid.items[2].s;
        stack.push_back(st);
        break;
      }
      case 'R': {  // REDUCE: only the two callables a state dict of tensors needs
        Value args = pop(), fn = pop();
        FK_CHECK(fn.kind == Value::global && args.kind == Value::tuple, source_, ": data.pkl: REDUCE of a non-callable");
        if (fn.s == "collections.OrderedDict") {
          FK_CHECK(args.items.empty(), source_, ": data.pkl: OrderedDict with arguments");
          Value d;
          d.kind = Value::dict;
          stack.push_back(d);
        } else if (fn.s == "torch._utils._rebuild_tensor_v2") {
          FK_CHECK(args.items.size() >= 4 && args.items[0].kind == Value::storage, source_,
                   ": data.pkl: _rebuild_tensor_v2 without a storage");
          Value t;
          t.kind = Value::tensor;
          t.items = std::move(args.items);
          stack.push_back(std::move(t));
        } else {
          FK_FAIL(FK_ERR_INVALID_ARGUMENT, source_, ": data.pkl calls ", fn.s,
                  ", which a state dict of tensors does not; it is not run");
        }
        break;
      }
      case 'b': pop(); break;  // BUILD: the OrderedDict's _metadata attribute, not needed
      case '.': result = pop(), stopped = true; break;
      default:
        FK_FAIL(FK_ERR_INVALID_ARGUMENT, source_, ": data.pkl uses pickle opcode 0x", std::hex, static_cast<int>(op),
                ", which a state dict of tensors written by torch.save does not");
    }
  }
  FK_CHECK(result.kind == Value::dict, source_, ": data.pkl does not hold a state dict (a dict of tensors)");
  for (size_t k = 0; k + 1 < result.items.size(); k += 2) {
    const Value& name = result.items[k];
    const Value& t = result.items[k + 1];
    FK_CHECK(name.kind == Value::string && t.kind == Value::tensor, source_,
             ": the state dict holds something other than named tensors");
    TensorRef ref;
    ref.dtype = storage_dtype(t.items[0].s2, source_);
    ref.storage_key = t.items[0].s;
    FK_CHECK(t.items[1].kind == Value::integer, source_, ": tensor '", name.s, "' has no storage offset");
    ref.storage_offset = t.items[1].i;
    const std::vector<int64_t> shape = ints_of(t.items[2], "size");
    ref.shape = Shape(shape.begin(), shape.end());
    ref.stride = ints_of(t.items[3], "stride");
    FK_CHECK(ref.stride.size() == ref.shape.size(), source_, ": tensor '", name.s, "' has ", ref.shape.size(),
             " sizes but ", ref.stride.size(), " strides");
    FK_CHECK(entries_.count(prefix_ + "data/" + ref.storage_key), source_, ": tensor '", name.s, "' has storage ",
             ref.storage_key, " but the archive has no ", prefix_, "data/", ref.storage_key);
    tensors_[name.s] = std::move(ref);
  }
}

std::vector<std::string> TorchStateDict::names() const {
  std::vector<std::string> n;
  for (const auto& [name, t] : tensors_) n.push_back(name);
  return n;
}

Shape TorchStateDict::shape(const std::string& name) const {
  const auto it = tensors_.find(name);
  FK_CHECK(it != tensors_.end(), source_, " has no tensor '", name, "'");
  return it->second.shape;
}

Tensor TorchStateDict::load(const std::string& name) const {
  const auto it = tensors_.find(name);
  FK_CHECK(it != tensors_.end(), source_, " has no tensor '", name, "'");
  const TensorRef& r = it->second;
  const Entry& storage = entries_.at(prefix_ + "data/" + r.storage_key);
  Tensor t = Tensor::empty(r.shape, r.dtype);
  const size_t es = t.view().element_size();
  const int64_t n = t.numel(), rank = static_cast<int64_t>(r.shape.size());
  auto* out = static_cast<uint8_t*>(t.data());
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = r.storage_offset;
    for (int64_t d = rank - 1; d >= 0; --d) {
      off += (rem % r.shape[static_cast<size_t>(d)]) * r.stride[static_cast<size_t>(d)];
      rem /= r.shape[static_cast<size_t>(d)];
    }
    FK_CHECK(off >= 0 && static_cast<uint64_t>(off + 1) * es <= storage.size, source_, ": tensor '", name,
             "' reaches past its storage");
    std::memcpy(out + static_cast<size_t>(i) * es, bytes_.data() + storage.offset + static_cast<size_t>(off) * es, es);
  }
  return t;
}

}  // namespace fk::models::encoder
