//! The embedded workloads' messages (`testdata/peers.proto`, package `bench`) as prost types,
//! written as prost-build would generate them, for the prost peer of `optimus bench`. Each
//! bench run checks that they decode and re-encode every embedded workload byte for byte.

use prost::Message;

/// `bench.Flat`.
#[derive(Clone, PartialEq, Message)]
pub struct Flat {
    #[prost(int32, tag = "1")]
    pub i32_tiny: i32,
    #[prost(int32, tag = "2")]
    pub i32_small: i32,
    #[prost(int32, tag = "3")]
    pub i32_mid: i32,
    #[prost(int32, tag = "4")]
    pub i32_large: i32,
    #[prost(int32, tag = "5")]
    pub i32_neg: i32,
    #[prost(int64, tag = "6")]
    pub i64_small: i64,
    #[prost(int64, tag = "7")]
    pub i64_mid: i64,
    #[prost(int64, tag = "8")]
    pub i64_large: i64,
    #[prost(uint32, tag = "9")]
    pub u32_a: u32,
    #[prost(uint32, tag = "10")]
    pub u32_b: u32,
    #[prost(uint64, tag = "11")]
    pub u64_a: u64,
    #[prost(uint64, tag = "12")]
    pub u64_b: u64,
    #[prost(sint32, tag = "13")]
    pub s32_a: i32,
    #[prost(sint64, tag = "14")]
    pub s64_a: i64,
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
    #[prost(bool, tag = "16")]
    pub flag_a: bool,
    #[prost(bool, tag = "17")]
    pub flag_b: bool,
    #[prost(bool, tag = "18")]
    pub flag_c: bool,
    #[prost(bool, tag = "19")]
    pub flag_d: bool,
    #[prost(fixed64, tag = "20")]
    pub id_hash: u64,
    #[prost(fixed64, tag = "21")]
    pub trace_id: u64,
    #[prost(sfixed64, tag = "22")]
    pub offset: i64,
    #[prost(double, tag = "23")]
    pub lat: f64,
    #[prost(double, tag = "24")]
    pub lon: f64,
    #[prost(double, tag = "25")]
    pub score: f64,
    #[prost(double, tag = "26")]
    pub weight: f64,
    #[prost(fixed32, tag = "27")]
    pub crc: u32,
    #[prost(float, tag = "28")]
    pub ratio: f32,
    #[prost(float, tag = "29")]
    pub temp: f32,
    #[prost(string, tag = "30")]
    pub name: String,
    #[prost(string, tag = "31")]
    pub host: String,
    #[prost(string, tag = "32")]
    pub service: String,
    #[prost(string, tag = "33")]
    pub method: String,
    #[prost(string, tag = "34")]
    pub region: String,
    #[prost(string, tag = "35")]
    pub user_agent: String,
    #[prost(bytes = "vec", tag = "36")]
    pub payload: Vec<u8>,
    #[prost(uint64, tag = "37")]
    pub seq: u64,
    #[prost(int32, tag = "38")]
    pub status: i32,
    #[prost(uint32, tag = "39")]
    pub flags: u32,
    #[prost(int64, tag = "40")]
    pub latency_ns: i64,
}

/// `bench.MixedHeader`.
#[derive(Clone, PartialEq, Message)]
pub struct MixedHeader {
    #[prost(uint64, tag = "1")]
    pub request_id: u64,
    #[prost(int32, tag = "2")]
    pub priority: i32,
    #[prost(string, tag = "3")]
    pub origin: String,
    #[prost(fixed64, tag = "4")]
    pub deadline: u64,
    #[prost(bool, tag = "5")]
    pub retry: bool,
}

/// `bench.MixedItem`.
#[derive(Clone, PartialEq, Message)]
pub struct MixedItem {
    #[prost(int32, tag = "1")]
    pub sku: i32,
    #[prost(string, tag = "2")]
    pub title: String,
    #[prost(double, tag = "3")]
    pub price: f64,
    #[prost(uint32, tag = "4")]
    pub quantity: u32,
}

