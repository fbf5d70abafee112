//! The compact binary trace file: header, then varint-encoded events.
//!
//! Layout: [`MAGIC`] (8 bytes), [`VERSION`] (u16 little-endian), two zero bytes, then events
//! until the end of the file. Each event is one tag byte (low nibble = event kind, bits 4–5 =
//! [`Region`] for field reads/writes and [`Repetition`] for schema reads) followed by LEB128
//! varints. Addresses are stored as the
//! zigzag-encoded wrapping difference from the previous address of the same stream (schema
//! entries, and one stream per region), so sequential walks cost one or two bytes per address.
//!
//! The reader never panics on bad input: every length is checked before use and every varint
//! is bounded to ten bytes; errors name the byte offset. [`decode_limited`] also bounds the
//! events it collects, and checks their nesting as it reads.

use crate::event::{Direction, Event, Format, Nesting, Region, Repetition};
use crate::tracer::{replay_one, Tracer};

/// First eight bytes of every trace file.
pub const MAGIC: [u8; 8] = *b"OPTRACE\0";
/// Version of the event encoding this crate reads and writes (2: schema reads carry their
/// field's [`Repetition`]).
pub const VERSION: u16 = 2;
const HEADER_LEN: usize = 12;
/// Longest LEB128 encoding of a `u64`.
const MAX_VARINT_LEN: usize = 10;

const TAG_BEGIN: u8 = 0;
const TAG_END: u8 = 1;
const TAG_SCHEMA: u8 = 2;
const TAG_READ: u8 = 3;
const TAG_WRITE: u8 = 4;
const TAG_CONVERT: u8 = 5;
const TAG_ENTER: u8 = 6;
const TAG_LEAVE: u8 = 7;

/// Errors from reading a trace file or checking a trace's structure.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceError {
    /// The file does not start with [`MAGIC`].
    #[error("not an optimus trace: bad magic")]
    BadMagic,
    /// The file was written with another encoding version.
    #[error("trace version {found} is not supported (expected {expected})")]
    Version {
        /// Version in the file.
        found: u16,
        /// Version this reader understands.
        expected: u16,
    },
    /// One of the header's two reserved bytes, which this version writes as zero, is not.
    #[error("at byte {offset}: reserved header byte is {value:#04x}, expected 0")]
    Reserved {
        /// Byte offset of the first nonzero reserved byte (10 or 11).
        offset: usize,
        /// The byte found.
        value: u8,
    },
    /// The file ends in the middle of the header or of an event.
    #[error("at byte {offset}: file ends inside {what}")]
    Truncated {
        /// Byte offset where more data was needed.
        offset: usize,
        /// What was being read.
        what: &'static str,
    },
    /// A varint runs past ten bytes or past 64 bits.
    #[error("at byte {offset}: varint longer than 64 bits")]
    VarintOverflow {
        /// Byte offset of the varint's first byte.
        offset: usize,
    },
    /// A value does not fit its field (e.g. a converter op id above `u16::MAX`).
    #[error("at byte {offset}: {what} {value} is out of range")]
    OutOfRange {
        /// Byte offset of the value.
        offset: usize,
        /// Which field.
        what: &'static str,
        /// The value found.
        value: u64,
    },
    /// An event tag, region, repetition, direction or format this version does not know.
    #[error("at byte {offset}: unknown {what} {value:#04x}")]
    BadTag {
        /// Byte offset of the byte that holds it.
        offset: usize,
        /// Which kind of tag.
        what: &'static str,
        /// The value found (for a region or a repetition, bits 4–5 of the event tag, shifted
        /// down).
        value: u8,
    },
    /// The file holds more events than the caller of [`decode_limited`] allows.
    #[error("at byte {offset}: more than {limit} events, the most this reader takes")]
    TooManyEvents {
        /// Byte offset of the first event past the limit.
        offset: usize,
        /// The limit.
        limit: usize,
    },
    /// The events do not form well-nested messages (see [`crate::check_structure`]).
    #[error("{}: {why}", event_place(.index, .offset))]
    Structure {
        /// Index of the offending event (the number of events, for a trace that ends inside
        /// a message).
        index: usize,
        /// Byte offset of that event in the file (of the file's end), where the events were
        /// read from one.
        offset: Option<usize>,
        /// What is wrong.
        why: &'static str,
    },
}

