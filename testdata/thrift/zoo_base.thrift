// Included by zoo.thrift: an enum, a struct, a typedef and constants used across files.
namespace py zoo_base
namespace cpp zoo_base

enum Color {
  RED = 1,
  GREEN = 2,
  BLUE = 10,
  NEGATIVE = -5
}

typedef i64 Timestamp

const i32 BASE_LIMIT = 7
const Color DEFAULT_COLOR = Color.GREEN

struct Point {
  1: required i32 x
  2: required i32 y
  3: optional string label
}
