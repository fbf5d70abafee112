// The Apache Thrift C++ peer of `optimus bench`, in its fastest form: the embedded workloads'
// structs as `thrift --gen cpp:templates` generates them from testdata/thrift/peers.thrift
// (read/write templated on the protocol: no virtual call per field), over
// TBinaryProtocolT<TMemoryBuffer> / TCompactProtocolT<TMemoryBuffer>, behind a C interface the
// bench calls. Built by build.rs where the Thrift compiler and libthrift are installed
// (Debian: thrift-compiler, libthrift-dev).
//
// `which` names a workload's struct: 0 tbench::Flat, 1 tbench::Mixed, 2 tbench::Nested;
// `protocol`: 0 binary, 1 compact.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include "peers_types.h"

namespace {

using apache::thrift::transport::TMemoryBuffer;
using Binary = apache::thrift::protocol::TBinaryProtocolT<TMemoryBuffer>;
using Compact = apache::thrift::protocol::TCompactProtocolT<TMemoryBuffer>;

// One workload's reused struct, with a reused input buffer (the bytes to read are copied in:
// observing the caller's bytes instead builds a new TMemoryBuffer per message, which is
// slower) and a reused output buffer, each with both protocols over it.
class Peer {
 public:
  virtual ~Peer() = default;
  // Reads `data` in `protocol` into the reused struct: 1 on success.
  virtual int read(int protocol, const uint8_t* data, size_t len) = 0;
  // Writes the reused struct in `protocol` into the output buffer (reset first); `*out`
  // points at the bytes until the next call. Returns their length, or SIZE_MAX on an error.
  virtual size_t write(int protocol, const uint8_t** out) = 0;
};

template <class M>
class Typed final : public Peer {
 public:
  Typed()
      : in_(std::make_shared<TMemoryBuffer>(4096)),
        out_(std::make_shared<TMemoryBuffer>(4096)),
        in_binary_(in_),
        in_compact_(in_),
        out_binary_(out_),
        out_compact_(out_) {}

  int read(int protocol, const uint8_t* data, size_t len) override {
    try {
      in_->resetBuffer();
      in_->write(data, static_cast<uint32_t>(len));
      if (protocol == 0) {
        msg_.read(&in_binary_);
      } else {
        msg_.read(&in_compact_);
      }
      // The end of a message: resets the transport's message-size budget.
      in_->readEnd();
      return 1;
    } catch (const std::exception&) {
      return 0;
    }
  }

  size_t write(int protocol, const uint8_t** out) override {
    try {
      out_->resetBuffer();
      if (protocol == 0) {
        msg_.write(&out_binary_);
      } else {
        msg_.write(&out_compact_);
      }
      uint8_t* buf;
      uint32_t n;
      out_->getBuffer(&buf, &n);
      *out = buf;
      return n;
    } catch (const std::exception&) {
      return SIZE_MAX;
    }
  }

 private:
  M msg_;
  std::shared_ptr<TMemoryBuffer> in_, out_;
  Binary in_binary_;
  Compact in_compact_;
  Binary out_binary_;
  Compact out_compact_;
};

}  // namespace

extern "C" {

// A new peer for the struct `which` names, or null for an unknown `which`.
void* optimus_thrift_new(int which) {
  try {
    switch (which) {
      case 0: return static_cast<Peer*>(new Typed<tbench::Flat>());
      case 1: return static_cast<Peer*>(new Typed<tbench::Mixed>());
      case 2: return static_cast<Peer*>(new Typed<tbench::Nested>());
      default: return nullptr;
    }
  } catch (const std::exception&) {
    return nullptr;
  }
}

void optimus_thrift_delete(void* p) { delete static_cast<Peer*>(p); }

// Reads `data` in `protocol` into the peer's reused struct: 1 on success.
int optimus_thrift_read(void* p, int protocol, const uint8_t* data, size_t len) {
  return static_cast<Peer*>(p)->read(protocol, data, len);
}

// Writes the peer's struct in `protocol` into its reused output buffer: the length, with
// `*out` at the bytes (valid until the next call on `p`), or SIZE_MAX on an error.
size_t optimus_thrift_write(void* p, int protocol, const uint8_t** out) {
  return static_cast<Peer*>(p)->write(protocol, out);
}

// Reads `data` in protocol `from` into the reused struct and writes it in `to`: as
// `optimus_thrift_write`, or SIZE_MAX where the read fails.
size_t optimus_thrift_transcode(void* p, int from, int to, const uint8_t* data, size_t len,
                                const uint8_t** out) {
  Peer* peer = static_cast<Peer*>(p);
  if (peer->read(from, data, len) == 0) return SIZE_MAX;
  return peer->write(to, out);
}

}  // extern "C"