/// `at byte 40 (event 3)`, or `event 3` where the events came from no file.
fn event_place(index: &usize, offset: &Option<usize>) -> String {
    match offset {
        Some(offset) => format!("at byte {offset} (event {index})"),
        None => format!("event {index}"),
    }
}

/// Previous address of each delta stream.
#[derive(Clone, Copy, Debug, Default)]
struct Deltas {
    schema: u64,
    region: [u64; 3],
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Streams events into the binary trace format; itself a [`Tracer`].
#[derive(Clone, Debug)]
pub struct TraceWriter {
    buf: Vec<u8>,
    prev: Deltas,
}

impl Default for TraceWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceWriter {
    /// A writer holding just the file header.
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(&MAGIC);
        buf.extend_from_slice(&VERSION.to_le_bytes());
        buf.extend_from_slice(&[0, 0]);
        Self {
            buf,
            prev: Deltas::default(),
        }
    }

    /// Appends one event.
    pub fn push(&mut self, ev: Event) {
        replay_one(ev, self);
    }

    /// Writes the file bytes produced so far (the header, on the first call) to `out` and
    /// drops them, so that a long trace streams out in pieces rather than growing in memory;
    /// the events pushed later continue the same file.
    ///
    /// # Errors
    /// What `out` reports; the bytes stay pending then.
    pub fn write_pending(&mut self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Number of file bytes produced and not yet written out by [`Self::write_pending`].
    pub fn pending_len(&self) -> usize {
        self.buf.len()
    }

    /// The file bytes produced so far and not yet written out by [`Self::write_pending`].
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    fn addr(&mut self, prev: u64, addr: u64) {
        put_varint(&mut self.buf, zigzag(addr.wrapping_sub(prev) as i64));
    }
}

impl Tracer for TraceWriter {
    const ENABLED: bool = true;
    fn message_begin(&mut self, direction: Direction, format: Format, type_id: u32) {
        self.buf
            .extend_from_slice(&[TAG_BEGIN, direction as u8, format as u8]);
        put_varint(&mut self.buf, type_id.into());
    }
    fn message_end(&mut self, wire_bytes: u64) {
        self.buf.push(TAG_END);
        put_varint(&mut self.buf, wire_bytes);
    }
    fn schema_read(&mut self, kind: u16, repetition: Repetition, addr: u64, size: u32) {
        self.buf.push(TAG_SCHEMA | ((repetition as u8) << 4));
        put_varint(&mut self.buf, kind.into());
        self.addr(self.prev.schema, addr);
        self.prev.schema = addr;
        put_varint(&mut self.buf, size.into());
    }
    fn field_read(&mut self, region: Region, addr: u64, bytes: u32) {
        self.buf.push(TAG_READ | ((region as u8) << 4));
        self.addr(self.prev.region[region as usize], addr);
        self.prev.region[region as usize] = addr;
        put_varint(&mut self.buf, bytes.into());
    }
    fn field_write(&mut self, region: Region, addr: u64, bytes: u32) {
        self.buf.push(TAG_WRITE | ((region as u8) << 4));
        self.addr(self.prev.region[region as usize], addr);
        self.prev.region[region as usize] = addr;
        put_varint(&mut self.buf, bytes.into());
    }
    fn convert(&mut self, op: u16, bytes: u32) {
        self.buf.push(TAG_CONVERT);
        put_varint(&mut self.buf, op.into());
        put_varint(&mut self.buf, bytes.into());
    }
    fn enter(&mut self, type_id: u32) {
        self.buf.push(TAG_ENTER);
        put_varint(&mut self.buf, type_id.into());
    }
    fn leave(&mut self) {
        self.buf.push(TAG_LEAVE);
    }
}

/// Encodes `events` as a complete trace file.
pub fn encode(events: &[Event]) -> Vec<u8> {
    let mut w = TraceWriter::new();
    for ev in events {
        w.push(*ev);
    }
    w.finish()
}

/// Decodes a complete trace file and checks its message structure. It keeps at most one
/// event per byte of `bytes`; [`decode_limited`] bounds them further.
///
/// # Errors
/// Any [`TraceError`]: bad header, truncated or malformed event, or ill-nested messages.
pub fn decode(bytes: &[u8]) -> Result<Vec<Event>, TraceError> {
    decode_limited(bytes, usize::MAX)
}

/// [`decode`], refusing a file of more than `max_events` events before it keeps more. Errors
/// name the byte offset of the offending event, structure errors its index too.
///
/// # Errors
/// Those of [`decode`], and [`TraceError::TooManyEvents`].
pub fn decode_limited(bytes: &[u8], max_events: usize) -> Result<Vec<Event>, TraceError> {
    let mut reader = TraceReader::new(bytes)?;
    let mut nesting = Nesting::default();
    let mut events = Vec::new();
    while reader.pos < bytes.len() {
        let offset = reader.pos;
        if events.len() >= max_events {
            return Err(TraceError::TooManyEvents {
                offset,
                limit: max_events,
            });
        }
        let ev = reader.next_event()?;
        nesting.push(&ev).map_err(|why| TraceError::Structure {
            index: events.len(),
            offset: Some(offset),
            why,
        })?;
        events.push(ev);
    }
    nesting.finish().map_err(|why| TraceError::Structure {
        index: events.len(),
        offset: Some(bytes.len()),
        why,
    })?;
    Ok(events)
}

/// Iterates over the events of a trace file; yields an error (then stops) on bad input.
#[derive(Clone, Debug)]
pub struct TraceReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    prev: Deltas,
    failed: bool,
}