/// `bench.MixedGeo`.
#[derive(Clone, PartialEq, Message)]
pub struct MixedGeo {
    #[prost(double, tag = "1")]
    pub lat: f64,
    #[prost(double, tag = "2")]
    pub lon: f64,
    #[prost(sint32, tag = "3")]
    pub alt: i32,
    #[prost(string, tag = "4")]
    pub city: String,
}

/// `bench.Mixed`.
#[derive(Clone, PartialEq, Message)]
pub struct Mixed {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(int32, tag = "2")]
    pub kind: i32,
    #[prost(uint64, tag = "3")]
    pub user: u64,
    #[prost(string, tag = "4")]
    pub title: String,
    #[prost(string, tag = "5")]
    pub url: String,
    #[prost(double, tag = "6")]
    pub weight: f64,
    #[prost(bool, tag = "7")]
    pub active: bool,
    #[prost(fixed64, tag = "8")]
    pub checksum: u64,
    #[prost(bytes = "vec", tag = "9")]
    pub token: Vec<u8>,
    #[prost(sint32, tag = "10")]
    pub delta: i32,
    #[prost(float, tag = "11")]
    pub ratio: f32,
    #[prost(message, optional, tag = "12")]
    pub header: Option<MixedHeader>,
    #[prost(message, optional, tag = "13")]
    pub item: Option<MixedItem>,
    #[prost(message, optional, tag = "14")]
    pub geo: Option<MixedGeo>,
    #[prost(string, tag = "15")]
    pub note: String,
}

/// `bench.NestedPoint`.
#[derive(Clone, PartialEq, Message)]
pub struct NestedPoint {
    #[prost(int32, tag = "1")]
    pub x: i32,
    #[prost(int32, tag = "2")]
    pub y: i32,
    #[prost(int64, tag = "3")]
    pub t: i64,
}

/// `bench.NestedKV`.
#[derive(Clone, PartialEq, Message)]
pub struct NestedKv {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(uint64, tag = "2")]
    pub value: u64,
}

/// `bench.NestedStat`.
#[derive(Clone, PartialEq, Message)]
pub struct NestedStat {
    #[prost(double, tag = "1")]
    pub mean: f64,
    #[prost(fixed32, tag = "2")]
    pub count: u32,
    #[prost(bool, tag = "3")]
    pub valid: bool,
}

/// `bench.NestedRef`.
#[derive(Clone, PartialEq, Message)]
pub struct NestedRef {
    #[prost(fixed64, tag = "1")]
    pub id: u64,
    #[prost(sint32, tag = "2")]
    pub rank: i32,
    #[prost(bytes = "vec", tag = "3")]
    pub tag: Vec<u8>,
}

/// `bench.Nested`.
#[derive(Clone, PartialEq, Message)]
pub struct Nested {
    #[prost(int32, tag = "1")]
    pub version: i32,
    #[prost(message, optional, tag = "2")]
    pub p0: Option<NestedPoint>,
    #[prost(message, optional, tag = "3")]
    pub p1: Option<NestedPoint>,
    #[prost(message, optional, tag = "4")]
    pub kv0: Option<NestedKv>,
    #[prost(message, optional, tag = "5")]
    pub kv1: Option<NestedKv>,
    #[prost(message, optional, tag = "6")]
    pub s0: Option<NestedStat>,
    #[prost(message, optional, tag = "7")]
    pub s1: Option<NestedStat>,
    #[prost(message, optional, tag = "8")]
    pub r0: Option<NestedRef>,
    #[prost(message, optional, tag = "9")]
    pub r1: Option<NestedRef>,
    #[prost(message, optional, tag = "10")]
    pub p2: Option<NestedPoint>,
    #[prost(message, optional, tag = "11")]
    pub kv2: Option<NestedKv>,
}
