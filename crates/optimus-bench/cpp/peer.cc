// The Google protobuf C++ peer of `optimus bench`: the embedded workloads' messages, as protoc
// generates them from testdata/peers.proto, behind a C interface the bench calls. Built by
// build.rs where protoc and libprotobuf are installed (Debian: protobuf-compiler,
// libprotobuf-dev).
//
// `which` names a workload's type: 0 bench.Flat, 1 bench.Mixed, 2 bench.Nested.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <google/protobuf/arena.h>
#include <google/protobuf/util/json_util.h>

#include "peers.pb.h"

using google::protobuf::Message;

namespace {

Message* make(int which) {
  switch (which) {
    case 0: return new bench::Flat();
    case 1: return new bench::Mixed();
    case 2: return new bench::Nested();
    default: return nullptr;
  }
}

// A new message of type `which` on `arena`, or null for an unknown `which`.
Message* make_on(google::protobuf::Arena* arena, int which) {
  switch (which) {
    case 0: return google::protobuf::Arena::CreateMessage<bench::Flat>(arena);
    case 1: return google::protobuf::Arena::CreateMessage<bench::Mixed>(arena);
    case 2: return google::protobuf::Arena::CreateMessage<bench::Nested>(arena);
    default: return nullptr;
  }
}

// Copies `s` to `out` when it fits; returns its size either way.
size_t copy_out(const std::string& s, char* out, size_t cap) {
  if (out != nullptr && s.size() <= cap) std::memcpy(out, s.data(), s.size());
  return s.size();
}

}  // namespace

extern "C" {

// A new empty message of type `which`, or null for an unknown `which`.
void* optimus_cpp_new(int which) { return make(which); }

void optimus_cpp_delete(void* m) { delete static_cast<Message*>(m); }

// Parses `data` into `m` (cleared first, its allocations kept): 1 on success.
int optimus_cpp_parse(void* m, const uint8_t* data, size_t len) {
  return static_cast<Message*>(m)->ParseFromArray(data, static_cast<int>(len)) ? 1 : 0;
}

// Serializes `m` into a new string (copied to `out` when it fits in `cap`): its size.
size_t optimus_cpp_serialize(const void* m, uint8_t* out, size_t cap) {
  return copy_out(static_cast<const Message*>(m)->SerializeAsString(),
                  reinterpret_cast<char*>(out), cap);
}

// Serializes `m` into `out` when it fits in `cap` (SerializeToArray's fastest form: the size,
// then the bytes into caller memory, no string): its size either way.
size_t optimus_cpp_serialize_to(const void* m, uint8_t* out, size_t cap) {
  const Message* msg = static_cast<const Message*>(m);
  size_t n = msg->ByteSizeLong();
  if (out != nullptr && n <= cap) msg->SerializeWithCachedSizesToArray(out);
  return n;
}

// A new arena for `optimus_cpp_parse_on_arena`.
void* optimus_cpp_arena_new() { return new google::protobuf::Arena(); }

void optimus_cpp_arena_delete(void* a) { delete static_cast<google::protobuf::Arena*>(a); }

// Resets `arena` (its first block kept) and parses `data` into a new message of type `which`
// on it: 1 on success.
int optimus_cpp_parse_on_arena(void* arena, int which, const uint8_t* data, size_t len) {
  google::protobuf::Arena* a = static_cast<google::protobuf::Arena*>(arena);
  a->Reset();
  Message* m = make_on(a, which);
  return m != nullptr && m->ParseFromArray(data, static_cast<int>(len)) ? 1 : 0;
}

// Writes `m` as proto3 JSON into a new string (copied to `out` when it fits): its size, or
// SIZE_MAX when it cannot be written.
size_t optimus_cpp_to_json(const void* m, char* out, size_t cap) {
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(*static_cast<const Message*>(m), &json).ok())
    return SIZE_MAX;
  return copy_out(json, out, cap);
}

// Reads proto3 JSON into a new message of type `which`, then drops it: 1 on success.
int optimus_cpp_from_json_new(int which, const char* text, size_t len) {
  Message* m = make(which);
  if (m == nullptr) return 0;
  bool ok = google::protobuf::util::JsonStringToMessage(std::string(text, len), m).ok();
  delete m;
  return ok ? 1 : 0;
}

// Parses `data` into a new message of type `which` and writes it as JSON into a new string,
// then drops both: 1 on success.
int optimus_cpp_protobuf_to_json(int which, const uint8_t* data, size_t len) {
  Message* m = make(which);
  if (m == nullptr) return 0;
  std::string json;
  bool ok = m->ParseFromArray(data, static_cast<int>(len)) &&
            google::protobuf::util::MessageToJsonString(*m, &json).ok();
  delete m;
  return ok ? 1 : 0;
}

}  // extern "C"