impl<'a> TraceReader<'a> {
    /// Checks the header and positions the reader at the first event.
    ///
    /// # Errors
    /// [`TraceError::Truncated`], [`TraceError::BadMagic`], [`TraceError::Version`] or
    /// [`TraceError::Reserved`].
    pub fn new(bytes: &'a [u8]) -> Result<Self, TraceError> {
        let Some(header) = bytes.get(..HEADER_LEN) else {
            let n = bytes.len().min(MAGIC.len());
            if bytes[..n] == MAGIC[..n] {
                return Err(TraceError::Truncated {
                    offset: bytes.len(),
                    what: "the header",
                });
            }
            return Err(TraceError::BadMagic);
        };
        if header[..8] != MAGIC {
            return Err(TraceError::BadMagic);
        }
        let version = u16::from_le_bytes([header[8], header[9]]);
        if version != VERSION {
            return Err(TraceError::Version {
                found: version,
                expected: VERSION,
            });
        }
        if let Some(k) = (10..HEADER_LEN).find(|&k| header[k] != 0) {
            return Err(TraceError::Reserved {
                offset: k,
                value: header[k],
            });
        }
        Ok(Self {
            bytes,
            pos: HEADER_LEN,
            prev: Deltas::default(),
            failed: false,
        })
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, TraceError> {
        let b = *self.bytes.get(self.pos).ok_or(TraceError::Truncated {
            offset: self.pos,
            what,
        })?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self, what: &'static str) -> Result<u64, TraceError> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..MAX_VARINT_LEN {
            let b = self.byte(what)?;
            let bits = u64::from(b & 0x7f);
            // The tenth byte may only carry the top bit of a u64.
            if i == MAX_VARINT_LEN - 1 && bits > 1 {
                return Err(TraceError::VarintOverflow { offset: start });
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(TraceError::VarintOverflow { offset: start })
    }

    fn varint_u32(&mut self, what: &'static str) -> Result<u32, TraceError> {
        let offset = self.pos;
        let v = self.varint(what)?;
        u32::try_from(v).map_err(|_| TraceError::OutOfRange {
            offset,
            what,
            value: v,
        })
    }

    fn varint_u16(&mut self, what: &'static str) -> Result<u16, TraceError> {
        let offset = self.pos;
        let v = self.varint(what)?;
        u16::try_from(v).map_err(|_| TraceError::OutOfRange {
            offset,
            what,
            value: v,
        })
    }

    fn addr(&mut self, prev: u64) -> Result<u64, TraceError> {
        let d = self.varint("an address")?;
        Ok(prev.wrapping_add(unzigzag(d) as u64))
    }

    fn next_event(&mut self) -> Result<Event, TraceError> {
        let at = self.pos;
        let tag = self.byte("an event tag")?;
        let kind = tag & 0x0f;
        let hi = tag >> 4;
        if hi != 0 && kind != TAG_READ && kind != TAG_WRITE && kind != TAG_SCHEMA {
            return Err(TraceError::BadTag {
                offset: at,
                what: "event tag",
                value: tag,
            });
        }
        Ok(match kind {
            TAG_BEGIN => {
                let off = self.pos;
                let d = self.byte("a direction")?;
                let direction = Direction::from_u8(d).ok_or(TraceError::BadTag {
                    offset: off,
                    what: "direction",
                    value: d,
                })?;
                let off = self.pos;
                let f = self.byte("a format")?;
                let format = Format::from_u8(f).ok_or(TraceError::BadTag {
                    offset: off,
                    what: "format",
                    value: f,
                })?;
                Event::MessageBegin {
                    direction,
                    format,
                    type_id: self.varint_u32("a type id")?,
                }
            }
            TAG_END => Event::MessageEnd {
                wire_bytes: self.varint("a wire size")?,
            },
            TAG_SCHEMA => {
                let repetition = Repetition::from_u8(hi).ok_or(TraceError::BadTag {
                    offset: at,
                    what: "repetition",
                    value: hi,
                })?;
                let kind = self.varint_u16("a field kind")?;
                let addr = self.addr(self.prev.schema)?;
                self.prev.schema = addr;
                Event::SchemaRead {
                    kind,
                    repetition,
                    addr,
                    size: self.varint_u32("an entry size")?,
                }
            }
            TAG_READ | TAG_WRITE => {
                let region = Region::from_u8(hi).ok_or(TraceError::BadTag {
                    offset: at,
                    what: "region",
                    value: hi,
                })?;
                let addr = self.addr(self.prev.region[region as usize])?;
                self.prev.region[region as usize] = addr;
                let bytes = self.varint_u32("a byte count")?;
                if kind == TAG_READ {
                    Event::FieldRead {
                        region,
                        addr,
                        bytes,
                    }
                } else {
                    Event::FieldWrite {
                        region,
                        addr,
                        bytes,
                    }
                }
            }
            TAG_CONVERT => Event::Convert {
                op: self.varint_u16("an op id")?,
                bytes: self.varint_u32("a byte count")?,
            },
            TAG_ENTER => Event::Enter {
                type_id: self.varint_u32("a type id")?,
            },
            TAG_LEAVE => Event::Leave,
            _ => {
                return Err(TraceError::BadTag {
                    offset: at,
                    what: "event tag",
                    value: tag,
                })
            }
        })
    }
}

impl Iterator for TraceReader<'_> {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.bytes.len() {
            return None;
        }
        let r = self.next_event();
        self.failed = r.is_err();
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Event> {
        vec![
            Event::MessageBegin {
                direction: Direction::Encode,
                format: Format::Protobuf,
                type_id: 7,
            },
            Event::SchemaRead {
                kind: 3,
                repetition: Repetition::Single,
                addr: 0x7fff_0000_1000,
                size: 16,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: 0x7fff_0000_2000,
                bytes: 8,
            },
            Event::Convert { op: 1, bytes: 8 },
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 0,
                bytes: 3,
            },
            Event::SchemaRead {
                kind: 9,
                repetition: Repetition::Repeated,
                addr: 0x7fff_0000_0ff0,
                size: 16,
            },
            Event::Enter { type_id: 2 },
            Event::FieldRead {
                region: Region::Accel,
                addr: u64::MAX,
                bytes: u32::MAX,
            },
            Event::FieldRead {
                region: Region::Message,
                addr: 0,
                bytes: 0,
            },
            Event::Leave,
            Event::FieldWrite {
                region: Region::Buffer,
                addr: 3,
                bytes: 1,
            },
            Event::MessageEnd {
                wire_bytes: u64::MAX,
            },
            Event::MessageBegin {
                direction: Direction::Decode,
                format: Format::ThriftCompact,
                type_id: u32::MAX,
            },
            Event::Convert {
                op: u16::MAX,
                bytes: 0,
            },
            Event::MessageEnd { wire_bytes: 0 },
        ]
    }

    #[test]
    fn roundtrip() {
        let evs = sample();
        let bytes = encode(&evs);
        assert_eq!(&bytes[..8], &MAGIC);
        assert_eq!(decode(&bytes).unwrap(), evs);
        for repetition in [Repetition::Single, Repetition::Repeated, Repetition::Packed] {
            let evs = [
                evs[0],
                Event::SchemaRead {
                    kind: 5,
                    repetition,
                    addr: 0x40,
                    size: 16,
                },
                Event::MessageEnd { wire_bytes: 0 },
            ];
            assert_eq!(decode(&encode(&evs)).unwrap(), evs);
        }
    }

    #[test]
    fn varint_boundaries_roundtrip() {
        for k in 0..10u32 {
            for v in [
                (1u64 << (7 * k)).wrapping_sub(1),
                1u64 << (7 * k).min(63),
                u64::MAX,
            ] {
                let evs = [
                    Event::MessageBegin {
                        direction: Direction::Encode,
                        format: Format::Protobuf,
                        type_id: 0,
                    },
                    Event::FieldRead {
                        region: Region::Message,
                        addr: v,
                        bytes: 1,
                    },
                    Event::MessageEnd { wire_bytes: v },
                ];
                assert_eq!(decode(&encode(&evs)).unwrap(), evs);
            }
        }
    }

    #[test]
    fn sequential_addresses_are_compact() {
        let mut w = TraceWriter::new();
        w.message_begin(Direction::Encode, Format::Protobuf, 0);
        for i in 0..100u64 {
            w.schema_read(1, Repetition::Packed, 0x1_0000_0000 + i * 16, 16);
        }
        w.message_end(0);
        let len = w.finish().len();
        // 100 entries: tag + kind + 1-byte delta + size ≈ 4 bytes each (first delta is long).
        assert!(len < HEADER_LEN + 4 + 100 * 4 + 16, "{len}");
    }

    #[test]
    fn header_errors() {
        assert_eq!(
            TraceReader::new(b"").unwrap_err(),
            TraceError::Truncated {
                offset: 0,
                what: "the header"
            }
        );
        assert_eq!(
            TraceReader::new(b"OPTRACE\0\x01").unwrap_err(),
            TraceError::Truncated {
                offset: 9,
                what: "the header"
            }
        );
        assert_eq!(
            TraceReader::new(b"NOTATRACEFILE").unwrap_err(),
            TraceError::BadMagic
        );
        assert_eq!(TraceReader::new(b"nope").unwrap_err(), TraceError::BadMagic);
        // A file of version 1, whose schema reads carry no repetition, is refused.
        let mut bad = encode(&[]);
        bad[8] = 1;
        assert_eq!(
            decode(&bad).unwrap_err(),
            TraceError::Version {
                found: 1,
                expected: VERSION
            }
        );
        // The reserved bytes have an error of their own, naming the first nonzero one.
        for (k, value) in [(10, 0x01), (11, 0x80)] {
            let mut bad = encode(&[]);
            bad[k] = value;
            let err = decode(&bad).unwrap_err();
            assert_eq!(err, TraceError::Reserved { offset: k, value });
            assert_eq!(
                err.to_string(),
                format!("at byte {k}: reserved header byte is {value:#04x}, expected 0")
            );
        }
    }

    #[test]
    fn structure_errors_name_the_byte_offset_and_the_event() {
        let begin = sample()[0];
        // Begin is four bytes at 12, so the Leave is event 1 at byte 16.
        let err = decode(&encode(&[begin, Event::Leave])).unwrap_err();
        assert_eq!(
            err,
            TraceError::Structure {
                index: 1,
                offset: Some(16),
                why: "Leave without Enter"
            }
        );
        assert_eq!(err.to_string(), "at byte 16 (event 1): Leave without Enter");
        let unclosed = encode(&[begin, Event::Enter { type_id: 1 }]);
        assert_eq!(
            decode(&unclosed).unwrap_err().to_string(),
            format!(
                "at byte {} (event 2): trace ends inside a message",
                unclosed.len()
            )
        );
        // Events checked in memory have no offset.
        assert_eq!(
            crate::check_structure(&[Event::Leave])
                .unwrap_err()
                .to_string(),
            "event 0: Leave without Enter"
        );
    }

    #[test]
    fn decode_limited_stops_at_the_event_limit() {
        let evs = sample();
        let bytes = encode(&evs);
        assert_eq!(decode_limited(&bytes, evs.len()).unwrap(), evs);
        // The first event past the limit is named by its offset: event 3 follows the
        // header and three events.
        let offset = encode(&evs[..3]).len();
        let err = decode_limited(&bytes, 3).unwrap_err();
        assert_eq!(err, TraceError::TooManyEvents { offset, limit: 3 });
        assert_eq!(
            err.to_string(),
            format!("at byte {offset}: more than 3 events, the most this reader takes")
        );
        assert_eq!(decode_limited(&encode(&[]), 0).unwrap(), vec![]);
    }

    #[test]
    fn a_writer_streams_the_same_file_in_pieces() {
        let evs = sample();
        let mut w = TraceWriter::new();
        let mut out = Vec::new();
        for ev in &evs {
            w.push(*ev);
            w.write_pending(&mut out).unwrap();
        }
        out.extend_from_slice(&w.finish());
        assert_eq!(out, encode(&evs));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let evs = sample();
        let bytes = encode(&evs);
        let first_end = encode(&evs[..12]).len();
        for cut in HEADER_LEN + 1..bytes.len() {
            // A byte-level error, or a structure error at an event boundary; only the cut
            // right after the first message is a valid (shorter) trace.
            if let Ok(got) = decode(&bytes[..cut]) {
                assert!(cut == first_end && got == evs[..12], "cut at {cut}");
            }
        }
    }

    #[test]
    fn malformed_events_are_errors() {
        let head = encode(&[]);
        let with = |tail: &[u8]| {
            let mut b = head.clone();
            b.extend_from_slice(tail);
            TraceReader::new(&b).unwrap().collect::<Result<Vec<_>, _>>()
        };
        assert!(matches!(
            with(&[0x08]),
            Err(TraceError::BadTag { offset: 12, .. })
        ));
        // A region is named by its value, not by the tag byte that holds it.
        let region = with(&[TAG_READ | 0x30, 0, 0]).unwrap_err();
        assert_eq!(
            region,
            TraceError::BadTag {
                offset: 12,
                what: "region",
                value: 3
            }
        );
        assert_eq!(region.to_string(), "at byte 12: unknown region 0x03");
        assert_eq!(
            with(&[TAG_SCHEMA | 0x30, 1, 0, 16]).unwrap_err(),
            TraceError::BadTag {
                offset: 12,
                what: "repetition",
                value: 3
            }
        );
        assert!(matches!(
            with(&[0x10]),
            Err(TraceError::BadTag {
                what: "event tag",
                ..
            })
        ));
        assert!(matches!(
            with(&[TAG_BEGIN, 5, 0, 0]),
            Err(TraceError::BadTag {
                what: "direction",
                ..
            })
        ));
        assert!(matches!(
            with(&[TAG_BEGIN, 0, 99, 0]),
            Err(TraceError::BadTag { what: "format", .. })
        ));
        let mut long = vec![TAG_END];
        long.extend_from_slice(&[0xff; 11]);
        assert!(matches!(
            with(&long),
            Err(TraceError::VarintOverflow { offset: 13 })
        ));
        let mut top = vec![TAG_END];
        top.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]);
        assert!(matches!(with(&top), Err(TraceError::VarintOverflow { .. })));
        assert!(matches!(
            with(&[TAG_CONVERT, 0x80, 0x80, 0x04, 0]),
            Err(TraceError::OutOfRange {
                what: "an op id",
                ..
            })
        ));
        assert!(matches!(
            with(&[TAG_ENTER, 0x80, 0x80, 0x80, 0x80, 0x10]),
            Err(TraceError::OutOfRange { .. })
        ));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // Deterministic pseudo-random garbage after a valid header.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..400 {
            let mut b = encode(&[]);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push(x as u8);
            }
            let _ = decode(&b);
        }
    }
}
