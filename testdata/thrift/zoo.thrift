// The Thrift test zoo: every type, requiredness, defaults, unions, exceptions, sparse and
// large ids, nested containers and an include. Used by the Rust unit tests and by
// tests/thrift (the differential test against Apache Thrift's Python library).
include "zoo_base.thrift"

namespace py zoo
namespace cpp zoo

typedef list<zoo_base.Point> Path
typedef map<string, i32> Counts

const string GREETING = "hello"
const list<i32> PRIMES = [2, 3, 5, 7]
const map<string, i32> LIMITS = {"low": 1, "high": zoo_base.BASE_LIMIT}

enum Kind { ZERO, ONE, TWO, TEN = 10 }

struct Scalars {
  1: bool b
  2: byte tiny
  3: i16 i16v
  4: i32 i32v
  5: i64 i64v
  6: double d
  7: string s
  8: binary bin
  9: Kind kind
  10: zoo_base.Color color
  11: zoo_base.Timestamp ts
}

struct Defaults {
  1: i32 n = 42
  2: string s = GREETING
  3: optional double d = 2.5
  4: bool flag = true
  5: zoo_base.Color color = zoo_base.Color.GREEN
  6: list<i32> primes = PRIMES
  7: required i64 must
  8: optional binary raw = "raw\tbytes"
}

union Choice {
  1: i32 number
  2: string text
  3: zoo_base.Point point
  4: list<string> words
}

exception Oops {
  1: string message
  2: i32 code
}

struct Containers {
  1: list<i32> ints
  2: set<string> names
  3: map<string, i64> counts
  4: list<list<i32>> grid
  5: map<i32, list<string>> index
  6: list<map<string, double>> rows
  7: set<i64> ids
  8: map<Kind, zoo_base.Point> by_kind
  9: map<zoo_base.Point, string> names_of
  10: list<zoo_base.Point> points
  11: map<string, map<string, list<bool>>> deep
  12: list<binary> blobs
  13: map<double, byte> weird
  14: list<set<i16>> sets
  15: Path path
  16: Counts named
  17: list<Choice> choices
  18: map<list<i32>, set<string>> container_keys
}

struct Sparse {
  1: i32 first
  300: string middle
  32767: i64 last
  i32 implicit_id
  20: optional Sparse next
}

struct Everything {
  1: required Scalars scalars
  2: optional Containers containers
  3: optional Defaults defaults
  4: optional Choice choice
  5: optional Oops oops
  6: optional Sparse sparse
  7: optional list<Everything> children
}

service Zoo {
  Everything echo(1: Everything e) throws (1: Oops oops)
  oneway void fire(1: i32 n)
  void ping()
}
